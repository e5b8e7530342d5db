// Package crashfs is a FUSE file system for power-loss tests: it serves an
// in-memory tree and keeps, apart from what it serves, the state a disk
// would hold after the power went out at this instant. A power cut
// (Mount.PowerCut) throws away everything that was not made durable and
// serves the durable state from then on, on the same mount point.
//
// It goes further than LazyFS, which only holds written data until fsync:
// it also holds names and attributes, as a file system that commits
// nothing on its own (ext4 between journal commits, CrashMonkey's model)
// may lose them. What makes what durable:
//
//   - fsync(2) of a regular file, symlink or special file: its data, size,
//     mode, owner, times and extended attributes as they are now. Not any
//     of its names: a file whose directory was never fsynced since its
//     creation is gone after a cut, whatever was fsynced of it.
//   - fdatasync(2) of a regular file: its data and size only; a chmod,
//     chown, utimes or setxattr of it is still volatile.
//   - fsync or fdatasync of a directory: its attributes, and every change
//     of its entries (create, mknod, mkdir, symlink, link, unlink, rmdir,
//     rename into or out of it) made so far. A rename is one atomic step
//     in both directories, as every journaling file system makes it: once
//     either directory is fsynced, the rename is durable in both, together
//     with every earlier change of entries of either directory (they must
//     precede it, as in a journal). So a cut never leaves a renamed object
//     under both names, nor under neither.
//   - an object whose name becomes durable but whose own fsync never came
//     is there with what it had when it was made: a file is empty, a
//     directory has no entries, mode and owner are those of its creation.
//     This is the 0-byte file of a rename whose source was never synced.
//   - syncfs(2) and sync(2) make nothing durable: the kernel does not pass
//     them on to a FUSE file system (only virtiofs has FUSE_SYNCFS), so a
//     program that relies on them loses its data on such a file system.
//
// Mount.Sync makes the whole tree durable (a test's fixture, as if the
// machine had been idle for long).
//
// To stop a program at a chosen point, Mount.CutAtBoundary counts the
// boundary operations — those after which the durable state, or how far a
// commit's write-through has gone, can differ: fsync, fdatasync and
// fsync of a directory, rename, link, unlink, rmdir, setattr (chmod,
// chown, truncate, utimes) and set or remove of an extended attribute.
// When boundary k+1 arrives, the file system freezes before performing it:
// that request and every later one fail with EIO, and its callback (which
// kills the program) runs. PowerCut then drops the volatile state. So a
// cut "at k" leaves exactly what the first k boundaries made durable, and
// a test that runs the same program once for every k covers every point
// at which the durable state of its run can change.
//
// Mount.FailFsync injects I/O errors: the Nth fsync from now, or every
// fsync of an object with a name matching a pattern, fails with EIO and
// makes nothing durable (the changes stay volatile, as the pages of a
// failed writeback may be dropped later).
//
// The process that serves a mount must not fork a child that enters the
// mount before it execs (exec.Cmd.Dir inside it): Go's fork keeps its
// processor until the exec, a garbage collection waits for that
// processor, and the server waits for the collection. Start such a child
// elsewhere (env -C DIR enters DIR after the exec).
//
// Permission checks are the kernel's (the mount has default_permissions);
// locks are the kernel's local ones. Not served: copy_file_range and
// FICLONE (the kernel falls back to copying through the page cache, or
// fails with EOPNOTSUPP), inode flags (ENOTTY), POSIX ACLs, statx beyond
// what getattr gives. Memory is never freed while a mount lives: the file
// system is meant for tests of a few thousand files.
package crashfs
