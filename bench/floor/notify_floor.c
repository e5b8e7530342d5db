//go:build ignore

// (The build constraint above keeps the go tool from treating this file as
// cgo source of package floor; floor.go embeds it and compiles it with cc.)
//
// notify_floor: floor measurement for a seccomp user-notification supervisor.
//
// A child process installs a seccomp filter that returns SECCOMP_RET_USER_NOTIF
// for newfstatat (ALLOW for everything else, KILL on a foreign arch), hands the
// listener fd to the parent over a socketpair (SCM_RIGHTS), and then times N
// calls of fstatat(AT_FDCWD, path, &st, 0). The parent serves each notification
// the way the real supervisor does: it reads the path with process_vm_readv,
// performs the stat itself, writes the struct stat back with process_vm_writev
// and replies val=0 (emulate, never CONTINUE) -- unless -c is given.
//
// With -o the call is open(path, O_RDONLY) + close instead: openat is
// trapped, and the supervisor opens the file itself and installs the
// descriptor in the child with SECCOMP_IOCTL_NOTIF_ADDFD and
// SECCOMP_ADDFD_FLAG_SEND (the reply is the new descriptor), as txexec does
// for every open; close is not trapped.
//
// With -b B, each call is followed by B iterations of a CPU loop (the one of
// bench/percall.c -b): a program that computes between its calls, so that
// the supervisor waits idle for the next one.
//
// With -i (with -o) the supervisor makes each ADDFD as a SCHED_IDLE thread
// and goes back to SCHED_OTHER after it, as txexec's workers do
// (interpose/handoff.go): the scheduler then wakes the child on the
// supervisor's CPU instead of on an idle one.
//
// Usage: notify_floor [-n N] [-s] [-c] [-m] [-p] [-v] [-o] [-i] [-2] [-b B] [-f path]
//   -n N     timed iterations (default 10000)
//   -s       SECCOMP_IOCTL_NOTIF_SET_FLAGS(SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
//   -c       reply SECCOMP_USER_NOTIF_FLAG_CONTINUE instead of emulating
//   -m       native mode: no filter, no supervisor; just time fstatat
//   -p       pin supervisor and child to CPU 0 (sched_setaffinity)
//   -v       also do SECCOMP_IOCTL_NOTIF_ID_VALID after reading child memory
//   -o       time open+close (ADDFD|SEND) instead of fstatat
//   -i       with -o: each ADDFD made as a SCHED_IDLE thread
//   -2       two callers: the child forks once its filter is in, so that
//            both processes' calls reach the one listener, as the processes
//            of a tree reach txexec's; both time the loop (N calls each) and
//            the result is the mean of their times
//   -b B     B iterations of the CPU loop after each call (default 0)
//   -f path  absolute path to stat or open (default "/")
//
// Output (stdout, one line): ns_per_call=<float>
// Any failure: message on stderr, exit status != 0.
//
// No libseccomp: raw classic BPF + seccomp(2).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

// Newer UAPI bits that older installed headers may lack (Linux 6.6+).
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_ADDFD
#define SECCOMP_IOCTL_NOTIF_ADDFD SECCOMP_IOW(3, struct seccomp_notif_addfd)
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

#if defined(__x86_64__)
#define FLOOR_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FLOOR_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "notify_floor: unsupported architecture"
#endif

#define WARMUP 200
// The child stats this path once after the timed loop; the supervisor sees it
// and stops serving. It must not exist.
#define SENTINEL "/\x01notify_floor_done\x01"

static void die(const char *what) {
	fprintf(stderr, "notify_floor: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fail(const char *msg) {
	fprintf(stderr, "notify_floor: %s\n", msg);
	exit(2);
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); // vDSO: not a syscall, not filtered
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin_cpu0(void) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity(CPU 0)");
}

// open_mode is -o: the timed call is open+close, the trapped one openat.
static int open_mode;

// idle_addfd is -i: the ADDFD made as a SCHED_IDLE thread.
static int idle_addfd;

// callers is 2 with -2: the processes that share the filter and make the
// loop.
static int callers = 1;

