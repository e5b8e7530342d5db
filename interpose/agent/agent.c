// The fast-lookup agent (docs/fastpath.md §4): position-independent code
// without libc that the supervisor maps into every image of the tree at the
// exec stop (interpose/agent.go) and that the call sites it rewrites jump to
// (interpose/rewrite.go). It decides each lookup: made natively from the
// agent page, which the base filter lets newfstatat, statx, readlink,
// readlinkat, access, faccessat, faccessat2, stat, lstat and read-only opens
// (open, openat) through from (stat and lstat it makes as newfstatat), or
// forwarded from the forward page, which the filter notifies as any other
// call. getcwd it answers itself, from the working directory the
// supervisor publishes in its configuration, or forwards. execve, whose
// site the tracer rewrites once the view failed it with ENOENT or ENOTDIR,
// it decides as access(path, F_OK): such a failure made natively is the
// answer, anything else the real execve from the forward page, which the
// filter stops for the tracer (do_execve).
//
// It runs in the middle of whatever the program was doing (a rewritten site
// is a plain jump), on the program's stack: it touches no vector register
// (general-regs-only), calls no library function, writes nothing but its
// stack and the caller's result buffers, and needs up to about 2.25 KiB
// of stack below the red zone the trampoline skips (gcc -fstack-usage: a
// transaction's open of a relative path, made absolute in the caller's
// frame and lexical in struct tx, with the buffer for a symlink's target,
// is the most).
//
// Under --passthrough there is no read set: a native lookup with the
// caller's own credentials is what the supervisor would have done. In a
// transaction the configuration names the tree's shared memory and the
// process's ring (fastlookup.h), and every lookup by absolute path follows
// that header's protocol: the changed set, the fast directories and the
// changed objects decide, and every call made natively is recorded for the
// supervisor to feed into the view's read set. Lookups of one name
// relative to a descriptor of a fast directory (known by its identity) are
// made natively too, and so are read-only opens, when the tree's mounts
// update no atime (tx_opens). A path relative to the working directory is
// made absolute with the working directory the supervisor published
// (cwd_join) and decided as that absolute path.
//
// Built by agent/build.sh (make, or go generate in interpose) into
// agent.bin, which interpose embeds; TestAgentBlobIsCurrent rebuilds it.
// x86-64 only.

#if !defined(__x86_64__)
#error "the fast-lookup agent is x86-64 only"
#endif

typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;

// System-call numbers, flags and errnos (asm/unistd_64.h, fcntl.h,
// linux/stat.h, asm-generic/errno-base.h): no header, no libc.
#define NR_stat 4
#define NR_lstat 6
#define NR_readlink 89
#define NR_access 21
#define NR_readlinkat 267
#define NR_faccessat 269
#define NR_newfstatat 262
#define NR_statx 332
#define NR_faccessat2 439
#define NR_open 2
#define NR_openat 257
#define NR_fstat 5
#define NR_close 3
#define NR_fcntl 72
#define NR_getcwd 79
#define NR_execve 59
#define F_GETFL 3

#define AT_FDCWD (-100)
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_EACCESS 0x200
#define AT_NO_AUTOMOUNT 0x800
#define AT_EMPTY_PATH 0x1000
#define O_ACCMODE 03
#define O_CREAT 0100
#define O_NOCTTY 0400
#define O_TRUNC 01000
#define O_NOFOLLOW 0400000
#define O_DIRECTORY 0200000
#define O_PATH 010000000
#define O_TMPFILE_BIT 020000000 // __O_TMPFILE
#define S_IFDIR 0040000
#define S_IFREG 0100000
#define S_IFIFO 0010000
#define ELOOP 40
#define AT_STATX_SYNC_TYPE 0x6000
#define STATX_TYPE 0x1u
#define STATX_MNT_ID 0x1000u
#define STATX_MNT_ID_UNIQUE 0x4000u
#define S_IFMT 0170000
#define S_IFLNK 0120000
#define EINVAL 22
#define ENOENT 2
#define ENOTDIR 20
#define ENOSYS 38
#define ERANGE 34
#define PATH_MAX 4096

#include "../../fastlookup/fastlookup.h"

// agent_cwd is the process's working directory as the view names it
// (docs/fastpath.md §4.5, rule 2), which the supervisor publishes at every
// exec and when an emulated chdir or fchdir succeeds: the kernel's working
// directory of the process stays where the tree started. It is a sequence
// lock: the supervisor makes seq odd, writes the rest, and makes it even
// again; a reader that finds it odd, or changed after reading the rest,
// forwards. len 0: unknown (the address space or the working directory is
// shared with a process whose working directory may differ, or the path
// does not fit a record).
struct agent_cwd {
	volatile u32 seq;
	u32 len;
	// dev and ino: under --passthrough, the directory's identity, which
	// the path must still resolve to (a directory renamed on the host
	// takes the kernel's working directory with it, not its old path).
	u64 dev, ino;
	char path[FL_PATH_MAX];
};

// agent_config is the configuration page (agent.ld), written by the
// supervisor through /proc/PID/mem: the agent only reads it. Its layout is
// interpose's agentConfig.
#define AGENT_MAGIC 0x32746e6567617874ul // "txagent2"
struct agent_config {
	u64 magic;
	// disabled, when not 0, forwards every call: the process's root is no
	// longer the kernel's (a chroot the view emulates).
	volatile u32 disabled;
	// ndevs devices (st_dev) of the file systems mounted at or under the
	// forwarded prefixes: a lookup relative to a descriptor on one of them
	// is forwarded. DEVS_UNKNOWN forwards every lookup by descriptor.
	u32 ndevs;
	u64 devs[64];
	// prefixes: the subtrees whose lookups are always forwarded (/proc,
	// /sys, /dev and the excluded ones), each a NUL-terminated absolute
	// path without a trailing slash; an empty string ends the list.
	char prefixes[4096 - 16 - 8 * 64 - 24 - sizeof(struct agent_cwd)];
	struct agent_cwd cwd;
	// tx_opens, in a transaction, lets read-only opens take the fast path:
	// the tree runs in a mount namespace of its own whose mounts update no
	// atime (docs/fastpath.md §4.6), so reading what a native open gave
	// leaves the host's atimes alone, as the view's own opens do.
	u32 tx_opens;
	u32 pad;
	// tree and ring: in a transaction, where the tree's shared memory
	// (read-only) and this process's ring (fastlookup.h) are mapped; 0
	// under --passthrough.
	const struct fl_tree *tree;
	struct fl_ring *ring;
};
#define DEVS_UNKNOWN 0xffffffffu
_Static_assert(sizeof(struct agent_config) == 4096, "the configuration is one page");
_Static_assert(__builtin_offsetof(struct agent_config, cwd) == 4096 - 24 - 280, "interpose's agentCwdOff");
extern const struct agent_config agent_config __attribute__((visibility("hidden")));

struct regs {
	long nr, a1, a2, a3, a4, a5, a6;
};

long agent_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
    __attribute__((visibility("hidden")));
long forward_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
    __attribute__((visibility("hidden")));
long agent_dispatch(const struct regs *r) __attribute__((visibility("hidden")));

