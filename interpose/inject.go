package interpose

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The exec stop's injection of the fast-lookup agent (docs/fastpath.md
// §4.2): the thread stopped at PTRACE_EVENT_EXEC, before the new image's
// first instruction, is made to run one mmap of the agent's range
// (MAP_FIXED_NOREPLACE, anonymous, read and execute), through code written
// over its entry point (injectCode); then its bytes and registers are put
// back and the agent and its configuration are written into the new
// mapping through /proc/PID/mem (which writes a private read-only mapping,
// as PTRACE_POKETEXT does). An image where any step fails runs without the
// agent: nothing is rewritten in it and every lookup is notified as
// without the option. A Go image (.go.buildinfo) gets no agent: the few
// sites of its runtime that have glibc's pattern may run on a goroutine's
// small stack (§4.3).

// injectCall is "mov $nr,%eax; syscall; int3". The number is in the code,
// not set in rax: at an exec stop the thread is inside execve, whose return
// value the kernel stores in rax after the stop.
func injectCall(nr int) []byte {
	return []byte{0xb8, byte(nr), byte(nr >> 8), 0, 0, 0x0f, 0x05, 0xcc}
}

// injectLen is the length of injectCall's code; an injected call's
// instruction pointer, as seccomp reports it, is its start plus
// injectSyscallEnd.
const (
	injectLen        = 8
	injectSyscallEnd = 7
)

// injector makes a stopped thread run system calls one at a time, through
// code written over the bytes at its instruction pointer (an image's entry
// point at its exec stop, where a forked child resumes at its first stop),
// and then puts bytes and registers back.
type injector struct {
	t     *tracer
	tid   int
	mem   *os.File
	saved unix.PtraceRegs
	orig  []byte
	// sig is a stop signal that arrived meanwhile, to deliver when the
	// thread is resumed; dead says the thread exited (its exit is left
	// for the tracer's loop, t.reaped).
	sig  unix.Signal
	dead bool
}

// newInjector prepares the injection into tid; false if its registers or
// memory cannot be had (then nothing was changed).
func (t *tracer) newInjector(tid int) (*injector, bool) {
	in := &injector{t: t, tid: tid, orig: make([]byte, injectLen)}
	if err := unix.PtraceGetRegs(tid, &in.saved); err != nil {
		return nil, false
	}
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	if _, err := mem.ReadAt(in.orig, int64(in.saved.Rip)); err != nil {
		mem.Close()
		return nil, false
	}
	in.mem = mem
	return in, true
}

// at is the address of the injected code.
func (in *injector) at() uint64 { return in.saved.Rip }

// call runs system call nr with args in the thread and returns its result;
// ok is false if it could not be run (nothing more can be, then).
func (in *injector) call(nr int, args ...uint64) (ret uint64, ok bool) {
	if in.dead {
		return 0, false
	}
	if _, err := in.mem.WriteAt(injectCall(nr), int64(in.at())); err != nil {
		return 0, false
	}
	var a [6]uint64
	copy(a[:], args)
	regs := in.saved
	regs.Orig_rax = ^uint64(0) // not in a system call: nothing to restart
	regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9 = a[0], a[1], a[2], a[3], a[4], a[5]
	if err := unix.PtraceSetRegs(in.tid, &regs); err != nil {
		return 0, false
	}
	ret, sig, alive := in.t.runInjected(in.tid)
	if in.sig == 0 {
		in.sig = sig
	}
	if !alive {
		in.dead = true
		return 0, false
	}
	return ret, true
}

// restore puts the thread's bytes and registers back, whatever happened.
func (in *injector) restore() {
	if !in.dead {
		in.mem.WriteAt(in.orig, int64(in.at()))
		unix.PtraceSetRegs(in.tid, &in.saved)
	}
	in.mem.Close()
}

