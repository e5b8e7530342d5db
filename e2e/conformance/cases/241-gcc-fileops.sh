# a C program (compiled outside the tree) using openat with a dirfd, fstatat
# AT_SYMLINK_NOFOLLOW, readlinkat, unlinkat AT_REMOVEDIR, renameat, linkat, getdents via
# opendir after renames, fdopendir and rewinddir
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
static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }
static void ls(DIR *d, const char *label) {
  char *n[64]; int k = 0; struct dirent *e;
  rewinddir(d);
  while ((e = readdir(d)) && k < 64) if (e->d_name[0] != '.') {
    char buf[300]; snprintf(buf, sizeof buf, "%s:%c", e->d_name, e->d_type == DT_DIR ? 'd' : e->d_type == DT_LNK ? 'l' : e->d_type == DT_REG ? 'f' : '?');
    n[k++] = strdup(buf); }
  qsort(n, k, sizeof *n, cmp); printf("%s:", label);
  for (int i = 0; i < k; i++) { printf(" %s", n[i]); free(n[i]); } printf("\n");
}
#define E(x) do { if ((x) < 0) printf("%s: %s\n", #x, strerror(errno)); } while (0)
int main(void) {
  int d = open("dir1", O_RDONLY | O_DIRECTORY); struct stat st; char buf[100]; ssize_t n;
  int f = openat(d, "new", O_CREAT | O_WRONLY | O_EXCL, 0640); write(f, "hi\n", 3); close(f);
  E(openat(d, "new", O_CREAT | O_WRONLY | O_EXCL, 0640));
  E(openat(d, "c.txt/x", O_RDONLY));
  E(openat(d, "sub", O_WRONLY));
  E(symlinkat("c.txt", d, "lnk"));
  E(fstatat(d, "lnk", &st, AT_SYMLINK_NOFOLLOW)); printf("lnk nofollow: %s %ld\n", S_ISLNK(st.st_mode) ? "link" : "other", (long)st.st_size);
  E(fstatat(d, "lnk", &st, 0)); printf("lnk follow: %s %ld\n", S_ISREG(st.st_mode) ? "reg" : "other", (long)st.st_size);
  n = readlinkat(d, "lnk", buf, sizeof buf); printf("readlinkat: %.*s\n", (int)n, buf);
  E(readlinkat(d, "c.txt", buf, sizeof buf));
  n = readlinkat(AT_FDCWD, "link-to-a", buf, 3); printf("truncated: %zd %.*s\n", n, (int)n, buf);
  DIR *dd = fdopendir(dup(d)); ls(dd, "before");
  int top = open(".", O_RDONLY | O_DIRECTORY);
  E(renameat(d, "sub", top, "sub-moved"));
  E(renameat(top, "a.txt", d, "a-in"));
  E(linkat(d, "a-in", d, "a-hl", 0));
  E(linkat(d, "lnk", d, "lnk-hl", 0));
  E(linkat(d, "lnk", d, "lnk-fhl", AT_SYMLINK_FOLLOW));
  ls(dd, "after");
  E(unlinkat(top, "sub-moved", AT_REMOVEDIR));
  E(unlinkat(top, "sub-moved/d.txt", 0)); E(unlinkat(top, "sub-moved", AT_REMOVEDIR));
  E(unlinkat(d, "new", AT_REMOVEDIR)); E(unlinkat(top, "empty", 0));
  E(mkdirat(d, "md", 0700)); E(unlinkat(d, "md", AT_REMOVEDIR));
  E(fstatat(d, "a-hl", &st, 0)); printf("nlink a-hl: %ld\n", (long)st.st_nlink);
  E(fstatat(d, "lnk-fhl", &st, AT_SYMLINK_NOFOLLOW)); printf("lnk-fhl: %s\n", S_ISREG(st.st_mode) ? "reg" : "other");
  E(fstatat(d, "", &st, AT_EMPTY_PATH)); printf("empty path dir: %d\n", S_ISDIR(st.st_mode));
  E(faccessat(d, "c.txt", W_OK, AT_EACCESS));
  E(fchmodat(d, "c.txt", 0600, 0));
  E(fchownat(d, "lnk", 1000, 1000, AT_SYMLINK_NOFOLLOW));
  int sd = openat(top, "dir1", O_PATH); E(fstatat(sd, "c.txt", &st, 0)); printf("O_PATH dirfd ok %o\n", st.st_mode & 0777);
  E(openat(top, "dangling", O_WRONLY | O_CREAT | O_EXCL, 0644));
  E(openat(top, "dangling", O_WRONLY | O_CREAT | O_NOFOLLOW, 0644));
  E(openat(top, "link-to-a", O_RDONLY | O_NOFOLLOW));
  ls(dd, "final"); closedir(dd);
  return 0;
}
C
gcc -o "$b/p" "$b/p.c" && "$b/p"
ls -ln dir1 | awk 'NR>1 {print $1, $3, $4, $NF}'