__asm__(
    // The agent page holds one system-call instruction: the only place a
    // fast-path lookup runs natively from.
    ".pushsection .agent_page,\"ax\",@progbits\n"
    ".globl agent_syscall6\n"
    ".hidden agent_syscall6\n"
    "agent_syscall6:\n"
    "  mov %rdi,%rax\n  mov %rsi,%rdi\n  mov %rdx,%rsi\n  mov %rcx,%rdx\n"
    "  mov %r8,%r10\n  mov %r9,%r8\n  mov 8(%rsp),%r9\n  syscall\n  ret\n"
    ".popsection\n"
    ".pushsection .forward_page,\"ax\",@progbits\n"
    ".globl forward_syscall6\n"
    ".hidden forward_syscall6\n"
    "forward_syscall6:\n"
    "  mov %rdi,%rax\n  mov %rsi,%rdi\n  mov %rdx,%rsi\n  mov %rcx,%rdx\n"
    "  mov %r8,%r10\n  mov %r9,%r8\n  mov 8(%rsp),%r9\n  syscall\n  ret\n"
    ".popsection\n"
    // The trampolines' target, at 0x2000: the rewritten call's registers
    // (number in rax, arguments as for syscall) saved as struct regs, the
    // decision called on an aligned stack, and every register a syscall
    // preserves given back (rax is the result; rcx and r11, which syscall
    // clobbers, are not kept).
    ".pushsection .agent_entry,\"ax\",@progbits\n"
    ".globl agent_entry\n"
    "agent_entry:\n"
    "  push %rbp\n  mov %rsp,%rbp\n  and $-16,%rsp\n  sub $8,%rsp\n"
    "  push %r9\n  push %r8\n  push %r10\n  push %rdx\n  push %rsi\n  push %rdi\n  push %rax\n"
    "  mov %rsp,%rdi\n  call agent_dispatch\n"
    "  add $8,%rsp\n"
    "  pop %rdi\n  pop %rsi\n  pop %rdx\n  pop %r10\n  pop %r8\n  pop %r9\n"
    "  mov %rbp,%rsp\n  pop %rbp\n  ret\n"
    ".popsection\n");

static long forward(const struct regs *r) {
	return forward_syscall6(r->nr, r->a1, r->a2, r->a3, r->a4, r->a5, r->a6);
}

static long sys4(long nr, long a1, long a2, long a3, long a4) {
	return agent_syscall6(nr, a1, a2, a3, a4, 0, 0);
}

// under reports whether path is prefix itself or lies below it.
static int under(const char *path, const char *prefix, int n) {
	for (int i = 0; i < n; i++)
		if (path[i] != prefix[i])
			return 0;
	return path[n] == 0 || path[n] == '/';
}

// clean reports whether path, from its character start on, has no empty,
// "." or ".." component (no trailing slash) and is shorter than PATH_MAX.
static int clean(const char *path, int start) {
	int comp = 0, i;
	for (i = start; path[i]; i++) {
		if (i >= PATH_MAX - 1)
			return 0;
		if (path[i] != '/') {
			comp++;
			continue;
		}
		if (comp == 0 || (comp == 1 && path[i - 1] == '.') ||
		    (comp == 2 && path[i - 1] == '.' && path[i - 2] == '.'))
			return 0;
		comp = 0;
	}
	return !(comp == 0 || (comp == 1 && path[i - 1] == '.') ||
	         (comp == 2 && path[i - 1] == '.' && path[i - 2] == '.'));
}

// clean_dots is clean for an absolute path that may have "." and ".."
// components and one trailing slash (tx_begin follows them only in fast
// directories): no empty component.
static int clean_dots(const char *path) {
	for (int i = 1; path[i]; i++) {
		if (i >= PATH_MAX - 1 || (path[i] == '/' && path[i - 1] == '/'))
			return 0;
	}
	return 1;
}

// enabled reports whether the agent is configured and enabled.
static int enabled(void) {
	const struct agent_config *cfg = &agent_config;
	return cfg->magic == AGENT_MAGIC && !cfg->disabled;
}

// forwarded reports whether absolute path lies in a subtree whose lookups
// are always forwarded (the configuration's prefixes).
static int forwarded(const char *path) {
	const struct agent_config *cfg = &agent_config;
	const char *p = cfg->prefixes;
	while (*p && p < cfg->prefixes + sizeof(cfg->prefixes)) {
		int n = 0;
		while (p[n])
			n++;
		if (under(path, p, n))
			return 1;
		p += n + 1;
	}
	return 0;
}

// fast_path reports whether a lookup of path may be made natively: the
// agent is configured and enabled, the path is absolute, shorter than
// PATH_MAX, has no empty, "." or ".." component (no trailing slash), and is
// not in a subtree the supervisor emulates or passes through for the tree.
// A path pointer in the first page (NULL) is forwarded, for its EFAULT.
// In a transaction, tx_begin decides the rest.
static int fast_path(const char *path) {
	const struct agent_config *cfg = &agent_config;
	if (!enabled())
		return 0;
	if ((u64)path < 4096 || path[0] != '/' || !(cfg->tree ? clean_dots(path) : clean(path, 1)))
		return 0;
	return !forwarded(path);
}

// tx is a lookup the agent makes natively in a transaction: the slot of
// its record, reserved in the process's ring (fastlookup.h, step 3), and
// the generation it read first (step 1).
struct tx {
	struct fl_ring *ring;
	const struct fl_tree *tree;
	u64 gen, pos;
	// rel: the path is one name in the fast directory (dir_dev, dir_ino),
	// a descriptor's (tx_begin_at); desc: the lookup is of a descriptor
	// itself, the path what /proc/self/fd shows for it (tx_begin_fd).
	int rel, desc, dots;
	// followed: the path's last component is a symlink the view
	// published, which the call follows: it is made following it.
	// self_changed: the path is a directory whose own attributes the
	// transaction changed (TX_TYPE).
	int followed, self_changed;
	u64 dir_dev, dir_ino;
	// rpath is the record's path: the call's, or buf (a path with "." or
	// ".." made lexical, the path of an absent ancestor, a descriptor's
	// path), or the name of a relative lookup; orig the call's own path,
	// and dots says it had "." or "..".
	const char *rpath, *orig;
	char buf[FL_PATH_MAX];
	// lbuf: the path checked after a symlink was replaced by its target.
	char lbuf[FL_PATH_MAX];
};

