# C: openat2 RESOLVE_* flags, dirfd errors (EBADF, ENOTDIR, absolute paths ignore dirfd),
# O_NOATIME as a user, mknod of devices by root and a user,
# faccessat2 AT_EACCESS with real and effective ids apart, fchownat AT_EMPTY_PATH
b=$(mktemp -d /tmp/gccB.XXXXXX); trap 'rm -rf "$b"' EXIT
cat > "$b/p.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#define E(x) do { errno = 0; long r_ = (long)(x); printf("%-66s %s\n", #x, r_ < 0 ? strerror(errno) : "ok"); } while (0)
static long o2(int d, const char *p, unsigned long long fl, unsigned long long res) {
  struct open_how h = {.flags = fl, .resolve = res};
  return syscall(SYS_openat2, d, p, &h, sizeof h);
}
int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int d = open("dir1", O_RDONLY | O_DIRECTORY), f = open("a.txt", O_RDONLY);
  symlink("../a.txt", "dir1/up"); symlink("/etc/passwd", "dir1/abs"); symlink("c.txt", "dir1/in");
  E(o2(d, "c.txt", O_RDONLY, RESOLVE_BENEATH));
  E(o2(d, "../a.txt", O_RDONLY, RESOLVE_BENEATH));
  E(o2(d, "up", O_RDONLY, RESOLVE_BENEATH));
  E(o2(d, "abs", O_RDONLY, RESOLVE_BENEATH));
  E(o2(d, "in", O_RDONLY, RESOLVE_BENEATH));
  E(o2(d, "in", O_RDONLY, RESOLVE_NO_SYMLINKS));
  E(o2(d, "sub/../c.txt", O_RDONLY, RESOLVE_NO_SYMLINKS));
  E(o2(AT_FDCWD, "link-to-a", O_RDONLY, RESOLVE_NO_SYMLINKS));
  E(o2(d, "/a.txt", O_RDONLY, RESOLVE_IN_ROOT));
  E(o2(d, "/c.txt", O_RDONLY, RESOLVE_IN_ROOT));
  E(o2(d, "../../c.txt", O_RDONLY, RESOLVE_IN_ROOT));
  E(o2(d, "up", O_RDONLY, RESOLVE_IN_ROOT));
  E(o2(d, "new", O_CREAT | O_WRONLY, RESOLVE_BENEATH));
  E(o2(d, "c.txt", O_RDONLY, 1ULL << 40));
  E(o2(d, "/proc/self/exe", O_RDONLY, RESOLVE_NO_MAGICLINKS));
  E(openat(f, "x", O_RDONLY));
  E(openat(-5, "a.txt", O_RDONLY));
  E(openat(-5, "/dev/null", O_RDONLY));
  E(openat(f, "/dev/null", O_RDONLY));
  E(mkdirat(f, "x", 0755));
  E(fstatat(-5, "", &(struct stat){0}, AT_EMPTY_PATH));
  E(fstatat(f, "", &(struct stat){0}, 0));
  E(unlinkat(d, "in", 0x1234));
  E(mknod("chr", S_IFCHR | 0644, makedev(1, 3)));
  E(mknod("reg", S_IFREG | 0600, 0));
  E(mknod("bad", 0170000 | 0600, 0));
  E(fchownat(f, "", 1000, 1000, AT_EMPTY_PATH));
  struct stat st; stat("a.txt", &st); printf("a.txt owner %d\n", st.st_uid);

  pid_t p = fork();
  if (p == 0) {
    setgroups(0, NULL); setresgid(1000, 1000, 1000); setresuid(1000, 1000, 1000);
    E(open("ro.txt", O_RDONLY | O_NOATIME));
    E(open("a.txt", O_RDONLY | O_NOATIME));
    E(mknod("userdir/chr", S_IFCHR | 0644, makedev(1, 3)));
    E(mknod("userdir/fifo", S_IFIFO | 0644, 0));
    E(mknod("userdir/reg", S_IFREG | 0644, 0));
    E(fchownat(f, "", 1001, 1001, AT_EMPTY_PATH));
    _exit(0);
  }
  waitpid(p, NULL, 0);
  p = fork();
  if (p == 0) {
    setgroups(0, NULL); setresgid(1000, 1000, 1000); setresuid(1000, 0, 0);
    E(syscall(SYS_faccessat2, AT_FDCWD, "b.txt", R_OK, 0));
    E(syscall(SYS_faccessat2, AT_FDCWD, "b.txt", R_OK, AT_EACCESS));
    E(syscall(SYS_faccessat2, AT_FDCWD, "user.txt", W_OK, 0));
    E(syscall(SYS_faccessat2, AT_FDCWD, "user.txt", W_OK, AT_EACCESS));
    E(syscall(SYS_faccessat2, AT_FDCWD, "link-to-a", F_OK, AT_SYMLINK_NOFOLLOW));
    E(syscall(SYS_faccessat2, AT_FDCWD, "dangling", F_OK, AT_SYMLINK_NOFOLLOW));
    E(syscall(SYS_faccessat2, AT_FDCWD, "dangling", F_OK, 0));
    E(syscall(SYS_faccessat2, AT_FDCWD, "a.txt", 8, 0));
    E(syscall(SYS_faccessat2, AT_FDCWD, "a.txt", F_OK, 0x8000));
    E(access("exec.sh", X_OK));
    E(access("dir1", X_OK));
    _exit(0);
  }
  waitpid(p, NULL, 0);
  return 0;
}
C
gcc -o "$b/p" "$b/p.c" && "$b/p"
ls -ln | awk 'NR>1 && /chr|reg/ {print $1, $3, $5, $6, $NF}'
