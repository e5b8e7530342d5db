/*
 * fuzz SEED MILLISECONDS PROCESSES THREADS CALLS: makes random system calls
 * from PROCESSES forked processes of THREADS threads each, for MILLISECONDS,
 * then exits 0 with one line per process on stdout ("pid N: M calls").
 *
 * CALLS is a file of lines "NR" or "NR ARG VALUE": the calls to make, and
 * for a call served only for some values of one argument (an ioctl
 * request), that value. The arguments are random, from a PRNG seeded with
 * SEED and the process and thread numbers: NULL, unmapped, kernel-half and
 * page-crossing pointers, pointers to random bytes and to random paths,
 * small and huge and negative numbers, every flag bit, descriptors it has
 * and has not. Pointers never reach the fuzzer's own data, so what the
 * kernel or the supervisor writes through them cannot crash it.
 *
 * The processes end by the clock, whatever their threads are blocked in
 * (an open of a FIFO it made, a lock): exit_group kills them all.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct call {
	long nr;
	int arg; /* -1: no fixed argument */
	unsigned long value;
};

static struct call *calls;
static int ncalls;
static unsigned long seed;

/* The arena: pages the pointers may point into (random bytes, paths),
 * followed by a PROT_NONE page, so that a pointer near its end crosses
 * into unmapped memory. */
#define ARENA_PAGES 16
static char *arena;
static long page;

static const char *paths[] = {
	"", ".", "..", "/", "f", "g", "d", "d/f", "d/sub", "d/../f", "link", "dangling",
	"fifo", "sock", "new", "new/deeper", "d/", "f/", "./f", "//f", "/tmp", "/etc/passwd",
	"/etc", "/proc/self/fd/0", "/proc/self/cwd", "/proc/self/root", "/proc/self/mem",
	"/proc/sys/kernel/hostname", "/dev/null", "/dev/fd/3", "/sys/kernel", "/nonexistent/x",
	"f\n", "d/f/..", "../../../../../../../../etc/shadow", "link/x",
};

static uint64_t next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A pointer argument: into the arena (a random path, random bytes, or a
 * string that runs into the unmapped page), or one that faults. */
static unsigned long pointer(uint64_t *s, char *mine)
{
	uint64_t r = next(s);
	switch (r % 10) {
	case 0:
		return 0;
	case 1:
		return 0xffff800000000000ULL + (next(s) & 0xffffffULL); /* kernel half */
	case 2:
		return (unsigned long)arena + ARENA_PAGES * page + (next(s) % page); /* unmapped */
	case 3: {
		/* page-crossing: a string with no terminator before the unmapped page */
		size_t n = 1 + next(s) % 64;
		char *p = arena + ARENA_PAGES * page - n;
		memset(p, 'a' + (int)(next(s) % 26), n);
		return (unsigned long)p;
	}
	case 4:
		return 1 + next(s) % 4096; /* low, unmapped */
	case 5:
		for (size_t i = 0; i < (size_t)page; i++)
			mine[i] = (char)next(s);
		return (unsigned long)mine + next(s) % page;
	default: {
		const char *p = paths[next(s) % (sizeof paths / sizeof *paths)];
		strcpy(mine, p);
		return (unsigned long)mine;
	}
	}
}

static unsigned long number(uint64_t *s)
{
	uint64_t r = next(s);
	switch (r % 12) {
	case 0:
		return 0;
	case 1:
		return -1UL;
	case 2:
		return (unsigned long)(int)-100; /* AT_FDCWD */
	case 3:
		return next(s) % 16; /* a small descriptor or flag set */
	case 4:
		return 1UL << (next(s) % 64); /* one flag bit */
	case 5:
		return next(s); /* every bit */
	case 6:
		return 0x7fffffffUL;
	case 7:
		return 0x80000000UL;
	case 8:
		return (unsigned long)(long)(int)next(s); /* a negative int */
	case 9:
		return next(s) & 0xfff; /* a mode */
	default:
		return next(s) % 1024;
	}
}

struct worker {
	uint64_t state;
	char *mine; /* this thread's page of the arena */
	unsigned long count;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	for (;;) {
		struct call *c = &calls[next(&w->state) % ncalls];
		unsigned long a[6];
		for (int i = 0; i < 6; i++)
			a[i] = next(&w->state) % 2 ? pointer(&w->state, w->mine) : number(&w->state);
		if (c->arg >= 0)
			a[c->arg] = c->value;
		long r = syscall(c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		/* Most results are sizes or 0; a large one may be a descriptor
		 * the call made: closing it keeps the table from filling up
		 * (below 16 are the ones it started with, which may go too). */
		if (r >= 16 && r < 4096)
			close(r);
		__atomic_add_fetch(&w->count, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void fuzz_process(int proc, int threads, long ms)
{
	struct worker *w = calloc(threads, sizeof *w);
	for (int i = 0; i < threads; i++) {
		w[i].state = seed * 1000003 + proc * 1009 + i;
		w[i].mine = arena + (size_t)(i % ARENA_PAGES) * page;
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 1 << 20);
		if (pthread_create(&t, &at, work, &w[i]) != 0) {
			perror("pthread_create");
			_exit(1);
		}
	}
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0)
		;
	unsigned long total = 0;
	for (int i = 0; i < threads; i++)
		total += __atomic_load_n(&w[i].count, __ATOMIC_RELAXED);
	printf("process %d: %lu calls\n", proc, total);
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: fuzz SEED MILLISECONDS PROCESSES THREADS CALLS\n");
		return 2;
	}
	seed = strtoul(argv[1], NULL, 0);
	long ms = atol(argv[2]);
	int procs = atoi(argv[3]), threads = atoi(argv[4]);
	FILE *f = fopen(argv[5], "r");
	if (!f) {
		perror(argv[5]);
		return 2;
	}
	char line[128];
	while (fgets(line, sizeof line, f)) {
		calls = realloc(calls, (ncalls + 1) * sizeof *calls);
		struct call *c = &calls[ncalls];
		c->arg = -1;
		if (sscanf(line, "%ld %d %li", &c->nr, &c->arg, &c->value) >= 1)
			ncalls++;
	}
	fclose(f);
	if (ncalls == 0) {
		fprintf(stderr, "fuzz: no calls in %s\n", argv[5]);
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	arena = mmap(NULL, (ARENA_PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED || mprotect(arena + ARENA_PAGES * page, page, PROT_NONE) != 0) {
		perror("arena");
		return 1;
	}
	/* Descriptors to pass around: a file, a directory, a pipe. */
	open("f", O_RDWR | O_CREAT, 0644);
	open(".", O_RDONLY | O_DIRECTORY);
	int p[2];
	pipe(p);
	setvbuf(stdout, NULL, _IOLBF, 0);
	pid_t *kids = calloc(procs, sizeof *kids);
	for (int i = 0; i < procs; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			fuzz_process(i + 1, threads, ms);
		if (kids[i] < 0) {
			perror("fork");
			return 1;
		}
	}
	for (int i = 0; i < procs; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) < 0) {
			perror("waitpid");
			return 1;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			printf("process %d: status %#x\n", i + 1, st);
	}
	return 0;
}
