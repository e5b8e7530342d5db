// Package vfs is the file-system namespace supervised processes see: the
// host itself (Host: passthrough, --passthrough and processes outside any
// transaction) or a transaction's private view (Tx). It resolves paths as
// Linux does, checks permissions for the caller's credentials, keeps the
// transaction's changes in backing objects and its read set for validation,
// and writes the redo journal that commit applies. It must not import
// interpose, syscalls or txn, and knows no SQL.
//
// Linux analogues. A Node is loosely an inode with its dentry: its data
// lives in a backing object — the host original, never opened writable,
// or a staged object in the transaction's staging area on the original's
// mount (copy-up on first modification; everything the transaction
// creates). An area is per mount because write-through is a rename and
// copy-up a reflink, neither of which crosses mounts (area.go); areas
// other than the state directory's are made, through TxOptions.NewArea, at
// the first change on their mount. A directory keeps the entries the
// transaction changed over its host directory's (nil is a whiteout; an
// opaque directory never shows a host directory's children).
// walk.go is namei: search permission, ".", "..", symlinks (at most 40),
// trailing slashes, openat2's RESOLVE_* restrictions, mount crossings, and
// the caller's own /proc magic links, which resolve to view objects.
//
// Invariants.
//   - The host is read, never written, until commit: host originals are
//     opened read-only with O_NOATIME, through a private noatime clone of
//     the mount tree (openRoot) so that even readlink leaves atimes alone.
//   - A host directory keeps its identity in the view (inode, size,
//     descriptors on it); a staged copy of it only carries the attributes
//     the transaction changed. Every other copied-up object shows its
//     staged object, whose link count is kept equal to the view's.
//   - Directory listings of the view are always served by Listing, in the
//     host's order (by name with SortedListings, in deterministic runs)
//     with stable per-name cookies (passthrough directories excepted).
//     Host listings leave staging areas out (isAreaName).
//   - The times the view sets itself (a changed directory's mtime and
//     ctime, the ctime of a link count or name change) are stamps of the
//     kernel's file clock (sysx.FileClock), so they keep the order of the
//     changes with the kernel's stamps of the staged objects processes
//     write (Tx.nowLocked); only Tx.Now, a deterministic run's virtual
//     clock, replaces it.
//   - With StampTimes (deterministic runs), a staged object's atime and
//     mtime are the view's clock's: set on the object when a stat through
//     the view, or the commit, finds them moved by the host kernel
//     (stamp.go).
//   - The journal names host paths as they are at that point of the
//     replay; every op carries the inode it expects there (replayIno).
//     Objects that keep their identity at commit (directories, hard-linked
//     files, FIFOs) are changed in place (inPlace: setattr, copydata);
//     others are replaced by their staged object (rename). An object
//     reached by descriptor is named by a name it still has (place.go);
//     one with no name left anywhere by no op at all.
//   - A staged object is in the staging area of the mount of every path
//     the journal places it at: rename and link across mounts fail with
//     EXDEV in the view as in Linux, and a change on a mount where no area
//     can be made fails and dooms the transaction (StagingError), never
//     staged elsewhere.
//   - With a fast-lookup tree (TxOptions.FastLookups, docs/fastpath.md),
//     every change is in the tree's changed set, under a new generation,
//     before the call that made it returns and before any host change the
//     view makes at once (a bound socket, a staging area); each record of
//     the agent is fed into the read set as observed, or dooms the
//     transaction (fastlookup.go; its walks: feedwalk.go).
//
// Lock order: Tx.mu is the only lock, held for every operation and
// released before anything that may block (opening a FIFO, a passthrough
// call).
package vfs
