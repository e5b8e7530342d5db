// A set-user-ID check-then-use victim for the wrap tests (e2e/wrap_test.go):
//
//   wrap_victim append PATH TEXT   lstat says PATH is a regular file of the
//                                  real user; it says "checked", waits half
//                                  a second (the window an attacker needs,
//                                  as the victims of Borisov et al. have),
//                                  then appends TEXT and a newline to PATH
//   wrap_victim ids                runs /usr/bin/id -u, then id -ru
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_id(const char *flag) {
	pid_t pid = fork();
	if (pid == 0) {
		execl("/usr/bin/id", "id", flag, (char *)NULL);
		_exit(127);
	}
	int ws;
	if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		return 1;
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "ids") == 0) {
		fflush(stdout);
		return run_id("-u") || run_id("-ru");
	}
	if (argc != 4 || strcmp(argv[1], "append") != 0) {
		fprintf(stderr, "usage: %s append PATH TEXT | ids\n", argv[0]);
		return 2;
	}
	struct stat st;
	if (lstat(argv[2], &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
		fprintf(stderr, "victim: %s is not a file of yours\n", argv[2]);
		return 1;
	}
	printf("checked\n");
	fflush(stdout);
	usleep(500 * 1000);
	int fd = open(argv[2], O_WRONLY | O_APPEND);
	if (fd < 0) {
		perror("victim: open");
		return 3;
	}
	char line[4096];
	int n = snprintf(line, sizeof line, "%s\n", argv[3]);
	if (write(fd, line, n) != n) {
		perror("victim: write");
		return 3;
	}
	return close(fd) != 0;
}
