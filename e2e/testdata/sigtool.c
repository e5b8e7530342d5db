// sigtool: the signal fixture of e2e/signals_test.go and processes_test.go.
//
//   sigtool target        block USR1, USR2 and SIGRTMIN+1, print "ready PID",
//                         then answer lines on stdin:
//                           pending -> "pending N N ..." (or "pending none")
//                           take    -> one line per pending signal:
//                                      "sig=N code=C value=V"
//                           exit    -> exit 0
//   sigtool receiver FILE handle USR1, USR2 and SIGRTMIN+1 (one at a time),
//                         recording for each signal what FILE held when its
//                         handler ran; print "ready PID", then answer lines
//                         on stdin:
//                           report -> one line per signal received so far,
//                                     in the order handled:
//                                     "sig=N code=C value=V file=CONTENTS"
//                                     (file=- when FILE could not be read),
//                                     then "end"
//                           exit   -> exit 0
//   sigtool send CALL ... make one call, print "ok" or the errno's name:
//     kill PID SIG | tkill TID SIG | tgkill TGID TID SIG
//     sigqueue PID SIG VALUE       rt_sigqueueinfo, si_code SI_QUEUE
//     sigqueue-code PID SIG CODE   rt_sigqueueinfo with the given si_code
//     tgsigqueue TGID TID SIG VALUE
//     pidfd PID SIG                pidfd_open + pidfd_send_signal (no info)
//     pidfd-info PID SIG VALUE     pidfd_send_signal with a siginfo
//     io_uring                     io_uring_setup(1, ...)
//     vmwritev PID                 process_vm_writev of one byte to PID
//     getfd PID FD                 pidfd_getfd
//     ptrace PID                   PTRACE_SEIZE
//     mount DIR                    mount("none", DIR, "tmpfs", 0, NULL)
//     open_by_handle               open_by_handle_at(AT_FDCWD) of a made-up
//                                  handle
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *errname(int e) {
	switch (e) {
	case EPERM: return "EPERM";
	case ESRCH: return "ESRCH";
	case EINVAL: return "EINVAL";
	case EFAULT: return "EFAULT";
	case EBADF: return "EBADF";
	case ENOTSUP: return "ENOTSUP";
	case ENOSYS: return "ENOSYS";
	case ENOENT: return "ENOENT";
	case ESTALE: return "ESTALE";
	case EACCES: return "EACCES";
	}
	static char buf[32];
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

static int target(void) {
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGRTMIN + 1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		perror("sigprocmask");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "pending", 7) == 0) {
			sigset_t p;
			sigpending(&p);
			printf("pending");
			int any = 0;
			for (int s = 1; s < 65; s++) {
				if (sigismember(&p, s) == 1) {
					printf(" %d", s);
					any = 1;
				}
			}
			printf(any ? "\n" : " none\n");
		} else if (strncmp(line, "take", 4) == 0) {
			struct timespec zero = {0, 0};
			siginfo_t si;
			while (sigtimedwait(&set, &si, &zero) > 0)
				printf("sig=%d code=%d value=%d\n", si.si_signo, si.si_code, si.si_value.sival_int);
			printf("end\n");
		} else if (strncmp(line, "exit", 4) == 0) {
			return 0;
		}
		fflush(stdout);
	}
	return 0;
}

// What the receiver's handler recorded of one signal.
struct received {
	int sig, code, value;
	char file[32];
};
static struct received got[256];
static volatile sig_atomic_t ngot;
static const char *recvfile;

// onsignal reads FILE with async-signal-safe calls only. Every handled
// signal is blocked while it runs (sa_mask), so records never interleave.
static void onsignal(int sig, siginfo_t *si, void *uc) {
	(void)uc;
	if (ngot >= (int)(sizeof got / sizeof got[0]))
		return;
	struct received *r = &got[ngot];
	r->sig = sig;
	r->code = si->si_code;
	r->value = si->si_value.sival_int;
	strcpy(r->file, "-");
	int fd = open(recvfile, O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, r->file, sizeof r->file - 1);
		close(fd);
		if (n < 0)
			n = 0;
		r->file[n] = 0;
		char *nl = strchr(r->file, '\n');
		if (nl)
			*nl = 0;
	}
	ngot = ngot + 1;
}

