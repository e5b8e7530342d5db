//go:build ignore

// (The build constraint above keeps the go tool from treating this file as
// cgo source of package floor; fastpath.go embeds it and compiles it with cc.)
//
// fastpath_floor: the experiment of docs/fastpath.md. It times one call,
// fstatat(AT_FDCWD, path, &st, 0), made by a child process N times with G
// microseconds of busy work after each, once per mode, all in one run:
//
//   native    no filter, no supervisor.
//   notify    the floor: the base filter sends every newfstatat to the
//             supervisor (this process's parent), which emulates it
//             (process_vm_readv of the path, fstatat, process_vm_writev of
//             the result), as notify_floor.c does.
//   trap      the candidate of the brief. The base filter (the supervisor's)
//             allows newfstatat whose instruction pointer lies in one "agent"
//             page and notifies every other; a second filter, installed by
//             the in-process agent, returns SECCOMP_RET_TRAP for newfstatat
//             unless it comes from the agent page or the "forward" page next
//             to it (TRAP outranks USER_NOTIF). The agent's SIGSYS handler
//             decides: fast (the call made again from the agent page, the
//             result recorded in a ring shared with the supervisor) or
//             forward (made again from the forward page: the base filter
//             notifies it).
//   forward   as trap, but the agent forwards every call: what a call the
//             fast path cannot take costs over the floor.
//   sud       as trap, with Syscall User Dispatch (PR_SET_SYSCALL_USER_
//             DISPATCH, selector BLOCK) instead of the agent's filter: every
//             system call made outside the agent's two pages raises SIGSYS.
//   rewrite   no SIGSYS at all: the base filter only. The first call of a
//             syscall site is notified; the supervisor serves it and, when
//             the 7 bytes before the instruction pointer are glibc's
//             "mov $nr,%eax; syscall", rewrites them (through
//             /proc/PID/mem, as ptrace's POKETEXT would) into
//             "jmp *slot", slot pointing at a per-site trampoline in a page
//             below 2 GiB that calls the agent with the call's registers and
//             jumps back after the site. Later calls of the site reach the
//             agent as a function call.
//
// The agent's decision is the one docs/fastpath.md designs: the path must be
// absolute, without "", "." or ".." components and shorter than a ring slot;
// no prefix of it may be in the shared set of paths the transaction changed
// (here 256 made-up ones), and its directory must be in the shared set of
// directories the supervisor has walked (host directories reached without a
// symlink); the native call is made with AT_SYMLINK_NOFOLLOW, and a symlink
// found where the caller follows one is forwarded; the result is recorded
// (path, result, device, inode, mode, size, mtime, ctime) in a ring of 1024
// slots; a full ring forwards, and the supervisor drains the ring before it
// serves any notified call. At the end the parent checks that every timed
// call was either recorded or served.
//
// Three further modes time getppid(), which no filter traps, to show what each
// mechanism costs the calls it does not want: getppid-native (no filter),
// getppid-filters (the base and agent filters installed), getppid-sud (Syscall
// User Dispatch on: each getppid raises SIGSYS and is made again by the agent).
//
// Usage: fastpath_floor [-n N] [-g GAP_US] [-f path] [-M mode[,mode...]] [-c] [-o]
//   -c  the path is in the changed set: the agent must forward every call
//   -o  the timed call is open(path, O_RDONLY) + close instead of fstatat:
//       the lookup filtered is openat (the base filter also checks its flags
//       in BPF), the supervisor answers it by installing its descriptor
//       (ADDFD with SEND), the agent opens relative to its root descriptor
//       with O_NOFOLLOW and records an fstat of the new descriptor. Before
//       timing, the child of each agent mode makes an open for writing from
//       the agent page itself; the base filter must notify it, and the
//       supervisor refuses it (counted as refused).
// Output (stdout): one line per mode:
//   mode=M gap_us=G ns_per_call=T call_ns_median=D csw_per_call=C sup_csw_per_call=S served=A recorded=R refused=F
// where T is the timed loop's time over N (busy work included), D the median
// time of one call alone (clock read before and after it), csw counts the caller's context switches (getrusage nvcsw + nivcsw,
// over the timed loop) and sup_csw the supervisor's (over the whole child).
// Any failure: message on stderr, exit status != 0.
//
// x86-64 only (the rewrite and the agent's assembly are).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if !defined(__x86_64__)
#error "fastpath_floor: x86-64 only"
#endif

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
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
// The open flags a lookup may not have: the base filter checks them in BPF
// (a 32-bit mask), the agent again.
#define OPEN_WRITE_FLAGS (O_ACCMODE | O_CREAT | O_TRUNC | __O_TMPFILE)

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#define SYSCALL_DISPATCH_FILTER_ALLOW 0
#define SYSCALL_DISPATCH_FILTER_BLOCK 1
#endif

