// Command gensyscalldocs writes docs/syscalls.md from the syscall table.
//
// Run it from the repository root after changing syscalls/entries.go:
//
//	go run ./cmd/gensyscalldocs
//
// syscalls.TestMarkdownIsCurrent fails while the file is stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"txexec/syscalls"
)

// DefaultOutput is where the documentation goes, relative to the
// repository root.
const DefaultOutput = "docs/syscalls.md"

func main() {
	out := flag.String("o", DefaultOutput, "output file")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintf(os.Stderr, "gensyscalldocs: %v\n", err)
		os.Exit(1)
	}
}

func run(out string) error {
	t, err := syscalls.NewTable(syscalls.AllEntries())
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(syscalls.Markdown(t)), 0o644); err != nil {
		return fmt.Errorf("write docs: %w", err)
	}
	return nil
}
