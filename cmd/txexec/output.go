package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// deferredOutput is --output=defer: the command's stdout and stderr are
// pipes that the supervisor drains into unlinked temporary files while the
// command runs; the held bytes are copied to txexec's own stdout and stderr
// after a successful commit, each stream in order, and dropped at abort.
//
// When txexec's stdout and stderr are the same file (a terminal, or
// `>log 2>&1`), both go through one pipe, so that their interleaving is
// kept; otherwise the order between the two streams is not.
type deferredOutput struct {
	streams []*heldStream
	// files are what the command gets as descriptors 0, 1 and 2 (nil:
	// txexec's own).
	files [3]*os.File
}

// heldStream is one pipe and what has been drained from it.
type heldStream struct {
	dst *os.File
	// r is the pipe's read end (non-blocking), w its write end until the
	// command has it.
	r int
	w *os.File
	// buf holds the drained bytes; n counts them once done is closed.
	buf *os.File
	n   int64
	err error
	// stopR/stopW tell the drainer that the tree has exited.
	stopR, stopW int
	done         chan struct{}
}

// newDeferredOutput sets up the pipes; tmpDir holds the (unlinked) buffers
// ("" for the system's temporary directory).
func newDeferredOutput(tmpDir string) (*deferredOutput, error) {
	d := &deferredOutput{}
	var st [3]unix.Stat_t
	ok := [3]bool{}
	for fd := 1; fd <= 2; fd++ {
		ok[fd] = unix.Fstat(fd, &st[fd]) == nil
	}
	for fd := 1; fd <= 2; fd++ {
		if !ok[fd] {
			continue // closed: nothing to hold
		}
		if fd == 2 && ok[1] && st[1].Dev == st[2].Dev && st[1].Ino == st[2].Ino {
			d.files[2] = d.files[1]
			continue
		}
		dst := os.Stdout
		if fd == 2 {
			dst = os.Stderr
		}
		s, err := newHeldStream(dst, tmpDir)
		if err != nil {
			d.close()
			return nil, err
		}
		d.streams = append(d.streams, s)
		d.files[fd] = s.w
	}
	return d, nil
}

func newHeldStream(dst *os.File, tmpDir string) (*heldStream, error) {
	s := &heldStream{dst: dst, r: -1, stopR: -1, stopW: -1, done: make(chan struct{})}
	buf, err := os.CreateTemp(tmpDir, "txexec-output-")
	if err != nil {
		return nil, fmt.Errorf("create output buffer: %w", err)
	}
	os.Remove(buf.Name()) // anonymous: gone with txexec, whatever happens
	s.buf = buf
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		buf.Close()
		return nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		buf.Close()
		return nil, os.NewSyscallError("fcntl", err)
	}
	s.r, s.w = p[0], os.NewFile(uintptr(p[1]), "txexec-output")
	var q [2]int
	if err := unix.Pipe2(q[:], unix.O_CLOEXEC); err != nil {
		s.close()
		return nil, os.NewSyscallError("pipe2", err)
	}
	s.stopR, s.stopW = q[0], q[1]
	go s.drain()
	return s, nil
}

// drain copies the pipe into buf until end of file, or, once told that the
// tree has exited, until the pipe is empty (a process outside the tree may
// still hold a write end: what it writes later is not the command's).
func (s *heldStream) drain() {
	defer close(s.done)
	chunk := make([]byte, 64<<10)
	// readAvailable reads until the pipe is empty (false) or at its end
	// (true).
	readAvailable := func() bool {
		for {
			n, err := unix.Read(s.r, chunk)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err != nil:
				s.err = os.NewSyscallError("read", err)
				return true
			case n == 0:
				return true
			}
			if _, err := s.buf.Write(chunk[:n]); err != nil {
				s.err = fmt.Errorf("hold output: %w", err)
				return true
			}
			s.n += int64(n)
		}
	}
	for {
		fds := []unix.PollFd{{Fd: int32(s.r), Events: unix.POLLIN}, {Fd: int32(s.stopR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			s.err = os.NewSyscallError("poll", err)
			return
		}
		if fds[0].Revents != 0 && readAvailable() {
			return
		}
		if fds[1].Revents != 0 {
			readAvailable()
			return
		}
	}
}

// Files returns the descriptors the command gets (for interpose.Config).
func (d *deferredOutput) Files() [3]*os.File { return d.files }

// Started closes the supervisor's copies of the write ends, once the
// command holds them, so that the pipes reach end of file when the tree
// has exited.
func (d *deferredOutput) Started() {
	for _, s := range d.streams {
		if s.w != nil {
			s.w.Close()
			s.w = nil
		}
	}
}

// Finish waits until everything the tree wrote is held. Call it after the
// tree has exited.
func (d *deferredOutput) Finish() error {
	d.Started()
	var errs []error
	for _, s := range d.streams {
		if s.stopW >= 0 {
			unix.Write(s.stopW, []byte{1})
		}
		<-s.done
		errs = append(errs, s.err)
	}
	return errors.Join(errs...)
}

// Held returns how many bytes are held.
func (d *deferredOutput) Held() int64 {
	var n int64
	for _, s := range d.streams {
		n += s.n
	}
	return n
}

// Release copies the held output to txexec's stdout and stderr and frees
// it. A reader that went away (EPIPE) ends the copy of that stream.
func (d *deferredOutput) Release() error {
	// Writing to a closed pipe on descriptor 1 or 2 would kill txexec with
	// SIGPIPE after the commit, losing its exit status.
	signal.Ignore(unix.SIGPIPE)
	defer signal.Reset(unix.SIGPIPE)
	var errs []error
	for _, s := range d.streams {
		if _, err := s.buf.Seek(0, io.SeekStart); err != nil {
			errs = append(errs, fmt.Errorf("release output: %w", err))
			continue
		}
		if _, err := io.Copy(s.dst, s.buf); err != nil && !errors.Is(err, unix.EPIPE) {
			errs = append(errs, fmt.Errorf("release output: %w", err))
		}
	}
	d.close()
	return errors.Join(errs...)
}

// Drop frees the held output and returns how many bytes it was.
func (d *deferredOutput) Drop() int64 {
	n := d.Held()
	d.close()
	return n
}

func (d *deferredOutput) close() {
	for _, s := range d.streams {
		s.close()
	}
	d.streams = nil
}

func (s *heldStream) close() {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if s.stopW >= 0 {
		// Stop a drainer still running (an error path before Finish).
		unix.Write(s.stopW, []byte{1})
		<-s.done
		unix.Close(s.stopW)
		s.stopW = -1
	}
	for _, fd := range []*int{&s.r, &s.stopR} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if s.buf != nil {
		s.buf.Close()
		s.buf = nil
	}
}
