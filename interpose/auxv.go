package interpose

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Auxiliary-vector types (include/uapi/linux/auxvec.h).
const (
	atNull        = 0
	atIgnore      = 1
	atRandom      = 25
	atSysinfoEhdr = 33
)

// maxStackWords bounds the walk of a new image's initial stack (argc,
// argv, envp, auxv): the kernel limits arguments and environment to a
// quarter of the stack rlimit, and this is far above what it lets through
// in pointers on any sane limit, while keeping a corrupt stack from
// making the walk endless.
const maxStackWords = 1 << 22

// DeterminizeAuxv rewrites the auxiliary vector of thread tid, stopped
// at PTRACE_EVENT_EXEC (its registers are those of the new image's entry,
// its stack pointer at argc): AT_SYSINFO_EHDR becomes AT_IGNORE, so that
// the C library and the Go runtime find no vDSO and make real system
// calls for the time, which the filter then hands to the supervisor; and
// the 16 bytes AT_RANDOM points to are replaced by random. Called on the
// tracer's thread.
func DeterminizeAuxv(tid int, random [16]byte) error {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return fmt.Errorf("read registers: %w", err)
	}
	m := Memory{Tid: tid}
	sp := uintptr(regs.Rsp)
	word := func(i int) (uint64, error) {
		var b [8]byte
		if err := m.Read(sp+uintptr(8*i), b[:]); err != nil {
			return 0, err
		}
		return binary.NativeEndian.Uint64(b[:]), nil
	}
	argc, err := word(0)
	if err != nil {
		return fmt.Errorf("read argc: %w", err)
	}
	// argv[argc] is NULL; envp follows up to its NULL; then the auxv.
	i := 1 + int(argc) + 1
	for ; i < maxStackWords; i++ {
		v, err := word(i)
		if err != nil {
			return fmt.Errorf("read envp: %w", err)
		}
		if v == 0 {
			break
		}
	}
	for i++; i < maxStackWords; i += 2 {
		typ, err := word(i)
		if err != nil {
			return fmt.Errorf("read auxv: %w", err)
		}
		switch typ {
		case atNull:
			return nil
		case atSysinfoEhdr:
			var b [8]byte
			binary.NativeEndian.PutUint64(b[:], atIgnore)
			if err := m.Write(sp+uintptr(8*i), b[:]); err != nil {
				return fmt.Errorf("hide AT_SYSINFO_EHDR: %w", err)
			}
		case atRandom:
			addr, err := word(i + 1)
			if err != nil {
				return fmt.Errorf("read AT_RANDOM: %w", err)
			}
			if err := m.Write(uintptr(addr), random[:]); err != nil {
				return fmt.Errorf("write AT_RANDOM: %w", err)
			}
		}
	}
	return fmt.Errorf("no end to the auxiliary vector")
}
