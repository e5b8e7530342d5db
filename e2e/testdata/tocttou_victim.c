// A check-then-use victim, the classic TOCTTOU pattern: lstat says PATH is a
// regular file owned by the real user, then PATH is opened and written.
// Between the check and the use it writes "checked" to the FIFO READY and
// waits for a byte on the FIFO GO, so that the test opens the window at
// will instead of racing it. Run setuid-root by an ordinary user, it is the
// textbook privileged victim. It first reports its real and effective uid on
// stdout, so that a test can tell the setuid bit took effect: a victim that
// lost its privilege would still pass its own check and write.
//
//   tocttou_victim PATH READY GO
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s PATH READY GO\n", argv[0]);
		return 2;
	}
	printf("victim: uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
	fflush(stdout);
	struct stat st;
	// A look at PATH's directory first: under --fast-lookups this call
	// rewrites lstat's call site, and the directory is one the
	// supervisor walked, so that the check below runs in the agent.
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", argv[1]);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	lstat(dir, &st);
	if (lstat(argv[1], &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
		fprintf(stderr, "victim: refusing %s\n", argv[1]);
		return 3;
	}
	int r = open(argv[2], O_WRONLY);
	if (r < 0 || write(r, "checked\n", 8) != 8) {
		perror("victim: ready");
		return 4;
	}
	close(r);
	char b;
	int g = open(argv[3], O_RDONLY);
	if (g < 0 || read(g, &b, 1) != 1) {
		perror("victim: go");
		return 4;
	}
	close(g);
	int fd = open(argv[1], O_WRONLY | O_TRUNC);
	if (fd < 0) {
		perror("victim: open");
		return 5;
	}
	const char *msg = "written by the victim\n";
	if (write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		perror("victim: write");
		return 6;
	}
	close(fd);
	return 0;
}
