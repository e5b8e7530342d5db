/*
 * fastlookup.h — the memory txexec's supervisor shares with the fast-lookup
 * agent in a traced program (docs/fastpath.md §4.1, §4.5, §4.7).
 *
 * Owned by the Go package txexec/fastlookup, whose layout.go declares the
 * same structures; TestLayoutMatchesC compiles a program against this
 * header and checks every offset, size and hash against Go's. Change both
 * together and bump FL_LAYOUT_VERSION.
 *
 * Two memfds, both sized and created by the supervisor:
 *   - per tree (struct fl_tree), mapped read-only in the programs: the
 *     enabled flag, the generation, the changed set, the changed objects,
 *     the fast directories and the symlinks the view followed;
 *   - per process (struct fl_ring), mapped writable in that process only:
 *     the ring of records of the calls the agent made natively.
 *
 * The agent's protocol, in this order:
 *   1. g = acquire-load tree->generation; if !acquire-load tree->enabled,
 *      forward;
 *   2. probe every proper prefix of the absolute path ("/" included) for an
 *      FL_CHANGED_SUBTREE entry of the changed set and the whole path for any
 *      entry; the parent directory must be a fast directory; otherwise
 *      forward. A lookup of one name relative to a directory descriptor:
 *      the descriptor's identity (fstat) must be a fast directory's in
 *      dirids, and the path made of that entry's prefix and the name must
 *      have no entry in the changed set; the record then carries
 *      FL_RELATIVE, the directory's identity and the name alone. A path
 *      whose proper prefix (or, for a call that follows its last
 *      component, the whole path) is a symlink in links, itself not in the
 *      changed set, is checked as the path it leads to (the link's target,
 *      then the rest); the call is made with its own path, the record
 *      carries the one checked. A lookup
 *      of a descriptor itself (AT_EMPTY_PATH) needs only step 5's check,
 *      and its record carries FL_DESCRIPTOR;
 *   3. reserve a slot: h = head; if h - tail >= FL_RING_N forward; else
 *      CAS head from h to h+1 (retry from the load on failure);
 *   4. make the call natively (last component never followed);
 *   5. if the observed identity is in the changed objects, publish the
 *      slot with nr = FL_NR_NONE, then forward (a thread never waits in a
 *      forwarded call holding an unpublished slot); but the fstat of a
 *      descriptor (AT_EMPTY_PATH) of a regular file whose identity is in
 *      natives, checked after the call, is answered with what the call
 *      returned, its slot published with nr = FL_NR_NONE (a descriptor
 *      open for writing is checked so first, before steps 2 and 3: with
 *      nothing to record, no slot is needed; the enabled flag is read
 *      after the call too);
 *   6. fill the slot, then release-store slot->seq = h + 1; a record that
 *      repeats one the process published before (its fingerprint is in
 *      seen) is published empty instead, as it would tell the supervisor
 *      nothing new.
 * The supervisor reads published slots only; anything in a ring is
 * untrusted input to it.
 */
#ifndef TXEXEC_FASTLOOKUP_H
#define TXEXEC_FASTLOOKUP_H

#include <stdint.h>

#define FL_LAYOUT_VERSION 5

#define FL_CHANGED_N  16384 /* changed-set slots (a power of two) */
#define FL_OBJECTS_N  16384 /* changed-object slots (a power of two) */
#define FL_FASTDIRS_N 16384 /* fast-directory slots (a power of two) */
#define FL_RING_N     1024  /* ring slots (a power of two) */
#define FL_SEEN_N     512   /* a ring's fingerprints of records (a power of two) */
#define FL_PATH_MAX   256   /* longest path a record holds, with its NUL */
#define FL_LINKS_N    512   /* symlink slots (a power of two) */
#define FL_NATIVES_N  16384 /* own objects with a native fstat (a power of two) */

/* Slots are probed linearly from key & (N - 1).
 * Keys: 0 marks an empty slot, 1 a removed fast directory or own object
 * (probing goes on past it; the slot is never reused). fl_key maps a hash onto the rest. */
#define FL_KEY_EMPTY   0
#define FL_KEY_REMOVED 1

/* Kinds of changed-set entries. */
#define FL_CHANGED_SELF    1 /* the object at this path shows other attributes */
#define FL_CHANGED_SUBTREE 2 /* the name, and every path under it, changed */

/* Record flags. */
#define FL_OBSERVED 1
#define FL_RELATIVE 2 /* path is one name in the directory dir_dev, dir_ino */
#define FL_DESCRIPTOR 4 /* a lookup of a descriptor itself (AT_EMPTY_PATH), the
                           object observed; path is what /proc/self/fd shows */

/* A published slot that carries no record (the agent forwarded the call
 * after reserving it). */
#define FL_NR_NONE (-1)

struct fl_changed {
	uint64_t key;  /* fl_path_key of the path; written last (release) */
	uint64_t kind; /* FL_CHANGED_*; only ever raised */
};

struct fl_fastdir {
	uint64_t key; /* fl_path_key of the directory's absolute path */
	uint64_t dev, ino;
};

