//go:build ignore

// (The build constraint above keeps the go tool from treating this file as
// cgo source of package bench; fixture.go embeds it and compiles it with cc.)
//
// percall: times N system calls of one kind, for the per-call table of
// docs/performance.md (in the style of TxOS, SOSP'09, Table 4). The same
// binary runs natively, under `txexec --passthrough --` and under
// `txexec --` (in a transaction); it only reads the clock (vDSO, not a
// system call) around blocks of calls, so every number is the cost of the
// calls themselves, not of process start-up or commit.
//
// Usage: percall -o OP -d DIR [-n N] [-w W] [-F] [-b B] [-x PROG]
//   -o OP   stat | statat | statx | open | access | create | unlink | mkdir | rmdir |
//           link | read | write | listdir | busy | fork | exec | spawn | ownfstat
//   -d DIR  absolute directory prepared by the harness: DIR/file is an
//           unmodified 1 MiB host file
//   -n N    timed calls (default 10000; rounded up to a multiple of 64)
//   -w W    warm-up calls before timing (default 256)
//   -F      first install a seccomp filter that allows every call (after
//           checking the architecture): the cost of being filtered at all,
//           the floor of calls txexec lets through
//   -b B    (stat and busy) B iterations of a CPU loop after each call: a
//           program that computes between its calls (bench/floor's
//           notify_floor.c -b runs the same loop)
//   -x PROG (exec, spawn) the absolute path of the program to execute
//
// What one call is:
//   stat    stat(DIR/file)
//   statat  fstatat(dirfd, "file", &st, 0), dirfd an O_DIRECTORY descriptor
//           on DIR opened before timing
//   statx   statx(AT_FDCWD, DIR/file, 0, STATX_BASIC_STATS) (not in the
//           per-call table; BenchmarkSupervisorSyscalls counts it)
//   open    open(DIR/file, O_RDONLY) + close (close is not intercepted)
//   access  access(DIR/file, R_OK)
//   create  open(DIR/cK, O_CREAT|O_EXCL|O_WRONLY, 0644) + close
//   unlink  unlink(DIR/cK) of a file created untimed just before
//   mkdir   mkdir(DIR/dK, 0755)
//   rmdir   rmdir(DIR/dK) of a directory made untimed just before
//   link    link(DIR/file, DIR/lK)
//   read    read(fd, 4 KiB) sequentially through DIR/file (lseek to 0 at
//           its end, 1 call in 256)
//   write   write(fd, 4 KiB) sequentially to DIR/wfile (lseek to 0 every
//           256 writes, so the file stays 1 MiB)
//   listdir open(DIR/many, O_DIRECTORY) + getdents64 with a 32 KiB buffer
//           until the end + close: a whole listing of the harness's
//           directory of 1000 files (several getdents64 calls)
//   ownfstat fstat(fd) (glibc: newfstatat(fd, "", AT_EMPTY_PATH)) of
//           DIR/wfile, which it creates before timing: in a transaction, a
//           file of the transaction's own
//   busy    the -b loop alone, no system call: how long the gap is
//   fork    fork(); the child _exits at once; waitpid
//   exec    fork(); the child execve()s PROG (a tiny static program that
//           only exits: no dynamic loader, so no path call after execve);
//           waitpid
//   spawn   posix_spawn() of PROG (glibc's clone(CLONE_VM|CLONE_VFORK): how
//           make and gcc start their children); waitpid
// The paired operations (create/unlink, mkdir/rmdir, link/unlink) run in
// blocks of 64 over 64 names reused block after block: the timed half of a
// block, then the untimed half that restores the directory.
//
// Output (stdout, one line): ns_per_call=<float>
// Any failure: message on stderr, exit status != 0.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#ifndef __x86_64__
#error "percall: x86-64 only (its seccomp filter checks AUDIT_ARCH_X86_64)"
#endif

#define BLOCK 64
#define IOSIZE 4096
#define FILESIZE (1 << 20)

static char dir[3072];
static char file[4096], wfile[4096], manydir[4096];
static char names[BLOCK][4096];
static char iobuf[IOSIZE] __attribute__((aligned(4096)));
static int iofd = -1, dirfd = -1;
static long iopos;
static long busy_iters;
static const char *exec_prog;
extern char **environ;

