// fastlookups: the programs of e2e/fastlookups_test.go (--fast-lookups).
// Each mode prints what its calls returned, so that a run under txexec
// compares with a native one:
//   loop N PATH     stat PATH N times
//   paths N PATH... stat each PATH N times in turn (one call site: glibc's),
//                   printing what the last stat of each returned
//   mix N DIR       N rounds of stat, lstat, statx, access, faccessat2,
//                   readlink and readlinkat of DIR's fixtures (a file, a
//                   symlink to it, a dangling symlink, a path with "..",
//                   a relative path, a missing file), each from one call
//                   site, so that every site is rewritten after its first
//   threads N PATH  a second thread, then stat PATH N times
//   closeall N PATH every descriptor closed, then stat PATH N times
//   vfork N PATH    a vfork child stats PATH N times, then the parent
//   fork N PATH     a stat, then a forked child stats PATH N times, then
//                   the parent; each prints the inode of the fast-lookup
//                   ring it maps (0: none)
//   xbegin N PATH   stat PATH N times, then in a transaction of its own
//                   (xbegin) append a line to PATH and stat it N times
//                   and abort it (natively the xbegin fails, ENOSYS)
//   treewrite       try to make the fast-lookup tree's mapping writable, to
//                   write it through a writable mapping of its file, and
//                   through write(2); print each result
//   chroot N DIR    stat /file N times, chroot to DIR, stat /file N times
//                   (DIR's), then execute /fastlookups-static loop N /file
//                   there
//   agent N open|read|stat DIR
//                   N calls made from the agent page's own system-call
//                   instruction (its first bytes, at the fixed address):
//                   openat(DIR/f, O_WRONLY|O_CREAT) and unlink, an
//                   openat(DIR, O_RDONLY|O_DIRECTORY) and close, or stat
//   openloop N PATH...  for each PATH in turn (one call site): open it
//                   read-only, read a byte and close, N times
//   dirloop N DIR   with an O_PATH descriptor of DIR: N times
//                   openat(dirfd, "file") and close, fstatat(dirfd,
//                   "file") and fstatat(fd, "", AT_EMPTY_PATH)
//   opendirloop N DIR  opendir and closedir DIR N times (glibc's
//                   __open_nocancel: its openat site is "mov $nr,%eax;
//                   mov %rsi,%rdx; mov $AT_FDCWD,%edi; syscall")
//   sites N PATH    N times: stat, access and readlink of PATH, each from
//                   its own call site of glibc
//   site N PATH     N times: stat of PATH
//   xstatloop N PATH  N times glibc's __xstat and __lxstat of PATH (the
//                   old stat and lstat system calls, which programs built
//                   against glibc before 2.33 make), printing what the
//                   last returned
//   readlinkloop N PATH  readlink PATH N times (one call site), printing
//                   what the last returned
//   fstatloop N PATH  open PATH read-only read-only, then N times fstat the
//                   descriptor (glibc: newfstatat(fd, "", AT_EMPTY_PATH))
//                   and print its size and inode, and whether they stayed
//   ownfstat N PATH STEP...  for each STEP in turn: make the change it
//                   names to PATH (create: open it O_RDWR|O_CREAT|O_TRUNC,
//                   stage: open it O_RDWR|O_APPEND, reopen: open it
//                   O_RDONLY instead, write, ftruncate,
//                   truncate (by path), fchmod, fchown (to the owner it
//                   has), futimens, link (to PATH.l), rename (to PATH.r),
//                   unlink, touchctime (fchown to -1, -1)), then N times
//                   fstat the descriptor (glibc: newfstatat(fd, "",
//                   AT_EMPTY_PATH)), then statx it (which the supervisor
//                   always serves in a transaction): print the step, the
//                   stable fields (link count, mode, size, blocks) and
//                   whether every field of the last fstat (device, inode,
//                   link count, mode, owner, size, blocks, the three times)
//                   is the statx's
//   dirread N DIR NAME...  with an O_PATH descriptor of DIR, for each
//                   NAME in turn (one call site): N times openat(dirfd,
//                   NAME), read its first byte, close
//   fsdir N DIR     with an O_PATH descriptor of DIR: N times
//                   fstatat(dirfd, "version") and openat(dirfd, "version")
//                   (for DIR /proc: forwarded)
//   openmix N DIR   N rounds of open, openat with O_NOFOLLOW, O_PATH and
//                   O_PATH|O_NOFOLLOW of DIR's fixtures, the same relative
//                   to a descriptor of DIR, fstatat and statx relative to
//                   it and of descriptors with AT_EMPTY_PATH, an open for
//                   writing; then a descriptor opened natively used in
//                   calls the supervisor serves (fchdir, getdents64)
//   cwd N DIR NAME...  getcwd, then chdir to DIR; for each NAME in turn, N
//                   times stat, access, open and readlink of it relative
//                   to the working directory (each from its own call
//                   site), printing what the last of each returned; then
//                   getcwd N times and with buffers too small, exact,
//                   NULL and read-only (cwd_print)
//   cwdtx N DIR     relative lookups and getcwd (as cwd) in DIR/made, a
//                   directory it makes, in DIR/ren while it renames it to
//                   DIR/ren2, and in DIR/gone after it removes it; then
//                   puts DIR back as it was
//   cwdmove N DIR   in DIR/d, relative lookups of "file" and getcwd (as
//                   cwd); then it renames DIR/d to DIR/e and makes a new
//                   DIR/d, and does them again (its working directory is
//                   DIR/e now); then puts DIR back as it was
//   cwddrop N DIR   chdir to DIR/a/b, become uid and gid 65534, then
//                   relative lookups of "f" and "missing" and getcwd (as
//                   cwd): DIR/a is the caller's no more to search
//   cwdvfork N DIR  chdir to DIR; a vfork child changes its working
//                   directory to DIR/sub and exits, posix_spawn runs
//                   this program's cwd mode in DIR/sub (a chdir file
//                   action); then the parent's lookups and getcwd (as
//                   cwd); then again while a child cloned with CLONE_VM
//                   (and without CLONE_VFORK) has changed its working
//                   directory to DIR/sub and waits; then while a child
//                   cloned with CLONE_FS (and without CLONE_VM) has
//                   changed the working directory they share to DIR/sub,
//                   and after it has exited
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

