/*
 * escape ROUTE VICTIM [ARG]: tries to change the host file VICTIM (its
 * data, mode or inode flags) around a transaction's view, by one route,
 * and prints one line per attempt: "ROUTE STEP: ok" or "ROUTE STEP: ENAME".
 * Under txexec --on-exit=abort every attempt must leave the host as it was;
 * the test compares the host before and after, not these lines.
 *
 * ARG is the pid of a process outside the transaction that holds VICTIM
 * open read-write on descriptor 7 and has VICTIM's directory as its cwd
 * (escape hold VICTIM), or a block device for the blockdev route.
 *
 * Routes: io_uring, handle, i386, x32, proc-root, proc-cwd, proc-fd,
 * pidfd-getfd, ptrace, vm-writev, proc-mem (each of the last three also on
 * the supervisor: getppid()), chroot, unshare, clone-ns, clone3-ns, mount,
 * mmap-shared, attr-ioctl, blockdev, proc-sys.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *route;

static void report(const char *step, long rc)
{
	if (rc < 0)
		printf("%s %s: %s\n", route, step, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
	else
		printf("%s %s: ok\n", route, step);
	fflush(stdout);
}

static const char payload[] = "ESCAPED\n";

/* write_through writes the payload through fd, at its start. */
static void write_through(const char *step, int fd)
{
	if (fd < 0) {
		report(step, -1);
		return;
	}
	report(step, pwrite(fd, payload, sizeof payload - 1, 0));
	close(fd);
}

static void open_write(const char *step, const char *path)
{
	write_through(step, open(path, O_WRONLY));
}

/* io_uring: an IORING_OP_OPENAT of the victim, which the kernel resolves
 * itself, then an IORING_OP_WRITE through what it opened. */
static void try_io_uring(const char *victim)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int ring = syscall(SYS_io_uring_setup, 4, &p);
	report("setup", ring);
	if (ring < 0)
		return;
	size_t sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqlen = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		report("mmap", -1);
		return;
	}
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *mask = (unsigned *)(sq + p.sq_off.ring_mask);
	unsigned *array = (unsigned *)(sq + p.sq_off.array);
	unsigned *chead = (unsigned *)(cq + p.cq_off.head);
	struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	int fd = -1;
	for (int op = 0; op < 2; op++) {
		unsigned t = *tail, i = t & *mask;
		memset(&sqes[i], 0, sizeof sqes[i]);
		if (op == 0) {
			sqes[i].opcode = IORING_OP_OPENAT;
			sqes[i].fd = AT_FDCWD;
			sqes[i].addr = (uintptr_t)victim;
			sqes[i].open_flags = O_WRONLY;
		} else {
			sqes[i].opcode = IORING_OP_WRITE;
			sqes[i].fd = fd;
			sqes[i].addr = (uintptr_t)payload;
			sqes[i].len = sizeof payload - 1;
		}
		array[i] = i;
		__atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
		int rc = syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
		report(op == 0 ? "enter openat" : "enter write", rc);
		if (rc < 0)
			return;
		unsigned h = __atomic_load_n(chead, __ATOMIC_ACQUIRE);
		int res = cqes[h & (p.cq_entries - 1)].res;
		__atomic_store_n(chead, h + 1, __ATOMIC_RELEASE);
		errno = -res;
		report(op == 0 ? "openat" : "write", res);
		if (res < 0)
			return;
		fd = res;
	}
}

static void try_handle(const char *victim)
{
	struct file_handle *h = malloc(sizeof *h + MAX_HANDLE_SZ);
	h->handle_bytes = MAX_HANDLE_SZ;
	int mnt;
	int rc = name_to_handle_at(AT_FDCWD, victim, h, &mnt, 0);
	report("name_to_handle_at", rc);
	if (rc < 0)
		return;
	int dirfd = open("/", O_RDONLY | O_DIRECTORY);
	write_through("open_by_handle_at", open_by_handle_at(dirfd, h, O_WRONLY));
}

/* i386: open(2) and write(2) through int 0x80, with the path where a
 * 32-bit pointer reaches it. */
static void try_i386(const char *victim)
{
	char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (low == MAP_FAILED) {
		report("mmap", -1);
		return;
	}
	strncpy(low, victim, 4000);
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(5 /* open */), "b"(low), "c"(O_WRONLY) : "memory");
	if (ret < 0) {
		errno = -ret;
		report("open", -1);
		return;
	}
	int fd = ret;
	memcpy(low + 2048, payload, sizeof payload - 1);
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(4 /* write */), "b"(fd), "c"(low + 2048), "d"(sizeof payload - 1) : "memory");
	if (ret < 0)
		errno = -ret;
	report("write", ret);
}