static void die(const char *what) {
	fprintf(stderr, "percall: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); // vDSO: not a system call
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_names(char prefix) {
	for (int i = 0; i < BLOCK; i++)
		snprintf(names[i], sizeof(names[i]), "%s/%c%d", dir, prefix, i);
}

// busy runs busy_iters steps of a linear congruential generator, each
// depending on the one before, in registers only: CPU work the compiler
// cannot drop or shorten, of a length that does not depend on the caches.
static volatile uint64_t busy_sink;
static void busy(void) {
	uint64_t x = busy_sink;
	for (long i = 0; i < busy_iters; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	busy_sink = x;
}

// The timed half of one block of each operation.
static void do_stat(void) {
	struct stat st;
	for (int i = 0; i < BLOCK; i++) {
		if (stat(file, &st) != 0)
			die("stat");
		busy();
	}
}

static void do_busy(void) {
	for (int i = 0; i < BLOCK; i++)
		busy();
}

static void reap(pid_t pid) {
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "percall: child ended with status 0x%x\n", status);
		exit(2);
	}
}

static void do_fork(void) {
	for (int i = 0; i < BLOCK; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(0);
		reap(pid);
	}
}

static void do_exec(void) {
	for (int i = 0; i < BLOCK; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			char *argv[] = {(char *)exec_prog, NULL};
			execve(exec_prog, argv, environ);
			_exit(127);
		}
		reap(pid);
	}
}

static void do_spawn(void) {
	for (int i = 0; i < BLOCK; i++) {
		pid_t pid;
		char *argv[] = {(char *)exec_prog, NULL};
		int err = posix_spawn(&pid, exec_prog, NULL, NULL, argv, environ);
		if (err != 0) {
			errno = err;
			die("posix_spawn");
		}
		reap(pid);
	}
}

static void do_statx(void) {
	struct statx stx;
	for (int i = 0; i < BLOCK; i++)
		if (statx(AT_FDCWD, file, 0, STATX_BASIC_STATS, &stx) != 0)
			die("statx");
}

static void do_statat(void) {
	struct stat st;
	for (int i = 0; i < BLOCK; i++)
		if (fstatat(dirfd, "file", &st, 0) != 0)
			die("fstatat");
}

static void do_ownfstat(void) {
	struct stat st;
	for (int i = 0; i < BLOCK; i++)
		if (fstat(iofd, &st) != 0)
			die("fstat");
}

static void do_open(void) {
	for (int i = 0; i < BLOCK; i++) {
		int fd = open(file, O_RDONLY);
		if (fd < 0)
			die("open");
		close(fd);
	}
}

static void do_access(void) {
	for (int i = 0; i < BLOCK; i++)
		if (access(file, R_OK) != 0)
			die("access");
}

