/*
 * exec_race N PROG_A PROG_B: forks N children, one after another. In each
 * child thread A execs the path in buf while thread B keeps rewriting buf
 * between PROG_A and PROG_B (same length) and also writes those paths into
 * the bytes just below thread A's stack pointer, where a ptrace supervisor
 * that rewrites execve's path argument puts its copy. Thread A enters execve
 * on a stack of our own (inline syscall), so B knows exactly where that copy
 * goes: (sp - 128 - len) & ~15, the x86-64 red zone below sp.
 *
 * Natively this simply execs whichever path the kernel happens to read. Under
 * txexec every exec that runs must run the file the supervisor checked, and
 * a process that ends up with another executable must be killed before it
 * runs a single instruction of it.
 *
 * The exec'd programs print their own identity (see ident.c). The parent
 * prints: ok=N killed=N failed=N other=N (exec'd and exited 0 / died of
 * SIGKILL / execve failed / anything else).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char buf[4096];
static const char *progA, *progB;
static char stack[64 * 1024] __attribute__((aligned(16)));
static char *top;

static void *flipper(void *arg)
{
	(void)arg;
	size_t n = strlen(progA) + 1;
	volatile char *slot = (volatile char *)(((uintptr_t)top - 128 - n) & ~(uintptr_t)15);
	for (unsigned i = 0;; i++) {
		const char *p = (i & 1) ? progB : progA;
		const char *q = (i & 1) ? progA : progB;
		for (size_t j = 0; j < n; j++)
			((volatile char *)buf)[j] = p[j];
		for (size_t j = 0; j < n; j++)
			slot[j] = q[j];
	}
	return NULL;
}

static void child(void)
{
	top = stack + sizeof stack - 4096;
	strcpy(buf, progA);
	pthread_t th;
	if (pthread_create(&th, NULL, flipper, NULL) != 0)
		_exit(99);
	/* Let the flipper get going. */
	for (volatile int i = 0; i < 10000; i++)
		;
	char *argv[] = {"ident", NULL};
	long ret;
	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov %[stk], %%rsp\n\t"
			 "syscall\n\t"
			 "mov %%r12, %%rsp\n\t"
			 : "=a"(ret)
			 : "0"((long)SYS_execve), "D"(buf), "S"(argv), "d"(environ), [stk] "r"(top)
			 : "rcx", "r11", "r12", "memory");
	_exit(100 + (int)(-ret > 50 ? 50 : -ret));
}

int main(int argc, char **argv)
{
	if (argc != 4 || strlen(argv[2]) != strlen(argv[3])) {
		fprintf(stderr, "usage: exec_race N PROG_A PROG_B (paths of equal length)\n");
		return 2;
	}
	int n = atoi(argv[1]);
	progA = argv[2];
	progB = argv[3];
	int ok = 0, killed = 0, failed = 0, other = 0;
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 2;
		}
		if (p == 0)
			child();
		int st;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) >= 100)
			failed++;
		else
			other++;
	}
	printf("ok=%d killed=%d failed=%d other=%d\n", ok, killed, failed, other);
	return 0;
}
