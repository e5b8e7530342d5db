# make with pattern rules, timestamps set relative to each other (touch -d), order-only
# prerequisites, .PHONY, intermediate files removed, rebuild after touching a source
mkdir mk && cd mk
cat > Makefile <<'MK'
SRCS := $(wildcard src/*.in)
OUTS := $(patsubst src/%.in,out/%.out,$(SRCS))
all: out/all.cat
out/all.cat: $(OUTS)
	cat $^ > $@
out/%.out: build/%.mid | out
	tr a-z A-Z < $< > $@
build/%.mid: src/%.in | build
	sed 's/^/mid:/' $< > $@
out build:
	mkdir -p $@
clean:
	rm -rf out build
.PHONY: all clean
MK
mkdir src; echo alpha > src/a.in; echo beta > src/b.in
touch -d '2001-01-01 00:00' Makefile src/*.in
make -s && cat out/all.cat
make; ls build 2>/dev/null | wc -l
touch -d '2001-01-02' src/b.in; make
touch -d '2000-01-01' out/all.cat; make -q; echo q=$?
make -n | sort
echo gamma > src/c.in; make -s && cat out/all.cat
make -s clean && ls
