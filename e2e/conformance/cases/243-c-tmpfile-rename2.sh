# C: O_TMPFILE then linkat (AT_EMPTY_PATH and /proc/self/fd), renameat2 NOREPLACE/EXCHANGE
# on files, dirs and symlinks, O_DIRECTORY|O_CREAT, ftruncate on a read-only descriptor,
# O_APPEND with pwrite, getcwd after the cwd is renamed and removed, readdir of a removed dir
b=$(mktemp -d /tmp/gccB.XXXXXX); trap 'rm -rf "$b"' EXIT
cat > "$b/p.c" <<'C'
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define E(x) do { errno = 0; long r_ = (long)(x); printf("%-60s %s\n", #x, r_ < 0 ? strerror(errno) : "ok"); } while (0)
static void cat(const char *p) { char b[200]; int f = open(p, O_RDONLY); ssize_t n = f < 0 ? -1 : read(f, b, sizeof b - 1); if (f >= 0) close(f); printf("%s = %s", p, n < 0 ? "(none)\n" : (b[n] = 0, b)); }
int main(void) {
  char buf[4096]; struct stat st;
  int t = open("dir1", O_TMPFILE | O_RDWR, 0640);
  if (t < 0) { perror("O_TMPFILE"); return 1; }
  write(t, "tmp1\n", 5); fstat(t, &st); printf("tmpfile nlink %ld mode %o\n", (long)st.st_nlink, st.st_mode & 0777);
  E(linkat(t, "", AT_FDCWD, "dir1/from-tmp", AT_EMPTY_PATH));
  fstat(t, &st); printf("after link nlink %ld\n", (long)st.st_nlink);
  int t2 = open(".", O_TMPFILE | O_WRONLY, 0600); write(t2, "tmp2\n", 5);
  snprintf(buf, sizeof buf, "/proc/self/fd/%d", t2);
  E(linkat(AT_FDCWD, buf, AT_FDCWD, "from-proc", AT_SYMLINK_FOLLOW));
  E(linkat(AT_FDCWD, buf, AT_FDCWD, "from-proc", AT_SYMLINK_FOLLOW));
  int t3 = open(".", O_TMPFILE | O_WRONLY | O_EXCL, 0600);
  E(linkat(t3, "", AT_FDCWD, "excl-tmp", AT_EMPTY_PATH));
  E(open("a.txt", O_TMPFILE | O_RDWR, 0600));
  E(open("nodir", O_TMPFILE | O_RDWR, 0600));
  cat("dir1/from-tmp"); cat("from-proc");
  E(renameat2(AT_FDCWD, "a.txt", AT_FDCWD, "b.txt", RENAME_NOREPLACE));
  E(renameat2(AT_FDCWD, "a.txt", AT_FDCWD, "a-new", RENAME_NOREPLACE));
  E(renameat2(AT_FDCWD, "a-new", AT_FDCWD, "dir1", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "dir1", AT_FDCWD, "empty", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "nope", AT_FDCWD, "empty", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "empty", AT_FDCWD, "nope", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "link-to-a", AT_FDCWD, "dangling", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "b.txt", AT_FDCWD, "c", RENAME_EXCHANGE | RENAME_NOREPLACE));
  E(renameat2(AT_FDCWD, "empty", AT_FDCWD, "empty/sub/x", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "empty", AT_FDCWD, "empty/sub", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "dir1", AT_FDCWD, "dir1", RENAME_EXCHANGE));
  E(renameat2(AT_FDCWD, "hard-a", AT_FDCWD, "dir1/from-tmp", RENAME_EXCHANGE));
  cat("empty/c.txt"); cat("dir1/from-tmp"); cat("hard-a"); cat("dangling");
  E(readlink("link-to-a", buf, sizeof buf));
  E(open("newdir", O_DIRECTORY | O_CREAT | O_RDONLY, 0755));
  E(access("newdir", F_OK));
  int r = open("big.bin", O_RDONLY);
  E(ftruncate(r, 10));
  int a = open("ro.txt", O_RDONLY); E(fchmod(a, 0644)); close(a);
  a = open("ro.txt", O_WRONLY | O_APPEND);
  E(pwrite(a, "AP", 2, 0)); E(write(a, "END\n", 4)); close(a); cat("ro.txt");
  E(truncate("dir1", 0)); E(truncate("fifo", 0)); E(truncate("link-to-a", 3)); cat("dir1/c.txt");
  E(mkdir("cwdtest", 0755)); E(chdir("cwdtest"));
  E(rename("../cwdtest", "../cwd-renamed"));
  printf("cwd: %s\n", strrchr(getcwd(buf, sizeof buf), '/'));
  DIR *d = opendir(".");
  E(rmdir("../cwd-renamed"));
  printf("getcwd after rmdir: %s\n", getcwd(buf, sizeof buf) ? "ok" : strerror(errno));
  int n = 0; struct dirent *e; while ((e = readdir(d))) n++; printf("entries of removed dir: %d\n", n);
  E(open("f", O_CREAT | O_WRONLY, 0644));
  E(mkdir("sub", 0755));
  E(stat(".", &st)); printf("removed dir nlink %ld\n", (long)st.st_nlink);
  E(chdir(".."));
  return 0;
}
C
gcc -o "$b/p" "$b/p.c" && "$b/p"
ls -n | awk 'NR>1 {print $1, $2, $NF}'