static u64 load_acquire(const volatile u64 *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// changed_kind is the kind of the changed-set entry of key (0: none).
static u64 changed_kind(const struct fl_tree *t, u64 key) {
	for (u64 n = 0, i = key & (FL_CHANGED_N - 1); n < FL_CHANGED_N; n++, i = (i + 1) & (FL_CHANGED_N - 1)) {
		u64 k = load_acquire(&t->changed[i].key);
		if (k == key)
			return load_acquire(&t->changed[i].kind);
		if (k == FL_KEY_EMPTY)
			return 0;
	}
	return FL_CHANGED_SUBTREE;
}

// fast_dir reports whether key is a fast directory's.
static int fast_dir(const struct fl_tree *t, u64 key) {
	for (u64 n = 0, i = key & (FL_FASTDIRS_N - 1); n < FL_FASTDIRS_N; n++, i = (i + 1) & (FL_FASTDIRS_N - 1)) {
		u64 k = load_acquire(&t->fastdirs[i].key);
		if (k == key)
			return 1;
		if (k == FL_KEY_EMPTY)
			return 0;
	}
	return 0;
}

// link_target is the target of the symlink whose path's key is key, if
// the view published it (struct fl_link), else 0.
static const char *link_target(const struct fl_tree *t, u64 key) {
	for (u64 n = 0, i = key & (FL_LINKS_N - 1); n < FL_LINKS_N; n++, i = (i + 1) & (FL_LINKS_N - 1)) {
		u64 k = load_acquire(&t->links[i].key);
		if (k == key)
			return t->links[i].target;
		if (k == FL_KEY_EMPTY)
			return 0;
	}
	return 0;
}

// object_changed reports whether the host object (dev, ino) is one the
// transaction changed.
static int object_changed(const struct fl_tree *t, u64 dev, u64 ino) {
	u64 key = fl_object_key(dev, ino);
	for (u64 n = 0, i = key & (FL_OBJECTS_N - 1); n < FL_OBJECTS_N; n++, i = (i + 1) & (FL_OBJECTS_N - 1)) {
		u64 k = load_acquire(&t->objects[i]);
		if (k == key)
			return 1;
		if (k == FL_KEY_EMPTY)
			return 0;
	}
	return 1;
}

// own_native reports whether (dev, ino), a changed object, is one of the
// view's own whose fstat is native (struct fl_native): read after the
// call, so that an entry the view drops before a change is either found,
// and the call was made before the change, or not found.
static int own_native(const struct fl_tree *t, u64 dev, u64 ino) {
	u64 key = fl_object_key(dev, ino);
	for (u64 n = 0, i = key & (FL_NATIVES_N - 1); n < FL_NATIVES_N; n++, i = (i + 1) & (FL_NATIVES_N - 1)) {
		u64 k = load_acquire(&t->natives[i].key);
		if (k == key && t->natives[i].dev == dev && t->natives[i].ino == ino)
			return 1;
		if (k == FL_KEY_EMPTY)
			return 0;
	}
	return 0;
}

// tx_reserve reserves a slot of the ring (step 3). 0: the ring is full,
// forward (the forwarded call has the supervisor drain it).
static int tx_reserve(struct tx *x) {
	for (;;) {
		u64 head = load_acquire(&x->ring->head);
		if (head - load_acquire(&x->ring->tail) >= FL_RING_N)
			return 0;
		if (__atomic_compare_exchange_n(&x->ring->head, &head, head + 1, 0, __ATOMIC_SEQ_CST,
		                                __ATOMIC_RELAXED)) {
			x->pos = head;
			return 1;
		}
	}
}

// tx_enabled is step 1: the generation first, then the enabled flag.
static int tx_enabled(struct tx *x) {
	const struct agent_config *cfg = &agent_config;
	x->tree = cfg->tree;
	x->ring = cfg->ring;
	x->rel = 0, x->desc = 0, x->dots = 0, x->followed = 0, x->self_changed = 0;
	x->gen = load_acquire(&x->tree->generation);
	return __atomic_load_n(&x->tree->enabled, __ATOMIC_ACQUIRE) != 0;
}

// dir_prefix finds the fast directory (dev, ino) in the dirids table, and
// its prefix (fastlookup.h).
static int dir_prefix(const struct fl_tree *t, u64 dev, u64 ino, u64 *prefix) {
	u64 key = fl_object_key(dev, ino);
	for (u64 n = 0, i = key & (FL_FASTDIRS_N - 1); n < FL_FASTDIRS_N; n++, i = (i + 1) & (FL_FASTDIRS_N - 1)) {
		u64 k = load_acquire(&t->dirids[i].key);
		if (k == key) {
			*prefix = t->dirids[i].prefix;
			return 1;
		}
		if (k == FL_KEY_EMPTY)
			return 0;
	}
	return 0;
}

// tx_begin_at is tx_begin for one name relative to a directory descriptor
// whose identity is (dev, ino): that identity is a fast directory's, the
// name's path there is not changed at all, and a ring slot is reserved.
// 0: forward.
static int tx_begin_at(u64 dev, u64 ino, const char *name, struct tx *x) {
	u64 h;
	if (!tx_enabled(x) || !dir_prefix(x->tree, dev, ino, &h))
		return 0;
	int i;
	for (i = 0; name[i]; i++) {
		if (name[i] == '/' || i >= FL_PATH_MAX - 1)
			return 0; // one component, that fits a record
		h = fl_fnv_step(h, (unsigned char)name[i]);
	}
	if (changed_kind(x->tree, fl_key(h)) != 0 || !tx_reserve(x))
		return 0;
	x->rel = 1, x->dir_dev = dev, x->dir_ino = ino, x->rpath = name;
	return 1;
}

// changed_on_path reports whether the transaction changed, as a subtree,
// a directory above clean absolute path, or the path itself with an entry
// of kind at least min: FL_CHANGED_SELF for any change (what the view names
// there, and the attributes it shows of it, a link count, a removed
// directory's, may differ from the host's: path_changed), FL_CHANGED_SUBTREE
// for a change of its name alone (made, removed, renamed or staged: the
// view may name the object otherwise; an entry made in it changes only its
// attributes: name_changed).
static int changed_on_path(const struct fl_tree *t, const char *path, u64 min) {
	u64 h = FL_FNV_OFFSET;
	int i;
	for (i = 0; path[i]; i++) {
		if (path[i] == '/') {
			u64 key = i == 0 ? fl_key(fl_fnv_step(h, '/')) : fl_key(h);
			if (changed_kind(t, key) == FL_CHANGED_SUBTREE)
				return 1;
		}
		h = fl_fnv_step(h, (unsigned char)path[i]);
	}
	return i > 1 && changed_kind(t, fl_key(h)) >= min;
}

static int path_changed(const struct fl_tree *t, const char *path) {
	return changed_on_path(t, path, FL_CHANGED_SELF);
}

static int name_changed(const struct fl_tree *t, const char *path) {
	return changed_on_path(t, path, FL_CHANGED_SUBTREE);
}

// tx_begin_fd is tx_begin for a lookup of descriptor fd itself
// (AT_EMPTY_PATH): the record's path, what /proc/self/fd shows for the
// descriptor (the supervisor finds an object it does not know by it, as
// it does for a descriptor it is asked about), is read into path, which
// must be absolute and clean and fit a record (a pipe's, a socket's or an
// anonymous inode's is not: forwarded), and not a path the transaction
// changed (a directory it removed, whose descriptor the view serves); then
// a ring slot is reserved. Whether the object is one the transaction
// changed is step 5's check, on the identity the call observes. 0:
// forward.
static int tx_begin_fd(long fd, struct tx *x) {
	char *path = x->buf;
	if (!tx_enabled(x) || (int)fd < 0)
		return 0;
	char link[32] = "/proc/self/fd/";
	char digits[12];
	int n = 0, i = 14;
	for (u32 v = (u32)fd; n == 0 || v; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	while (n)
		link[i++] = digits[--n];
	link[i] = 0;
	long len = sys4(NR_readlink, (long)link, (long)path, FL_PATH_MAX - 1, 0);
	if (len <= 0 || len >= FL_PATH_MAX - 1)
		return 0;
	path[len] = 0;
	if (path[0] != '/' || !clean(path, 1) || path_changed(x->tree, path) || !tx_reserve(x))
		return 0;
	x->desc = 1, x->rpath = path;
	return 1;
}

// TX_DEPTH bounds the components of a path tx_begin follows, TX_LINKS
// the symlinks it replaces by their targets.
#define TX_DEPTH 32
#define TX_LINKS 8

// How a call looks its path up (tx_begin): TX_FOLLOW, it follows a
// symlink as its last component; TX_TYPE, it reads no more of the object
// than its type (readlink's EINVAL), so a directory whose own attributes
// the transaction changed (an entry made in it) is still the host's one
// for it (x->self_changed).
#define TX_FOLLOW 1
#define TX_TYPE 2

// tx_splice writes target, then "/" and rest if rest is not empty, into
// x->lbuf, through x->buf (rest may be in lbuf); 0 if it does not fit a
// record, or is in a subtree whose lookups are always forwarded.
static int tx_splice(struct tx *x, const char *target, const char *rest) {
	int o = 0;
	for (; target[o]; o++) {
		if (o >= FL_PATH_MAX - 1)
			return 0;
		x->buf[o] = target[o];
	}
	if (*rest) {
		if (o > 1)
			x->buf[o++] = '/';
		for (; *rest; rest++) {
			if (o >= FL_PATH_MAX - 1)
				return 0;
			x->buf[o++] = *rest;
		}
	}
	x->buf[o] = 0;
	for (int i = 0; i <= o; i++)
		x->lbuf[i] = x->buf[i];
	return !forwarded(x->lbuf);
}

// tx_begin is steps 1 to 3 of the protocol for a path fast_path accepted:
// the fast path is enabled, no proper prefix of the path is a changed
// subtree and the path itself is not changed at all, its directory is a
// fast directory, and a ring slot is reserved. 1: the call is made
// natively; 0: forward. how is TX_FOLLOW and TX_TYPE, or 0.
//
// A ".." is followed lexically (into x->buf, the record's path) when the
// directory it leaves is a fast directory: one the view walked, reached
// without a symlink, so that the kernel's resolution of the call's own
// path, which the native call makes (and whose permission checks it
// does), ends where the lexical one does. A symlink the view followed and
// published (struct fl_link: /lib, which leads to /usr/lib) is replaced
// by the path it leads to, in the middle of the path always, as its last
// component when the call follows it (x->followed): the link itself must
// not be changed, and what follows is checked as that path is, which the
// record carries; the native call, made with the call's own path, has the
// kernel resolve the symlink, with the caller's permissions, to where
// the view did (the feed finds it if the host changed it meanwhile). A
// path whose directory is no fast directory, but whose deepest fast
// ancestor D lacks the next component C (a search path through a
// directory that does not exist: cc1's /usr/local/include/bits, locale
// lookups), returns 2 with the record's path D/C: the caller answers
// ENOENT if an lstat of D/C natively finds nothing there (tx_absent). A
// path that ends in "." or a slash names a directory: one that is no fast
// directory is answered so too if it does not exist (gcc's stat of each
// directory of its search path, with "/." appended), and forwarded if it
// does (a symlink the kernel would follow, a file: ENOTDIR).
static int tx_begin(const char *path, int how, struct tx *x) {
	if (!tx_enabled(x))
		return 0;
	char *out = x->buf;
	u64 h[TX_DEPTH + 1];
	int len[TX_DEPTH + 1], d, dots = 0, absent, links = 0;
	const char *in = path;
restart:
	d = 0, absent = 0;
	h[0] = fl_fnv_step(FL_FNV_OFFSET, '/'), len[0] = 1, out[0] = '/';
	for (const char *p = in + 1; *p;) {
		int n = 0;
		while (p[n] && p[n] != '/')
			n++;
		int dot = n == 1 && p[0] == '.', dotdot = n == 2 && p[0] == '.' && p[1] == '.';
		if (dotdot) {
			if (!p[2])
				return 0; // ends in "..": forwarded
			if (d > 0) {
				if (!fast_dir(x->tree, fl_key(h[d])))
					return 0;
				d--;
			}
			dots = 1;
		} else if (dot) {
			// A directory itself: a fast one; as the last component,
			// one that does not exist (below); else forwarded.
			if (d > 0 && !fast_dir(x->tree, fl_key(h[d]))) {
				if (p[1])
					return 0;
				absent = 1;
			}
			dots = 1;
		} else {
			if (changed_kind(x->tree, fl_key(h[d])) == FL_CHANGED_SUBTREE)
				return 0;
			int o = len[d] + (d > 0) + n;
			if (d >= TX_DEPTH || o >= FL_PATH_MAX - 1)
				return 0; // no room in a record
			u64 k = h[d];
			o = len[d];
			if (d > 0)
				k = fl_fnv_step(k, '/'), out[o++] = '/';
			for (int i = 0; i < n; i++)
				k = fl_fnv_step(k, (unsigned char)p[i]), out[o++] = p[i];
			d++, h[d] = k, len[d] = o;
		}
		p += n;
		if (*p == '/' && !*++p && !dot) {
			// A trailing slash: after ".." forwarded, after a name as
			// "/.".
			if (dotdot)
				return 0;
			if (!fast_dir(x->tree, fl_key(h[d])))
				absent = 1;
			dots = 1;
		}
		if (*p && !dot && !dotdot) {
			// A name in the middle: a published symlink is replaced by
			// its target.
			const char *t = link_target(x->tree, fl_key(h[d]));
			if (t) {
				if (++links > TX_LINKS || changed_kind(x->tree, fl_key(h[d])) != 0 || !tx_splice(x, t, p))
					return 0;
				in = x->lbuf, dots = 1;
				goto restart;
			}
		}
	}
	if (d == 0)
		return 0;
	u64 kind = changed_kind(x->tree, fl_key(h[d]));
	if (kind == FL_CHANGED_SUBTREE || (kind != 0 && !(how & TX_TYPE)))
		return 0;
	x->self_changed = kind != 0;
	if ((how & TX_FOLLOW) && !absent) {
		// The last component, which the call follows.
		const char *t = link_target(x->tree, fl_key(h[d]));
		if (t) {
			if (++links > TX_LINKS || !tx_splice(x, t, ""))
				return 0;
			in = x->lbuf, dots = 1, x->followed = 1;
			goto restart;
		}
	}
	out[len[d]] = 0;
	x->rpath = dots ? out : path;
	x->orig = path, x->dots = dots;
	if (!absent && fast_dir(x->tree, fl_key(h[d - 1])))
		return tx_reserve(x);
	// The path's directory is no fast directory, or the path names a
	// directory that is not one: if a fast ancestor lacks the next
	// component, ENOENT (tx_absent); else forwarded.
	for (int k = d - 1 - !absent; k >= 0; k--) {
		if (fast_dir(x->tree, fl_key(h[k]))) {
			out[len[k + 1]] = 0; // D/C
			x->rpath = out;
			return tx_reserve(x) ? 2 : 0;
		}
	}
	return 0;
}


// fp_step folds v into a record's fingerprint.
static u64 fp_step(u64 h, u64 v) {
	for (int i = 0; i < 8; i++, v >>= 8)
		h = fl_fnv_step(h, (unsigned char)v);
	return h;
}

// tx_publish fills the reserved slot and publishes it (step 6); nr
// FL_NR_NONE publishes an empty slot. A record whose every field repeats
// one this process published before (its fingerprint is in ring->seen) is
// published empty: at the same generation the supervisor would learn
// nothing from it (cc1's realpath makes two in three of its calls again).
static void tx_publish(struct tx *x, long nr, long result, u64 dev, u64 ino,
                       u32 mode, u32 uid, u32 gid, long size, const long *mtime, const long *ctime) {
	struct fl_record *s = &x->ring->slots[x->pos & (FL_RING_N - 1)];
	s->generation = x->gen;
	s->nr = (int)nr;
	s->result = result;
	s->flags = 0;
	if (nr != FL_NR_NONE) {
		const char *path = x->rpath;
		u64 fp = FL_FNV_OFFSET;
		u32 n = 0;
		while (path[n] && n < FL_PATH_MAX - 1) {
			s->path[n] = path[n];
			fp = fl_fnv_step(fp, (unsigned char)path[n]);
			n++;
		}
		s->path[n] = 0;
		s->path_len = n;
		if (x->rel) {
			s->flags = FL_RELATIVE;
			s->dir_dev = x->dir_dev, s->dir_ino = x->dir_ino;
			fp = fp_step(fp_step(fp, x->dir_dev), x->dir_ino);
		}
		if (x->desc)
			s->flags = FL_DESCRIPTOR;
		if (mtime) {
			s->flags |= FL_OBSERVED;
			s->dev = dev, s->ino = ino, s->mode = mode, s->uid = uid, s->gid = gid, s->size = size;
			s->mtime_sec = mtime[0], s->mtime_nsec = mtime[1];
			s->ctime_sec = ctime[0], s->ctime_nsec = ctime[1];
			fp = fp_step(fp_step(fp_step(fp, dev), ino), (u64)mode << 32 | uid);
			fp = fp_step(fp_step(fp_step(fp, gid), (u64)size), (u64)mtime[0]);
			fp = fp_step(fp_step(fp_step(fp, (u64)mtime[1]), (u64)ctime[0]), (u64)ctime[1]);
		}
		fp = fp_step(fp_step(fp_step(fp_step(fp, x->gen), (u64)nr), (u64)result), s->flags);
		fp = fl_key(fp);
		u64 *seen = &x->ring->seen[fp & (FL_SEEN_N - 1)];
		if (__atomic_load_n(seen, __ATOMIC_RELAXED) == fp)
			s->nr = FL_NR_NONE, s->flags = 0;
		else
			__atomic_store_n(seen, fp, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->seq, x->pos + 1, __ATOMIC_RELEASE);
}

// tx_forward publishes the reserved slot empty and forwards the call
// (step 5: a thread never waits in a forwarded call holding an unpublished
// slot).
static long tx_forward(struct tx *x, const struct regs *r) {
	tx_publish(x, FL_NR_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	return forward(r);
}

// struct stat's st_mode (x86-64: at byte 24 of 144) and statx's stx_mask and
// stx_mode (bytes 0 and 28 of 256).
struct kstat {
	u64 dev, ino, nlink;
	u32 mode, uid, gid, pad0;
	u64 rdev;
	long size, blksize, blocks;
	long times[6];
	long unused[3];
};

static int is_link(u32 mode) { return (mode & S_IFMT) == S_IFLNK; }

// fd_ok reports whether a lookup relative to descriptor fd (docs/fastpath.md
// §4.5, by descriptor) may be made natively, and leaves the descriptor's
// fstat in *st: under --passthrough the supervisor makes it relative to
// the caller's own descriptor too, unless the descriptor is on a file
// system mounted in a forwarded subtree (whose lookups the supervisor may
// emulate) or is one of the path tokens it hands out for O_PATH opens (a
// pipe standing for another object): fd must be a directory, or for
// AT_EMPTY_PATH (dir 0) anything but a FIFO. In a transaction
// tx_begin_at then requires a fast directory's identity, and a lookup of
// the descriptor itself forwards an object the view stands for with one
// of its own (a staged copy, a path token: the changed objects).
static int fd_ok(long fd, int dir, struct kstat *st) {
	const struct agent_config *cfg = &agent_config;
	if (!enabled() || (int)fd < 0 || cfg->ndevs > sizeof(cfg->devs) / sizeof(cfg->devs[0]))
		return 0;
	if (sys4(NR_fstat, (int)fd, (long)st, 0, 0) != 0)
		return 0;
	u32 type = st->mode & S_IFMT;
	if (dir ? type != S_IFDIR : type == S_IFIFO)
		return 0;
	for (u32 i = 0; i < cfg->ndevs; i++)
		if (cfg->devs[i] == st->dev)
			return 0;
	return 1;
}

// cwd_read copies the working directory the supervisor published
// (agent_config.cwd) into out, FL_PATH_MAX bytes, and returns its length:
// 0 when it is unknown, or being written (the sequence lock), or under
// --passthrough when its path no longer resolves to the directory's
// identity (renamed on the host).
static int cwd_read(char *out) {
	const struct agent_cwd *c = &agent_config.cwd;
	if (!enabled())
		return 0;
	u32 seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
	u32 len = *(const volatile u32 *)&c->len;
	if ((seq & 1) || len == 0 || len >= FL_PATH_MAX)
		return 0;
	const volatile char *src = c->path;
	for (u32 i = 0; i < len; i++)
		out[i] = src[i];
	out[len] = 0;
	u64 dev = *(const volatile u64 *)&c->dev, ino = *(const volatile u64 *)&c->ino;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&c->seq, __ATOMIC_RELAXED) != seq || out[0] != '/')
		return 0;
	if (!agent_config.tree) {
		struct kstat st;
		if ((dev == 0 && ino == 0) || sys4(NR_newfstatat, AT_FDCWD, (long)out, (long)&st, 0) != 0 ||
		    st.dev != dev || st.ino != ino)
			return 0;
	}
	return (int)len;
}

// cwd_join makes in abs (FL_PATH_MAX bytes) the absolute path of path,
// relative to the published working directory: 0 when that is unknown or
// the path would not fit a record.
static int cwd_join(const char *path, char *abs) {
	int n = cwd_read(abs);
	if (n == 0)
		return 0;
	if (n > 1) {
		if (n >= FL_PATH_MAX - 2)
			return 0;
		abs[n++] = '/';
	}
	for (int i = 0; path[i]; i++) {
		if (n >= FL_PATH_MAX - 1)
			return 0;
		abs[n++] = path[i];
	}
	abs[n] = 0;
	return 1;
}

// cwd_error reports whether the error ret of a call made with the absolute
// path cwd_join made of a relative one (rel) must be forwarded: that
// path's walk also checks search permission on the directories above the
// working directory, which the relative one does not, so only the errors
// the relative walk gives too are answered (ENOENT, ENOTDIR).
static int cwd_error(int rel, long ret) {
	return rel && ret < 0 && ret != -ENOENT && ret != -ENOTDIR;
}

// where says where a lookup of (dirfd, *path) is made natively: at *at
// and *path, an absolute path (AT_FDCWD) or a clean relative one below a
// directory descriptor; 0 to forward it. A path relative to the working
// directory is made absolute in abs (cwd_join), *path then pointing there:
// the process's kernel working directory is not its view's, so the native
// call is made with that absolute path.
static int where(long dirfd, const char **path, long *at, struct kstat *dir, char *abs) {
	const char *p = *path;
	if ((u64)p < 4096)
		return 0;
	*at = AT_FDCWD;
	if (p[0] == '/')
		return fast_path(p);
	if ((int)dirfd == AT_FDCWD) {
		if (p[0] == 0 || !cwd_join(p, abs))
			return 0;
		*path = abs;
		return fast_path(abs);
	}
	if (p[0] == 0 || !clean(p, 0) || !fd_ok(dirfd, 1, dir))
		return 0;
	*at = (int)dirfd;
	return 1;
}

// empty_path reports whether (dirfd, path, flags) is a lookup of the
// descriptor itself (AT_EMPTY_PATH and an empty path) that may be made
// natively.
static int empty_path(long dirfd, const char *path, int flags) {
	struct kstat st;
	return (flags & AT_EMPTY_PATH) && (u64)path >= 4096 && path[0] == 0 && fd_ok(dirfd, 0, &st);
}

// nofollow is flag, which keeps a native call from following its last
// component, unless that is a symlink the view published and the call
// follows (x->followed): then 0, and the kernel follows it, as the view.
static int nofollow(const struct tx *x, int flag) { return x && x->followed ? 0 : flag; }

// tx_record publishes the record of a call made natively, as call nr
// with result, of x->rpath, and the identity st it observed (NULL: none).
static void tx_record(struct tx *x, long nr, long result, const struct kstat *st) {
	if (st)
		tx_publish(x, nr, result, st->dev, st->ino, st->mode, st->uid, st->gid, st->size,
		           &st->times[2], &st->times[4]);
	else
		tx_publish(x, nr, result, 0, 0, 0, 0, 0, 0, 0, 0);
}

// tx_done records, in a transaction, a call made natively (x NULL:
// --passthrough, nothing to record) with the identity st it observed
// (NULL: none), unless that object is one the transaction changed (step
// 5): then the call is forwarded. It returns what the caller gets.
static long tx_done(struct tx *x, const struct regs *r, long result, const struct kstat *st) {
	if (!x)
		return result;
	if (st && object_changed(x->tree, st->dev, st->ino))
		return tx_forward(x, r);
	tx_record(x, r->nr, result, st);
	return result;
}

// tx_skip forwards a call after the native one showed it must be (a
// symlink the caller follows), publishing the reserved slot empty first.
static long tx_skip(struct tx *x, const struct regs *r) {
	return x ? tx_forward(x, r) : forward(r);
}

// tx_absent answers a call tx_begin returned 2 for: ENOENT, recorded as
// the call r's with x->rpath (D/C), if an lstat of D/C natively finds
// nothing; else the call fw is forwarded (r itself, but for an execve
// decided as the access it records).
static long tx_absent(struct tx *x, const struct regs *r, const struct regs *fw) {
	struct kstat st;
	if (sys4(NR_newfstatat, AT_FDCWD, (long)x->rpath, (long)&st, AT_SYMLINK_NOFOLLOW) != -ENOENT)
		return tx_forward(x, fw);
	// With "..": the call's own path too, whose walk checks search
	// permission on the directories it leaves.
	if (x->dots &&
	    sys4(NR_newfstatat, AT_FDCWD, (long)x->orig, (long)&st, AT_SYMLINK_NOFOLLOW) != -ENOENT)
		return tx_forward(x, fw);
	tx_record(x, r->nr == NR_open ? NR_openat : r->nr, -ENOENT, 0);
	return -ENOENT;
}

// start decides whether a lookup of (dirfd, *path) is made natively and
// where (see where: *path becomes abs for a path relative to the working
// directory), and in a transaction reserves the record's slot in *x
// (tx_begin, or tx_begin_at relative to a directory descriptor); *xp is
// then x, else NULL; how is tx_begin's. It returns 0 to forward, 1 to make the call, 2 when
// tx_absent answers it.
static int start(long dirfd, const char **path, char *abs, int how, long *at, struct tx *x, struct tx **xp) {
	struct kstat dir;
	*xp = 0;
	if (!where(dirfd, path, at, &dir, abs))
		return 0;
	if (!agent_config.tree)
		return 1;
	int ok = *at == AT_FDCWD ? tx_begin(*path, how, x) : tx_begin_at(dir.dev, dir.ino, *path, x);
	if (ok)
		*xp = x;
	return ok;
}

// own_fstat is the fstat (newfstatat(fd, "", AT_EMPTY_PATH)) of a
// descriptor open for writing, which in a transaction is nearly always of a
// file of the view's own (a host file opened for writing is staged; the
// command's inherited output files are the exception): made natively
// first, and answered when it found a regular file in the natives table
// while the fast path was on, both read after the call, without a ring
// slot, as there is nothing to record (step 5). 0: go on as for any
// descriptor (its buffer is written again).
static int own_fstat(long fd, const char *path, long buf, int flags) {
	const struct fl_tree *t = agent_config.tree;
	if (sys4(NR_newfstatat, (int)fd, (long)path, buf, flags) != 0)
		return 0;
	const struct kstat *st = (const struct kstat *)buf;
	u64 dev = st->dev, ino = st->ino;
	u32 mode = st->mode;
	return (mode & S_IFMT) == S_IFREG && own_native(t, dev, ino) &&
	       __atomic_load_n(&t->enabled, __ATOMIC_ACQUIRE) != 0;
}

// do_newfstatat is newfstatat(dirfd, path, buf, flags) made with the last
// component not followed; a symlink where the caller follows one is
// forwarded (the supervisor resolves it). An empty path with AT_EMPTY_PATH
// is an fstat of the descriptor.
static long do_newfstatat(const struct regs *r) {
	const char *path = (const char *)r->a2;
	int flags = (int)r->a4;
	long at;
	struct tx x, *xp;
	char abs[FL_PATH_MAX];
	if ((flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH)) != 0)
		return forward(r);
	if (empty_path(r->a1, path, flags)) {
		if (!agent_config.tree)
			return sys4(NR_newfstatat, (int)r->a1, (long)path, r->a3, flags);
		// An O_PATH descriptor's stat reads the object's attributes, an
		// open one's its data (the view's statGranules): the feed takes
		// every descriptor record for an open one's.
		long fl = sys4(NR_fcntl, (int)r->a1, F_GETFL, 0, 0);
		if (fl < 0 || (fl & O_PATH))
			return forward(r);
		if ((fl & O_ACCMODE) != 0 && own_fstat(r->a1, path, r->a3, flags))
			return 0;
		if (!tx_begin_fd(r->a1, &x))
			return forward(r);
		long ret = sys4(NR_newfstatat, (int)r->a1, (long)path, r->a3, flags);
		if (ret != 0)
			return tx_skip(&x, r);
		struct kstat st = *(const struct kstat *)r->a3;
		if ((st.mode & S_IFMT) == S_IFREG && own_native(x.tree, st.dev, st.ino)) {
			// A file of the view's own whose stat the view takes from
			// the file itself (docs/fastpath.md §16): the answer is the
			// view's, and its stat reads nothing of the host, so there
			// is nothing to record.
			tx_publish(&x, FL_NR_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0);
			return 0;
		}
		return tx_done(&x, r, 0, &st);
	}
	switch (start(r->a1, &path, abs, (flags & AT_SYMLINK_NOFOLLOW) ? 0 : TX_FOLLOW, &at, &x, &xp)) {
	case 0:
		return forward(r);
	case 2:
		return tx_absent(xp, r, r);
	}
	long ret = sys4(NR_newfstatat, at, (long)path, r->a3, flags | nofollow(xp, AT_SYMLINK_NOFOLLOW));
	if (cwd_error(path == abs, ret))
		return tx_skip(xp, r);
	if (ret != 0)
		return tx_done(xp, r, ret, 0);
	// The caller's buffer, read back: what it got (a thread of its own
	// that changes it meanwhile only misstates its own record).
	struct kstat st = *(const struct kstat *)r->a3;
	if (!(flags & AT_SYMLINK_NOFOLLOW) && is_link(st.mode))
		return tx_skip(xp, r);
	return tx_done(xp, r, ret, &st);
}

// statx's fields (linux/stat.h struct statx) and the ones a record needs.
#define STATX_RECORD 0x3dbu // TYPE MODE UID GID MTIME CTIME INO SIZE
struct kstatx {
	u32 mask, blksize;
	u64 attributes;
	u32 nlink, uid, gid;
	u16 mode, pad0;
	u64 ino, size, blocks, attributes_mask;
	struct { long sec; u32 nsec, pad; } atime, btime, ctime, mtime;
	u32 rdev_major, rdev_minor, dev_major, dev_minor;
};

// makedev is glibc's encoding of a device number.
static u64 makedev(u64 major, u64 minor) {
	return ((major & 0xfffff000ul) << 32) | ((major & 0xffful) << 8) | ((minor & 0xffffff00ul) << 12) |
	       (minor & 0xfful);
}

// do_statx is statx(dirfd, path, flags, mask, buf), the same way; a mask
// that asks for the mount's identity (which the view answers) or not for
// the type (which the agent needs) is forwarded.
static long do_statx(const struct regs *r) {
	const char *path = (const char *)r->a2;
	int flags = (int)r->a3;
	u32 mask = (u32)r->a4;
	long at;
	struct tx x, *xp;
	char abs[FL_PATH_MAX];
	if ((flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE | AT_EMPTY_PATH)) != 0 ||
	    (mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE)) != 0 || !(mask & STATX_TYPE))
		return forward(r);
	if (empty_path(r->a1, path, flags)) {
		if (agent_config.tree)
			return forward(r); // in a transaction, only newfstatat's (glibc's fstat)
		return agent_syscall6(NR_statx, (int)r->a1, (long)path, flags, (long)mask, r->a5, 0);
	}
	switch (start(r->a1, &path, abs, (flags & AT_SYMLINK_NOFOLLOW) ? 0 : TX_FOLLOW, &at, &x, &xp)) {
	case 0:
		return forward(r);
	case 2:
		return tx_absent(xp, r, r);
	}
	long ret = agent_syscall6(NR_statx, at, (long)path, flags | nofollow(xp, AT_SYMLINK_NOFOLLOW),
	                          (long)mask, r->a5, 0);
	if (cwd_error(path == abs, ret))
		return tx_skip(xp, r);
	if (ret != 0)
		return tx_done(xp, r, ret, 0);
	const struct kstatx *b = (const struct kstatx *)r->a5;
	u32 got = b->mask;
	if (!(got & STATX_TYPE) || (!(flags & AT_SYMLINK_NOFOLLOW) && is_link(b->mode)))
		return tx_skip(xp, r);
	if (!xp)
		return ret;
	struct kstat st;
	if ((got & STATX_RECORD) == STATX_RECORD) {
		st.dev = makedev(b->dev_major, b->dev_minor), st.ino = b->ino;
		st.mode = b->mode, st.uid = b->uid, st.gid = b->gid, st.size = (long)b->size;
		st.times[2] = b->mtime.sec, st.times[3] = b->mtime.nsec;
		st.times[4] = b->ctime.sec, st.times[5] = b->ctime.nsec;
	} else if (sys4(NR_newfstatat, at, (long)path, (long)&st, nofollow(xp, AT_SYMLINK_NOFOLLOW)) != 0 ||
	           (st.mode & S_IFMT) != (b->mode & S_IFMT)) {
		return tx_skip(xp, r);
	}
	return tx_done(xp, r, ret, &st);
}