#define WARMUP 200
#define SENTINEL "/\x01" "fastpath_floor_done\x01"
#define PATH_SLOT 192    // longest path the ring holds, with its NUL
#define RING_N 1024      // ring slots
#define SET_N 4096       // hash-set slots (power of two)
#define TRAMP_BASE 0x10000000UL // below 2 GiB: "jmp *disp32" reaches it
#define TRAMP_SITES 32

static void die(const char *what) {
	fprintf(stderr, "fastpath_floor: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fail(const char *msg) {
	fprintf(stderr, "fastpath_floor: %s\n", msg);
	exit(2);
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); // vDSO: no system call
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// ---- The agent's pages -----------------------------------------------------
//
// Page 1 (agent): the only place the base filter lets a lookup run natively.
// Page 2 (forward): the agent's filter and Syscall User Dispatch let calls
// from here through, and the base filter notifies them.
// Each holds a six-argument system-call stub; the agent page also the
// signal restorer (rt_sigreturn).
long fp_agent_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
long fp_forward_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
void fp_restorer(void);
void fp_agent_entry(void);
extern char fp_agent_page[], fp_forward_page[], fp_pages_end[];

__asm__(
    ".pushsection .text.fp_agent,\"ax\",@progbits\n"
    ".balign 4096\n"
    ".globl fp_agent_page\n"
    "fp_agent_page:\n"
    "fp_agent_syscall6:\n"
    "  mov %rdi,%rax\n  mov %rsi,%rdi\n  mov %rdx,%rsi\n  mov %rcx,%rdx\n"
    "  mov %r8,%r10\n  mov %r9,%r8\n  mov 8(%rsp),%r9\n  syscall\n  ret\n"
    "fp_restorer:\n"
    "  mov $15,%eax\n  syscall\n  ud2\n"
    ".balign 4096\n"
    ".globl fp_forward_page\n"
    "fp_forward_page:\n"
    "fp_forward_syscall6:\n"
    "  mov %rdi,%rax\n  mov %rsi,%rdi\n  mov %rdx,%rsi\n  mov %rcx,%rdx\n"
    "  mov %r8,%r10\n  mov %r9,%r8\n  mov 8(%rsp),%r9\n  syscall\n  ret\n"
    ".balign 4096\n"
    ".globl fp_pages_end\n"
    "fp_pages_end:\n"
    ".popsection\n"
    // The trampolines' target: the registers of the rewritten call (nr in
    // rax, arguments as for syscall) saved as struct fp_regs, the C agent
    // called on an aligned stack, every register but rax, rcx and r11 (which
    // syscall clobbers too) given back as they were.
    ".text\n"
    ".globl fp_agent_entry\n"
    "fp_agent_entry:\n"
    "  push %rbp\n  mov %rsp,%rbp\n  and $-16,%rsp\n  sub $8,%rsp\n"
    "  push %r9\n  push %r8\n  push %r10\n  push %rdx\n  push %rsi\n  push %rdi\n  push %rax\n"
    "  mov %rsp,%rdi\n  call fp_agent_dispatch\n"
    "  add $8,%rsp\n"
    "  pop %rdi\n  pop %rsi\n  pop %rdx\n  pop %r10\n  pop %r8\n  pop %r9\n"
    "  mov %rbp,%rsp\n  pop %rbp\n  ret\n");

struct fp_regs {
	long nr, a1, a2, a3, a4, a5, a6;
};

// ---- Memory shared by the supervisor and the agent --------------------------

struct record {
	int32_t nr;
	int32_t ret; // 0 or -errno
	uint64_t dev, ino, size;
	uint32_t mode, pad;
	int64_t mtime_ns, ctime_ns;
	char path[PATH_SLOT];
};

struct shared {
	// The ring: the agent (one thread here) writes slot head % RING_N and
	// then publishes head; the supervisor consumes up to head, then
	// publishes tail.
	_Alignas(64) volatile uint64_t head;
	_Alignas(64) volatile uint64_t tail;
	// Sets of path hashes (FNV-1a 64, 0 = empty slot).
	uint64_t changed[SET_N]; // paths the transaction changed
	uint64_t fastdirs[SET_N]; // host directories walked, no symlink on the way
	struct record ring[RING_N];
};

static struct shared *shm;

static uint64_t fnv_step(uint64_t h, unsigned char c) {
	return (h ^ c) * 1099511628211ull;
}
#define FNV_INIT 14695981039346656037ull

static uint64_t fnv(const char *s) {
	uint64_t h = FNV_INIT;
	while (*s)
		h = fnv_step(h, (unsigned char)*s++);
	return h ? h : 1;
}

static void set_add(uint64_t *set, uint64_t h) {
	for (unsigned i = (unsigned)h & (SET_N - 1);; i = (i + 1) & (SET_N - 1))
		if (set[i] == 0 || set[i] == h) {
			set[i] = h;
			return;
		}
}

// The agent's code runs in the middle of whatever the program was doing
// (a rewritten site is a plain jump): it touches no vector register and calls
// no library function.
#define AGENT_CODE __attribute__((target("general-regs-only"), noinline))

AGENT_CODE static int set_has(const uint64_t *set, uint64_t h) {
	for (unsigned i = (unsigned)h & (SET_N - 1);; i = (i + 1) & (SET_N - 1)) {
		uint64_t v = __atomic_load_n(&set[i], __ATOMIC_ACQUIRE);
		if (v == h)
			return 1;
		if (v == 0)
			return 0;
	}
}

// ---- The agent ----------------------------------------------------------------

static int agent_forward_all; // the forward mode
// agent_root is the agent's root descriptor (opened before any filter):
// txexec's would be the view's noatime clone of the mount tree
// (docs/fastpath.md §4.6); here "/" itself. Opens resolve relative to it.
static int agent_root = -1;

static long forward(const struct fp_regs *r) {
	return fp_forward_syscall6(r->nr, r->a1, r->a2, r->a3, r->a4, r->a5, r->a6);
}

// fp_agent_dispatch decides one call: fast (made natively from the agent
// page and recorded) or forwarded to the supervisor. Any other number is
// made again natively (Syscall User Dispatch sends every call here).
AGENT_CODE long fp_agent_dispatch(const struct fp_regs *r) {
	int is_open = r->nr == __NR_openat;
	if (r->nr != __NR_newfstatat && !is_open)
		return fp_agent_syscall6(r->nr, r->a1, r->a2, r->a3, r->a4, r->a5, r->a6);
	const char *path = (const char *)r->a2;
	int flags = is_open ? (int)r->a3 : (int)r->a4;
	if (agent_forward_all || (int)r->a1 != AT_FDCWD || path[0] != '/')
		return forward(r);
	if (is_open ? (flags & OPEN_WRITE_FLAGS) != 0 : (flags & ~AT_SYMLINK_NOFOLLOW) != 0)
		return forward(r);
	uint64_t head = shm->head;
	if (head - __atomic_load_n(&shm->tail, __ATOMIC_ACQUIRE) >= RING_N)
		return forward(r); // ring full: the supervisor drains it first
	struct record *rec = &shm->ring[head % RING_N];
	// Copy the path into the record, checking it lexically and probing
	// the changed set at every prefix on the way.
	uint64_t h = FNV_INIT, parent = 0;
	int i = 0, comp = 0; // comp: length of the current component
	rec->path[i] = path[i];
	h = fnv_step(h, '/');
	for (i = 1; path[i]; i++) {
		char c = path[i];
		if (i >= PATH_SLOT - 1)
			return forward(r);
		if (c == '/') {
			if (comp == 0 || (comp == 1 && path[i - 1] == '.') ||
			    (comp == 2 && path[i - 1] == '.' && path[i - 2] == '.'))
				return forward(r);
			if (set_has(shm->changed, h ? h : 1))
				return forward(r);
			parent = h ? h : 1;
			comp = 0;
		} else {
			comp++;
		}
		rec->path[i] = c;
		h = fnv_step(h, (unsigned char)c);
	}
	rec->path[i] = 0;
	if (comp == 0 || (comp == 1 && path[i - 1] == '.') ||
	    (comp == 2 && path[i - 1] == '.' && path[i - 2] == '.'))
		return forward(r);
	if (set_has(shm->changed, h ? h : 1))
		return forward(r);
	if (parent == 0)
		parent = fnv("/"); // a name in "/"
	if (!set_has(shm->fastdirs, parent))
		return forward(r);
	struct stat opened, *st = is_open ? &opened : (struct stat *)r->a3;
	long ret;
	if (is_open) {
		// Relative to the agent's root, the last component not followed
		// (a symlink: ELOOP, forwarded); fstat for the record.
		ret = fp_agent_syscall6(__NR_openat, agent_root, (long)(path + 1),
		                        flags | O_NOFOLLOW, 0, 0, 0);
		if (ret == -ELOOP)
			return forward(r);
		if (ret >= 0 && fp_agent_syscall6(__NR_fstat, ret, (long)st, 0, 0, 0, 0) != 0) {
			fp_agent_syscall6(__NR_close, ret, 0, 0, 0, 0, 0);
			return forward(r);
		}
	} else {
		ret = fp_agent_syscall6(__NR_newfstatat, AT_FDCWD, (long)path, (long)st,
		                        flags | AT_SYMLINK_NOFOLLOW, 0, 0);
		if (ret == 0 && S_ISLNK(st->st_mode) && !(flags & AT_SYMLINK_NOFOLLOW))
			return forward(r); // a symlink to follow: the view resolves it
	}
	rec->nr = (int32_t)r->nr;
	rec->ret = (int32_t)ret;
	if (ret >= 0) {
		rec->dev = st->st_dev;
		rec->ino = st->st_ino;
		rec->size = (uint64_t)st->st_size;
		rec->mode = st->st_mode;
		rec->mtime_ns = st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
		rec->ctime_ns = st->st_ctim.tv_sec * 1000000000ll + st->st_ctim.tv_nsec;
	}
	__atomic_store_n(&shm->head, head + 1, __ATOMIC_RELEASE);
	return ret;
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv) {
	(void)sig;
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	struct fp_regs r = {si->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX],
	                    g[REG_R10], g[REG_R8], g[REG_R9]};
	g[REG_RAX] = fp_agent_dispatch(&r);
}