static void try_x32(const char *victim)
{
	const long x32 = 0x40000000;
	long fd = syscall(x32 | 257 /* openat */, AT_FDCWD, victim, O_WRONLY);
	report("openat", fd);
	if (fd >= 0)
		report("write", syscall(x32 | 1 /* write */, fd, payload, sizeof payload - 1));
}

/* A writable mapping of pid, from its maps (0 if none is readable). */
static unsigned long writable_mapping(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	unsigned long lo = 0, hi;
	char perms[8];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[0] == 'r' && perms[1] == 'w')
			break;
		else
			lo = 0;
	if (f)
		fclose(f);
	return lo ? lo : 0x10000;
}

/* Writes into pid's memory the bytes that are there already: a success is
 * an escape, but harms nobody. */
static void try_vm_writev(const char *step, pid_t pid)
{
	char buf[16] = {0};
	unsigned long addr = writable_mapping(pid);
	struct iovec local = {buf, sizeof buf}, remote = {(void *)addr, sizeof buf};
	process_vm_readv(pid, &local, 1, &remote, 1, 0);
	report(step, process_vm_writev(pid, &local, 1, &remote, 1, 0));
}

static void try_proc_mem(const char *step, pid_t pid)
{
	char path[64], buf[16];
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int fd = open(path, O_RDWR);
	if (fd < 0) {
		report(step, -1);
		return;
	}
	unsigned long addr = writable_mapping(pid);
	if (pread(fd, buf, sizeof buf, addr) != sizeof buf) {
		report(step, -1);
		return;
	}
	report(step, pwrite(fd, buf, sizeof buf, addr));
	close(fd);
}

static void try_ptrace(const char *step, pid_t pid)
{
	long rc = ptrace(PTRACE_SEIZE, pid, 0, 0);
	report(step, rc);
	if (rc == 0)
		ptrace(PTRACE_DETACH, pid, 0, 0);
}

/* The classic chroot escape: chroot into a subdirectory while keeping the
 * cwd outside it, climb, and chroot to what the climb reached. */
static void try_chroot(const char *victim)
{
	mkdir("jail", 0755);
	report("chroot jail", chroot("jail"));
	for (int i = 0; i < 64; i++)
		chdir("..");
	report("chroot .", chroot("."));
	open_write("open", victim);
}

/* In new namespaces, with the mount table private: a mount over the
 * victim's directory, then a write. */
static int in_namespaces(const char *victim)
{
	char dir[4096];
	strncpy(dir, victim, sizeof dir - 1);
	*strrchr(dir, '/') = 0;
	report("mount private", mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL));
	report("mount tmpfs", mount("tmpfs", dir, "tmpfs", 0, NULL));
	open_write("open", victim);
	return 0;
}

static int child_fn(void *arg)
{
	in_namespaces(arg);
	return 0;
}

static void try_clone_ns(const char *victim, int flags)
{
	static char stack[256 * 1024];
	pid_t pid = clone(child_fn, stack + sizeof stack, flags | SIGCHLD, (void *)victim);
	report("clone", pid);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void try_clone3_ns(const char *victim)
{
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = CLONE_NEWUSER | CLONE_NEWNS;
	args.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &args, sizeof args);
	if (pid == 0) {
		in_namespaces(victim);
		_exit(0);
	}
	report("clone3", pid);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void try_mmap_shared(const char *victim)
{
	int fd = open(victim, O_RDONLY);
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	report("mmap rdonly fd writable", p == MAP_FAILED ? -1 : 0);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	report("mmap rdonly fd", p == MAP_FAILED ? -1 : 0);
	if (p != MAP_FAILED)
		report("mprotect writable", mprotect(p, 4096, PROT_READ | PROT_WRITE));
	close(fd);
	fd = open(victim, O_RDWR);
	report("open rdwr", fd);
	if (fd < 0)
		return;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	report("mmap rdwr fd", p == MAP_FAILED ? -1 : 0);
	if (p == MAP_FAILED)
		return;
	memcpy(p, payload, sizeof payload - 1);
	report("msync", msync(p, 4096, MS_SYNC));
}

/* Attribute changes through a read-only descriptor: chattr's flags, the
 * fsxattr, mode, owner, extended attributes, times. */
static void try_attr_ioctl(const char *victim)
{
	int fd = open(victim, O_RDONLY);
	report("open", fd);
	if (fd < 0)
		return;
	int flags = 0;
	report("getflags", ioctl(fd, FS_IOC_GETFLAGS, &flags));
	int noatime = flags | FS_NOATIME_FL;
	report("setflags +A", ioctl(fd, FS_IOC_SETFLAGS, &noatime));
	int immutable = flags | FS_IMMUTABLE_FL;
	report("setflags +i", ioctl(fd, FS_IOC_SETFLAGS, &immutable));
	struct fsxattr fsx;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx) == 0) {
		fsx.fsx_xflags |= FS_XFLAG_NODUMP;
		report("fssetxattr", ioctl(fd, FS_IOC_FSSETXATTR, &fsx));
	}
	report("fchmod", fchmod(fd, 0777));
	report("fsetxattr", fsetxattr(fd, "user.escape", "1", 1, 0));
	report("futimens", futimens(fd, (struct timespec[2]){{1, 0}, {1, 0}}));
	close(fd);
}