// tx_open is a read-only open in a transaction (docs/fastpath.md §4.6):
// an lstat first, so that only a regular file or a directory is opened
// (O_PATH: anything; opening a FIFO or a device natively could wait for
// its other end or act on the device, which the view does its own way),
// and no symlink the caller follows; then the open with the last
// component not followed, and an fstat of the new descriptor for the
// record, which must be the object the lstat found. A regular file's open
// reads its data, as the view's open records; a directory's or an O_PATH
// open reads its attributes (the view's openPathLocked and directory
// opens), so it is recorded as a newfstatat that returned 0. Every other
// outcome (an error but ENOENT, a race with a rename) is forwarded, for
// the supervisor to answer with its own checks.
static long tx_open(const struct regs *r, long at, const char *path, long flags, struct tx *x) {
	struct kstat st, fst;
	long ret = sys4(NR_newfstatat, at, (long)path, (long)&st, nofollow(x, AT_SYMLINK_NOFOLLOW));
	if (ret == -ENOENT) {
		tx_record(x, NR_openat, ret, 0); // open(2) is recorded as openat too
		return ret;
	}
	if (ret < 0)
		return tx_skip(x, r);
	u32 type = st.mode & S_IFMT;
	int opath = (flags & O_PATH) != 0;
	if (type == S_IFLNK ? !(opath && (flags & O_NOFOLLOW))
	                    : !opath && type != S_IFREG && type != S_IFDIR)
		return tx_skip(x, r);
	if ((flags & O_DIRECTORY) && type != S_IFDIR)
		return tx_skip(x, r);
	long fd = sys4(NR_openat, at, (long)path, (int)flags | nofollow(x, O_NOFOLLOW) | O_NOCTTY, 0);
	if (fd < 0)
		return tx_skip(x, r);
	if (sys4(NR_fstat, fd, (long)&fst, 0, 0) != 0 || fst.dev != st.dev || fst.ino != st.ino ||
	    object_changed(x->tree, fst.dev, fst.ino)) {
		sys4(NR_close, fd, 0, 0, 0);
		return tx_forward(x, r);
	}
	if (type == S_IFREG && !opath)
		tx_record(x, NR_openat, fd, &fst);
	else
		tx_record(x, NR_newfstatat, 0, &fst);
	return fd;
}