static int receiver(const char *file) {
	recvfile = file;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = onsignal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaddset(&sa.sa_mask, SIGRTMIN + 1);
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGUSR2, &sa, NULL) || sigaction(SIGRTMIN + 1, &sa, NULL)) {
		perror("sigaction");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "report", 6) == 0) {
			sigset_t old;
			sigprocmask(SIG_BLOCK, &sa.sa_mask, &old);
			for (int i = 0; i < ngot; i++)
				printf("sig=%d code=%d value=%d file=%s\n", got[i].sig, got[i].code, got[i].value, got[i].file);
			printf("end\n");
			sigprocmask(SIG_SETMASK, &old, NULL);
		} else if (strncmp(line, "exit", 4) == 0) {
			return 0;
		}
		fflush(stdout);
	}
	return 0;
}

static long queueinfo(int tgkill, int tgid, int tid, int sig, int code, int value) {
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = code;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	if (tgkill)
		return syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, &si);
	return syscall(SYS_rt_sigqueueinfo, tgid, sig, &si);
}

static long send(int argc, char **argv) {
	const char *call = argv[0];
	int a = argc > 1 ? atoi(argv[1]) : 0;
	int b = argc > 2 ? atoi(argv[2]) : 0;
	int c = argc > 3 ? atoi(argv[3]) : 0;
	if (!strcmp(call, "kill"))
		return syscall(SYS_kill, a, b);
	if (!strcmp(call, "tkill"))
		return syscall(SYS_tkill, a, b);
	if (!strcmp(call, "tgkill"))
		return syscall(SYS_tgkill, a, b, c);
	if (!strcmp(call, "sigqueue"))
		return queueinfo(0, a, 0, b, SI_QUEUE, c);
	if (!strcmp(call, "sigqueue-code"))
		return queueinfo(0, a, 0, b, c, 0);
	if (!strcmp(call, "tgsigqueue"))
		return queueinfo(1, a, b, c, SI_QUEUE, argc > 4 ? atoi(argv[4]) : 0);
	if (!strcmp(call, "pidfd") || !strcmp(call, "pidfd-info")) {
		int fd = syscall(SYS_pidfd_open, a, 0);
		if (fd < 0)
			return -1;
		if (!strcmp(call, "pidfd"))
			return syscall(SYS_pidfd_send_signal, fd, b, NULL, 0);
		siginfo_t si;
		memset(&si, 0, sizeof si);
		si.si_signo = b;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_int = c;
		return syscall(SYS_pidfd_send_signal, fd, b, &si, 0);
	}
	if (!strcmp(call, "io_uring")) {
		char params[120];
		memset(params, 0, sizeof params);
		return syscall(SYS_io_uring_setup, 1, params);
	}
	if (!strcmp(call, "vmwritev")) {
		char byte = 0;
		struct iovec local = {&byte, 1}, remote = {(void *)4096, 1};
		return syscall(SYS_process_vm_writev, a, &local, 1, &remote, 1, 0);
	}
	if (!strcmp(call, "getfd")) {
		int fd = syscall(SYS_pidfd_open, a, 0);
		if (fd < 0)
			return -1;
		return syscall(SYS_pidfd_getfd, fd, b, 0);
	}
	if (!strcmp(call, "ptrace"))
		return ptrace(PTRACE_SEIZE, a, 0, 0);
	if (!strcmp(call, "mount"))
		return mount("none", argv[1], "tmpfs", 0, NULL);
	if (!strcmp(call, "open_by_handle")) {
		struct {
			struct file_handle h;
			unsigned char bytes[8];
		} fh;
		memset(&fh, 0, sizeof fh);
		fh.h.handle_bytes = sizeof fh.bytes;
		fh.h.handle_type = 1; /* FILEID_INO32_GEN */
		return open_by_handle_at(AT_FDCWD, &fh.h, O_RDONLY);
	}
	fprintf(stderr, "sigtool: unknown call %s\n", call);
	exit(2);
}

int main(int argc, char **argv) {
	if (argc >= 2 && !strcmp(argv[1], "target"))
		return target();
	if (argc >= 3 && !strcmp(argv[1], "receiver"))
		return receiver(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "send")) {
		long r = send(argc - 2, argv + 2);
		if (r < 0)
			printf("%s\n", errname(errno));
		else
			printf("ok\n");
		return 0;
	}
	fprintf(stderr, "usage: sigtool target | sigtool send CALL ARGS...\n");
	return 2;
}
