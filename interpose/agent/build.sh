#!/bin/sh
# Build the fast-lookup agent (agent.c, laid out by agent.ld) into the flat
# blob OUT that interpose embeds: build.sh OUT [CC]. Run by make build, by
# go generate in interpose, and by TestAgentBlobIsCurrent (which compares).
set -eu
out=$1
cc=${2:-${CC:-gcc}}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Position-independent, freestanding, general registers only, no stack
# protector (no TLS canary to read), no unwind tables, no jump tables (no
# absolute addresses in constants).
"$cc" -O2 -Wall -Wextra -Werror -std=gnu11 -fPIC -ffreestanding -fno-builtin -nostdlib \
	-mgeneral-regs-only -fno-stack-protector -fcf-protection=none -fno-jump-tables \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fvisibility=hidden \
	-c -o "$tmp/agent.o" "$dir/agent.c"
ld -nostdlib --no-dynamic-linker -T "$dir/agent.ld" -o "$tmp/agent.bin" "$tmp/agent.o"
mv "$tmp/agent.bin" "$out"