// do_open is open and openat with flags that neither write nor create (the
// filter notifies those even from the agent page), made with the last
// component not followed and O_NOCTTY, as the supervisor's own open on the
// caller's behalf does. A symlink where the caller follows one is
// forwarded: ELOOP from the open (ENOTDIR with O_DIRECTORY, which the
// kernel checks first: a non-directory is answered by the supervisor too),
// or, for O_PATH (which opens the symlink itself), the new descriptor's
// type, after closing it.
//
// In a transaction (tx_open) only when the tree's mounts update no atime
// (tx_opens): a native open on the host's own mounts would let the
// program's reads update the host's atimes, which the view's private
// mount does not.
static long do_open(const struct regs *r, long dirfd, const char *path, long flags) {
	long at;
	struct tx x, *xp;
	char abs[FL_PATH_MAX];
	if ((flags & (O_ACCMODE | O_CREAT | O_TRUNC | O_TMPFILE_BIT)) != 0 ||
	    (agent_config.tree && !agent_config.tx_opens))
		return forward(r);
	switch (start(dirfd, &path, abs, (flags & O_NOFOLLOW) ? 0 : TX_FOLLOW, &at, &x, &xp)) {
	case 0:
		return forward(r);
	case 2:
		return tx_absent(xp, r, r);
	}
	if (xp)
		return tx_open(r, at, path, flags, xp);
	int nofollow_asked = (flags & O_NOFOLLOW) != 0;
	long fd = sys4(NR_openat, at, (long)path, (int)flags | O_NOFOLLOW | O_NOCTTY, 0);
	if (cwd_error(path == abs, fd))
		return forward(r);
	if (nofollow_asked)
		return fd;
	if (fd == -ELOOP || (fd == -ENOTDIR && (flags & O_DIRECTORY)))
		return forward(r);
	if (fd >= 0 && (flags & O_PATH)) {
		struct kstat st;
		if (sys4(NR_fstat, fd, (long)&st, 0, 0) != 0 || is_link(st.mode)) {
			sys4(NR_close, fd, 0, 0, 0);
			return forward(r);
		}
	}
	return fd;
}