static void try_blockdev(const char *dev)
{
	write_through("open wronly", open(dev, O_WRONLY));
	int fd = open(dev, O_RDONLY);
	report("open rdonly", fd);
	if (fd < 0)
		return;
	uint64_t range[2] = {0, 4096};
	report("BLKZEROOUT", ioctl(fd, BLKZEROOUT, range));
	report("BLKDISCARD", ioctl(fd, BLKDISCARD, range));
	report("BLKRRPART", ioctl(fd, BLKRRPART, 0));
	report("LOOP_CLR_FD", ioctl(fd, 0x4C01 /* LOOP_CLR_FD */, 0));
	close(fd);
}

/* Writes to /proc/sys what is there already. */
static void try_proc_sys(void)
{
	char buf[256];
	int fd = open("/proc/sys/kernel/hostname", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		report("read", -1);
		return;
	}
	fd = open("/proc/sys/kernel/hostname", O_WRONLY);
	report("open wronly", fd);
	if (fd >= 0) {
		report("write", write(fd, buf, n));
		close(fd);
	}
}

static int hold(const char *victim)
{
	int fd = open(victim, O_RDWR);
	if (fd < 0 || dup2(fd, 7) < 0) {
		perror(victim);
		return 1;
	}
	char dir[4096];
	strncpy(dir, victim, sizeof dir - 1);
	*strrchr(dir, '/') = 0;
	if (chdir(dir) < 0) {
		perror(dir);
		return 1;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: escape ROUTE VICTIM [PID|DEVICE]\n");
		return 2;
	}
	route = argv[1];
	const char *victim = argv[2], *arg = argc > 3 ? argv[3] : "";
	pid_t outside = atoi(arg), supervisor = getppid();
	char path[4096];
	if (!strcmp(route, "hold"))
		return hold(victim);
	if (!strcmp(route, "io_uring"))
		try_io_uring(victim);
	else if (!strcmp(route, "handle"))
		try_handle(victim);
	else if (!strcmp(route, "i386"))
		try_i386(victim);
	else if (!strcmp(route, "x32"))
		try_x32(victim);
	else if (!strcmp(route, "proc-root")) {
		snprintf(path, sizeof path, "/proc/%d/root%s", outside, victim);
		open_write("open", path);
	} else if (!strcmp(route, "proc-cwd")) {
		snprintf(path, sizeof path, "/proc/%d/cwd/%s", outside, strrchr(victim, '/') + 1);
		open_write("open", path);
	} else if (!strcmp(route, "proc-fd")) {
		snprintf(path, sizeof path, "/proc/%d/fd/7", outside);
		open_write("open", path);
	} else if (!strcmp(route, "pidfd-getfd")) {
		int pidfd = syscall(SYS_pidfd_open, outside, 0);
		report("pidfd_open", pidfd);
		write_through("pidfd_getfd", syscall(SYS_pidfd_getfd, pidfd, 7, 0));
	} else if (!strcmp(route, "ptrace")) {
		try_ptrace("outside", outside);
		try_ptrace("supervisor", supervisor);
	} else if (!strcmp(route, "vm-writev")) {
		try_vm_writev("outside", outside);
		try_vm_writev("supervisor", supervisor);
	} else if (!strcmp(route, "proc-mem")) {
		try_proc_mem("outside", outside);
		try_proc_mem("supervisor", supervisor);
	} else if (!strcmp(route, "chroot"))
		try_chroot(victim);
	else if (!strcmp(route, "unshare")) {
		report("unshare", unshare(CLONE_NEWUSER | CLONE_NEWNS));
		in_namespaces(victim);
	} else if (!strcmp(route, "clone-ns"))
		try_clone_ns(victim, CLONE_NEWUSER | CLONE_NEWNS);
	else if (!strcmp(route, "clone3-ns"))
		try_clone3_ns(victim);
	else if (!strcmp(route, "mount"))
		in_namespaces(victim);
	else if (!strcmp(route, "mmap-shared"))
		try_mmap_shared(victim);
	else if (!strcmp(route, "attr-ioctl"))
		try_attr_ioctl(victim);
	else if (!strcmp(route, "blockdev"))
		try_blockdev(arg);
	else if (!strcmp(route, "proc-sys"))
		try_proc_sys();
	else {
		fprintf(stderr, "escape: unknown route %s\n", route);
		return 2;
	}
	return 0;
}
