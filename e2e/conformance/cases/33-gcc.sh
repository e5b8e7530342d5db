# compile a C program inside the view (gcc writes temp files, links), then run it
cat > hello.c <<'C'
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
int main(int argc, char **argv) {
    char exe[4096], cwd[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    if (getcwd(cwd, sizeof cwd) && strncmp(exe, cwd, strlen(cwd)) == 0)
        printf("exe=.%s\n", exe + strlen(cwd));
    else
        printf("exe outside cwd: %s\n", exe);
    int fd = open("from-c.txt", O_CREAT | O_WRONLY | O_TRUNC, 0640);
    if (fd < 0) { perror("open"); return 1; }
    write(fd, "written by c\n", 13);
    close(fd);
    printf("hello from %s\n", argc > 1 ? argv[1] : "c");
    return 0;
}
C
gcc -O1 -o hello hello.c
./hello compiled
cat from-c.txt
stat -c '%a' hello from-c.txt
mkdir obj
gcc -c -o obj/hello.o hello.c && gcc -o obj/hello2 obj/hello.o && obj/hello2 linked
printf 'all: prog\nprog: hello.c\n\tgcc -o prog hello.c\n' > Makefile
make -s && ./prog made
TMPDIR=$PWD/tmpd; mkdir tmpd; export TMPDIR; gcc -pipe -o hello3 hello.c && ./hello3 tmpdir && ls tmpd | wc -l
