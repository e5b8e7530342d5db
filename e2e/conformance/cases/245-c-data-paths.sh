# C: data written through one name seen through others: mmap MAP_SHARED writes, copy_file_range
# and sendfile between tree files, fallocate punch-hole/keep-size, truncate via a hard link,
# pread after rename of the file, O_TRUNC through a symlink
b=$(mktemp -d /tmp/gccB.XXXXXX); trap 'rm -rf "$b"' EXIT
cat > "$b/p.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>
#define E(x) do { errno = 0; long r_ = (long)(x); printf("%-62s %s\n", #x, r_ < 0 ? strerror(errno) : "ok"); } while (0)
static void cat(const char *p) { char b[200]; int f = open(p, O_RDONLY); ssize_t n = f < 0 ? -1 : read(f, b, sizeof b - 1); if (f >= 0) close(f); printf("%s = %s", p, n < 0 ? "(none)\n" : (b[n] = 0, b)); }
static long sz(const char *p) { struct stat st; return stat(p, &st) ? -1 : (long)st.st_size; }
int main(void) {
  int f = open("hard-a", O_RDWR);
  char *m = mmap(NULL, 6, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  memcpy(m, "ALPHA", 5); msync(m, 6, MS_SYNC); munmap(m, 6); close(f);
  cat("a.txt"); cat("link-to-a");
  int in = open("dir1/c.txt", O_RDONLY), out = open("cfr", O_CREAT | O_WRONLY, 0644);
  E(copy_file_range(in, NULL, out, NULL, 100, 0)); close(out);
  off_t off = 0; out = open("sf", O_CREAT | O_WRONLY, 0644); lseek(in, 0, SEEK_SET);
  E(sendfile(out, in, &off, 100)); close(out); close(in);
  cat("cfr"); cat("sf");
  f = open("big.bin", O_RDWR);
  E(fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
  E(fallocate(f, FALLOC_FL_KEEP_SIZE, 1048576, 8192));
  E(fallocate(f, 0, 1048576, 100)); close(f);
  printf("big size %ld\n", sz("big.bin"));
  f = open("big.bin", O_RDONLY); char b[8]; pread(f, b, 8, 0); printf("hole zero: %d\n", b[0] == 0 && b[7] == 0); close(f);
  E(truncate("hard-a", 2)); printf("a.txt size %ld\n", sz("a.txt"));
  f = open("dir1/sub/d.txt", O_RDONLY);
  E(rename("dir1", "dir1-moved")); E(rename("dir1-moved/sub/d.txt", "d-out"));
  E(unlink("d-out"));
  char r[10] = {0}; E(pread(f, r, 5, 0)); printf("pread after unlink: %s\n", r); close(f);
  f = open("link-to-a", O_WRONLY | O_TRUNC); write(f, "via link\n", 9); close(f);
  cat("a.txt"); cat("hard-a");
  f = open("dangling", O_WRONLY | O_CREAT, 0600); write(f, "made\n", 5); close(f);
  cat("nowhere");
  f = open("wr", O_CREAT | O_RDWR | O_TRUNC, 0644); write(f, "0123456789", 10);
  int g = open("wr", O_RDONLY); lseek(f, 20, SEEK_SET); write(f, "Z", 1);
  printf("sparse size %ld\n", sz("wr")); char x[30]; printf("read %zd\n", read(g, x, 30));
  int dupf = dup(f); E(ftruncate(dupf, 4)); printf("size via dup %ld\n", sz("wr"));
  E(unlink("wr")); E(fchmod(f, 0600)); struct stat st; fstat(g, &st); printf("unlinked nlink %ld mode %o\n", (long)st.st_nlink, st.st_mode & 0777);
  return 0;
}
C
gcc -o "$b/p" "$b/p.c" && "$b/p"
