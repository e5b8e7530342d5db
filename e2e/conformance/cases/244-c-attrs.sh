# C: utimensat UTIME_NOW/UTIME_OMIT by a non-owner with write access (allowed) and explicit
# times (EPERM); setgid bit cleared by chmod from a non-member; chown clears set-id bits;
# setgid directories pass their group and bit on; write by non-owner clears suid
b=$(mktemp -d /tmp/gccB.XXXXXX); trap 'rm -rf "$b"' EXIT
cat > "$b/p.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define E(x) do { errno = 0; long r_ = (long)(x); printf("%-62s %s\n", #x, r_ < 0 ? strerror(errno) : "ok"); } while (0)
static void show(const char *p) { struct stat st; if (lstat(p, &st)) { printf("%s: %s\n", p, strerror(errno)); return; }
  printf("%-14s %06o %d:%d a=%s m=%s\n", p, st.st_mode, st.st_uid, st.st_gid,
    st.st_atime == 1000000000 ? "set" : "-", st.st_mtime == 1000000001 ? "set" : st.st_mtime < 1500000000 ? "old" : "new"); }
int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int f = open("shared", O_CREAT | O_WRONLY, 0666); close(f); chmod("shared", 0666);
  f = open("suid", O_CREAT | O_WRONLY, 0755); close(f); chown("suid", 1000, 1000); chmod("suid", 06755);
  f = open("sgid", O_CREAT | O_WRONLY, 0755); close(f); chown("sgid", 1000, 1001); chmod("sgid", 02775);
  mkdir("sgd", 0777); chown("sgd", 0, 1234); chmod("sgd", 02777);
  struct timespec ts[2] = {{1000000000, 0}, {1000000001, 0}};
  E(utimensat(AT_FDCWD, "a.txt", ts, 0)); show("a.txt");
  E(chown("suid", 1001, -1)); show("suid");
  chmod("suid", 06755); E(chown("suid", -1, -1)); show("suid");
  pid_t p = fork();
  if (p == 0) {
    setgroups(0, NULL); setresgid(1000, 1000, 1000); setresuid(1000, 1000, 1000);
    struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}}, omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    E(utimensat(AT_FDCWD, "shared", ts, 0));
    E(utimensat(AT_FDCWD, "shared", NULL, 0));
    E(utimensat(AT_FDCWD, "shared", now, 0));
    E(utimensat(AT_FDCWD, "shared", omit, 0));
    E(utimensat(AT_FDCWD, "a.txt", NULL, 0));
    struct timespec om2[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    E(utimensat(AT_FDCWD, "a.txt", om2, 0));
    E(utimensat(AT_FDCWD, "b.txt", om2, 0));
    E(chmod("sgid", 02755)); 
    E(chmod("sgid", 02775));
    E(chown("sgid", -1, 1000)); 
    E(chown("user.txt", -1, 1001));
    E(chown("user.txt", -1, 1000));
    int s = open("shared", O_WRONLY); E(write(s, "x", 1)); close(s);
    E(mkdir("sgd/ud", 0777)); E(close(open("sgd/uf", O_CREAT | O_WRONLY, 02777)));
    E(chmod("sgd/uf", 02777));
    _exit(0);
  }
  waitpid(p, NULL, 0);
  show("shared"); show("sgid"); show("user.txt"); show("sgd"); show("sgd/ud"); show("sgd/uf");
  E(mkdir("sgd/rd", 0700)); show("sgd/rd");
  E(mknod("sgd/fifo", S_IFIFO | 0666, 0)); show("sgd/fifo");
  E(link("a.txt", "sgd/hl")); show("sgd/hl");
  E(symlink("x", "sgd/sl")); show("sgd/sl");
  f = open("suid", O_WRONLY); write(f, "w", 1); close(f); show("suid");
  p = fork();
  if (p == 0) {
    setgroups(0, NULL); setresgid(1000, 1000, 1000); setresuid(1000, 1000, 1000);
    chmod("sgid", 06777);
    _exit(0);
  }
  waitpid(p, NULL, 0); show("sgid");
  chown("suid", 1000, 1000); chmod("suid", 06777);
  p = fork();
  if (p == 0) {
    setgroups(0, NULL); setresgid(1001, 1001, 1001); setresuid(1001, 1001, 1001);
    f = open("suid", O_WRONLY); E(write(f, "z", 1)); E(ftruncate(f, 0)); close(f);
    _exit(0);
  }
  waitpid(p, NULL, 0); show("suid");
  return 0;
}
C
gcc -o "$b/p" "$b/p.c" && "$b/p"