// The in-program API's xbegin and xabort (include/txexec.h), by number.
#define SYS_XBEGIN 0x0ffe0000L
#define SYS_XABORT (SYS_XBEGIN + 2)

#define AGENT_BASE 0x7ff00000UL

static unsigned long sum;

static void out(const char *what, long ret, unsigned long v) {
	printf("%s ret=%ld errno=%d v=%lu\n", what, ret, ret < 0 ? errno : 0, v);
}

static int stat_loop(long n, const char *path) {
	struct stat st;
	for (long i = 0; i < n; i++) {
		if (stat(path, &st) != 0) {
			perror(path);
			return 1;
		}
		sum += st.st_ino;
	}
	printf("stat %s ino=%lu size=%ld sum=%lu\n", path, (unsigned long)st.st_ino, (long)st.st_size, sum);
	return 0;
}

static int paths(long n, int argc, char **argv) {
	for (int i = 0; i < argc; i++) {
		struct stat st;
		long ret = 0;
		int err = 0;
		for (long k = 0; k < n; k++) {
			memset(&st, 0, sizeof st);
			ret = stat(argv[i], &st);
			err = ret != 0 ? errno : 0;
		}
		printf("%s ret=%ld errno=%d size=%ld mode=%o\n", argv[i], ret, err, (long)st.st_size, (unsigned)st.st_mode);
	}
	return 0;
}

// ring_inode is the inode of the memfd of the fast-lookup ring the process
// maps, 0 if none.
static unsigned long ring_inode(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long ino = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "txexec-fastlookup-ring"))
			sscanf(line, "%*s %*s %*s %*s %lu", &ino);
	if (f)
		fclose(f);
	return ino;
}

// cwd_lookups is N times stat, access, open and readlink of each NAME in
// turn, relative to the working directory, printing what the last of each
// returned.
static void cwd_lookups(long n, int argc, char **argv) {
	for (int i = 0; i < argc; i++) {
		struct stat st;
		char buf[64];
		long s = 0, a = 0, o = 0, l = 0;
		int se = 0, ae = 0, oe = 0, le = 0;
		for (long k = 0; k < n; k++) {
			memset(&st, 0, sizeof st);
			s = stat(argv[i], &st);
			se = s ? errno : 0;
			a = access(argv[i], R_OK);
			ae = a ? errno : 0;
			int fd = open(argv[i], O_RDONLY);
			o = fd < 0 ? -1 : 0;
			oe = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			l = readlink(argv[i], buf, sizeof buf);
			le = l < 0 ? errno : 0;
		}
		// (The size and mode only of a stat that succeeded: the agent
		// may leave a failed one's buffer written, docs/fastpath.md §4.5.)
		printf("%s stat=%ld/%d size=%ld mode=%o access=%ld/%d open=%ld/%d readlink=%ld/%d\n", argv[i], s, se,
		       s ? 0L : (long)st.st_size, s ? 0u : (unsigned)st.st_mode, a, ae, o, oe, l, le);
	}
}

// cwd_print is getcwd N times, then with a buffer of 2 bytes, one too
// small by one, one that fits exactly, and none (NULL, 0), printing what
// each returned.
static void cwd_print(long n) {
	char buf[4096];
	char *r = NULL;
	int err = 0;
	for (long k = 0; k < n; k++) {
		r = getcwd(buf, sizeof buf);
		err = r ? 0 : errno;
	}
	printf("getcwd %s errno=%d\n", r ? buf : "NULL", err);
	if (!r)
		return;
	size_t len = strlen(buf);
	char small[2];
	r = getcwd(small, sizeof small);
	printf("getcwd(2) %s errno=%d\n", r ? "ok" : "NULL", r ? 0 : errno);
	r = getcwd(buf, len);
	printf("getcwd(len) %s errno=%d\n", r ? "ok" : "NULL", r ? 0 : errno);
	r = getcwd(buf, len + 1);
	printf("getcwd(len+1) %s errno=%d\n", r ? buf : "NULL", r ? 0 : errno);
	r = getcwd(NULL, 0);
	printf("getcwd(NULL) %s errno=%d\n", r ? r : "NULL", r ? 0 : errno);
	free(r);
	// A buffer the kernel cannot write: EFAULT (the agent probes it).
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro != MAP_FAILED) {
		r = getcwd(ro, 4096);
		printf("getcwd(read-only) %s errno=%d\n", r ? "ok" : "NULL", r ? 0 : errno);
		munmap(ro, 4096);
	}
}

