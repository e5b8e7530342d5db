package interpose

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Action is what the filter does with one system call.
type Action uint8

const (
	// ActAllow runs the call in the kernel without the supervisor.
	ActAllow Action = iota
	// ActNotify sends the call to the supervisor (seccomp user notification).
	ActNotify
	// ActTrace stops the caller for the ptrace tracer (execve: the only
	// call that cannot be emulated, see docs/architecture.md §3).
	ActTrace
	// ActErrno fails the call in the filter with a fixed errno.
	ActErrno
)

func (a Action) String() string {
	switch a {
	case ActAllow:
		return "allow"
	case ActNotify:
		return "notify"
	case ActTrace:
		return "trace"
	case ActErrno:
		return "errno"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Rule is the filter's decision for one x86-64 system-call number, or,
// with If, for the calls of that number whose argument matches.
type Rule struct {
	Nr     int
	Action Action
	Errno  unix.Errno // for ActErrno
	// If, when set, restricts the rule to calls whose argument matches.
	// The conditioned rules of a number are tried in order; a call that
	// matches none of them gets the number's rule without If (which must
	// exist).
	If *ArgCond
}

// ArgCond matches a call whose argument Arg, masked, equals Value:
// args[Arg] & Mask == Value. Arg may also be ArgInstructionPointer, the
// address after the call's system-call instruction (the fast-lookup agent's
// page, FastLookupRules). An argument the kernel reads as a 32-bit int
// (ioctl's request, fcntl's command) must be masked with 0xffffffff, or a
// caller could set the upper half, which the kernel ignores, to pass.
type ArgCond struct {
	Arg   int
	Mask  uint64
	Value uint64
	// And, when set, must match too (the fast-lookup agent's openat: from
	// the agent page and with read-only flags).
	And *ArgCond
}

// ArgInstructionPointer, as ArgCond.Arg, conditions on the instruction
// pointer of the call instead of an argument.
const ArgInstructionPointer = -1

// Matches reports whether the call's arguments match c, as the filter
// decides it. A condition on the instruction pointer is not decided by the
// arguments and never matches here (the syscall table's cases, which ask,
// have none).
func (c ArgCond) Matches(args [6]Arg) bool {
	if c.Arg == ArgInstructionPointer {
		return false
	}
	return uint64(args[c.Arg])&c.Mask == c.Value && (c.And == nil || c.And.Matches(args))
}

// Every number without a rule, and every call made through a foreign ABI
// (i386 int 0x80, x32), is refused with ENOSYS, exactly as the kernel
// answers a system call it does not have.
const refusedErrno = unix.ENOSYS

// CompileFilter builds the BPF program for rules and returns its
// instructions: the numbers whose rules depend on an argument are decided
// by a prologue txexec writes itself (argPrologue), the rest by a program
// libseccomp compiles after it. The program is loaded by the stub with a
// raw seccomp(2) call, because Debian's libseccomp 2.5.4 cannot set
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV.
func CompileFilter(rules []Rule) ([]unix.SockFilter, error) {
	prologue, plain, err := argPrologue(rules)
	if err != nil {
		return nil, err
	}
	prog, err := compileLibseccomp(plain)
	if err != nil {
		return nil, err
	}
	return append(prologue, prog...), nil
}

// compileLibseccomp compiles rules without conditions with libseccomp.
func compileLibseccomp(rules []Rule) ([]unix.SockFilter, error) {
	f, err := seccomp.NewFilter(seccomp.ActErrno.SetReturnCode(int16(refusedErrno)))
	if err != nil {
		return nil, fmt.Errorf("create seccomp filter: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActErrno.SetReturnCode(int16(refusedErrno))); err != nil {
		return nil, fmt.Errorf("set bad-arch action: %w", err)
	}
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("set filter optimization: %w", err)
	}
	for _, r := range rules {
		if r.If != nil {
			return nil, fmt.Errorf("add filter rule for syscall %d: libseccomp is given no conditioned rules", r.Nr)
		}
		var act seccomp.ScmpAction
		switch r.Action {
		case ActAllow:
			act = seccomp.ActAllow
		case ActNotify:
			act = seccomp.ActNotify
		case ActTrace:
			act = seccomp.ActTrace.SetReturnCode(0)
		case ActErrno:
			if r.Errno == refusedErrno {
				continue // the default action already says so
			}
			act = seccomp.ActErrno.SetReturnCode(int16(r.Errno))
		}
		if err := f.AddRule(seccomp.ScmpSyscall(r.Nr), act); err != nil {
			return nil, fmt.Errorf("add filter rule for syscall %d: %w", r.Nr, err)
		}
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	done := make(chan error, 1)
	var raw []byte
	go func() {
		b, err := io.ReadAll(rd)
		raw = b
		done <- err
	}()
	err = f.ExportBPF(wr)
	wr.Close()
	if rerr := <-done; err == nil {
		err = rerr
	}
	if err != nil {
		return nil, fmt.Errorf("export seccomp filter: %w", err)
	}
	return decodeBPF(raw)
}

func decodeBPF(raw []byte) ([]unix.SockFilter, error) {
	if len(raw)%8 != 0 || len(raw) == 0 {
		return nil, fmt.Errorf("export seccomp filter: %d bytes is not a BPF program", len(raw))
	}
	prog := make([]unix.SockFilter, len(raw)/8)
	for i := range prog {
		b := raw[8*i:]
		prog[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[0:]),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.NativeEndian.Uint32(b[4:]),
		}
	}
	return prog, nil
}

func encodeBPF(prog []unix.SockFilter) []byte {
	raw := make([]byte, 8*len(prog))
	for i, ins := range prog {
		b := raw[8*i:]
		binary.NativeEndian.PutUint16(b[0:], ins.Code)
		b[2], b[3] = ins.Jt, ins.Jf
		binary.NativeEndian.PutUint32(b[4:], ins.K)
	}
	return raw
}

// loadFilter installs prog on the calling thread and returns the listener.
func loadFilter(prog []unix.SockFilter) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}
