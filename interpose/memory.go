package interpose

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PathMax is PATH_MAX: the longest path the kernel copies in, NUL included.
const PathMax = 4096

var pageSize = uintptr(os.Getpagesize())

// Memory reads and writes one tracee thread's address space. It uses
// process_vm_readv/writev and falls back to /proc/PID/mem where those are
// refused (which costs an open per call).
type Memory struct {
	Tid int
	// read, if set, is set to true before any read: Call uses it to forbid
	// CONTINUE.
	read *bool
}

// Read fills buf from the tracee at addr. A short read is EFAULT, as the
// kernel's copy_from_user would make it.
func (m Memory) Read(addr uintptr, buf []byte) error {
	if m.read != nil {
		*m.read = true
	}
	if len(buf) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	n, err := unix.ProcessVMReadv(m.Tid, local, remote, 0)
	if err == unix.ENOSYS || err == unix.EPERM {
		n, err = m.procMem(addr, buf, false)
	}
	if err != nil {
		if err == unix.ESRCH {
			return err
		}
		return unix.EFAULT
	}
	if n != len(buf) {
		return unix.EFAULT
	}
	return nil
}

// Write copies buf into the tracee at addr.
func (m Memory) Write(addr uintptr, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	n, err := unix.ProcessVMWritev(m.Tid, local, remote, 0)
	if err == unix.ENOSYS || err == unix.EPERM {
		n, err = m.procMem(addr, buf, true)
	}
	if err != nil {
		if err == unix.ESRCH {
			return err
		}
		return unix.EFAULT
	}
	if n != len(buf) {
		return unix.EFAULT
	}
	return nil
}

func (m Memory) procMem(addr uintptr, buf []byte, write bool) (int, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_WRONLY
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", m.Tid), flag, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return 0, unix.ESRCH // the thread is gone
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if write {
		return f.WriteAt(buf, int64(addr))
	}
	return f.ReadAt(buf, int64(addr))
}

// shortRead is the most ReadString copies in with its first read: most
// strings (paths) are short, and copying a whole page costs more than a
// second system call for the rare long one.
const shortRead = 256

// ReadString copies in a NUL-terminated string of at most max bytes
// (terminator included), page by page so that a string ending just before an
// unmapped page is read as the kernel would read it. A missing terminator
// within max bytes is ENAMETOOLONG, an unreadable byte EFAULT.
func (m Memory) ReadString(addr uintptr, max int) (string, error) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	// The first read: at most shortRead bytes, never past its page.
	var short [shortRead]byte
	chunk := min(int(pageSize-addr%pageSize), shortRead, max)
	if err := m.Read(addr, short[:chunk]); err != nil {
		return "", err
	}
	if i := bytes.IndexByte(short[:chunk], 0); i >= 0 {
		return string(short[:i]), nil
	}
	out := append(make([]byte, 0, 2*shortRead), short[:chunk]...)
	addr += uintptr(chunk)
	for len(out) < max {
		chunk := min(int(pageSize-addr%pageSize), max-len(out))
		n := len(out)
		out = slices.Grow(out, chunk)[:n+chunk]
		if err := m.Read(addr, out[n:]); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(out[n:], 0); i >= 0 {
			return string(out[:n+i]), nil
		}
		addr += uintptr(chunk)
	}
	return "", unix.ENAMETOOLONG
}

// ReadPath copies in a path argument as getname() does.
func (m Memory) ReadPath(addr uintptr) (string, error) {
	return m.ReadString(addr, PathMax)
}

// ReadPointers reads a NULL-terminated array of user pointers (argv, envp),
// at most max entries.
func (m Memory) ReadPointers(addr uintptr, max int) ([]uintptr, error) {
	var out []uintptr
	var w [8]byte
	for i := 0; i < max; i++ {
		if err := m.Read(addr+uintptr(8*i), w[:]); err != nil {
			return nil, err
		}
		p := *(*uintptr)(unsafe.Pointer(&w[0]))
		if p == 0 {
			return out, nil
		}
		out = append(out, p)
	}
	return nil, unix.E2BIG
}

// WriteValue copies the bytes of a fixed-size value (a struct stat, an int)
// into the tracee.
func WriteValue[T any](m Memory, addr uintptr, v *T) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
	return m.Write(addr, b)
}

// ReadValue copies a fixed-size value in from the tracee.
func ReadValue[T any](m Memory, addr uintptr, v *T) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
	return m.Read(addr, b)
}
