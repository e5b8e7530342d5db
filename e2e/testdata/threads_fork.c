/*
 * threads_fork: a multi-threaded program whose threads also fork and exec.
 *
 * NTHREADS threads each fork ROUNDS children that exec /bin/sh -c "exit N",
 * reap them, and write what they saw to a file of their own; a few threads
 * also create and remove files while the others fork. The main thread joins
 * them and prints a deterministic summary, so the output is the same on
 * Linux and under txexec.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 8
#define ROUNDS 12

struct result {
	long sum;
	int failures;
};

static void *worker(void *arg)
{
	long id = (long)arg;
	struct result *res = calloc(1, sizeof *res);
	char name[64];
	snprintf(name, sizeof name, "thread-%02ld.txt", id);
	FILE *f = fopen(name, "w");
	if (f == NULL) {
		res->failures++;
		return res;
	}
	for (int r = 0; r < ROUNDS; r++) {
		int code = (int)((id * ROUNDS + r) % 97);
		pid_t p = fork();
		if (p < 0) {
			res->failures++;
			continue;
		}
		if (p == 0) {
			char cmd[32];
			snprintf(cmd, sizeof cmd, "exit %d", code);
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		int st;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == code)
			res->sum += code;
		else
			res->failures++;
		fprintf(f, "%d\n", code);
		/* Path calls from this thread while siblings fork. */
		char tmp[64];
		snprintf(tmp, sizeof tmp, "scratch-%02ld-%02d", id, r);
		if (mkdir(tmp, 0755) != 0 || rmdir(tmp) != 0)
			res->failures++;
	}
	if (fclose(f) != 0)
		res->failures++;
	return res;
}

int main(void)
{
	pthread_t th[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i) != 0) {
			perror("pthread_create");
			return 2;
		}
	long total = 0;
	int failures = 0;
	for (int i = 0; i < NTHREADS; i++) {
		struct result *res;
		pthread_join(th[i], (void **)&res);
		printf("thread %d: sum %ld failures %d\n", i, res->sum, res->failures);
		total += res->sum;
		failures += res->failures;
		free(res);
	}
	int lines = 0;
	for (int i = 0; i < NTHREADS; i++) {
		char name[64], buf[64];
		snprintf(name, sizeof name, "thread-%02d.txt", i);
		FILE *f = fopen(name, "r");
		if (f == NULL) {
			perror(name);
			return 3;
		}
		while (fgets(buf, sizeof buf, f))
			lines++;
		fclose(f);
	}
	printf("total %ld lines %d failures %d\n", total, lines, failures);
	return failures == 0 ? 0 : 1;
}
