package store

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ReserveName is a file of ReserveSize bytes that the store keeps
// allocated in the state directory, and gives up when the database cannot
// be opened or written for want of space: then the write is tried once
// more, with the room it held. A disk filled by others (or by a
// transaction whose staging is on another file system than its own
// state) would otherwise stop txexec from recording anything — an abort,
// recovery — until someone deletes files by hand. Space a transaction's
// own staging takes is freed before the store needs it (FreeStaging);
// the reserve is for the rest. Open allocates it again when there is
// room.
const (
	ReserveName = "reserve"
	ReserveSize = 256 << 10
)

// keepReserve allocates the reserve in dir unless it is there already.
// Without room for it there is none, until an Open finds room: never an
// error, since the store works without it.
func keepReserve(dir string) {
	path := filepath.Join(dir, ReserveName)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == ReserveSize {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, ReserveSize)
	if errors.Is(err, unix.EOPNOTSUPP) {
		// No fallocate (some FUSE and network file systems): zeros,
		// which such a file system stores.
		_, err = f.Write(make([]byte, ReserveSize))
	}
	f.Close()
	if err != nil {
		os.Remove(path)
	}
}

// releaseReserve removes the reserve of dir and reports whether there was
// one to free.
func releaseReserve(dir string) bool {
	return os.Remove(filepath.Join(dir, ReserveName)) == nil
}

// isNoSpace reports whether err is a full disk's (see noSpace).
func isNoSpace(err error) bool { return errors.Is(noSpace(err), unix.ENOSPC) }
