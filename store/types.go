package store

import (
	"errors"
	"fmt"
	"time"

	"txexec/internal/sysx"
)

// State is where a transaction is in its life.
//
//	running ──Commit──▶ committed ──MarkApplied──▶ applied
//	   │  ╲                ▲
//	   │   Keep──▶ kept ───┘ (Commit re-validates)
//	   ▼            │
//	aborted ◀─Abort─┘
type State string

// The states a transaction passes through.
const (
	StateRunning   State = "running"   // its supervisor is staging changes
	StateKept      State = "kept"      // prepared, waiting for txexec commit/abort
	StateCommitted State = "committed" // past the commit point, write-through pending
	StateApplied   State = "applied"   // written through to the host
	StateAborted   State = "aborted"   // thrown away; Reason says why
)

// Owner identifies the supervisor process responsible for a transaction:
// the one running it, or the one writing it through after commit. Start
// is the process's start time (field 22 of /proc/PID/stat) so that a
// reused pid is not mistaken for the owner; 0 means unknown.
type Owner struct {
	Pid   int
	Start uint64
}

// TxInfo describes the command a transaction runs, for txexec log.
type TxInfo struct {
	Command []string
	Cwd     string
	// Run is the txexec parallel run (BeginRun) the transaction is one
	// command of, at place RunSeq (from 0); 0 for other transactions.
	Run    int64
	RunSeq int
	// KeepUndo makes its write-through keep before-images (UndoKeep),
	// for txexec undo.
	KeepUndo bool
}

// Tx is a transaction just begun.
type Tx struct {
	ID int64
	// StartSeq is the highest commit seq when the transaction began: its
	// snapshot. Commit validates against everything committed after it.
	StartSeq int64
}

// Granule is one unit of conflict detection: what a transaction wrote.
// Kinds are the caller's ("entry", "data", "meta", "listing", …); store
// only keeps and returns them.
type Granule struct {
	Kind string
	Path string
	// Ino and Mtime are what the object at Path has once the write-through
	// is done, when the caller knows (else zero): for validating readers
	// of Path against the host.
	Ino   uint64
	Mtime Timespec
}

// WriteSet is what one committed transaction wrote.
type WriteSet struct {
	TxID     int64
	Seq      int64
	Granules []Granule // sorted by Kind, then Path
}

// OpKind names a redo operation (OpRename, …); store keeps it as an
// opaque string.
type OpKind string

// The kinds of redo operation: one vocabulary for the journal that writes
// them (vfs) and the applier that performs them (txn.Apply, which says how
// each is made idempotent). store itself does not interpret them.
const (
	// OpRename renames Src (inode Ino) to Path, replacing what is there.
	// It places staged files, directories, symlinks and fifos (their
	// staging area is on the mount of Path) and moves host objects.
	OpRename OpKind = "rename"
	// OpExchange swaps Src (inode Ino) and Path (inode Ino2) atomically:
	// renameat2 RENAME_EXCHANGE. Both must exist.
	OpExchange OpKind = "exchange"
	// OpLink makes Path a hard link to Src (inode Ino). Path must not
	// exist (unlink it first): a Path that exists is taken as done.
	OpLink OpKind = "link"
	// OpUnlink removes the non-directory Path if it is inode Ino.
	OpUnlink OpKind = "unlink"
	// OpRmdir removes the empty directory Path if it is inode Ino.
	OpRmdir OpKind = "rmdir"
	// OpSetattr sets the attributes of Path (inode Ino, not followed if
	// a symlink) that Attrs selects: owner first, then mode (ignored for
	// symlinks, which have none on Linux), then times. Put it after the
	// ops that change a directory's entries, which change its mtime.
	OpSetattr OpKind = "setattr"
	// OpCopyData copies the staged file Src over the contents of the host
	// file Path (inode Ino), keeping Path's inode: for files with several
	// hard links. Follow it with OpSetattr for the mtime.
	OpCopyData OpKind = "copydata"
	// OpSetxattr sets the extended attribute XattrName of Path (inode Ino,
	// not followed if a symlink) to XattrValue: for host objects that keep
	// their identity at commit (directories, files with several links),
	// whose staged copy cannot replace them. Only the transaction's own
	// change is applied, so attributes others set meanwhile survive.
	OpSetxattr OpKind = "setxattr"
	// OpRemovexattr removes the extended attribute XattrName of Path
	// (inode Ino, not followed); already absent is done.
	OpRemovexattr OpKind = "removexattr"
	// OpAddFlags adds the inode flags Mode — only FS_IMMUTABLE_FL and
	// FS_APPEND_FL, chattr +i and +a — to the regular file or directory
	// Path (inode Ino), keeping its others. Those flags forbid renaming
	// the object and changing the directory, so a staged object never
	// carries them at the commit point: they are cleared on it before,
	// and these ops, last in the list, set them once everything is in
	// place.
	OpAddFlags OpKind = "addflags"
	// OpClearFlags clears the inode flags Mode — only FS_IMMUTABLE_FL and
	// FS_APPEND_FL — of the regular file or directory Path (inode Ino),
	// keeping its others: what txexec undo does to put back an
	// OpAddFlags. It comes first in an undo's list, so that the ops after
	// it may change the object.
	OpClearFlags OpKind = "clearflags"
	// OpFsyncDir asks for directory Path to be fsynced at the end (when
	// durable). The applier already does so for every directory it changes.
	OpFsyncDir OpKind = "fsyncdir"
)

