// Opens the program argv[1] as root, becomes uid and gid 1000 and
// executes it through that descriptor (execveat AT_EMPTY_PATH) with the
// rest of argv: the kernel walks no directory with uid 1000's ids.
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 3)
		return 2;
	int fd = open(argv[1], O_PATH | O_CLOEXEC);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000)) {
		perror("set ids");
		return 1;
	}
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	syscall(SYS_execveat, fd, "", argv + 2, env, AT_EMPTY_PATH);
	perror("execveat");
	return 1;
}