// cwd_tx is the cwdtx mode.
static int cwd_tx(long n, const char *dir) {
	char made[4096], ren[4096], ren2[4096], gone[4096];
	snprintf(made, sizeof made, "%s/made", dir);
	snprintf(ren, sizeof ren, "%s/ren", dir);
	snprintf(ren2, sizeof ren2, "%s/ren2", dir);
	snprintf(gone, sizeof gone, "%s/gone", dir);
	char *names[] = {"f", "file", "missing", "."};
	if (mkdir(made, 0755) != 0 || chdir(made) != 0) {
		perror(made);
		return 1;
	}
	int fd = open("f", O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || write(fd, "made\n", 5) != 5 || close(fd) != 0) {
		perror("f");
		return 1;
	}
	printf("made:\n");
	cwd_lookups(n, 4, names);
	cwd_print(n);
	if (chdir(ren) != 0) {
		perror(ren);
		return 1;
	}
	printf("ren:\n");
	cwd_lookups(n, 4, names);
	cwd_print(n);
	if (rename(ren, ren2) != 0) {
		perror("rename");
		return 1;
	}
	printf("renamed:\n");
	cwd_lookups(n, 4, names);
	cwd_print(n);
	if (chdir(gone) != 0 || rmdir(gone) != 0) {
		perror(gone);
		return 1;
	}
	printf("removed:\n");
	cwd_lookups(n, 3, names); // not ".": the view shows a removed directory's size
	cwd_print(n);
	char f[4200];
	snprintf(f, sizeof f, "%s/f", made);
	if (chdir(dir) != 0 || unlink(f) != 0 || rmdir(made) != 0 || rename(ren2, ren) != 0 || mkdir(gone, 0755) != 0) {
		perror("put back");
		return 1;
	}
	return 0;
}

// cwd_move is the cwdmove mode.
static int cwd_move(long n, const char *dir) {
	char d[4096], e[4096];
	char *names[] = {"file"};
	snprintf(d, sizeof d, "%s/d", dir);
	snprintf(e, sizeof e, "%s/e", dir);
	if (chdir(d) != 0) {
		perror(d);
		return 1;
	}
	cwd_lookups(n, 1, names);
	cwd_print(n);
	if (rename(d, e) != 0 || mkdir(d, 0755) != 0) {
		perror("rename");
		return 1;
	}
	printf("moved:\n");
	cwd_lookups(n, 1, names);
	cwd_print(n);
	if (rmdir(d) != 0 || rename(e, d) != 0) {
		perror("put back");
		return 1;
	}
	return 0;
}

// vm_child is a child in its parent's address space (CLONE_VM) or sharing
// its working directory (CLONE_FS): it changes its working directory to
// sub, says so on ready and waits for a byte on done.
struct vm_child {
	int ready, done;
};

static int vm_child(void *arg) {
	struct vm_child *c = arg;
	char b;
	if (chdir("sub") != 0 || write(c->ready, "x", 1) != 1 || read(c->done, &b, 1) != 1)
		_exit(1);
	_exit(0);
}

// cwd_vfork is the cwdvfork mode.
static int cwd_vfork(long n, const char *self, const char *dir) {
	char *names[] = {"file", "missing"};
	char exe[4096];
	if (!realpath(self, exe)) {
		perror(self);
		return 1;
	}
	if (chdir(dir) != 0) {
		perror(dir);
		return 1;
	}
	fflush(stdout);
	pid_t pid = vfork();
	if (pid == 0) {
		if (chdir("sub") != 0)
			_exit(1);
		_exit(0);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return 1;
	posix_spawn_file_actions_t fa;
	char count[32];
	snprintf(count, sizeof count, "%ld", n);
	char *argv[] = {exe, "cwd", count, ".", "file", NULL};
	extern char **environ;
	if (posix_spawn_file_actions_init(&fa) != 0 || posix_spawn_file_actions_addchdir_np(&fa, "sub") != 0 ||
	    posix_spawn(&pid, exe, &fa, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) != pid ||
	    status != 0)
		return 1;
	printf("parent:\n");
	cwd_lookups(n, 2, names);
	cwd_print(n);
	fflush(stdout);
	int ready[2], done[2];
	static char stack[64 * 1024];
	if (pipe(ready) != 0 || pipe(done) != 0)
		return 1;
	struct vm_child c = {ready[1], done[0]};
	pid = clone(vm_child, stack + sizeof stack, CLONE_VM | SIGCHLD, &c);
	char b;
	if (pid < 0 || read(ready[0], &b, 1) != 1)
		return 1;
	printf("beside a CLONE_VM child:\n");
	cwd_lookups(n, 2, names);
	cwd_print(n);
	if (write(done[1], "x", 1) != 1 || waitpid(pid, &status, 0) != pid || status != 0)
		return 1;
	fflush(stdout);
	pid = clone(vm_child, stack + sizeof stack, CLONE_FS | SIGCHLD, &c);
	if (pid < 0 || read(ready[0], &b, 1) != 1)
		return 1;
	printf("beside a CLONE_FS child:\n");
	cwd_lookups(n, 2, names);
	cwd_print(n);
	if (write(done[1], "x", 1) != 1 || waitpid(pid, &status, 0) != pid || status != 0)
		return 1;
	printf("after it:\n");
	cwd_lookups(n, 2, names);
	cwd_print(n);
	return 0;
}

static int tree_write(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], range[128] = "";
	unsigned long lo = 0, hi = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "txexec-fastlookup-tree") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			sscanf(line, "%127s", range);
	if (f)
		fclose(f);
	if (lo == 0) {
		printf("no tree\n");
		return 1;
	}
	int r = mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
	printf("mprotect ret=%d errno=%d\n", r, r ? errno : 0);
	char path[256];
	snprintf(path, sizeof path, "/proc/self/map_files/%s", range);
	int fd = open(path, O_RDWR);
	printf("open rw ok=%d\n", fd >= 0);
	if (fd >= 0) {
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		printf("mmap shared writable ok=%d\n", m != MAP_FAILED);
		printf("write ok=%d\n", pwrite(fd, "x", 1, 8) == 1);
		close(fd);
	}
	return 0;
}