// The kernel's struct sigaction: the agent names its own restorer (in its
// page), which glibc's sigaction would replace with its own.
struct ksigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

static int install_sigsys(void) {
	struct ksigaction ka = {on_sigsys, SA_SIGINFO | SA_RESTORER | SA_NODEFER, fp_restorer, 0};
	return (int)syscall(SYS_rt_sigaction, SIGSYS, &ka, NULL, sizeof(uint64_t));
}

// ---- Filters --------------------------------------------------------------------

#define LD_W(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI (offsetof(struct seccomp_data, instruction_pointer) + 4)

// ip_in appends a test that jumps to "yes" (relative, counted from after
// the test) when the instruction pointer is in [lo, hi), to "no" otherwise.
// lo and hi must share their upper 32 bits.
//
// The filter decides the lookup number nr (newfstatat, or openat with -o):
// inside [lo, hi) it returns inside, elsewhere outside. For openat, with
// check_flags, a call whose flags could write gets outside wherever it comes
// from.
static int filter_install(int listener, unsigned nr, int check_flags, unsigned long lo,
                          unsigned long hi, unsigned inside, unsigned outside) {
	struct sock_filter insns[] = {
	    LD_W(offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	    LD_W(offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    // openat's flags (args[2], low 32 bits)
	    LD_W(offsetof(struct seccomp_data, args[2])),
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, check_flags ? OPEN_WRITE_FLAGS : 0, 5, 0),
	    LD_W(IP_HI),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(lo >> 32), 0, 3),
	    LD_W(IP_LO),
	    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo, 0, 1),
	    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)hi, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, outside),
	    BPF_STMT(BPF_RET | BPF_K, inside),
	};
	struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};
	unsigned flags = listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER |
	                                SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	                          : 0;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

