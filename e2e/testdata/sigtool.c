// sigtool: the signal fixture of e2e/signals_test.go and processes_test.go.
//
//   sigtool target        block USR1, USR2 and SIGRTMIN+1, print "ready PID",
//                         then answer lines on stdin:
//                           pending -> "pending N N ..." (or "pending none")
//                           take    -> one line per pending signal:
//                                      "sig=N code=C value=V"
//                           exit    -> exit 0
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
