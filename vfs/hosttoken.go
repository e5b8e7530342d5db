package vfs

import (
	"sync"

	"golang.org/x/sys/unix"
)

// hostTokens are the host view's stand-ins for the O_PATH descriptors that
// no read-only descriptor can stand for: a symlink opened with O_NOFOLLOW,
// a device or socket (opening those has effects), an object the caller may
// not read. SECCOMP_IOCTL_NOTIF_ADDFD cannot install an O_PATH file, so
// the caller gets the read end of an empty pipe instead, and the host view
// keeps an O_PATH descriptor on the object: every call it serves with that
// descriptor as dirfd (fstatat(fd, "", AT_EMPTY_PATH), readlinkat(fd, ""),
// fchownat, linkat(AT_EMPTY_PATH), *at relative to it) acts on the object,
// as glibc's fchmodat(AT_SYMLINK_NOFOLLOW) and tar -p rely on. This is the
// transactional view's path token (Tx.pathTokenLocked) for a view with no
// staging area: a pipe needs no directory, and tells when the caller's
// last copy of it is closed (its write end, which the view keeps, then
// polls POLLERR), so the object's descriptor can go.
type hostTokens struct {
	mu sync.Mutex
	// byPipe maps the pipe's identity to the token.
	byPipe map[FileID]hostToken
	// sweepAt is the number of tokens at which closed ones are looked for.
	sweepAt int
}

type hostToken struct {
	obj  int // O_PATH descriptor on the object
	hold int // the pipe's write end
}

// minTokenSweep is the fewest tokens kept before closed ones are dropped.
const minTokenSweep = 64

// add makes a token for obj, an O_PATH descriptor it takes over, and
// returns the caller's descriptor: the pipe's non-blocking read end, which
// reads nothing (EAGAIN) and cannot be written (EBADF), as an O_PATH
// descriptor neither reads nor writes.
func (ts *hostTokens) add(obj int) (int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(obj)
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(p[0], &st); err != nil {
		unix.Close(obj)
		unix.Close(p[0])
		unix.Close(p[1])
		return -1, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.byPipe == nil {
		ts.byPipe = map[FileID]hostToken{}
	}
	if len(ts.byPipe) >= ts.sweepAt {
		ts.sweepLocked()
		ts.sweepAt = max(minTokenSweep, 2*len(ts.byPipe))
	}
	ts.byPipe[idOf(&st)] = hostToken{obj: obj, hold: p[1]}
	return p[0], nil
}

// sweepLocked drops the tokens whose every read end is closed.
//
// Preconditions: ts.mu held.
func (ts *hostTokens) sweepLocked() {
	ids := make([]FileID, 0, len(ts.byPipe))
	pfds := make([]unix.PollFd, 0, len(ts.byPipe))
	for id, t := range ts.byPipe {
		ids = append(ids, id)
		pfds = append(pfds, unix.PollFd{Fd: int32(t.hold)})
	}
	if _, err := unix.Poll(pfds, 0); err != nil {
		return
	}
	for i, p := range pfds {
		if p.Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			t := ts.byPipe[ids[i]]
			unix.Close(t.obj)
			unix.Close(t.hold)
			delete(ts.byPipe, ids[i])
		}
	}
}

// objectOf returns a new O_PATH descriptor on the object the token fd (a
// supervisor descriptor on what a caller's descriptor refers to) stands
// for, or -1 if fd is no token.
func (ts *hostTokens) objectOf(fd int) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.byPipe) == 0 {
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return -1
	}
	t, ok := ts.byPipe[idOf(&st)]
	if !ok {
		return -1
	}
	obj, err := unix.FcntlInt(uintptr(t.obj), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return obj
}
