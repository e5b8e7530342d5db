package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParity runs real programs natively, under txexec --passthrough and as a
// transaction, and requires the same stdout, stderr, exit status and
// resulting work directory (issue 2, "Must hold": identical behaviour).
func TestParity(t *testing.T) {
	fixtures := t.TempDir()
	cases := []struct {
		tools []string
		p     parity
	}{
		{
			tools: []string{"bash"},
			p: parity{
				name: "bash pipelines",
				argv: []string{"bash", "-c", `
set -o pipefail
printf '%s\n' pear apple fig | sort | tr a-z A-Z | paste -sd, -
seq 1 2000 | awk '{s += $1} END {print s}' | cat
false | true; echo "pipefail: $?"
true | false | true; echo "PIPESTATUS: ${PIPESTATUS[*]}"
{ echo out; echo err >&2; } 2>&1 | sed 's/^/merged: /'
echo to-stderr >&2
exec 3>fd3.txt; echo via fd3 >&3; exec 3>&-; cat fd3.txt
wc -c <<<"here string"
mkdir -p a/b/c && echo x >a/b/c/x && find a | sort
ln -s a/b/c/x link && readlink link && cat link
mv a/b/c/x a/y && ls a && rm -r a/b && stat -c '%A %n' * | sort
cat missing-file
exit 3`},
			},
		},
		{
			tools: []string{"bash"},
			p: parity{
				name: "bash fork storm",
				argv: []string{"bash", "-c", `
pids=()
for i in $(seq 200); do (echo "$i" >"f$i"; exit $((i % 5))) & pids+=($!); done
sum=0; for p in "${pids[@]}"; do wait "$p"; sum=$((sum + $?)); done
echo "status sum: $sum"
cat f* | sort -n | md5sum
ls | wc -l
for i in $(seq 100); do x=$(echo $(echo "nested $i")); done; echo "$x"
for i in $(seq 50); do sh -c 'exit 0' & done; wait; echo waited`},
			},
		},
		{
			tools: []string{"python3"},
			p: parity{
				name: "python3 file I/O and subprocess",
				argv: []string{"python3", "-c", `
import os, shutil, subprocess, sys, threading
os.makedirs("d/e/f")
for i in range(20):
    with open(f"d/e/f/n{i}", "w") as f:
        f.write(str(i) * i)
print(sorted(os.listdir("d/e/f"))[:5], sum(os.path.getsize(f"d/e/f/n{i}") for i in range(20)))
os.rename("d/e/f/n3", "d/three")
os.symlink("three", "d/link")
print(open("d/link").read(), os.readlink("d/link"), os.path.islink("d/link"))
os.chmod("d/three", 0o600)
print(oct(os.stat("d/three").st_mode & 0o7777))
shutil.copytree("d/e", "copy")
shutil.rmtree("d/e")
print(sorted(os.listdir("d")), len(os.listdir("copy/f")))
def work(i):
    with open(f"t{i}", "w") as f:
        f.write("thread %d\n" % i)
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sorted(open(f"t{i}").read() for i in range(8))[0].strip())
r = subprocess.run(["sh", "-c", "echo sub out; echo sub err >&2; exit 4"], capture_output=True, text=True)
print(r.returncode, repr(r.stdout), repr(r.stderr))
p = subprocess.run("seq 5 | tac | head -2", shell=True, capture_output=True, text=True)
print(p.stdout.split())
try:
    open("nope/x")
except OSError as e:
    print("error:", e.errno, e.strerror)
print("to stderr", file=sys.stderr)
`},
			},
		},
		{
			tools: []string{"gcc"},
			p: parity{
				name: "gcc compiles and runs",
				argv: []string{"sh", "-c", `
gcc -O2 -Wall -o hello hello.c -lm && ./hello; echo "hello exited $?"
gcc -c bad.c; echo "gcc exited $?"
ls`},
				setup: func(t *testing.T, dir string) {
					writeFiles(t, dir, map[string]string{
						"hello.c": `#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
	FILE *f = fopen("out.txt", "w");
	if (!f) return 1;
	fprintf(f, "%.3f\n", sqrt(2.0));
	fclose(f);
	printf("hello from C, sqrt(2) = %.3f\n", sqrt(2.0));
	return 5;
}
`,
						"bad.c": "int main(void) {\n\treturn undeclared;\n}\n",
					})
				},
			},
		},
		{
			tools: []string{"git"},
			p: parity{
				name: "git init add commit log",
				argv: []string{"sh", "-c", `
git init -q -b main repo && cd repo
echo hello >a.txt && mkdir sub && echo x >sub/b.txt
git add -A && git commit -q -m first
echo more >>a.txt && git commit -q -a -m second
git branch feature && git checkout -q feature
echo f >f.txt && git add f.txt && git commit -q -m feature
git checkout -q main && git merge -q --no-ff --no-edit feature
git log --format='%H %an <%ae> %s'
git status --porcelain
git cat-file -p HEAD^{tree}
git show --stat --format=%s HEAD~1
git rm -q sub/b.txt && git commit -q -m rm && git log --oneline | wc -l`},
				env: []string{
					"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
					"GIT_AUTHOR_NAME=E2E", "GIT_AUTHOR_EMAIL=e2e@example.com", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z",
					"GIT_COMMITTER_NAME=E2E", "GIT_COMMITTER_EMAIL=e2e@example.com", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
				},
				// The index caches each file's inode, device and times.
				volatile: []string{"repo/.git/index"},
			},
		},
		{
			tools: []string{"tar", "gzip"},
			p: parity{
				name: "tar create and extract",
				argv: []string{"sh", "-c", `
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf a.tar src && md5sum a.tar
tar -tvf a.tar
mkdir out && tar -xpf a.tar -C out && diff -r src out/src && echo same
tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - -C src . | gzip -n >b.tgz
mkdir out2 && tar -xzf b.tgz -C out2 && ls -R out2
tar -xf missing.tar; echo "tar exited $?"`},
				setup: func(t *testing.T, dir string) {
					var big strings.Builder
					for i := 0; i < 100000; i++ {
						fmt.Fprintf(&big, "line %d\n", i)
					}
					writeFiles(t, dir, map[string]string{
						"src/big.txt":         big.String(),
						"src/small.txt":       "small\n",
						"src/sub/deeper/x.sh": "#!/bin/sh\necho x\n",
						"src/empty/":          "",
					})
					require.NoError(t, os.Chmod(filepath.Join(dir, "src/sub/deeper/x.sh"), 0o750))
				},
			},
		},
		{
			tools: []string{"tar"},
			p: parity{
				name: "tar extracts a symlink",
				argv: []string{"sh", "-c", `tar --sort=name --mtime=@0 -cf a.tar src && rm -r src && tar -xf a.tar; echo "tar exited $?"; ls -l src | cut -c1-10`},
				setup: func(t *testing.T, dir string) {
					writeFiles(t, dir, map[string]string{"src/target": "x\n"})
					require.NoError(t, os.Symlink("target", filepath.Join(dir, "src/link")))
				},
				// As root tar restores the mode of every member, for a
				// symlink with glibc's fchmodat(AT_SYMLINK_NOFOLLOW),
				// which opens it with O_PATH|O_NOFOLLOW and fstats that.
				// The archive's times are pinned: each run sets up its
				// tree anew, perhaps in another second.
			},
		},
		{
			p: parity{
				name: "process name after exec through a symlink",
				// /bin/sh is a symlink (to dash or bash): Linux names the
				// process after the path it was executed by.
				argv:   []string{"sh", "-c", `cat /proc/$$/comm; ps -o comm= -p $$ 2>/dev/null || true`},
				noTree: true,
			},
		},
		{
			tools: []string{"python3"},
			p: parity{
				name: "process names, executables and argv[0] of programs and scripts",
				// comm is the last component of the path exec was given
				// (for a script too, whose exe is its interpreter), exe
				// the file it resolves to, argv[0] and $0 as given; for
				// host programs, programs reached through symlinks,
				// programs and scripts the command made (staged in a
				// transaction), and fexecve.
				argv: []string{"sh", "-c", `
sh -c 'cat /proc/$$/comm; readlink /proc/$$/exe; echo "$0"'
ln -s /bin/cat kitty && ./kitty /proc/self/comm
cp /bin/cat mycat && ./mycat /proc/self/comm && ln -s mycat mylink && ./mylink /proc/self/comm
./mylink /proc/self/cmdline | tr '\0' ' '; echo
cp /bin/readlink myrl && ./myrl /proc/self/exe
cat >s.sh <<'X'
#!/bin/sh
echo "comm=$(cat /proc/$$/comm) \$0=$0 exe=$(readlink /proc/$$/exe) args=$*"
X
chmod 755 s.sh && ./s.sh a && ln -s s.sh t.sh && ./t.sh b && PATH=$PWD:$PATH t.sh c
printf '#!/usr/bin/env sh\necho "comm=$(cat /proc/$$/comm) \\$0=$0"\n' >e.sh && chmod 755 e.sh && ./e.sh
printf '#!%s/s.sh nested\n' "$PWD" >n.sh && chmod 755 n.sh && ./n.sh d
python3 -c 'import os; os.execv("./mylink", ["argv0", "/proc/self/cmdline"])' | tr '\0' ' '; echo
python3 -c 'import os; fd = os.open("./mycat", os.O_RDONLY); os.execve(fd, ["x", "/proc/self/comm"], {})'
`},
			},
		},
		{
			tools: []string{"gcc"},
			p: parity{
				name: "pthreads that fork and exec",
				argv: []string{filepath.Join(fixtures, "threads_fork")},
			},
		},
		{
			tools: []string{"go"},
			p: parity{
				name: "Go binary",
				argv: []string{filepath.Join(fixtures, "gofixture")},
			},
		},
	}
	built := map[string]bool{}
	for _, c := range cases {
		t.Run(c.p.name, func(t *testing.T) {
			requireTools(t, c.tools...)
			switch {
			case strings.HasSuffix(c.p.argv[0], "/threads_fork") && !built["threads_fork"]:
				buildC(t, fixtures, "threads_fork", "threads_fork")
				built["threads_fork"] = true
			case strings.HasSuffix(c.p.argv[0], "/gofixture") && !built["gofixture"]:
				buildGoFixture(t, fixtures)
				built["gofixture"] = true
			}
			c.p.check(t)
		})
	}
}