static void *idle(void *arg) {
	(void)arg;
	pause();
	return NULL;
}

static int mix(long n, const char *dir) {
	char file[4096], link[4096], dangling[4096], dotdot[4096], missing[4096];
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(dangling, sizeof dangling, "%s/dangling", dir);
	snprintf(dotdot, sizeof dotdot, "%s/sub/../file", dir);
	snprintf(missing, sizeof missing, "%s/missing", dir);
	const char *paths[] = {file, link, dangling, dotdot, missing, "file", "/proc/version", "/"};
	for (long r = 0; r < n; r++) {
		int last = r == n - 1;
		for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
			const char *p = paths[i];
			struct stat st;
			struct statx sx;
			char buf[256];
			long ret;
			errno = 0;
			memset(&st, 0, sizeof st);
			ret = stat(p, &st);
			if (last) out(p, ret, ret == 0 ? (unsigned long)st.st_ino ^ st.st_mode : 0);
			errno = 0;
			memset(&st, 0, sizeof st);
			ret = lstat(p, &st);
			if (last) out(p, ret, ret == 0 ? (unsigned long)st.st_ino ^ st.st_mode : 0);
			errno = 0;
			memset(&sx, 0, sizeof sx);
			ret = statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx);
			if (last) out(p, ret, ret == 0 ? (unsigned long)sx.stx_ino ^ sx.stx_mode : 0);
			errno = 0;
			ret = access(p, R_OK);
			if (last) out(p, ret, 0);
			errno = 0;
			ret = syscall(SYS_faccessat2, AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW);
			if (last) out(p, ret, 0);
			errno = 0;
			ret = readlink(p, buf, sizeof buf);
			if (last) out(p, ret, ret > 0 ? (unsigned long)buf[0] : 0);
			errno = 0;
			ret = readlinkat(AT_FDCWD, p, buf, sizeof buf);
			if (last) out(p, ret, ret > 0 ? (unsigned long)buf[0] : 0);
		}
	}
	return 0;
}

// linkmix makes every kind of lookup n times of each path given, paths
// through symlinks among them, and prints what the last round got: the
// object's inode and type (or the error), and an open's first byte.
static int linkmix(long n, int argc, char **argv) {
	for (long r = 0; r < n; r++) {
		int last = r == n - 1;
		for (int i = 0; i < argc; i++) {
			const char *p = argv[i];
			struct stat st;
			struct statx sx;
			char buf[256];
			long ret;
			errno = 0, memset(&st, 0, sizeof st);
			ret = stat(p, &st);
			if (last) out(p, ret, ret == 0 ? (unsigned long)st.st_ino ^ st.st_mode : 0);
			errno = 0, memset(&st, 0, sizeof st);
			ret = lstat(p, &st);
			if (last) out(p, ret, ret == 0 ? (unsigned long)st.st_ino ^ st.st_mode : 0);
			errno = 0, memset(&sx, 0, sizeof sx);
			ret = statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx);
			if (last) out(p, ret, ret == 0 ? (unsigned long)sx.stx_ino ^ sx.stx_mode : 0);
			errno = 0;
			ret = access(p, R_OK);
			if (last) out(p, ret, 0);
			errno = 0;
			ret = faccessat(AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW);
			if (last) out(p, ret, 0);
			errno = 0;
			ret = readlink(p, buf, sizeof buf);
			if (last) out(p, ret, ret > 0 ? (unsigned long)buf[0] : 0);
			static const int flags[] = {O_RDONLY, O_RDONLY | O_NOFOLLOW, O_PATH | O_NOFOLLOW, O_RDONLY | O_DIRECTORY};
			for (unsigned f = 0; f < sizeof flags / sizeof flags[0]; f++) {
				errno = 0;
				int fd = open(p, flags[f]);
				unsigned long got = 0;
				if (fd >= 0 && !(flags[f] & O_PATH)) {
					memset(&st, 0, sizeof st);
					fstat(fd, &st);
					got = (unsigned long)st.st_ino ^ st.st_mode;
					char c = 0;
					if (S_ISREG(st.st_mode) && !(flags[f] & O_PATH) && read(fd, &c, 1) == 1)
						got = got << 8 | (unsigned char)c;
					close(fd);
				}
				if (last) out(p, fd < 0 ? -1 : 0, got);
			}
		}
	}
	return 0;
}

typedef long (*syscall6)(long, long, long, long, long, long, long);

