/*
 * errno_probe OP PATH...: performs one file-system operation per PATH and
 * prints "OP PATH: ok" or "OP PATH: ENAME" (the errno's name). Used to compare
 * the errnos of an unprivileged caller natively and under txexec.
 *
 *   read    open(O_RDONLY)           write   open(O_WRONLY)
 *   create  open(O_CREAT|O_EXCL)     mkdir   mkdir(0755)
 *   chmod   chmod(0644)              chown   chown(getuid(), -1)
 *   unlink  unlink                   utime   utimensat(NULL times)
 *   stat    stat
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int op(const char *name, const char *path)
{
	struct stat st;
	int fd;
	if (strcmp(name, "read") == 0) {
		if ((fd = open(path, O_RDONLY)) < 0)
			return -1;
		return close(fd);
	}
	if (strcmp(name, "write") == 0) {
		if ((fd = open(path, O_WRONLY)) < 0)
			return -1;
		return close(fd);
	}
	if (strcmp(name, "create") == 0) {
		if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0)
			return -1;
		return close(fd);
	}
	if (strcmp(name, "mkdir") == 0)
		return mkdir(path, 0755);
	if (strcmp(name, "chmod") == 0)
		return chmod(path, 0644);
	if (strcmp(name, "chown") == 0)
		return chown(path, getuid(), -1);
	if (strcmp(name, "unlink") == 0)
		return unlink(path);
	if (strcmp(name, "utime") == 0)
		return utimensat(AT_FDCWD, path, NULL, 0);
	if (strcmp(name, "stat") == 0)
		return stat(path, &st);
	errno = EINVAL;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: errno_probe OP PATH...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (op(argv[1], argv[i]) == 0)
			printf("%s %s: ok\n", argv[1], argv[i]);
		else
			printf("%s %s: %s\n", argv[1], argv[i], strerrorname_np(errno));
	}
	return 0;
}
