// fastlookups: the programs of e2e/fastlookups_test.go (--fast-lookups).
// Each mode prints what its calls returned, so that a run under txexec
// compares with a native one:
//   loop N PATH     stat PATH N times
//   mix N DIR       N rounds of stat, lstat, statx, access, faccessat2,
//                   readlink and readlinkat of DIR's fixtures (a file, a
//                   symlink to it, a dangling symlink, a path with "..",
//                   a relative path, a missing file), each from one call
//                   site, so that every site is rewritten after its first
//   threads N PATH  a second thread, then stat PATH N times
//   closeall N PATH every descriptor closed, then stat PATH N times
//   vfork N PATH    a vfork child stats PATH N times, then the parent
//   chroot N DIR    stat /file N times, chroot to DIR, stat /file N times
//                   (DIR's), then execute /fastlookups-static loop N /file
//                   there
//   agent N open|stat DIR
//                   N calls made from the agent page's own system-call
//                   instruction (its first bytes, at the fixed address):
//                   openat(DIR/f, O_WRONLY|O_CREAT) and unlink, or stat
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define AGENT_BASE 0x7ff00000UL

static unsigned long sum;

static void out(const char *what, long ret, unsigned long v) {
	printf("%s ret=%ld errno=%d v=%lu\n", what, ret, ret < 0 ? errno : 0, v);
}

static int stat_loop(long n, const char *path) {
	struct stat st;
	for (long i = 0; i < n; i++) {
		if (stat(path, &st) != 0) {
			perror(path);
			return 1;
		}
		sum += st.st_ino;
	}
	printf("stat %s ino=%lu size=%ld sum=%lu\n", path, (unsigned long)st.st_ino, (long)st.st_size, sum);
	return 0;
}

static void *idle(void *arg) {
	(void)arg;
	pause();
	return NULL;
}

static int mix(long n, const char *dir) {
	char file[4096], link[4096], dangling[4096], dotdot[4096], missing[4096];
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(dangling, sizeof dangling, "%s/dangling", dir);
	snprintf(dotdot, sizeof dotdot, "%s/sub/../file", dir);
	snprintf(missing, sizeof missing, "%s/missing", dir);
	const char *paths[] = {file, link, dangling, dotdot, missing, "file", "/proc/version", "/"};
	for (long r = 0; r < n; r++) {
		int last = r == n - 1;
		for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
			const char *p = paths[i];
			struct stat st;
			struct statx sx;
			char buf[256];
			long ret;
			errno = 0;
			memset(&st, 0, sizeof st);
			ret = stat(p, &st);
			if (last) out(p, ret, ret == 0 ? (unsigned long)st.st_ino ^ st.st_mode : 0);
			errno = 0;
			memset(&st, 0, sizeof st);
			ret = lstat(p, &st);
			if (last) out(p, ret, ret == 0 ? (unsigned long)st.st_ino ^ st.st_mode : 0);
			errno = 0;
			memset(&sx, 0, sizeof sx);
			ret = statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx);
			if (last) out(p, ret, ret == 0 ? (unsigned long)sx.stx_ino ^ sx.stx_mode : 0);
			errno = 0;
			ret = access(p, R_OK);
			if (last) out(p, ret, 0);
			errno = 0;
			ret = syscall(SYS_faccessat2, AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW);
			if (last) out(p, ret, 0);
			errno = 0;
			ret = readlink(p, buf, sizeof buf);
			if (last) out(p, ret, ret > 0 ? (unsigned long)buf[0] : 0);
			errno = 0;
			ret = readlinkat(AT_FDCWD, p, buf, sizeof buf);
			if (last) out(p, ret, ret > 0 ? (unsigned long)buf[0] : 0);
		}
	}
	return 0;
}

typedef long (*syscall6)(long, long, long, long, long, long, long);

static int agent(long n, const char *what, const char *dir) {
	char path[4096];
	snprintf(path, sizeof path, "%s/f", dir);
	syscall6 agent_syscall = (syscall6)AGENT_BASE; // agent_syscall6, at the page's start
	for (long i = 0; i < n; i++) {
		long r;
		if (strcmp(what, "open") == 0) {
			r = agent_syscall(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT, 0644, 0, 0);
			if (r < 0) {
				fprintf(stderr, "openat: %s\n", strerror((int)-r));
				return 1;
			}
			close((int)r);
			r = agent_syscall(SYS_unlink, (long)path, 0, 0, 0, 0, 0);
		} else {
			struct stat st;
			r = agent_syscall(SYS_newfstatat, AT_FDCWD, (long)dir, (long)&st, 0, 0, 0);
		}
		if (r != 0) {
			fprintf(stderr, "%s: %s\n", what, strerror((int)-r));
			return 1;
		}
	}
	printf("agent %s %ld\n", what, n);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: fastlookups MODE N ARG...\n");
		return 2;
	}
	const char *mode = argv[1];
	long n = atol(argv[2]);
	if (strcmp(mode, "loop") == 0)
		return stat_loop(n, argv[3]);
	if (strcmp(mode, "mix") == 0)
		return mix(n, argv[3]);
	if (strcmp(mode, "threads") == 0) {
		pthread_t th;
		if (pthread_create(&th, NULL, idle, NULL) != 0)
			return 1;
		return stat_loop(n, argv[3]);
	}
	if (strcmp(mode, "closeall") == 0) {
		for (int fd = 0; fd < 1024; fd++)
			if (fd != 1)
				close(fd);
		return stat_loop(n, argv[3]);
	}
	if (strcmp(mode, "vfork") == 0) {
		pid_t pid = vfork();
		if (pid == 0) {
			struct stat st;
			for (long i = 0; i < n; i++)
				if (stat(argv[3], &st) != 0)
					_exit(1);
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 1;
		return stat_loop(n, argv[3]);
	}
	if (strcmp(mode, "chroot") == 0) {
		struct stat st;
		for (long i = 0; i < n; i++)
			if (stat("/file", &st) == 0 || errno != ENOENT) {
				fprintf(stderr, "/file before chroot: %s\n", strerror(errno));
				return 1;
			}
		if (chroot(argv[3]) != 0 || chdir("/") != 0) {
			perror("chroot");
			return 1;
		}
		if (stat_loop(n, "/file") != 0)
			return 1;
		fflush(stdout);
		execl("/fastlookups-static", "fastlookups", "loop", argv[2], "/file", (char *)NULL);
		perror("execl");
		return 1;
	}
	if (strcmp(mode, "agent") == 0 && argc == 5)
		return agent(n, argv[3], argv[4]);
	fprintf(stderr, "fastlookups: unknown mode %s\n", mode);
	return 2;
}
