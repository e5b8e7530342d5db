/* txapi: the in-program transaction API (include/txexec.h) under test.
 *
 *   txapi probe                      xbegin's answer: "ok" or the errno's name
 *   txapi counter FILE THREADS N     THREADS threads × N xrun increments of FILE
 *   txapi abort DIR LOG              writes DIR/a, b, c and a line to LOG
 *                                    between xpause and xresume, then xabort
 *   txapi ordered DIR THREADS        TX_ORDERED: thread i appends i to DIR/order
 *                                    in sequence order, whatever the timing
 *   txapi exit FILE                  writes FILE in a transaction, then the
 *                                    process exits inside it (status 3)
 *   txapi unsupported FLAGS FILE     writes FILE, then calls io_uring_setup (no
 *                                    transactional meaning) in a transaction
 *                                    begun with FLAGS
 *   txapi isolation FILE             a thread writes FILE in a transaction; another
 *                                    thread of the process reads it before and after
 *                                    the commit
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "txexec.h"

static const char *errname(int e)
{
	switch (e) {
	case ENOSYS: return "ENOSYS";
	case EAGAIN: return "EAGAIN";
	case ECANCELED: return "ECANCELED";
	case EINVAL: return "EINVAL";
	case EBUSY: return "EBUSY";
	case EIO: return "EIO";
	case ENOTSUP: return "ENOTSUP";
	}
	return strerror(e);
}

/* try_write_file writes data to path: 0, or -1 with errno. */
static int try_write_file(const char *path, const char *data, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void write_file(const char *path, const char *data, int flags)
{
	if (try_write_file(path, data, flags) != 0) {
		perror(path);
		exit(1);
	}
}

static const char *counter_path;
static int counter_n;

static int increment(void *arg)
{
	(void)arg;
	char buf[64] = {0};
	int fd = open(counter_path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return -1;
	char out[64];
	snprintf(out, sizeof out, "%ld\n", strtol(buf, NULL, 10) + 1);
	/* A transaction that lost a conflict answers ESTALE from then on:
	 * failing lets xrun run it again. */
	return try_write_file(counter_path, out, O_TRUNC);
}

static void *counter_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < counter_n; i++) {
		if (xrun(increment, NULL, 0) != 0) {
			fprintf(stderr, "xrun: %s\n", errname(errno));
			exit(1);
		}
	}
	return NULL;
}

static const char *order_dir;
static long ordered_n;

static void *ordered_thread(void *arg)
{
	long i = (long)arg;
	/* The later numbers start first: the order is the commits', not the
	 * threads'. */
	usleep((unsigned)(1000 * (ordered_n - i)));
	for (;;) {
		if (xbegin_ordered(0, (unsigned long)i) < 0) {
			fprintf(stderr, "xbegin_ordered: %s\n", errname(errno));
			exit(1);
		}
		char path[4096], line[32];
		snprintf(path, sizeof path, "%s/order", order_dir);
		snprintf(line, sizeof line, "%ld\n", i);
		(void)try_write_file(path, line, O_APPEND); /* ESTALE after a conflict: xend says EAGAIN */
		if (xend() == 0)
			return NULL;
		if (errno != EAGAIN) {
			fprintf(stderr, "xend: %s\n", errname(errno));
			exit(1);
		}
	}
}

static int handoff[2], back[2];

static void *outside_thread(void *arg)
{
	const char *path = arg;
	char c, buf[64];
	for (int round = 0; round < 2; round++) {
		if (read(handoff[0], &c, 1) != 1)
			exit(1);
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n < 0 ? 0 : n] = 0;
		printf("%s: %s", round == 0 ? "before commit" : "after commit", buf);
		fflush(stdout);
		if (write(back[1], "x", 1) != 1)
			exit(1);
	}
	return NULL;
}

static int isolation(const char *path)
{
	pthread_t t;
	char c;
	if (pipe(handoff) != 0 || pipe(back) != 0)
		return 1;
	pthread_create(&t, NULL, outside_thread, (void *)path);
	if (xbegin(0) < 0) {
		perror("xbegin");
		return 1;
	}
	write_file(path, "written in the transaction\n", O_TRUNC);
	if (write(handoff[1], "x", 1) != 1 || read(back[0], &c, 1) != 1)
		return 1;
	if (xend() != 0) {
		perror("xend");
		return 1;
	}
	if (write(handoff[1], "x", 1) != 1 || read(back[0], &c, 1) != 1)
		return 1;
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "exit") == 0) {
		if (xbegin(0) < 0) {
			perror("xbegin");
			return 1;
		}
		write_file(argv[2], "written in the transaction\n", O_TRUNC);
		_exit(3);
	}
	if (argc == 4 && strcmp(argv[1], "unsupported") == 0) {
		if (xbegin((unsigned)atoi(argv[2])) < 0) {
			perror("xbegin");
			return 1;
		}
		write_file(argv[3], "written in the transaction\n", O_TRUNC);
		char params[120] = {0}; /* struct io_uring_params */
		long r = syscall(SYS_io_uring_setup, 1, params);
		printf("io_uring_setup=%ld %s\n", r, r < 0 ? errname(errno) : "");
		r = xend();
		printf("xend=%ld %s\n", r, r < 0 ? errname(errno) : "");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "commit") == 0) {
		if (xbegin((unsigned)atoi(argv[2])) < 0) {
			perror("xbegin");
			return 1;
		}
		write_file(argv[3], "written in the transaction\n", O_TRUNC);
		long r = xend();
		printf("xend=%ld %s\n", r, r < 0 ? errname(errno) : "");
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "isolation") == 0)
		return isolation(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "probe") == 0) {
		if (xbegin(0) < 0) {
			printf("%s\n", errname(errno));
			return 0;
		}
		printf("ok\n");
		return xend() == 0 ? 0 : 1;
	}
	if (argc == 5 && strcmp(argv[1], "counter") == 0) {
		counter_path = argv[2];
		int threads = atoi(argv[3]);
		counter_n = atoi(argv[4]);
		pthread_t t[64];
		for (int i = 0; i < threads; i++)
			pthread_create(&t[i], NULL, counter_thread, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "abort") == 0) {
		char path[4096];
		if (xbegin(0) < 0) {
			perror("xbegin");
			return 1;
		}
		for (const char *name = "abc"; *name; name++) {
			snprintf(path, sizeof path, "%s/%c", argv[2], *name);
			write_file(path, "changed inside the transaction\n", O_TRUNC);
		}
		if (xpause() != 0 || (write_file(argv[3], "logged while paused\n", O_APPEND), xresume() != 0)) {
			perror("xpause/xresume");
			return 1;
		}
		snprintf(path, sizeof path, "%s/d", argv[2]);
		write_file(path, "made after xresume\n", O_TRUNC);
		if (xabort() != 0) {
			perror("xabort");
			return 1;
		}
		long r = xend();
		printf("xend=%ld %s\n", r, r < 0 ? errname(errno) : "");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "ordered") == 0) {
		order_dir = argv[2];
		ordered_n = atol(argv[3]);
		if (ordered_n > 256)
			ordered_n = 256;
		pthread_t t[256];
		for (long i = 0; i < ordered_n; i++)
			pthread_create(&t[i], NULL, ordered_thread, (void *)i);
		for (long i = 0; i < ordered_n; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	fprintf(stderr, "usage: txapi probe | counter FILE THREADS N | abort DIR LOG | ordered DIR THREADS\n");
	return 2;
}