static int agent(long n, const char *what, const char *dir) {
	char path[4096];
	snprintf(path, sizeof path, "%s/f", dir);
	syscall6 agent_syscall = (syscall6)AGENT_BASE; // agent_syscall6, at the page's start
	for (long i = 0; i < n; i++) {
		long r;
		if (strcmp(what, "open") == 0) {
			r = agent_syscall(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT, 0644, 0, 0);
			if (r < 0) {
				fprintf(stderr, "openat: %s\n", strerror((int)-r));
				return 1;
			}
			close((int)r);
			r = agent_syscall(SYS_unlink, (long)path, 0, 0, 0, 0, 0);
		} else if (strcmp(what, "read") == 0) {
			r = agent_syscall(SYS_openat, AT_FDCWD, (long)dir, O_RDONLY | O_DIRECTORY, 0, 0, 0);
			if (r >= 0)
				r = close((int)r);
		} else {
			struct stat st;
			r = agent_syscall(SYS_newfstatat, AT_FDCWD, (long)dir, (long)&st, 0, 0, 0);
		}
		if (r != 0) {
			fprintf(stderr, "%s: %s\n", what, strerror((int)-r));
			return 1;
		}
	}
	printf("agent %s %ld\n", what, n);
	return 0;
}

static int open_loop(long n, int argc, char **argv) {
	char c;
	for (int a = 0; a < argc; a++) {
		const char *path = argv[a];
		sum = 0;
		for (long i = 0; i < n; i++) {
			int fd = open(path, O_RDONLY);
			if (fd < 0 || read(fd, &c, 1) != 1) {
				perror(path);
				return 1;
			}
			sum += (unsigned char)c;
			close(fd);
		}
		printf("open %s sum=%lu\n", path, sum);
	}
	return 0;
}

static int fstat_loop(long n, const char *path) {
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct stat first, st;
	int same = 1;
	for (long i = 0; i < n; i++) {
		if (fstat(fd, &st) != 0) {
			perror("fstat");
			return 1;
		}
		if (i == 0)
			first = st;
		same = same && st.st_ino == first.st_ino && st.st_size == first.st_size;
	}
	printf("fstat %s size=%ld nlink=%lu same=%d\n", path, (long)st.st_size, (unsigned long)st.st_nlink, same);
	return 0;
}

// own_step makes the change step names to the file of fd at path (see
// ownfstat above); 0 when done.
static int own_step(int *fd, const char *path, const char *step) {
	char other[4096];
	int r = 0;
	if (strcmp(step, "create") == 0)
		r = (*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0640)) < 0;
	else if (strcmp(step, "stage") == 0)
		r = (*fd = open(path, O_RDWR | O_APPEND)) < 0;
	else if (strcmp(step, "reopen") == 0) {
		close(*fd);
		r = (*fd = open(path, O_RDONLY)) < 0;
	}
	else if (strcmp(step, "write") == 0)
		r = write(*fd, "some data\n", 10) != 10;
	else if (strcmp(step, "ftruncate") == 0)
		r = ftruncate(*fd, 3);
	else if (strcmp(step, "truncate") == 0)
		r = truncate(path, 100000);
	else if (strcmp(step, "fchmod") == 0)
		r = fchmod(*fd, 0600);
	else if (strcmp(step, "fchown") == 0)
		r = fchown(*fd, getuid(), getgid());
	else if (strcmp(step, "futimens") == 0) {
		struct timespec ts[2] = {{5, 0}, {6, 7}};
		r = futimens(*fd, ts);
	} else if (strcmp(step, "link") == 0) {
		snprintf(other, sizeof other, "%s.l", path);
		r = link(path, other);
	} else if (strcmp(step, "rename") == 0) {
		snprintf(other, sizeof other, "%s.r", path);
		r = rename(path, other);
	} else if (strcmp(step, "unlink") == 0)
		r = unlink(path);
	else if (strcmp(step, "touchctime") == 0)
		r = fchown(*fd, (uid_t)-1, (gid_t)-1);
	else {
		fprintf(stderr, "unknown step %s\n", step);
		return 1;
	}
	if (r != 0)
		perror(step);
	return r;
}

static int same_time(struct timespec a, struct statx_timestamp b) {
	return a.tv_sec == b.tv_sec && a.tv_nsec == (long)b.tv_nsec;
}

static int own_fstat(long n, const char *path, int argc, char **steps) {
	int fd = -1;
	for (int a = 0; a < argc; a++) {
		if (own_step(&fd, path, steps[a]) != 0)
			return 1;
		struct stat st;
		struct statx sx;
		for (long i = 0; i < n; i++)
			if (fstat(fd, &st) != 0) {
				perror("fstat");
				return 1;
			}
		if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) != 0) {
			perror("statx");
			return 1;
		}
		int same = st.st_dev == makedev(sx.stx_dev_major, sx.stx_dev_minor) && st.st_ino == sx.stx_ino &&
		           st.st_nlink == sx.stx_nlink && st.st_mode == sx.stx_mode && st.st_uid == sx.stx_uid &&
		           st.st_gid == sx.stx_gid && st.st_size == (off_t)sx.stx_size &&
		           st.st_blocks == (blkcnt_t)sx.stx_blocks && same_time(st.st_atim, sx.stx_atime) &&
		           same_time(st.st_mtim, sx.stx_mtime) && same_time(st.st_ctim, sx.stx_ctime);
		printf("%s nlink=%lu mode=%o size=%ld blocks=%ld same=%d\n", steps[a], (unsigned long)st.st_nlink,
		       st.st_mode, (long)st.st_size, (long)st.st_blocks, same);
		if (!same)
			printf("  fstat %lu %lu %ld.%09ld %ld.%09ld statx %lu %lu %lld.%09u %lld.%09u\n",
			       (unsigned long)st.st_ino, (unsigned long)st.st_nlink, (long)st.st_mtim.tv_sec,
			       st.st_mtim.tv_nsec, (long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec,
			       (unsigned long)sx.stx_ino, (unsigned long)sx.stx_nlink, (long long)sx.stx_mtime.tv_sec,
			       sx.stx_mtime.tv_nsec, (long long)sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec);
	}
	return 0;
}