// ---- Descriptor passing ------------------------------------------------------

static int send_fd(int sock, int fd) {
	char byte = 'F';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
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
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

// ---- The child: the traced program ---------------------------------------------

enum mode {
	M_NATIVE, M_NOTIFY, M_TRAP, M_FORWARD, M_SUD, M_REWRITE,
	M_GETPPID_NATIVE, M_GETPPID_FILTERS, M_GETPPID_SUD, M_N
};
static const char *mode_names[M_N] = {
    "native", "notify", "trap", "forward", "sud", "rewrite",
    "getppid-native", "getppid-filters", "getppid-sud"};

static int mode_supervised(enum mode m) {
	return m != M_NATIVE && m != M_GETPPID_NATIVE;
}

static volatile char sud_selector = SYSCALL_DISPATCH_FILTER_ALLOW;

static void busy(uint64_t gap_ns) {
	if (gap_ns == 0)
		return;
	uint64_t until = now_ns() + gap_ns;
	while (now_ns() < until)
		;
}

// open_mode is -o: the timed call is open+close, the lookup openat.
static int open_mode;

static int one_call(enum mode m, const char *path) {
	if (m >= M_GETPPID_NATIVE)
		return getppid() > 0 ? 0 : -1;
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

struct result {
	double ns_per_call, csw_per_call, call_ns_median;
};

static uint64_t *durations; // per timed call, allocated before any filter

static int cmp_u64(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static long csw_now(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static struct result timed_loop(enum mode m, const char *path, long n, uint64_t gap_ns) {
	struct result res = {-1, -1, -1};
	for (int i = 0; i < WARMUP; i++) {
		if (one_call(m, path) != 0)
			return res;
		busy(gap_ns);
	}
	// getrusage is not trapped by any filter here (under dispatch it is made
	// again by the agent, outside the timed loop).
	long c0 = csw_now();
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint64_t s = now_ns();
		if (one_call(m, path) != 0)
			return res;
		durations[i] = now_ns() - s;
		busy(gap_ns);
	}
	uint64_t t1 = now_ns();
	long c1 = csw_now();
	res.ns_per_call = (double)(t1 - t0) / (double)n;
	res.csw_per_call = (double)(c1 - c0) / (double)n;
	qsort(durations, (size_t)n, sizeof(durations[0]), cmp_u64);
	res.call_ns_median = (double)durations[n / 2];
	return res;
}

// The child installs what its mode needs, in the order a real run would:
// the base filter (the stub, before exec), then the agent's parts.
static void child_main(enum mode m, int sock, const char *path, long n, uint64_t gap_ns) {
	durations = calloc((size_t)n, sizeof(durations[0]));
	if (!durations || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(10);
	unsigned long agent = (unsigned long)fp_agent_page;
	unsigned long fwd_end = (unsigned long)fp_pages_end;
	unsigned nr = open_mode ? __NR_openat : __NR_newfstatat;
	agent_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (agent_root < 0)
		_exit(10);
	if (mode_supervised(m)) {
		// The base filter: lookups from the agent page run, any other is
		// notified. (notify: no agent page at all.)
		unsigned inside = m == M_NOTIFY ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
		int lfd = filter_install(1, nr, open_mode, agent, agent + 4096, inside, SECCOMP_RET_USER_NOTIF);
		if (lfd < 0 || send_fd(sock, lfd) != 0)
			_exit(11);
		close(lfd);
	}
	if (m == M_TRAP || m == M_FORWARD || m == M_SUD || m == M_GETPPID_FILTERS || m == M_GETPPID_SUD) {
		if (install_sigsys() != 0)
			_exit(12);
	}
	if (m == M_FORWARD)
		agent_forward_all = 1;
	if (m == M_TRAP || m == M_FORWARD || m == M_GETPPID_FILTERS) {
		// The agent's filter: a lookup from outside its two pages traps.
		if (filter_install(0, nr, 0, agent, fwd_end, SECCOMP_RET_ALLOW, SECCOMP_RET_TRAP) != 0)
			_exit(13);
	}
	if (m == M_REWRITE) {
		// The trampolines' page, below 2 GiB; the supervisor writes it.
		void *p = mmap((void *)TRAMP_BASE, 4096, PROT_READ | PROT_EXEC,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != (void *)TRAMP_BASE)
			_exit(14);
	}
	char go;
	if (read(sock, &go, 1) != 1)
		_exit(15);
	if (m == M_SUD || m == M_GETPPID_SUD) {
		// Every call from outside the agent's pages raises SIGSYS from now on.
		if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, agent,
		          fwd_end - agent, &sud_selector) != 0)
			_exit(16);
		sud_selector = SYSCALL_DISPATCH_FILTER_BLOCK;
	}
	if (open_mode && mode_supervised(m) && m != M_NOTIFY && m < M_GETPPID_NATIVE) {
		// What a program could try: an open for writing made from the
		// agent page itself. The base filter must notify it (the
		// supervisor refuses it with EPERM), not let it run.
		long r = fp_agent_syscall6(__NR_openat, AT_FDCWD, (long)path, O_WRONLY, 0, 0, 0);
		if (r != -EPERM)
			_exit(19);
	}
	struct result res = timed_loop(m, path, n, gap_ns);
	if (mode_supervised(m)) { // (getppid modes too: the sentinel ends the supervisor)
		struct stat st;
		if (open_mode) // the supervisor stops here
			(void)openat(AT_FDCWD, SENTINEL, O_RDONLY);
		else
			(void)fstatat(AT_FDCWD, SENTINEL, &st, 0);
	}
	if (write(sock, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(17);
	_exit(res.ns_per_call > 0 ? 0 : 18);
}

// ---- The supervisor ----------------------------------------------------------------

static int read_child(pid_t pid, uint64_t addr, void *buf, size_t len) {
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int read_child_path(pid_t pid, uint64_t addr, char *buf, size_t cap) {
	size_t got = 0;
	while (got < cap) {
		uint64_t a = addr + got;
		size_t chunk = 4096 - (size_t)(a & 4095);
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

// drain consumes the ring: here it only counts the records and checks their
// shape; txexec would feed each to the view (docs/fastpath.md).
static long drain(void) {
	long n = 0;
	uint64_t head = __atomic_load_n(&shm->head, __ATOMIC_ACQUIRE);
	for (uint64_t t = shm->tail; t < head; t++, n++) {
		const struct record *rec = &shm->ring[t % RING_N];
		if ((rec->nr != __NR_newfstatat && rec->nr != __NR_openat) || rec->path[0] != '/')
			fail("malformed ring record");
	}
	__atomic_store_n(&shm->tail, head, __ATOMIC_RELEASE);
	return n;
}

static int tramp_n;

// rewrite_site turns the call site that ends just before ip into a jump to a
// new trampoline, if it is glibc's "mov $nr,%eax; syscall". The caller is
// stopped in the call being served, and single-threaded here: txexec would
// rewrite only then (docs/fastpath.md).
static int rewrite_site(pid_t pid, int memfd, uint64_t ip, uint32_t nr) {
	unsigned char site[7];
	if (ip < 7 || read_child(pid, ip - 7, site, 7) != 0)
		return -1;
	if (site[0] != 0xb8 || memcmp(site + 1, &nr, 4) != 0 || site[5] != 0x0f || site[6] != 0x05)
		return 0; // not the pattern: stays on the slow path
	if (ip - 7 >= TRAMP_BASE && ip - 7 < TRAMP_BASE + 4096)
		return 0;
	if (tramp_n >= TRAMP_SITES)
		return 0;
	// The trampoline (64 bytes each; the slot, its address, in the last 8
	// bytes of the page's slot area):
	//   lea -0x80(%rsp),%rsp        skip the red zone
	//   mov $nr,%eax
	//   movabs $fp_agent_entry,%r11
	//   call *%r11
	//   lea 0x80(%rsp),%rsp
	//   jmp *0(%rip)                back after the site
	//   .quad ip
	unsigned char t[64];
	size_t k = 0;
	const unsigned char lea_down[] = {0x48, 0x8d, 0x64, 0x24, 0x80};
	memcpy(t + k, lea_down, 5), k += 5;
	t[k++] = 0xb8, memcpy(t + k, &nr, 4), k += 4;
	t[k++] = 0x49, t[k++] = 0xbb;
	uint64_t entry = (uint64_t)(uintptr_t)fp_agent_entry; // same address in the child: forked
	memcpy(t + k, &entry, 8), k += 8;
	t[k++] = 0x41, t[k++] = 0xff, t[k++] = 0xd3;
	const unsigned char lea_up[] = {0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00};
	memcpy(t + k, lea_up, 8), k += 8;
	const unsigned char jmp_rip[] = {0xff, 0x25, 0x00, 0x00, 0x00, 0x00};
	memcpy(t + k, jmp_rip, 6), k += 6;
	memcpy(t + k, &ip, 8), k += 8;
	uint64_t tramp = TRAMP_BASE + 64 * (uint64_t)tramp_n;
	uint64_t slot = TRAMP_BASE + 4096 - 8 * (uint64_t)(tramp_n + 1);
	if (pwrite(memfd, t, k, (off_t)tramp) != (ssize_t)k ||
	    pwrite(memfd, &tramp, 8, (off_t)slot) != 8)
		return -1;
	// jmp *slot: ff 24 25 disp32 (absolute, sign-extended: below 2 GiB)
	unsigned char jmp[7] = {0xff, 0x24, 0x25};
	uint32_t disp = (uint32_t)slot;
	memcpy(jmp + 3, &disp, 4);
	if (pwrite(memfd, jmp, 7, (off_t)(ip - 7)) != 7)
		return -1;
	tramp_n++;
	return 1;
}

static volatile sig_atomic_t child_gone;
static void on_sigchld(int sig) {
	(void)sig;
	child_gone = 1;
}

struct outcome {
	struct result res;
	double sup_csw;
	long served, recorded, refused;
};

static struct outcome run_mode(enum mode m, const char *path, long n, uint64_t gap_ns) {
	struct outcome out = {{-1, -1, -1}, 0, 0, 0, 0};
	memset((void *)shm->ring, 0, sizeof(shm->ring));
	shm->head = shm->tail = 0;
	tramp_n = 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		die("socketpair");
	child_gone = 0;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(sv[0]);
		child_main(m, sv[1], path, n, gap_ns);
	}
	close(sv[1]);
	int sock = sv[0];
	long c0 = csw_now();
	int lfd = -1, memfd = -1;
	if (mode_supervised(m)) {
		lfd = recv_fd(sock);
		if (lfd < 0)
			fail("no listener from the child (seccomp failed?)");
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		          (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0)
			die("SECCOMP_IOCTL_NOTIF_SET_FLAGS");
		char mp[64];
		snprintf(mp, sizeof(mp), "/proc/%d/mem", (int)pid);
		if (m == M_REWRITE && (memfd = open(mp, O_RDWR | O_CLOEXEC)) < 0)
			die(mp);
	}
	if (write(sock, "G", 1) != 1)
		die("write(go)");
	if (mode_supervised(m)) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		char pathbuf[4096];
		for (int done = 0; !done && !child_gone;) {
			memset(&req, 0, sizeof(req));
			if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
				if (errno == EINTR || errno == ENOENT)
					continue;
				die("SECCOMP_IOCTL_NOTIF_RECV");
			}
			out.recorded += drain(); // before serving anything
			memset(&resp, 0, sizeof(resp));
			resp.id = req.id;
			const struct seccomp_data *d = &req.data;
			int r = read_child_path(req.pid, d->args[1], pathbuf, sizeof(pathbuf));
			if ((d->nr != __NR_newfstatat && d->nr != __NR_openat) || r != 0 ||
			    (int)d->args[0] != AT_FDCWD) {
				resp.error = r ? r : -ENOSYS;
			} else if (strcmp(pathbuf, SENTINEL) == 0) {
				resp.error = -ENOENT;
				done = 1;
			} else if (d->nr == __NR_openat && ((int)d->args[2] & OPEN_WRITE_FLAGS)) {
				resp.error = -EPERM; // the child's probe (-o): it must reach us
				out.refused++;
			} else {
				out.served++;
				// Rewrite first: for an open the reply is the ADDFD below.
				uint64_t ip = d->instruction_pointer;
				int fwd = ip >= (uint64_t)(uintptr_t)fp_forward_page &&
				          ip < (uint64_t)(uintptr_t)fp_pages_end;
				if (m == M_REWRITE && !fwd && rewrite_site(req.pid, memfd, ip, (uint32_t)d->nr) < 0)
					die("rewrite the call site");
				if (d->nr == __NR_openat) {
					// Open here, install the descriptor in the child; with
					// SEND the ADDFD is the reply (as txexec answers an open).
					int oflags = (int)d->args[2];
					int fd = openat(AT_FDCWD, pathbuf, oflags | O_CLOEXEC, (mode_t)d->args[3]);
					if (fd < 0) {
						resp.error = -errno;
					} else {
						struct seccomp_notif_addfd a = {
						    .id = req.id,
						    .flags = SECCOMP_ADDFD_FLAG_SEND,
						    .srcfd = (__u32)fd,
						    .newfd_flags = (__u32)(oflags & O_CLOEXEC),
						};
						int got = ioctl(lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
						int e = errno;
						close(fd);
						if (got >= 0 || e == ENOENT || e == EINTR)
							continue; // replied, or the child is gone
						resp.error = -e;
					}
				} else {
					struct stat st;
					if (fstatat(AT_FDCWD, pathbuf, &st, (int)d->args[3]) != 0) {
						resp.error = -errno;
					} else {
						struct iovec local = {.iov_base = &st, .iov_len = sizeof(st)};
						struct iovec remote = {.iov_base = (void *)(uintptr_t)d->args[2],
						                       .iov_len = sizeof(st)};
						if (process_vm_writev(req.pid, &local, 1, &remote, 1, 0) !=
						    (ssize_t)sizeof(st))
							resp.error = -EFAULT;
					}
				}
			}
			if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT)
				die("SECCOMP_IOCTL_NOTIF_SEND");
		}
		out.recorded += drain();
	}
	ssize_t got;
	do
		got = read(sock, &out.res, sizeof(out.res));
	while (got < 0 && errno == EINTR);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	long c1 = csw_now();
	if (lfd >= 0)
		close(lfd);
	if (memfd >= 0)
		close(memfd);
	close(sock);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "fastpath_floor: mode %s: child %s %d\n", mode_names[m],
		        WIFSIGNALED(status) ? "killed by signal" : "exited with status",
		        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		exit(2);
	}
	if (got != (ssize_t)sizeof(out.res) || out.res.ns_per_call <= 0)
		fail("the child did not report a result");
	out.sup_csw = (double)(c1 - c0) / (double)n;
	// Completeness: every lookup was recorded by the agent or served.
	if (m <= M_REWRITE && mode_supervised(m) && out.served + out.recorded != n + WARMUP) {
		fprintf(stderr, "fastpath_floor: mode %s: %ld calls served + %ld recorded != %ld made\n",
		        mode_names[m], out.served, out.recorded, n + WARMUP);
		exit(2);
	}
	return out;
}

static int usage(void) {
	fprintf(stderr, "usage: fastpath_floor [-n N] [-g GAP_US] [-f path] [-M mode[,mode...]] [-c] [-o]\n");
	return 2;
}

int main(int argc, char **argv) {
	long n = 10000, gap_us = 0;
	const char *path = "/usr/include/stdio.h";
	char *modes = NULL;
	int opt;
	int path_changed = 0;
	while ((opt = getopt(argc, argv, "n:g:f:M:co")) != -1) {
		char *end;
		switch (opt) {
		case 'n':
		case 'g': {
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || *end || v < 0 || (opt == 'n' && v == 0))
				return usage();
			*(opt == 'n' ? &n : &gap_us) = v;
			break;
		}
		case 'f': path = optarg; break;
		case 'M': modes = optarg; break;
		case 'c': path_changed = 1; break;
		case 'o': open_mode = 1; break;
		default: return usage();
		}
	}
	if (optind != argc || path[0] != '/')
		return usage();
	int want[M_N] = {0};
	if (!modes) {
		for (int i = 0; i < M_N; i++)
			want[i] = 1;
	} else {
		for (char *tok = strtok(modes, ","); tok; tok = strtok(NULL, ",")) {
			int found = 0;
			for (int i = 0; i < M_N; i++)
				if (strcmp(tok, mode_names[i]) == 0)
					want[i] = found = 1;
			if (!found) {
				fprintf(stderr, "fastpath_floor: unknown mode %s\n", tok);
				return 2;
			}
		}
	}
	alarm((unsigned)(60 + n * (gap_us + 100) / 1000000 * M_N));
	struct stat st;
	if (stat(path, &st) != 0)
		die(path);
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		die("mmap");
	// What the supervisor would have published: paths the transaction
	// changed (made up, none a prefix of the path), and the directories on
	// the way to the path.
	char buf[256];
	for (int i = 0; i < 256; i++) {
		snprintf(buf, sizeof(buf), "/var/lib/dpkg/info/package-%d.list", i);
		set_add(shm->changed, fnv(buf));
	}
	if (path_changed)
		set_add(shm->changed, fnv(path));
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = strrchr(buf, '/'); s && s != buf; s = strrchr(buf, '/')) {
		*s = 0;
		set_add(shm->fastdirs, fnv(buf));
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld; // no SA_RESTART: interrupts NOTIF_RECV
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		die("sigaction");
	for (int i = 0; i < M_N; i++) {
		if (!want[i])
			continue;
		struct outcome o = run_mode((enum mode)i, path, n, (uint64_t)gap_us * 1000);
		printf("mode=%s gap_us=%ld ns_per_call=%.2f call_ns_median=%.2f csw_per_call=%.3f sup_csw_per_call=%.3f served=%ld recorded=%ld refused=%ld\n",
		       mode_names[i], gap_us, o.res.ns_per_call, o.res.call_ns_median,
		       o.res.csw_per_call, o.sup_csw, o.served, o.recorded, o.refused);
		fflush(stdout);
	}
	return 0;
}