/* The fast directories by identity, for lookups relative to a directory
 * descriptor. An identity the view found at two paths (a bind mount) is
 * none. */
struct fl_dirid {
	uint64_t key;    /* fl_object_key(dev, ino); written last (release) */
	uint64_t prefix; /* FNV-1a state after the directory's path and "/"
	                    (after "/" alone for the root): continued over a
	                    name, it is the hash of the name's path */
	uint64_t dev, ino;
};

/* A symlink the view followed, which the agent may follow lexically: key
 * is the symlink's path's, target the absolute clean path it leads to,
 * reached without a symlink (its directory a fast directory when the view
 * published it). Written once, target first; never changed after. */
struct fl_link {
	uint64_t key; /* fl_path_key of the symlink's path; written last (release) */
	char target[FL_PATH_MAX - 8];
};

/* An object of the view's own (a regular file the transaction created or
 * staged) whose fstat by the kernel answers every field as the view's stat
 * of it would (docs/fastpath.md §16): a changed object, and yet the agent
 * answers the fstat of a descriptor of it natively (step 5), recording
 * nothing (the view's stat of its own object reads nothing of the host).
 * dev and ino are written first, then key (release); the view sets key to
 * FL_KEY_REMOVED, for good, before it makes a change that would set the
 * two answers apart (a ctime or link count of its own). */
struct fl_native {
	uint64_t key; /* fl_object_key(dev, ino) */
	uint64_t dev, ino;
};

struct fl_tree {
	uint32_t version; /* FL_LAYOUT_VERSION */
	uint32_t enabled; /* 0: every call is forwarded */
	uint64_t generation;
	uint8_t pad[48];
	struct fl_changed changed[FL_CHANGED_N];
	uint64_t objects[FL_OBJECTS_N]; /* fl_object_key of changed host objects,
	                                   and of the view's own (staged) ones */
	struct fl_fastdir fastdirs[FL_FASTDIRS_N];
	struct fl_dirid dirids[FL_FASTDIRS_N];
	struct fl_link links[FL_LINKS_N];
	struct fl_native natives[FL_NATIVES_N];
};

struct fl_record {
	uint64_t seq;        /* position + 1, release-stored last: published */
	uint64_t generation; /* tree->generation read before the call */
	int32_t nr;          /* the system call's number, or FL_NR_NONE */
	uint32_t path_len;   /* strlen(path) */
	int64_t result;      /* what the call returned: >= 0 or -errno */
	/* The identity the call observed (lstat of the object, fstat of an
	 * opened descriptor), with FL_OBSERVED in flags: required when the
	 * call found the object (result >= 0; readlink's EINVAL, the object
	 * is no symlink), forbidden when it found none (ENOENT). */
	uint64_t dev, ino;
	uint32_t mode, uid, gid;
	uint32_t flags;      /* FL_OBSERVED when the identity below is set */
	int64_t size;
	int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
	uint64_t dir_dev, dir_ino; /* with FL_RELATIVE: the directory */
	char path[FL_PATH_MAX];
};

struct fl_ring {
	uint64_t head; /* reserved slots (the agent's CAS) */
	uint8_t pad0[56];
	uint64_t tail; /* consumed slots (the supervisor's) */
	uint8_t pad1[56];
	struct fl_record slots[FL_RING_N];
	/* The agent's own: fingerprints of the records it published (every
	 * field but seq), by fingerprint & (FL_SEEN_N - 1). A record whose
	 * fingerprint is there repeats one published before, at the same
	 * generation: its slot is published empty. The supervisor never
	 * reads it. */
	uint64_t seen[FL_SEEN_N];
};

/* FNV-1a, 64 bits. */
#define FL_FNV_OFFSET 14695981039346656037ull
#define FL_FNV_PRIME  1099511628211ull

static inline uint64_t fl_fnv_step(uint64_t h, unsigned char c) {
	return (h ^ c) * FL_FNV_PRIME;
}

static inline uint64_t fl_key(uint64_t h) {
	return h <= FL_KEY_REMOVED ? h + 2 : h;
}

/* fl_path_key is the key of an absolute path of n bytes. An agent probing
 * the prefixes of a path takes fl_key of the running hash at each '/'
 * (the hash of "/" itself for the root). */
static inline uint64_t fl_path_key(const char *p, uint64_t n) {
	uint64_t h = FL_FNV_OFFSET;
	for (uint64_t i = 0; i < n; i++)
		h = fl_fnv_step(h, (unsigned char)p[i]);
	return fl_key(h);
}

/* fl_object_key is the key of a host object: its device and inode, eight
 * little-endian bytes each. */
static inline uint64_t fl_object_key(uint64_t dev, uint64_t ino) {
	uint64_t h = FL_FNV_OFFSET;
	for (int i = 0; i < 8; i++)
		h = fl_fnv_step(h, (unsigned char)(dev >> (8 * i)));
	for (int i = 0; i < 8; i++)
		h = fl_fnv_step(h, (unsigned char)(ino >> (8 * i)));
	return fl_key(h);
}

#endif