static int dir_read(long n, const char *dir, int argc, char **names) {
	int dfd = open(dir, O_PATH | O_DIRECTORY);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	char c;
	for (int a = 0; a < argc; a++) {
		sum = 0;
		for (long i = 0; i < n; i++) {
			int fd = openat(dfd, names[a], O_RDONLY);
			if (fd < 0 || read(fd, &c, 1) != 1) {
				perror(names[a]);
				return 1;
			}
			sum += (unsigned char)c;
			close(fd);
		}
		printf("dirread %s sum=%lu\n", names[a], sum);
	}
	return 0;
}

static int fs_dir(long n, const char *dir) {
	int dfd = open(dir, O_PATH | O_DIRECTORY);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	struct stat st;
	for (long i = 0; i < n; i++) {
		int fd = openat(dfd, "version", O_RDONLY);
		if (fd < 0 || fstatat(dfd, "version", &st, 0) != 0) {
			perror("fsdir");
			return 1;
		}
		close(fd);
	}
	printf("fsdir %s ino=%lu\n", dir, (unsigned long)st.st_ino);
	return 0;
}

static int dir_loop(long n, const char *dir) {
	int dfd = open(dir, O_PATH | O_DIRECTORY);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	for (long i = 0; i < n; i++) {
		struct stat st, fst;
		int fd = openat(dfd, "file", O_RDONLY);
		if (fd < 0 || fstatat(dfd, "file", &st, 0) != 0 || fstatat(fd, "", &fst, AT_EMPTY_PATH) != 0 ||
		    st.st_ino != fst.st_ino) {
			perror("dirloop");
			return 1;
		}
		sum += st.st_ino;
		close(fd);
	}
	printf("dirloop %s sum=%lu\n", dir, sum);
	return 0;
}

// ident is what a run prints of an object: its inode and type.
static unsigned long ident(const struct stat *st) { return (unsigned long)st->st_ino ^ st->st_mode; }

// opened prints what an open returned, and the object's identity, then
// closes the descriptor.
static void opened(int last, const char *what, const char *p, int fd) {
	struct stat st;
	if (last) {
		char name[8192];
		snprintf(name, sizeof name, "%s %s", what, p);
		out(name, fd, fd >= 0 && fstat(fd, &st) == 0 ? ident(&st) : 0);
	}
	if (fd >= 0)
		close(fd);
}

static int open_mix(long n, const char *dir) {
	char file[4096], link[4096], dangling[4096], dotdot[4096], missing[4096], sub[4096], w[4096];
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(dangling, sizeof dangling, "%s/dangling", dir);
	snprintf(dotdot, sizeof dotdot, "%s/sub/../file", dir);
	snprintf(missing, sizeof missing, "%s/missing", dir);
	snprintf(sub, sizeof sub, "%s/sub", dir);
	snprintf(w, sizeof w, "%s/sub/w", dir);
	const char *paths[] = {file, link, dangling, dotdot, missing, sub, "file", "/proc/version", "/"};
	const char *names[] = {"file", "link", "dangling", "sub/../file", "missing", "sub", "", "/proc/version"};
	int dfds[2] = {open(dir, O_RDONLY | O_DIRECTORY), open(dir, O_PATH | O_DIRECTORY)};
	if (dfds[0] < 0 || dfds[1] < 0) {
		perror(dir);
		return 1;
	}
	for (long r = 0; r < n; r++) {
		int last = r == n - 1;
		for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
			const char *p = paths[i];
			errno = 0;
			opened(last, "open", p, open(p, O_RDONLY));
			errno = 0;
			opened(last, "nofollow", p, openat(AT_FDCWD, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
			errno = 0;
			opened(last, "path", p, openat(AT_FDCWD, p, O_PATH));
			errno = 0;
			opened(last, "path-nofollow", p, openat(AT_FDCWD, p, O_PATH | O_NOFOLLOW));
			errno = 0;
			opened(last, "directory", p, openat(AT_FDCWD, p, O_RDONLY | O_DIRECTORY));
		}
		for (unsigned d = 0; d < 2; d++) {
			int dfd = dfds[d];
			for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
				const char *p = names[i];
				struct stat st;
				struct statx sx;
				long ret;
				errno = 0;
				opened(last, "at", p, openat(dfd, p, O_RDONLY));
				errno = 0;
				opened(last, "at-path", p, openat(dfd, p, O_PATH | O_NOFOLLOW));
				errno = 0;
				memset(&st, 0, sizeof st);
				ret = fstatat(dfd, p, &st, 0);
				if (last) out(p, ret, ret == 0 ? ident(&st) : 0);
				errno = 0;
				memset(&st, 0, sizeof st);
				ret = fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH);
				if (last) out(p, ret, ret == 0 ? ident(&st) : 0);
				errno = 0;
				memset(&sx, 0, sizeof sx);
				ret = statx(dfd, p, AT_EMPTY_PATH, STATX_BASIC_STATS, &sx);
				if (last) out(p, ret, ret == 0 ? (unsigned long)sx.stx_ino ^ sx.stx_mode : 0);
			}
			// A descriptor of each kind, then of a pipe (a FIFO: forwarded),
			// by AT_EMPTY_PATH.
			int fds[3] = {open(file, O_RDONLY), open(link, O_PATH | O_NOFOLLOW), -1};
			int pfd[2];
			if (pipe(pfd) != 0)
				return 1;
			fds[2] = pfd[0];
			for (unsigned i = 0; i < 3; i++) {
				struct stat st;
				errno = 0;
				memset(&st, 0, sizeof st);
				long ret = fstatat(fds[i], "", &st, AT_EMPTY_PATH);
				// (a pipe's inode differs from run to run)
				if (last) out("empty", ret, ret == 0 ? (i < 2 ? ident(&st) : st.st_mode) : 0);
				close(fds[i]);
			}
			close(pfd[1]);
		}
		// An open for writing through a rewritten site: forwarded.
		int fd = open(w, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "w\n", 2) != 2 || close(fd) != 0 || unlink(w) != 0) {
			perror(w);
			return 1;
		}
	}
	// Descriptors opened natively, used in calls the supervisor serves.
	char cwd[4096];
	struct stat st;
	int pdir = open(sub, O_PATH | O_DIRECTORY);
	if (pdir < 0 || fchdir(pdir) != 0 || getcwd(cwd, sizeof cwd) == NULL || stat("..", &st) != 0) {
		perror("fchdir");
		return 1;
	}
	printf("fchdir %s %lu\n", strcmp(cwd, sub) == 0 ? "sub" : cwd, ident(&st));
	int rdir = open(dir, O_RDONLY | O_DIRECTORY);
	char buf[4096];
	long total = 0, got;
	while ((got = syscall(SYS_getdents64, rdir, buf, sizeof buf)) > 0)
		total += got;
	printf("getdents64 %ld %ld\n", got, total);
	return 0;
}

