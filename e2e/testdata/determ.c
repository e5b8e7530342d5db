// determ: prints what a deterministic run must repeat — the time by every
// call, random bytes by every route, a mkstemp name, its pid, a listing of
// a host directory and of one it makes in random order, the date(1) of a
// child — and writes them to a file, with the mtimes it then stats.
// Usage: determ DIR (DIR holds hostdir/, made by the test).
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void listdir(FILE *out, const char *path) {
	DIR *d = opendir(path);
	if (!d) {
		perror(path);
		exit(1);
	}
	fprintf(out, "listing %s:", path);
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		fprintf(out, " %s", e->d_name);
	fprintf(out, "\n");
	closedir(d);
}

int main(int argc, char **argv) {
	if (argc != 2 || chdir(argv[1]) != 0) {
		fprintf(stderr, "usage: determ DIR\n");
		return 2;
	}
	FILE *out = fopen("c-values.txt", "w");
	if (!out) {
		perror("c-values.txt");
		return 1;
	}
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	struct timeval tv;
	gettimeofday(&tv, NULL);
	fprintf(out, "time %ld realtime %ld.%09ld monotonic %ld.%09ld timeofday %ld.%06ld\n",
	        (long)time(NULL), (long)rt.tv_sec, rt.tv_nsec, (long)mono.tv_sec, mono.tv_nsec,
	        (long)tv.tv_sec, (long)tv.tv_usec);
	struct timespec nap = {0, 250000000};
	nanosleep(&nap, NULL);
	clock_gettime(CLOCK_REALTIME, &rt);
	fprintf(out, "after sleep %ld.%09ld\n", (long)rt.tv_sec, rt.tv_nsec);

	unsigned char buf[8];
	if (getrandom(buf, sizeof buf, 0) != sizeof buf)
		return 1;
	fprintf(out, "getrandom");
	for (size_t i = 0; i < sizeof buf; i++)
		fprintf(out, " %02x", buf[i]);
	int fd = open("/dev/urandom", O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof buf) != sizeof buf)
		return 1;
	close(fd);
	fprintf(out, "\nurandom");
	for (size_t i = 0; i < sizeof buf; i++)
		fprintf(out, " %02x", buf[i]);
	const unsigned char *at_random = (const unsigned char *)getauxval(AT_RANDOM);
	fprintf(out, "\nAT_RANDOM");
	for (int i = 0; i < 16; i++)
		fprintf(out, " %02x", at_random[i]);
	fprintf(out, "\nvDSO %s", getauxval(AT_SYSINFO_EHDR) ? "visible" : "hidden");
	srandom((unsigned)buf[0] << 8 | buf[1]);
	fprintf(out, "\nrandom() %ld\n", random());

	char tmpl[] = "tmp-XXXXXX";
	int tfd = mkstemp(tmpl);
	if (tfd < 0)
		return 1;
	dprintf(tfd, "made by mkstemp\n");
	close(tfd);
	fprintf(out, "mkstemp %s\npid %d ppid %d\n", tmpl, (int)getpid(), (int)getppid());

	// A directory made in random order, then listed; and the host's.
	mkdir("made", 0755);
	for (int i = 0; i < 6; i++) {
		char name[32];
		snprintf(name, sizeof name, "made/f%ld", random() % 1000);
		close(open(name, O_CREAT | O_WRONLY, 0644));
	}
	listdir(out, "made");
	listdir(out, "hostdir");

	char host[65];
	gethostname(host, sizeof host);
	fprintf(out, "hostname %s nprocs %ld\n", host, sysconf(_SC_NPROCESSORS_ONLN));
	fflush(out);
	FILE *date = popen("date", "r");
	char line[128] = "";
	if (!date || !fgets(line, sizeof line, date))
		return 1;
	pclose(date);
	fprintf(out, "date %s", line);
	fclose(out);

	struct stat st;
	stat("c-values.txt", &st);
	printf("c-values.txt mtime %ld.%09ld\n", (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	stat(tmpl, &st);
	printf("%s mtime %ld.%09ld\n", tmpl, (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	// One inode number whichever way it is asked: stat by name, the
	// fstat system call itself (glibc spells fstat as fstatat), getdents.
	struct stat byname, byfd;
	stat(tmpl, &byname);
	int ifd = open(tmpl, O_RDONLY);
	syscall(SYS_fstat, ifd, &byfd);
	close(ifd);
	unsigned long dino = 0;
	DIR *d = opendir(".");
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, tmpl) == 0)
			dino = e->d_ino;
	closedir(d);
	printf("inode of %s: stat %lu fstat %lu getdents %lu: %s\n", tmpl, (unsigned long)byname.st_ino,
	       (unsigned long)byfd.st_ino, dino,
	       byname.st_ino == byfd.st_ino && byfd.st_ino == dino ? "consistent" : "INCONSISTENT");
	FILE *in = fopen("c-values.txt", "r");
	while (fgets(line, sizeof line, in))
		fputs(line, stdout);
	fclose(in);
	return 0;
}