static void do_create(void) {
	for (int i = 0; i < BLOCK; i++) {
		int fd = open(names[i], O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			die("open(O_CREAT)");
		close(fd);
	}
}

static void do_unlink(void) {
	for (int i = 0; i < BLOCK; i++)
		if (unlink(names[i]) != 0)
			die("unlink");
}

static void do_mkdir(void) {
	for (int i = 0; i < BLOCK; i++)
		if (mkdir(names[i], 0755) != 0)
			die("mkdir");
}

static void do_rmdir(void) {
	for (int i = 0; i < BLOCK; i++)
		if (rmdir(names[i]) != 0)
			die("rmdir");
}

static void do_link(void) {
	for (int i = 0; i < BLOCK; i++)
		if (link(file, names[i]) != 0)
			die("link");
}

static void do_listdir(void) {
	static char buf[32768];
	for (int i = 0; i < BLOCK; i++) {
		int fd = open(manydir, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			die("open many");
		long got;
		while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
			;
		if (got < 0)
			die("getdents64");
		close(fd);
	}
}

static void do_read(void) {
	for (int i = 0; i < BLOCK; i++) {
		if (iopos == FILESIZE) {
			if (lseek(iofd, 0, SEEK_SET) != 0)
				die("lseek");
			iopos = 0;
		}
		if (read(iofd, iobuf, IOSIZE) != IOSIZE)
			die("read");
		iopos += IOSIZE;
	}
}

static void do_write(void) {
	for (int i = 0; i < BLOCK; i++) {
		if (iopos == FILESIZE) {
			if (lseek(iofd, 0, SEEK_SET) != 0)
				die("lseek");
			iopos = 0;
		}
		if (write(iofd, iobuf, IOSIZE) != IOSIZE)
			die("write");
		iopos += IOSIZE;
	}
}

struct op {
	const char *name;
	char prefix;                // names[] prefix, 0 if unused
	void (*timed)(void);        // one block of timed calls
	void (*before)(void);       // untimed, before each timed block
	void (*after)(void);        // untimed, after each timed block
};

static const struct op ops[] = {
	{"stat", 0, do_stat, NULL, NULL},
	{"statat", 0, do_statat, NULL, NULL},
	{"statx", 0, do_statx, NULL, NULL},
	{"open", 0, do_open, NULL, NULL},
	{"access", 0, do_access, NULL, NULL},
	{"create", 'c', do_create, NULL, do_unlink},
	{"unlink", 'c', do_unlink, do_create, NULL},
	{"mkdir", 'd', do_mkdir, NULL, do_rmdir},
	{"rmdir", 'd', do_rmdir, do_mkdir, NULL},
	{"link", 'l', do_link, NULL, do_unlink},
	{"read", 0, do_read, NULL, NULL},
	{"write", 0, do_write, NULL, NULL},
	{"listdir", 0, do_listdir, NULL, NULL},
	{"busy", 0, do_busy, NULL, NULL},
	{"fork", 0, do_fork, NULL, NULL},
	{"exec", 0, do_exec, NULL, NULL},
	{"spawn", 0, do_spawn, NULL, NULL},
	{"ownfstat", 0, do_ownfstat, NULL, NULL},
};

static uint64_t run_blocks(const struct op *o, long blocks) {
	uint64_t total = 0;
	for (long b = 0; b < blocks; b++) {
		if (o->before)
			o->before();
		uint64_t t0 = now_ns();
		o->timed();
		total += now_ns() - t0;
		if (o->after)
			o->after();
	}
	return total;
}

// allow_all installs a filter that kills a foreign architecture and allows
// everything else.
static void allow_all(void) {
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(insns) / sizeof(insns[0])),
		.filter = insns,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("prctl(PR_SET_NO_NEW_PRIVS)");
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
		die("seccomp(SECCOMP_SET_MODE_FILTER)");
}

static int usage(void) {
	fprintf(stderr, "usage: percall -o OP -d DIR [-n N] [-w W] [-F] [-b B] [-x PROG]\n");
	return 2;
}

static long parse_count(const char *s) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 0)
		return -1;
	return v;
}

int main(int argc, char **argv) {
	const char *opname = NULL, *d = NULL;
	long n = 10000, warm = 256;
	int filter = 0, opt;
	while ((opt = getopt(argc, argv, "o:d:n:w:Fb:x:")) != -1) {
		switch (opt) {
		case 'o': opname = optarg; break;
		case 'd': d = optarg; break;
		case 'n': n = parse_count(optarg); break;
		case 'w': warm = parse_count(optarg); break;
		case 'F': filter = 1; break;
		case 'b': busy_iters = parse_count(optarg); break;
		case 'x': exec_prog = optarg; break;
		default: return usage();
		}
	}
	if (optind != argc || !opname || !d || d[0] != '/' || n <= 0 || warm < 0 ||
	    strlen(d) >= sizeof(dir))
		return usage();
	const struct op *o = NULL;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, opname) == 0)
			o = &ops[i];
	if (!o || busy_iters < 0 || (busy_iters && o->timed != do_stat && o->timed != do_busy) ||
	    (o->timed == do_exec || o->timed == do_spawn) != (exec_prog != NULL) || (exec_prog && exec_prog[0] != '/'))
		return usage();
	strcpy(dir, d);
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(wfile, sizeof(wfile), "%s/wfile", dir);
	snprintf(manydir, sizeof(manydir), "%s/many", dir);
	if (o->prefix)
		set_names(o->prefix);
	if (filter)
		allow_all();
	memset(iobuf, 'x', sizeof(iobuf));
	if (o->timed == do_statat && (dirfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
		die(dir);
	if (o->timed == do_read && (iofd = open(file, O_RDONLY)) < 0)
		die(file);
	if ((o->timed == do_write || o->timed == do_ownfstat) &&
	    (iofd = open(wfile, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		die(wfile);

	run_blocks(o, (warm + BLOCK - 1) / BLOCK);
	long blocks = (n + BLOCK - 1) / BLOCK;
	uint64_t ns = run_blocks(o, blocks);
	if (iofd >= 0)
		close(iofd);
	printf("ns_per_call=%.2f\n", (double)ns / (double)(blocks * BLOCK));
	return 0;
}