// busy runs busy_iters (-b) steps of a linear congruential generator, each
// depending on the one before, in registers only (as bench/percall.c).
static long busy_iters;
static volatile uint64_t busy_sink;
static void busy(void) {
	uint64_t x = busy_sink;
	for (long i = 0; i < busy_iters; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	busy_sink = x;
}

static int one_call(const char *path) {
	if (open_mode) {
		int fd = openat(AT_FDCWD, path, O_RDONLY);
		if (fd < 0)
			return -1;
		close(fd);
		return 0;
	}
	struct stat st;
	return fstatat(AT_FDCWD, path, &st, 0);
}

// Timed loop shared by native mode and the child. Returns ns per call.
static double time_stat(const char *path, long n) {
	for (int i = 0; i < WARMUP; i++) {
		if (one_call(path) != 0)
			return -1;
		busy();
	}
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (one_call(path) != 0)
			return -1;
		busy();
	}
	uint64_t t1 = now_ns();
	return (double)(t1 - t0) / (double)n;
}

static int install_filter(void) {
	const unsigned trapped = open_mode ? __NR_openat : __NR_newfstatat;
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FLOOR_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, trapped, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(insns) / sizeof(insns[0])),
		.filter = insns,
	};
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	                    SECCOMP_FILTER_FLAG_NEW_LISTENER |
	                        SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
	                    &prog);
}