// OpKinds lists every OpKind: the packages that act on redo ops keep one
// table entry per kind (txn's opKinds, cmd/txexec's describeOps), and
// their tests check them against this list, which TestOpKindsListsEvery
// checks against the constants above.
var OpKinds = []OpKind{
	OpRename, OpExchange, OpLink, OpUnlink, OpRmdir, OpSetattr,
	OpCopyData, OpSetxattr, OpRemovexattr, OpAddFlags, OpClearFlags, OpFsyncDir,
}

// The inode flags OpAddFlags sets and OpClearFlags clears.
const (
	FlagImmutable = sysx.FlagImmutable
	FlagAppend    = sysx.FlagAppend
)

// AttrMask says which attribute fields of a RedoOp are set.
type AttrMask uint32

// The attribute fields of a RedoOp.
const (
	AttrMode AttrMask = 1 << iota
	AttrUID
	AttrGID
	AttrAtime
	AttrMtime
)

// Timespec is a file time, as in struct timespec.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// Time returns t as a time.Time.
func (t Timespec) Time() time.Time { return time.Unix(t.Sec, t.Nsec) }

// RedoOp is one step of a committed transaction's write-through. It is
// plain data: store keeps the list in order and does not interpret it.
// Bulk data never goes here, only the paths of staged files.
type RedoOp struct {
	Kind  OpKind
	Path  string // the host path acted on
	Src   string // the other path, for two-path operations
	Ino   uint64 // the inode expected, which makes the op idempotent
	Ino2  uint64 // a second inode expected, for ops on two objects
	Attrs AttrMask
	Mode  uint32 // the mode of OpSetattr; the inode flags of OpAddFlags
	UID   uint32
	GID   uint32
	Atime Timespec
	Mtime Timespec
	// XattrName and XattrValue are the extended attribute of OpSetxattr
	// and OpRemovexattr (a value is at most 64 KiB: XATTR_SIZE_MAX).
	XattrName  string
	XattrValue []byte
}

// ReadRecord is what a transaction observed of one host path: whether it
// was there, which object it was and, when the transaction looked at them,
// its attributes; for a directory whose listing it read, a checksum of the
// names. vfs records and checks them (a kept transaction is validated
// against the host from these records, possibly by another process);
// store keeps them as opaque data.
type ReadRecord struct {
	Path     string
	Exists   bool // false: the transaction found Path absent
	Dev, Ino uint64
	Type     uint32 // the S_IFMT bits of the mode
	// Data and Meta say that the transaction read the object's contents
	// and its attributes; with either, Mode, UID, GID, Size, Mtime and
	// Ctime are what the first such read saw.
	Data       bool
	Meta       bool
	Mode       uint32
	UID, GID   uint32
	Size       int64
	Mtime      Timespec
	Ctime      Timespec
	Listing    bool // the transaction read the directory's listing
	ListingSum uint64
}

// Prepared is what a transaction leaves for its commit: its redo ops in
// order, its write set and its read set. Commit stores it with the commit
// record; Keep stores it for a later Commit, perhaps by another process.
type Prepared struct {
	Ops    []RedoOp
	Writes []Granule
	Reads  []ReadRecord
	// Undoes is the transaction a txexec undo transaction puts back (0
	// for any other): recorded with the commit, so that it is undone from
	// the commit point on.
	Undoes int64
}

// TxRecord is a transaction as txexec log and txexec show report it.
// Times are zero when the event has not happened.
type TxRecord struct {
	ID            int64
	State         State
	Command       []string
	Cwd           string
	Owner         Owner
	StartSeq      int64
	Seq           int64 // 0 until committed
	Reason        string
	CommandStatus *int // nil until SetCommandStatus
	Begun         time.Time
	Committed     time.Time
	Applied       time.Time
	Aborted       time.Time
	Kept          time.Time
	OpN           int // redo operations
	GranuleN      int // granules in the write set
	ReadN         int // records in the read set (of a committed transaction, not all are stored: see Store.Reads)
	// Run and RunSeq are TxInfo's: the parallel run and the command's
	// place in it; 0 and 0 for a transaction of no parallel run.
	Run    int64
	RunSeq int
	Undo   UndoInfo
}

// PendingTx is a committed transaction whose write-through has to be
// (re)done.
type PendingTx struct {
	ID  int64
	Seq int64
	Ops []RedoOp
	// Undo is whether its write-through keeps before-images (UndoKeep).
	Undo UndoState
}

// ErrNotFound is returned (wrapped) for a transaction id the store does
// not know.
var ErrNotFound = errors.New("no such transaction")

// StateError is returned (wrapped in "verb transaction ID: ") when an
// operation does not apply to a transaction in its current state:
// committing an aborted transaction, aborting a committed one.
type StateError struct {
	ID    int64
	State State
}

func (e *StateError) Error() string { return fmt.Sprintf("it is %s", e.State) }
