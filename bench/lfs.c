//go:build ignore

// (The build constraint above keeps the go tool from treating this file as
// cgo source of package bench; workload_test.go embeds it and compiles it
// with cc.)
//
/*
 * lfs: one phase of the LFS small- and large-file benchmarks
 * (Rosenblum and Ousterhout; TxOS, SOSP'09, measures both), one process per
 * phase, so that a phase's time is its system calls and not a shell's.
 * bench/workload_test.go compiles it with "cc -O2" and runs each phase
 * natively and under txexec.
 *
 *   lfs small-create DIR N SIZE    mkdir DIR, then N files DIR/fNNNNN of SIZE bytes
 *   lfs small-read   DIR N SIZE    read each of them whole (and check the size)
 *   lfs small-delete DIR N         unlink each, then rmdir DIR
 *   lfs large-seqwrite  FILE MIB   create FILE, MIB MiB in BLOCK-byte writes in order
 *   lfs large-seqread   FILE MIB   read it in BLOCK-byte reads in order
 *   lfs large-randwrite FILE MIB   overwrite every block once, in a random order
 *   lfs large-randread  FILE MIB   read every block once, in another random order
 *
 * The random orders are permutations from a fixed seed, the same in every
 * run, so native and txexec runs do exactly the same calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 4096

static void die(const char *what, const char *path) {
	fprintf(stderr, "lfs: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static long number(const char *s) {
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v <= 0) {
		fprintf(stderr, "lfs: %s: not a positive number\n", s);
		exit(2);
	}
	return v;
}

static void name(char *buf, size_t n, const char *dir, long i) {
	snprintf(buf, n, "%s/f%05ld", dir, i);
}

static void small_create(const char *dir, long n, long size) {
	char path[4096];
	char *buf = calloc(1, size);
	long i;
	memset(buf, 's', size);
	if (mkdir(dir, 0755) != 0)
		die("mkdir", dir);
	for (i = 0; i < n; i++) {
		int fd;
		name(path, sizeof path, dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			die("create", path);
		if (write(fd, buf, size) != size)
			die("write", path);
		if (close(fd) != 0)
			die("close", path);
	}
	free(buf);
}

static void small_read(const char *dir, long n, long size) {
	char path[4096];
	char *buf = malloc(size + 1);
	long i;
	for (i = 0; i < n; i++) {
		int fd;
		ssize_t got;
		name(path, sizeof path, dir, i);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die("open", path);
		/* One byte more than the size: a short file or a long one shows. */
		got = read(fd, buf, size + 1);
		if (got != size) {
			fprintf(stderr, "lfs: %s: read %zd bytes, want %ld\n", path, got, size);
			exit(1);
		}
		close(fd);
	}
	free(buf);
}

static void small_delete(const char *dir, long n) {
	char path[4096];
	long i;
	for (i = 0; i < n; i++) {
		name(path, sizeof path, dir, i);
		if (unlink(path) != 0)
			die("unlink", path);
	}
	if (rmdir(dir) != 0)
		die("rmdir", dir);
}

/* permutation returns 0..n-1 shuffled (Fisher-Yates, xorshift64 from seed). */
static long *permutation(long n, uint64_t seed) {
	long *p = malloc(n * sizeof *p);
	long i;
	for (i = 0; i < n; i++)
		p[i] = i;
	for (i = n - 1; i > 0; i--) {
		long j, t;
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		j = (long)(seed % (uint64_t)(i + 1));
		t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

static void large(const char *phase, const char *file, long mib) {
	static char buf[BLOCK];
	long blocks = mib * (1024 * 1024 / BLOCK);
	long *order = NULL;
	long i;
	int fd, writing = strstr(phase, "write") != NULL;
	int flags = writing ? O_WRONLY : O_RDONLY;
	if (strcmp(phase, "large-seqwrite") == 0)
		flags |= O_CREAT | O_TRUNC;
	if (strstr(phase, "rand") != NULL)
		order = permutation(blocks, writing ? 0x9e3779b97f4a7c15ull : 0xd1b54a32d192ed03ull);
	memset(buf, writing && order ? 'r' : 'q', sizeof buf);
	fd = open(file, flags, 0644);
	if (fd < 0)
		die("open", file);
	for (i = 0; i < blocks; i++) {
		off_t off = (off_t)(order ? order[i] : i) * BLOCK;
		ssize_t n = writing ? pwrite(fd, buf, BLOCK, off) : pread(fd, buf, BLOCK, off);
		if (n != BLOCK)
			die(writing ? "write" : "read", file);
	}
	if (close(fd) != 0)
		die("close", file);
	free(order);
}

int main(int argc, char **argv) {
	if (argc == 5 && strcmp(argv[1], "small-create") == 0)
		small_create(argv[2], number(argv[3]), number(argv[4]));
	else if (argc == 5 && strcmp(argv[1], "small-read") == 0)
		small_read(argv[2], number(argv[3]), number(argv[4]));
	else if (argc == 4 && strcmp(argv[1], "small-delete") == 0)
		small_delete(argv[2], number(argv[3]));
	else if (argc == 4 && strncmp(argv[1], "large-", 6) == 0 &&
	         (strcmp(argv[1] + 6, "seqwrite") == 0 || strcmp(argv[1] + 6, "seqread") == 0 ||
	          strcmp(argv[1] + 6, "randwrite") == 0 || strcmp(argv[1] + 6, "randread") == 0))
		large(argv[1], argv[2], number(argv[3]));
	else {
		fprintf(stderr, "usage: lfs small-create|small-read DIR N SIZE | small-delete DIR N |\n"
		                "       lfs large-seqwrite|large-seqread|large-randwrite|large-randread FILE MIB\n");
		return 2;
	}
	return 0;
}
