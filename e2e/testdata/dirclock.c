// dirclock: counts how often a directory's times and a file's disagree
// with the order of the changes that set them, which Linux never shows.
// Each of N rounds changes an entry of directory DIR (creates and removes
// DIR/entry) and writes 1 byte to DIR/file, in the order ORDER says, then
// stats both by path and counts the round when the one changed last shows
// the earlier mtime:
//   file-after-dir: entry, then write; counts mtime(file) < mtime(DIR)
//   dir-after-file: write, then entry; counts mtime(DIR) < mtime(file)
// Prints "ORDER: K of N". Usage: dirclock ORDER N DIR (DIR/file exists).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what) {
	perror(what);
	exit(1);
}

static int before(const struct timespec *a, const struct timespec *b) {
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: dirclock file-after-dir|dir-after-file N DIR\n");
		return 2;
	}
	int fileLast = strcmp(argv[1], "file-after-dir") == 0;
	if (!fileLast && strcmp(argv[1], "dir-after-file") != 0) {
		fprintf(stderr, "dirclock: unknown order %s\n", argv[1]);
		return 2;
	}
	long n = atol(argv[2]);
	const char *dir = argv[3];
	char file[4096], entry[4096];
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(entry, sizeof entry, "%s/entry", dir);
	int fd = open(file, O_WRONLY | O_APPEND);
	if (fd < 0)
		die(file);
	long inversions = 0;
	for (long i = 0; i < n; i++) {
		if (!fileLast && write(fd, "x", 1) != 1)
			die("write");
		int e = open(entry, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (e < 0)
			die(entry);
		close(e);
		if (unlink(entry) != 0)
			die("unlink");
		if (fileLast && write(fd, "x", 1) != 1)
			die("write");
		struct stat d, f;
		if (stat(dir, &d) != 0)
			die(dir);
		if (stat(file, &f) != 0)
			die(file);
		if (fileLast ? before(&f.st_mtim, &d.st_mtim) : before(&d.st_mtim, &f.st_mtim))
			inversions++;
	}
	printf("%s: %ld of %ld\n", argv[1], inversions, n);
	return 0;
}