// traceLine is the shape of every --trace line: "[pid N] name(args) = result".
var traceLine = regexp.MustCompile(`^\[pid [0-9]+\] [a-z0-9_]+\(.*\) = `)

// TestTrace checks --trace and --trace=FILE: one strace-like line per
// intercepted call with decoded path arguments and results, the command's
// own output untouched.
func TestTrace(t *testing.T) {
	const missing = "/nonexistent-txexec-e2e/file"
	script := `cat ` + missing + ` 2>/dev/null; echo "cat: $?"; echo hi >made.txt; cat made.txt`
	cases := []struct {
		name   string
		mode   mode
		toFile bool
	}{
		{"passthrough to stderr", passthrough, false},
		{"passthrough to file", passthrough, true},
		{"transaction to file", transaction, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			want := run(t, native, command{Argv: []string{"sh", "-c", script}, Dir: dir})
			require.NoError(t, os.Remove(filepath.Join(dir, "made.txt")))
			traceFile := filepath.Join(t.TempDir(), "trace.txt")
			opt := "--trace"
			if c.toFile {
				opt = "--trace=" + traceFile
			}
			got := run(t, c.mode, command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: []string{opt}})
			assert.Equal(t, want.Status, got.Status)
			assert.Equal(t, want.Stdout, got.Stdout)
			trace := got.Stderr
			if c.toFile {
				assert.Equal(t, want.Stderr, got.Stderr, "with --trace=FILE stderr is the command's own")
				b, err := os.ReadFile(traceFile)
				require.NoError(t, err)
				trace = string(b)
			}
			lines := strings.Split(strings.TrimSuffix(trace, "\n"), "\n")
			require.NotEmpty(t, lines)
			for _, l := range lines {
				assert.Regexp(t, traceLine, l, "every trace line is one call with its result")
			}
			openMissing := regexp.MustCompile(`^\[pid [0-9]+\] openat\(AT_FDCWD, "` + regexp.QuoteMeta(missing) + `", O_RDONLY[^)]*\) = -1 ENOENT`)
			createMade := regexp.MustCompile(`^\[pid [0-9]+\] openat\(AT_FDCWD, "made.txt", O_WRONLY\|O_CREAT\|O_TRUNC, 0666\) = [0-9]+$`)
			execCat := regexp.MustCompile(`^\[pid [0-9]+\] execve\("[^"]*/cat"\) = 0`)
			var nMissing, nMade, nExecCat int
			for _, l := range lines {
				if openMissing.MatchString(l) {
					nMissing++
				}
				if createMade.MatchString(l) {
					nMade++
				}
				if execCat.MatchString(l) {
					nExecCat++
				}
			}
			assert.Equal(t, 1, nMissing, "exactly one line for cat's failed open of %s; trace:\n%s", missing, trace)
			assert.Equal(t, 1, nMade, "exactly one line for the shell's creation of made.txt; trace:\n%s", trace)
			if _, err := os.Stat("/usr/bin/cat"); err == nil {
				assert.Equal(t, 2, nExecCat, "one line per exec of cat; trace:\n%s", trace)
			}
		})
	}
}

// TestPassthroughWithoutTmpdir: --passthrough keeps its program-name links
// in TMPDIR; a TMPDIR it cannot use costs only those names (with a
// warning), never the run.
func TestPassthroughWithoutTmpdir(t *testing.T) {
	r := run(t, passthrough, command{Argv: []string{"sh", "-c", "echo ran; exit 3"}, Env: []string{"TMPDIR=/nonexistent/txexec-test"}})
	assert.Equal(t, 3, r.Status, r.Stderr)
	assert.Equal(t, "ran\n", r.Stdout)
	assert.Contains(t, r.Stderr, "txexec: warning: cannot make the directory of program names")
}