// do_readlink is readlink and readlinkat as an lstat: EINVAL for a
// non-symlink, the lstat's error for a path that does not resolve. A
// symlink is read natively only in a transaction whose tree updates no
// atime (tx_opens: reading it would update its atime otherwise), between
// two lstats that must find the same symlink (one put there meanwhile has
// another inode or ctime: a symlink is never changed in place); else it is
// forwarded.
static long do_readlink(const struct regs *r, long dirfd, const char *path, char *buf, long size) {
	struct tx x, *xp;
	long at;
	char abs[FL_PATH_MAX];
	if ((int)size <= 0 || ((u64)path >= 4096 && path[0] != '/' && (int)dirfd != AT_FDCWD))
		return forward(r); // relative to a descriptor
	switch (start(AT_FDCWD, &path, abs, TX_TYPE, &at, &x, &xp)) {
	case 0:
		return forward(r);
	case 2:
		return tx_absent(xp, r, r);
	}
	struct kstat st, again;
	long ret = sys4(NR_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW);
	if (cwd_error(path == abs, ret))
		return tx_skip(xp, r);
	if (ret < 0)
		return tx_done(xp, r, ret, 0);
	if (xp && (st.mode & S_IFMT) == S_IFDIR) {
		// Its type is all readlink reads of a directory: the attributes
		// the transaction changed (an entry made in it: the changed set
		// and the changed objects have it) do not matter.
		tx_record(xp, r->nr, -EINVAL, &st);
		return -EINVAL;
	}
	if (xp && xp->self_changed)
		return tx_skip(xp, r); // not the directory the transaction changed
	if (!is_link(st.mode))
		return tx_done(xp, r, -EINVAL, &st);
	if (!xp || !agent_config.tx_opens)
		return tx_skip(xp, r);
	long n = sys4(NR_readlinkat, AT_FDCWD, (long)path, (long)buf, size);
	if (n < 0 || sys4(NR_newfstatat, AT_FDCWD, (long)path, (long)&again, AT_SYMLINK_NOFOLLOW) != 0 ||
	    again.dev != st.dev || again.ino != st.ino || again.times[4] != st.times[4] || again.times[5] != st.times[5])
		return tx_skip(xp, r);
	return tx_done(xp, r, n, &st);
}

