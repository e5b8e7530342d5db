package syscalls

import (
	"math/rand/v2"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"txexec/determ"
)

// Files whose contents the deterministic environment decides: the random
// devices, and the lists of CPUs glibc's sysconf(_SC_NPROCESSORS_*)
// reads. The view opens them as usual (permissions, the read set); the
// caller then gets another descriptor in place of the one the view made.

// Linux's random devices (drivers/char/mem.c): major 1, minors 8 and 9.
var (
	devRandom  = unix.Mkdev(1, 8)
	devURandom = unix.Mkdev(1, 9)
)

// cpuLists are the files that list CPUs, each answered "0-N" for the
// determ.CPUs processors.
var cpuLists = map[string]bool{
	"/sys/devices/system/cpu/online":   true,
	"/sys/devices/system/cpu/possible": true,
	"/sys/devices/system/cpu/present":  true,
}

// determinedFile returns the descriptor to install for fd, which the view
// opened for thread tid with open flags: fd itself, or, for a file the
// deterministic environment decides, a descriptor of its contents (fd is
// then closed).
func (k *Kernel) determinedFile(tid, fd int, flags int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fd, nil
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFCHR && (st.Rdev == devRandom || st.Rdev == devURandom):
		if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_PATH != 0 {
			return fd, nil // writing adds entropy: harmless, the kernel's
		}
		r, err := seededPipe(k.Determ, tid, flags)
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		return r, nil
	case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Dev != 0:
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil || !cpuLists[p] || flags&unix.O_PATH != 0 {
			return fd, nil
		}
		m, err := memfdWith("txexec-cpus", "0-"+strconv.Itoa(determ.CPUs-1)+"\n")
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		return m, nil
	}
	return fd, nil
}

// seededPipe returns the read end of a pipe that a goroutine of the
// supervisor fills with a stream of its own, keyed by 32 bytes of thread
// tid's stream, until the last reader closes it (EPIPE). Reads of any
// size get bytes, as from /dev/urandom; fstat shows a FIFO, and lseek
// fails with ESPIPE (docs/semantics.md §10).
func seededPipe(env *determ.Env, tid int, flags int) (int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|flags&unix.O_NONBLOCK); err != nil {
		return -1, err
	}
	var key [32]byte
	env.Random(tid, key[:])
	stream := rand.NewChaCha8(key)
	go func() {
		defer unix.Close(p[1])
		buf := make([]byte, 64<<10)
		for {
			stream.Read(buf)
			for b := buf; len(b) > 0; {
				n, err := unix.Write(p[1], b)
				if err == unix.EINTR || err == unix.EAGAIN {
					continue
				}
				if err != nil {
					return // EPIPE: every reader is gone
				}
				b = b[n:]
			}
		}
	}()
	return p[0], nil
}

// memfdWith returns a read-only descriptor of a memory file holding s.
func memfdWith(name, s string) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, err
	}
	if _, err := unix.Write(fd, []byte(s)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL)
	ro, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	return ro, err
}