// mapFD brings the supervisor's descriptor fd into the thread (an
// injected openat that the listener answers by installing it: takeFD),
// maps it shared at addr, and closes it there. It owns fd. It reports
// whether the mapping is there.
func (in *injector) mapFD(fd int, addr, size uint64, prot, flags int) bool {
	f := in.t.fast
	f.expectFD(in.tid, fd, in.at()+injectSyscallEnd)
	atFDCWD := int64(unix.AT_FDCWD)
	got, ok := in.call(unix.SYS_OPENAT, uint64(atFDCWD), 0 /* path */, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	f.unexpectFD(in.tid)
	if !ok || int64(got) < 0 {
		return false
	}
	m, ok := in.call(unix.SYS_MMAP, addr, size, uint64(prot), uint64(unix.MAP_SHARED|flags), got, 0)
	in.call(unix.SYS_CLOSE, got)
	return ok && m == addr
}

// mapShared maps the transaction's shared memory into the new image of
// tgid (docs/fastpath.md §4.1): the tree read-only, a new ring of its own
// read-write. It reports whether both are there.
func (in *injector) mapShared(tgid int) bool {
	f := in.t.fast
	s := f.Shared
	treeSpan, ringSpan := s.sharedSpan()
	fd, err := unix.FcntlInt(uintptr(s.TreeFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	if !in.mapFD(fd, f.treeAddr(), treeSpan, unix.PROT_READ, unix.MAP_FIXED_NOREPLACE) {
		return false
	}
	return in.mapRing(tgid, ringSpan, unix.MAP_FIXED_NOREPLACE)
}

// mapRing maps a new ring for process tgid at the ring's address; flags
// says whether it may replace a mapping there (a forked child's copy of
// its parent's).
func (in *injector) mapRing(tgid int, span uint64, flags int) bool {
	f := in.t.fast
	s := f.Shared
	ring, err := s.Ring(tgid)
	if err != nil {
		in.t.logf("txexec: pid %d: no fast-lookup ring: %v", tgid, err)
		return false
	}
	fd, err := unix.FcntlInt(uintptr(ring), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil && in.mapFD(fd, f.ringAddr(), span, unix.PROT_READ|unix.PROT_WRITE, flags) {
		return true
	}
	if s.Failed != nil {
		s.Failed(tgid)
	}
	return false
}

// injectAgent maps the agent into the new image of tid. It returns the
// signal to deliver when the thread is resumed (a stop signal that arrived
// while the injected call ran), and false when the thread is gone (its
// exit is left for the tracer's loop, t.reaped).
func (t *tracer) injectAgent(tid int) (sig unix.Signal, alive bool) {
	f := t.fast
	if f.Allowed != nil && !f.Allowed(tid) {
		return 0, true
	}
	if t.goImage(tid) {
		return 0, true
	}
	in, ok := t.newInjector(tid)
	if !ok {
		return 0, true
	}
	got, ok := in.call(unix.SYS_MMAP, uint64(f.Base), agentMapSize, unix.PROT_READ|unix.PROT_EXEC,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uint64(0) /* no descriptor */, 0)
	mapped := ok && got == uint64(f.Base)
	if mapped && f.Shared != nil {
		// Without the tree and a ring of its own, the agent of a
		// transaction's image could neither decide nor record: the
		// image gets no configuration (the slow path).
		mapped = in.mapShared(tid)
	}
	in.restore()
	if in.dead {
		return 0, false
	}
	sig = in.sig
	if !mapped {
		return sig, true // taken (EEXIST), or refused: the slow path
	}
	page, err := f.configPage()
	if err != nil {
		return sig, true
	}
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return sig, true
	}
	defer mem.Close()
	// The configuration last: without its magic the rewriter leaves the
	// image alone.
	if _, err := mem.WriteAt(agentBlob, int64(f.Base)); err != nil {
		return sig, true
	}
	mem.WriteAt(page, int64(f.Base+agentConfigOff))
	return sig, true
}

// replaceRing gives a forked child, stopped before its first instruction,
// a ring of its own in place of the copy of its parent's (docs/fastpath.md
// §4.4: the parent may have other credentials); if that fails, its agent
// forwards every call. A child whose image has no agent of a transaction
// is left alone. It returns the signal to deliver when the child is
// resumed, and false when it is gone.
func (t *tracer) replaceRing(child int) (sig unix.Signal, alive bool) {
	f := t.fast
	m := Memory{Tid: child}
	var cfg [8]byte
	if m.Read(f.Base+agentConfigOff, cfg[:]) != nil || binary.LittleEndian.Uint64(cfg[:]) != agentMagic {
		return 0, true
	}
	if m.Read(f.Base+agentConfigOff+agentTreeOff, cfg[:]) != nil || binary.LittleEndian.Uint64(cfg[:]) == 0 {
		return 0, true
	}
	in, ok := t.newInjector(child)
	if !ok {
		f.DisableAgent(child)
		return 0, true
	}
	_, ringSpan := f.Shared.sharedSpan()
	ok = in.mapRing(child, ringSpan, unix.MAP_FIXED)
	in.restore()
	if in.dead {
		return 0, false
	}
	if !ok {
		f.DisableAgent(child)
	}
	return in.sig, true
}

// runInjected resumes tid into the injected code and waits for the int3's
// SIGTRAP; it returns the call's result and a stop signal that arrived
// meanwhile (held back, to be delivered when the thread is resumed for good
// from the SIGTRAP's signal-delivery-stop). ok is false when the thread
// exited.
func (t *tracer) runInjected(tid int) (ret uint64, pending unix.Signal, ok bool) {
	ptrace(unix.PTRACE_CONT, tid, 0, 0)
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(tid, &ws, unix.WALL|waitNoThread, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, 0, false
		}
		if ws.Exited() || ws.Signaled() {
			t.reaped = append(t.reaped, reapedExit{tid, ws})
			return 0, 0, false
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		if int(uint32(ws)>>16) == 0 && sig == unix.SIGTRAP {
			var regs unix.PtraceRegs
			if err := unix.PtraceGetRegs(tid, &regs); err != nil {
				return 0, pending, true
			}
			return regs.Rax, pending, true
		}
		deliver := 0
		if int(uint32(ws)>>16) == 0 {
			switch sig {
			case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
				// A stop would leave the image half-injected in a
				// group-stop: held back, delivered when it is resumed
				// for good (a second one merges with the first, as
				// pending stop signals do).
				if pending == 0 {
					pending = sig
				}
			default:
				// Exec has reset every handler: the signal's default
				// action (or its being ignored) runs no code of the
				// image, so it is delivered now.
				deliver = int(sig)
			}
		}
		ptrace(unix.PTRACE_CONT, tid, 0, uintptr(deliver))
	}
}

// goImage is the package's goImage, remembered for each version of an
// executable (its identity, size and ctime, which any change to it moves):
// reading the ELF section headers of every image costs more than the rest
// of a lookup. Only the tracer's thread calls it.
func (t *tracer) goImage(tid int) bool {
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/exe", tid), &st) != nil {
		return true // unknown: no agent
	}
	key := exeVersion{id: FileID{Dev: st.Dev, Ino: st.Ino}, size: st.Size, ctime: st.Ctim}
	if isGo, ok := t.goImages[key]; ok {
		return isGo
	}
	isGo := goImage(tid)
	if len(t.goImages) >= maxGoImages {
		clear(t.goImages)
	}
	t.goImages[key] = isGo
	return isGo
}

// exeVersion is a version of an executable file, for tracer.goImage.
type exeVersion struct {
	id    FileID
	size  int64
	ctime unix.Timespec
}

// maxGoImages bounds tracer.goImages.
const maxGoImages = 4096

// goImage reports whether the executable of tid is a Go program.
func goImage(tid int) bool {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", tid))
	if err != nil {
		return true // unknown: no agent
	}
	defer f.Close()
	return f.Section(".go.buildinfo") != nil
}