// do_access is access, faccessat and faccessat2: made as faccessat2 with
// the last component not followed, after an lstat found it is no symlink
// where the caller follows one (in a transaction, always: the record's
// identity). access checks with the real ids, lstat with the effective
// ones: when the lstat fails, only the errors every caller would get
// (ENOENT, ENOTDIR from the access itself) are answered here. fw is the
// call forwarded instead of r: r itself, or for do_execve the execve whose
// path r, access(path, F_OK), decides; then only those two failures are
// answered here, and every other outcome is the real execve (exec_only).
static long do_access(const struct regs *r, const struct regs *fw, long dirfd, const char *path, long mode,
                      long flags) {
	struct tx x, *xp;
	long at;
	char abs[FL_PATH_MAX];
	int exec_only = fw != r;
	if ((flags & ~(long)(AT_EACCESS | AT_SYMLINK_NOFOLLOW)) != 0 || (mode & ~7l) != 0 ||
	    ((u64)path >= 4096 && path[0] != '/' && (int)dirfd != AT_FDCWD))
		return forward(fw); // relative to a descriptor
	switch (start(AT_FDCWD, &path, abs, (flags & AT_SYMLINK_NOFOLLOW) ? 0 : TX_FOLLOW, &at, &x, &xp)) {
	case 0:
		return forward(fw);
	case 2:
		return tx_absent(xp, r, fw);
	}
	struct kstat st;
	int nf = nofollow(xp, AT_SYMLINK_NOFOLLOW);
	if (xp || !(flags & AT_SYMLINK_NOFOLLOW)) {
		long ret = sys4(NR_newfstatat, AT_FDCWD, (long)path, (long)&st, nf);
		if (ret == 0 && !(flags & AT_SYMLINK_NOFOLLOW) && is_link(st.mode))
			return tx_skip(xp, fw);
		if (ret < 0) {
			if (exec_only && ret != -ENOENT && ret != -ENOTDIR)
				return tx_skip(xp, fw); // execve's own ids: its failure
			ret = sys4(NR_faccessat2, AT_FDCWD, (long)path, mode, flags | nf);
			if (ret == -ENOENT || ret == -ENOTDIR)
				return tx_done(xp, r, ret, 0);
			return tx_skip(xp, fw);
		}
	}
	if (exec_only)
		return tx_skip(xp, fw); // it exists: the real execve
	long ret = sys4(NR_faccessat2, AT_FDCWD, (long)path, mode, flags | nf);
	if (ret == -ENOSYS || cwd_error(path == abs, ret))
		return tx_skip(xp, r);
	return tx_done(xp, r, ret, ret == 0 ? &st : 0);
}