static int opendir_loop(long n, const char *dir) {
	long ok = 0;
	for (long i = 0; i < n; i++) {
		DIR *d = opendir(dir);
		if (d) {
			ok++;
			closedir(d);
		}
	}
	printf("opendir %ld of %ld\n", ok, n);
	return 0;
}

// glibc's compatibility entry points of the old stat and lstat calls.
extern int __xstat(int ver, const char *path, struct stat *st);
extern int __lxstat(int ver, const char *path, struct stat *st);

static int xstat_loop(long n, const char *path) {
	struct stat st, lst;
	int r = -1, lr = -1;
	for (long i = 0; i < n; i++) {
		r = __xstat(1, path, &st);
		lr = __lxstat(1, path, &lst);
	}
	printf("xstat %s ret=%d size=%lld mode=%o lxstat ret=%d size=%lld mode=%o\n", path, r,
	       r == 0 ? (long long)st.st_size : 0, r == 0 ? st.st_mode : 0, lr,
	       lr == 0 ? (long long)lst.st_size : 0, lr == 0 ? lst.st_mode : 0);
	return 0;
}

static int readlink_loop(long n, const char *path) {
	char buf[256];
	long got = -1;
	int err = 0;
	for (long i = 0; i < n; i++) {
		got = readlink(path, buf, sizeof buf - 1);
		err = got < 0 ? errno : 0;
	}
	buf[got < 0 ? 0 : got] = 0;
	printf("readlink %s ret=%ld errno=%d target=%s\n", path, got, err, buf);
	return 0;
}

static int sites(long n, const char *path, int all) {
	long stats = 0, accesses = 0, links = 0;
	char buf[256];
	for (long i = 0; i < n; i++) {
		struct stat st;
		stats += stat(path, &st) == 0;
		if (all) {
			accesses += access(path, R_OK) == 0;
			links += readlink(path, buf, sizeof buf) >= 0;
		}
	}
	printf("stat %ld access %ld readlink %ld\n", stats, accesses, links);
	return 0;
}

