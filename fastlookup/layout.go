package fastlookup

import "unsafe"

// The shared layout, as fastlookup.h declares it for the agent; the
// structures below must match it byte for byte (TestLayoutMatchesC).

// LayoutVersion is FL_LAYOUT_VERSION.
const LayoutVersion = 5

// Table sizes (slots, powers of two) and the longest path a record holds,
// with its NUL.
const (
	ChangedN  = 16384
	ObjectsN  = 16384
	FastDirsN = 16384
	RingN     = 1024
	SeenN     = 512
	PathMax   = 256
	LinksN    = 512
	NativesN  = 16384
)

// TreeSize and RingSize are the sizes of a tree's and a ring's memfd.
const (
	TreeSize = int(unsafe.Sizeof(treeLayout{}))
	RingSize = int(unsafe.Sizeof(ringLayout{}))
)

// Reserved keys: an empty slot and a removed fast directory or own object.
const (
	KeyEmpty   = 0
	KeyRemoved = 1
)

// Kind is how much a changed-set entry covers.
type Kind uint64

const (
	// ChangedSelf: the object at the path shows other attributes in the
	// view (a directory whose entries changed: its times, size, links).
	ChangedSelf Kind = 1
	// ChangedSubtree: the name itself changed, and so did every path under
	// it.
	ChangedSubtree Kind = 2
)

// NrNone is the call number of a published slot that carries no record.
const NrNone = -1

// Record flags: flObserved is FL_OBSERVED, flRelative FL_RELATIVE,
// flDescriptor FL_DESCRIPTOR.
const (
	flObserved   = 1
	flRelative   = 2
	flDescriptor = 4
)

// maxLoad is the share of a table's slots that may be used (probing stays
// short, and an empty slot always ends a probe).
func maxLoad(n int) int { return n * 3 / 4 }

type changedEntry struct {
	key  uint64
	kind uint64
}

type fastDirEntry struct {
	key      uint64
	dev, ino uint64
}

// dirIDEntry is struct fl_dirid.
type dirIDEntry struct {
	key      uint64
	prefix   uint64
	dev, ino uint64
}

// linkEntry is struct fl_link.
type linkEntry struct {
	key    uint64
	target [PathMax - 8]byte
}

// nativeEntry is struct fl_native.
type nativeEntry struct {
	key      uint64
	dev, ino uint64
}

// treeLayout is struct fl_tree.
type treeLayout struct {
	version    uint32
	enabled    uint32
	generation uint64
	_          [48]byte
	changed    [ChangedN]changedEntry
	objects    [ObjectsN]uint64
	fastDirs   [FastDirsN]fastDirEntry
	dirIDs     [FastDirsN]dirIDEntry
	links      [LinksN]linkEntry
	natives    [NativesN]nativeEntry
}

// recordLayout is struct fl_record.
type recordLayout struct {
	seq        uint64
	generation uint64
	nr         int32
	pathLen    uint32
	result     int64
	dev, ino   uint64
	mode       uint32
	uid, gid   uint32
	flags      uint32
	size       int64
	mtimeSec   int64
	mtimeNsec  int64
	ctimeSec   int64
	ctimeNsec  int64
	dirDev     uint64
	dirIno     uint64
	path       [PathMax]byte
}

// ringLayout is struct fl_ring.
type ringLayout struct {
	head  uint64
	_     [56]byte
	tail  uint64
	_     [56]byte
	slots [RingN]recordLayout
	seen  [SeenN]uint64 // the agent's own: never read here
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvStep(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }

// key maps a hash off the reserved keys (fl_key).
func key(h uint64) uint64 {
	if h <= KeyRemoved {
		return h + 2
	}
	return h
}

// PathKey is the key of an absolute path (fl_path_key).
func PathKey(p string) uint64 { return key(hashOn(fnvOffset, p)) }

// hashOn continues FNV-1a state h over s.
func hashOn(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvStep(h, s[i])
	}
	return h
}

// dirPrefix is a directory's fl_dirid prefix: the FNV-1a state after its
// path and "/" ("/" alone for the root).
func dirPrefix(dir string) uint64 {
	if dir == "/" {
		return hashOn(fnvOffset, "/")
	}
	return hashOn(hashOn(fnvOffset, dir), "/")
}

// ObjectKey is the key of a host object (fl_object_key): its device and
// inode, eight little-endian bytes each.
func ObjectKey(dev, ino uint64) uint64 {
	h := uint64(fnvOffset)
	for i := range 8 {
		h = fnvStep(h, byte(dev>>(8*i)))
	}
	for i := range 8 {
		h = fnvStep(h, byte(ino>>(8*i)))
	}
	return key(h)
}