// do_execve is execve(path, argv, envp) (docs/fastpath.md §15): its site
// is rewritten once the view failed a call of it with ENOENT or ENOTDIR
// (a PATH search: gcc's driver, posix_spawnp, the shells). The path is
// decided as access(path, F_OK) is, and recorded as that access: where
// that is made natively and fails with ENOENT or ENOTDIR, the failure
// execve of the same path meets first (it opens the path, following
// symlinks, with the same ids as the lstat), it is the answer. Anything
// else is the real execve, made from the forward page, which the filter
// stops for the tracer as any execve.
static long do_execve(const struct regs *r) {
	struct regs acc = {NR_access, r->a1, 0, 0, 0, 0, 0};
	return do_access(&acc, r, AT_FDCWD, (const char *)r->a1, 0, 0);
}

// do_getcwd is getcwd(buf, size), answered from the published working
// directory (cwd_read) with the kernel's convention: the length with the
// NUL, ERANGE when that is more than size. It makes no system call of its
// own but two probes (readlink of /proc/self, one byte at the first and
// the last byte the answer takes): a buffer the kernel could not write
// into is forwarded, for its EFAULT. In a transaction, forwarded while the
// fast path is off, and when the transaction changed the name of the
// directory or of one above it (renamed or removed: the view names it
// otherwise, or answers ENOENT). The view's getcwd reads nothing into the
// read set, so there is nothing to record. A working directory in a
// forwarded subtree is forwarded too.
static long do_getcwd(const struct regs *r) {
	char *buf = (char *)r->a1;
	u64 size = (u64)r->a2;
	char cwd[FL_PATH_MAX];
	struct tx x;
	int n = cwd_read(cwd);
	if (n == 0 || (n > 1 && forwarded(cwd)))
		return forward(r);
	if (agent_config.tree && (!tx_enabled(&x) || name_changed(x.tree, cwd)))
		return forward(r);
	if ((u64)n + 1 > size)
		return -ERANGE;
	const char *self = "/proc/self";
	if ((u64)buf < 4096 || sys4(NR_readlinkat, AT_FDCWD, (long)self, (long)buf, 1) != 1 ||
	    sys4(NR_readlinkat, AT_FDCWD, (long)self, (long)(buf + n), 1) != 1)
		return forward(r);
	for (int i = 0; i < n; i++)
		buf[i] = cwd[i];
	buf[n] = 0;
	return n + 1;
}

// agent_dispatch decides one rewritten call. A number it does not know is
// forwarded.
long agent_dispatch(const struct regs *r) {
	switch (r->nr) {
	case NR_newfstatat:
		return do_newfstatat(r);
	case NR_stat:
	case NR_lstat: {
		// The old calls (glibc's __xstat and __lxstat, which programs
		// built against glibc before 2.33 call, GNU make among them):
		// made, recorded and forwarded as the newfstatat they are.
		struct regs at = {NR_newfstatat, AT_FDCWD, r->a1, r->a2,
		                  r->nr == NR_lstat ? AT_SYMLINK_NOFOLLOW : 0, 0, 0};
		return do_newfstatat(&at);
	}
	case NR_statx:
		return do_statx(r);
	case NR_readlink:
		return do_readlink(r, AT_FDCWD, (const char *)r->a1, (char *)r->a2, r->a3);
	case NR_readlinkat:
		return do_readlink(r, r->a1, (const char *)r->a2, (char *)r->a3, r->a4);
	case NR_access:
		return do_access(r, r, AT_FDCWD, (const char *)r->a1, r->a2, 0);
	case NR_faccessat:
		return do_access(r, r, r->a1, (const char *)r->a2, r->a3, 0);
	case NR_faccessat2:
		return do_access(r, r, r->a1, (const char *)r->a2, r->a3, r->a4);
	case NR_execve:
		return do_execve(r);
	case NR_getcwd:
		return do_getcwd(r);
	case NR_openat:
		return do_open(r, r->a1, (const char *)r->a2, r->a3);
	case NR_open:
		return do_open(r, AT_FDCWD, (const char *)r->a1, r->a2);
	}
	return forward(r);
}