// exec_loop tries execve of each path n times (a PATH search that finds
// nothing) and prints the errno of each one's last try, then execs prog
// (argv[0] prog, then "done") from the same call site: glibc's execve.
static int exec_loop(long n, const char *prog, int npaths, char **paths) {
	int err[64] = {0};
	if (npaths > 64)
		npaths = 64;
	for (long i = 0; i < n; i++)
		for (int p = 0; p < npaths; p++) {
			char *args[] = {paths[p], NULL};
			execve(paths[p], args, environ);
			err[p] = errno;
		}
	for (int p = 0; p < npaths; p++)
		printf("execve %s errno=%d\n", paths[p], err[p]);
	fflush(stdout);
	char *args[] = {(char *)prog, "done", NULL};
	execve(prog, args, environ);
	printf("execve %s errno=%d\n", prog, errno);
	return 1;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: fastlookups MODE N ARG...\n");
		return 2;
	}
	const char *mode = argv[1];
	long n = atol(argv[2]);
	if (strcmp(mode, "loop") == 0)
		return stat_loop(n, argv[3]);
	if (strcmp(mode, "paths") == 0)
		return paths(n, argc - 3, argv + 3);
	if (strcmp(mode, "linkmix") == 0)
		return linkmix(n, argc - 3, argv + 3);
	if (strcmp(mode, "mix") == 0)
		return mix(n, argv[3]);
	if (strcmp(mode, "threads") == 0) {
		pthread_t th;
		if (pthread_create(&th, NULL, idle, NULL) != 0)
			return 1;
		return stat_loop(n, argv[3]);
	}
	if (strcmp(mode, "closeall") == 0) {
		for (int fd = 0; fd < 1024; fd++)
			if (fd != 1)
				close(fd);
		return stat_loop(n, argv[3]);
	}
	if (strcmp(mode, "vfork") == 0) {
		pid_t pid = vfork();
		if (pid == 0) {
			struct stat st;
			for (long i = 0; i < n; i++)
				if (stat(argv[3], &st) != 0)
					_exit(1);
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 1;
		return stat_loop(n, argv[3]);
	}
	if (strcmp(mode, "xbegin") == 0) {
		if (stat_loop(n, argv[3]) != 0)
			return 1;
		long r = syscall(SYS_XBEGIN, 0L, 0L);
		printf("xbegin ret=%ld\n", r);
		if (r < 0)
			return 0;
		FILE *f = fopen(argv[3], "a");
		if (!f || fputs("more\n", f) < 0 || fclose(f) != 0) {
			perror(argv[3]);
			return 1;
		}
		if (stat_loop(n, argv[3]) != 0)
			return 1;
		return syscall(SYS_XABORT, 0L, 0L) < 0;
	}
	if (strcmp(mode, "treewrite") == 0)
		return tree_write();
	if (strcmp(mode, "fork") == 0) {
		struct stat st;
		stat(argv[3], &st);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			int r = stat_loop(n, argv[3]);
			printf("child ring=%lu\n", ring_inode());
			fflush(stdout);
			_exit(r);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 1;
		int r = stat_loop(n, argv[3]);
		printf("parent ring=%lu\n", ring_inode());
		return r;
	}
	if (strcmp(mode, "chroot") == 0) {
		struct stat st;
		for (long i = 0; i < n; i++)
			if (stat("/file", &st) == 0 || errno != ENOENT) {
				fprintf(stderr, "/file before chroot: %s\n", strerror(errno));
				return 1;
			}
		if (chroot(argv[3]) != 0 || chdir("/") != 0) {
			perror("chroot");
			return 1;
		}
		if (stat_loop(n, "/file") != 0)
			return 1;
		fflush(stdout);
		execl("/fastlookups-static", "fastlookups", "loop", argv[2], "/file", (char *)NULL);
		perror("execl");
		return 1;
	}
	if (strcmp(mode, "opendirloop") == 0)
		return opendir_loop(n, argv[3]);
	if (strcmp(mode, "xstatloop") == 0)
		return xstat_loop(n, argv[3]);
	if (strcmp(mode, "readlinkloop") == 0)
		return readlink_loop(n, argv[3]);
	if (strcmp(mode, "sites") == 0 || strcmp(mode, "site") == 0)
		return sites(n, argv[3], strcmp(mode, "sites") == 0);
	if (strcmp(mode, "execloop") == 0 && argc >= 5)
		return exec_loop(n, argv[3], argc - 4, argv + 4);
	if (strcmp(mode, "openloop") == 0)
		return open_loop(n, argc - 3, argv + 3);
	if (strcmp(mode, "fsdir") == 0)
		return fs_dir(n, argv[3]);
	if (strcmp(mode, "fstatloop") == 0)
		return fstat_loop(n, argv[3]);
	if (strcmp(mode, "ownfstat") == 0 && argc >= 5)
		return own_fstat(n, argv[3], argc - 4, argv + 4);
	if (strcmp(mode, "dirread") == 0 && argc >= 5)
		return dir_read(n, argv[3], argc - 4, argv + 4);
	if (strcmp(mode, "dirloop") == 0)
		return dir_loop(n, argv[3]);
	if (strcmp(mode, "openmix") == 0)
		return open_mix(n, argv[3]);
	if (strcmp(mode, "agent") == 0 && argc == 5)
		return agent(n, argv[3], argv[4]);
	if (strcmp(mode, "cwd") == 0 && argc >= 4) {
		char buf[4096];
		printf("start %s\n", getcwd(buf, sizeof buf) ? buf : "NULL");
		if (chdir(argv[3]) != 0) {
			perror(argv[3]);
			return 1;
		}
		cwd_lookups(n, argc - 4, argv + 4);
		cwd_print(n);
		return 0;
	}
	if (strcmp(mode, "cwdtx") == 0)
		return cwd_tx(n, argv[3]);
	if (strcmp(mode, "cwdmove") == 0)
		return cwd_move(n, argv[3]);
	if (strcmp(mode, "cwddrop") == 0) {
		char b[4096];
		char *names[] = {"f", "missing"};
		snprintf(b, sizeof b, "%s/a/b", argv[3]);
		if (chdir(b) != 0 || setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
		    setresuid(65534, 65534, 65534) != 0) {
			perror(b);
			return 1;
		}
		cwd_lookups(n, 2, names);
		cwd_print(n);
		return 0;
	}
	if (strcmp(mode, "cwdvfork") == 0)
		return cwd_vfork(n, argv[0], argv[3]);
	fprintf(stderr, "fastlookups: unknown mode %s\n", mode);
	return 2;
}