static int send_fd(int sock, int fd) {
	char byte = 'F';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock) {
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (r != 1)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

// Child: everything after the filter is installed avoids stdio (glibc's
// stdout setup would itself call newfstatat) and talks to the parent with
// raw read/write on the socket.
static void child_main(int sock, const char *path, long n) {
	double result = -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(10);
	int lfd = install_filter();
	if (lfd < 0)
		_exit(11);
	if (send_fd(sock, lfd) != 0)
		_exit(12);
	close(lfd);
	char go;
	if (read(sock, &go, 1) != 1) // wait until the supervisor is ready
		_exit(13);
	pid_t second = 0;
	if (callers == 2) {
		// The parent's SIGCHLD handler, inherited, would interrupt this
		// caller's notified call (EINTR: it has no SA_RESTART) when the
		// second one exits.
		signal(SIGCHLD, SIG_DFL);
		second = fork(); // not notified: the copy shares the filter
		if (second < 0)
			_exit(16);
	}
	result = time_stat(path, n);
	(void)one_call(SENTINEL); // tell the supervisor we're done
	if (write(sock, &result, sizeof(result)) != (ssize_t)sizeof(result))
		_exit(14);
	if (second > 0) {
		int status;
		while (waitpid(second, &status, 0) < 0)
			if (errno != EINTR)
				_exit(17);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			_exit(18);
	}
	_exit(result > 0 ? 0 : 15);
}

// Read a NUL-terminated string from the child, page by page (so a short
// string near the end of a mapping does not make the whole read fail).
static int read_child_path(pid_t pid, uint64_t addr, char *buf, size_t cap) {
	size_t got = 0;
	while (got < cap) {
		uint64_t a = addr + got;
		size_t chunk = 4096 - (size_t)(a & 4095);
		if (got == 0 && chunk > 256)
			chunk = 256; // paths are short: keep the common case small
		if (chunk > cap - got)
			chunk = cap - got;
		struct iovec local = {.iov_base = buf + got, .iov_len = chunk};
		struct iovec remote = {.iov_base = (void *)(uintptr_t)a, .iov_len = chunk};
		ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (r <= 0)
			return -EFAULT;
		if (memchr(buf + got, 0, (size_t)r))
			return 0;
		got += (size_t)r;
	}
	return -ENAMETOOLONG;
}

static volatile sig_atomic_t child_gone;
static void on_sigchld(int sig) {
	(void)sig;
	child_gone = 1;
}

static int usage(void) {
	fprintf(stderr,
	        "usage: notify_floor [-n N] [-s] [-c] [-m] [-p] [-v] [-o] [-i] [-2] [-b B] [-f path]\n");
	return 2;
}

int main(int argc, char **argv) {
	long n = 10000;
	int sync_wake = 0, cont = 0, native = 0, pin = 0, id_valid = 0;
	const char *path = "/";
	int opt;
	while ((opt = getopt(argc, argv, "n:scmpvoi2b:f:")) != -1) {
		switch (opt) {
		case 'n': {
			char *end;
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n <= 0)
				return usage();
			break;
		}
		case 's': sync_wake = 1; break;
		case 'c': cont = 1; break;
		case 'm': native = 1; break;
		case 'p': pin = 1; break;
		case 'v': id_valid = 1; break;
		case 'o': open_mode = 1; break;
		case 'i': idle_addfd = 1; break;
		case '2': callers = 2; break;
		case 'b': {
			char *end;
			errno = 0;
			busy_iters = strtol(optarg, &end, 10);
			if (errno || *end || busy_iters < 0)
				return usage();
			break;
		}
		case 'f': path = optarg; break;
		default: return usage();
		}
	}
	if (optind != argc || path[0] != '/')
		return usage();
	if (native && (sync_wake || cont || id_valid || callers > 1))
		fail("-m cannot be combined with -s, -c, -v or -2");

	// Watchdog: never hang a test run (allows >= 100us per call, and
	// the gap's loop at 10 ns an iteration or faster).
	alarm((unsigned)(30 + callers * (n / 10000 + (n + WARMUP) * (busy_iters / 100000000.0))));

	if (pin)
		pin_cpu0(); // inherited by the child

	{
		struct stat st;
		if (stat(path, &st) != 0)
			die(path);
	}

	if (native) {
		double ns = time_stat(path, n);
		if (ns <= 0)
			die(open_mode ? "open" : "fstatat");
		printf("ns_per_call=%.2f\n", ns);
		return 0;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld; // no SA_RESTART: interrupts NOTIF_RECV
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		die("sigaction");

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(sv[0]);
		child_main(sv[1], path, n);
	}
	close(sv[1]);
	int sock = sv[0];

	int lfd = recv_fd(sock);
	if (lfd < 0)
		fail("did not receive the listener fd from the child "
		     "(seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER|"
		     "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) failed?)");
	if (sync_wake &&
	    ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	          (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0)
		die("ioctl(SECCOMP_IOCTL_NOTIF_SET_FLAGS, SYNC_WAKE_UP)");

	struct seccomp_notif_sizes sizes;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0)
		die("seccomp(SECCOMP_GET_NOTIF_SIZES)");
	size_t req_size = sizes.seccomp_notif > sizeof(struct seccomp_notif)
	                      ? sizes.seccomp_notif
	                      : sizeof(struct seccomp_notif);
	size_t resp_size = sizes.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
	                       ? sizes.seccomp_notif_resp
	                       : sizeof(struct seccomp_notif_resp);
	struct seccomp_notif *req = calloc(1, req_size);
	struct seccomp_notif_resp *resp = calloc(1, resp_size);
	if (!req || !resp)
		die("calloc");

	if (write(sock, "G", 1) != 1)
		die("write(go)");

	long served = 0, other = 0;
	int done = 0, sentinels = 0;
	char pathbuf[4096];
	while (!done) {
		memset(req, 0, req_size);
		if (child_gone)
			break;
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
			if (errno == EINTR)
				continue; // SIGCHLD: loop checks child_gone
			if (errno == ENOENT)
				continue; // the waiter went away before we got it
			die("ioctl(SECCOMP_IOCTL_NOTIF_RECV)");
		}
		memset(resp, 0, resp_size);
		resp->id = req->id;

		const struct seccomp_data *d = &req->data;
		int dirfd = (int)d->args[0];
		int flags = (int)d->args[3];
		int r = -ENOSYS;
		if (d->nr == __NR_newfstatat || d->nr == __NR_openat)
			r = read_child_path(req->pid, d->args[1], pathbuf, sizeof(pathbuf));
		if (r == 0 && strcmp(pathbuf, SENTINEL) == 0) {
			resp->error = -ENOENT;
			done = ++sentinels == callers;
		} else if (r == 0 && cont) {
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			served++;
		} else if (r == 0 && d->nr == __NR_openat && dirfd == AT_FDCWD &&
		           pathbuf[0] == '/') {
			// Emulate: open here, install the descriptor in the child;
			// with SEND the ADDFD is also the reply.
			int oflags = (int)d->args[2];
			if (id_valid &&
			    ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) != 0)
				continue;
			served++;
			int fd = openat(AT_FDCWD, pathbuf, oflags | O_CLOEXEC, (mode_t)d->args[3]);
			if (fd < 0) {
				resp->error = -errno;
			} else {
				struct seccomp_notif_addfd a = {
					.id = req->id,
					.flags = SECCOMP_ADDFD_FLAG_SEND,
					.srcfd = (__u32)fd,
					.newfd_flags = (__u32)(oflags & O_CLOEXEC),
				};
				struct sched_param none = {0};
				if (idle_addfd && sched_setscheduler(0, SCHED_IDLE, &none) != 0)
					die("sched_setscheduler(SCHED_IDLE)");
				int got = ioctl(lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
				int e = errno;
				if (idle_addfd && sched_setscheduler(0, SCHED_OTHER, &none) != 0)
					die("sched_setscheduler(SCHED_OTHER)");
				close(fd);
				if (got >= 0 || e == ENOENT || e == EINTR)
					continue; // replied, or the child is gone
				resp->error = -e;
			}
		} else if (r == 0 && d->nr == __NR_newfstatat && dirfd == AT_FDCWD &&
		           pathbuf[0] == '/' && !(flags & AT_EMPTY_PATH)) {
			// Emulate: do the stat here, copy the result into the child.
			struct stat st;
			if (id_valid &&
			    ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) != 0)
				continue; // child died/was interrupted; nothing to reply to
			if (fstatat(AT_FDCWD, pathbuf, &st, flags) != 0) {
				resp->error = -errno;
			} else {
				struct iovec local = {.iov_base = &st, .iov_len = sizeof(st)};
				struct iovec remote = {
					.iov_base = (void *)(uintptr_t)d->args[2],
					.iov_len = sizeof(st)};
				if (process_vm_writev(req->pid, &local, 1, &remote, 1, 0) !=
				    (ssize_t)sizeof(st))
					resp->error = -EFAULT;
				else
					resp->val = 0;
			}
			served++;
		} else {
			// Not something this floor benchmark emulates (relative path,
			// dirfd, AT_EMPTY_PATH, unreadable path): let the kernel do it.
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			other++;
		}
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0 && errno != ENOENT)
			die("ioctl(SECCOMP_IOCTL_NOTIF_SEND)");
	}

	double ns = -1, sum = 0;
	ssize_t got = 0;
	for (int i = 0; i < callers; i++) {
		double one = -1;
		do // EINTR: a handler's signal (SIGCHLD when the child exits) may land here
			got = read(sock, &one, sizeof(one));
		while (got < 0 && errno == EINTR);
		if (got != (ssize_t)sizeof(one) || one <= 0) {
			ns = one;
			break;
		}
		sum += one;
		ns = sum / (i + 1);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "notify_floor: child killed by signal %d\n",
			        WTERMSIG(status));
		else
			fprintf(stderr, "notify_floor: child exited with status %d\n",
			        WEXITSTATUS(status));
		return 2;
	}
	if (got != (ssize_t)sizeof(ns) || ns <= 0) {
		fprintf(stderr, "notify_floor: child did not report a result (read %zd bytes, errno %d, value %g; served %ld, passed on %ld)\n",
		        got, got < 0 ? errno : 0, ns, served, other);
		return 2;
	}
	if (!done)
		fail("supervisor never saw the end-of-run sentinel");
	if (served != callers * (n + WARMUP)) {
		fprintf(stderr,
		        "notify_floor: expected %ld notified calls, served %ld "
		        "(+%ld other); does fstatat use newfstatat (open openat) here?\n",
		        callers * (n + WARMUP), served, other);
		return 2;
	}
	printf("ns_per_call=%.2f\n", ns);
	return 0;
}
