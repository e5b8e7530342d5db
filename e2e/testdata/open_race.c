/*
 * open_race ALLOWED SECRET N: thread A calls open(buf, O_RDONLY) N times
 * while thread B keeps rewriting buf between ALLOWED and SECRET (same
 * length). A path call whose argument the supervisor checked and then let
 * the kernel re-read (CONTINUE) could open SECRET although the supervisor
 * refused it; this fixture counts what each open actually reached by the
 * file's content: ALLOWED must contain "allowed", SECRET "SECRET".
 *
 * Prints: allowed=N secret=N EACCES=N ENOENT=N other=N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[4096];
static const char *allowed, *secret;
static atomic_int stop;
static atomic_uint flips;

static void *flipper(void *arg)
{
	(void)arg;
	size_t n = strlen(allowed) + 1;
	for (unsigned i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		/* Volatile stores: the compiler must not merge the flips. */
		const char *src = (i & 1) ? secret : allowed;
		for (size_t j = 0; j < n; j++)
			((volatile char *)buf)[j] = src[j];
		atomic_store_explicit(&flips, i + 1, memory_order_relaxed);
		/* Yield now and then, after either path (257 is odd). */
		if (i % 257 == 0)
			sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4 || strlen(argv[1]) != strlen(argv[2])) {
		fprintf(stderr, "usage: open_race ALLOWED SECRET N (paths of equal length)\n");
		return 2;
	}
	allowed = argv[1];
	secret = argv[2];
	long n = atol(argv[3]);
	strcpy(buf, allowed);
	pthread_t th;
	if (pthread_create(&th, NULL, flipper, NULL) != 0) {
		perror("pthread_create");
		return 2;
	}
	long nallowed = 0, nsecret = 0, neacces = 0, nenoent = 0, nother = 0;
	unsigned seen = 0;
	for (long i = 0; i < n; i++) {
		/*
		 * Natively an open is far shorter than a time slice: wait for
		 * the next flip, so that both paths are tried whatever the
		 * scheduler does with the flipper.
		 */
		while (atomic_load_explicit(&flips, memory_order_relaxed) == seen)
			sched_yield();
		seen = atomic_load_explicit(&flips, memory_order_relaxed);
		int fd = open(buf, O_RDONLY);
		if (fd < 0) {
			if (errno == EACCES)
				neacces++;
			else if (errno == ENOENT)
				nenoent++;
			else {
				nother++;
				fprintf(stderr, "open_race: open: %s\n", strerrorname_np(errno));
			}
			continue;
		}
		char c[16] = {0};
		ssize_t r = read(fd, c, sizeof c - 1);
		if (r > 0 && strncmp(c, "SECRET", 6) == 0)
			nsecret++;
		else if (r > 0 && strncmp(c, "allowed", 7) == 0)
			nallowed++;
		else {
			nother++;
			char link[64], target[4096] = {0};
			snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
			ssize_t tn = readlink(link, target, sizeof target - 1);
			fprintf(stderr, "open_race: open returned %d: %s (read %zd bytes: %.15s; %s)\n", fd,
				tn > 0 ? target : "?", r, c, r < 0 ? strerrorname_np(errno) : "");
		}
		close(fd);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("allowed=%ld secret=%ld EACCES=%ld ENOENT=%ld other=%ld\n",
	       nallowed, nsecret, neacces, nenoent, nother);
	return nsecret == 0 ? 0 : 1;
}
