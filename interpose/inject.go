package interpose

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// The exec stop's injection of the fast-lookup agent (docs/fastpath.md
// §4.2): the thread stopped at PTRACE_EVENT_EXEC, before the new image's
// first instruction, is made to run one code sequence written over its
// entry point (agentCode), in one ptrace round trip: the mmap of the
// agent's range (MAP_FIXED_NOREPLACE, anonymous, read and execute) and, in
// a transaction, an openat that the listener answers by installing the
// tree's and the process's new ring's descriptors (takeFD), their mmaps and
// their closes. Then its bytes and registers are put back and the agent and
// its configuration are written into the new mapping through
// /proc/PID/mem (which writes a private read-only mapping, as
// PTRACE_POKETEXT does). An image where any step fails runs without the
// agent: nothing is rewritten in it and every lookup is notified as
// without the option. A Go image (.go.buildinfo) gets no agent: the few
// sites of its runtime that have glibc's pattern may run on a goroutine's
// small stack (§4.3). A forked child gets a ring of its own the same way,
// at its first stop (ringCode).

// notRun is what a result register holds when the code skipped its call
// (set before the code runs): no address, and negative.
const notRun = ^uint64(0)

// Where agentCode and ringCode keep their results.
const (
	agentResult = rbx // the agent's mmap
	openResult  = rbp // the openat: the descriptors' numbers, or -errno
)

// fdRegs hold the descriptors the openat brought in, mapResults the
// results of their mmaps, in the order of mapShared's mappings.
var (
	fdRegs     = [maxInstalledFDs]reg{r12, r13}
	mapResults = [maxInstalledFDs]reg{r14, r15}
)

// sharedMapping is one memfd the injected code maps shared.
type sharedMapping struct {
	addr, size  uint64
	prot, flags int
}

// mapShared appends to c an openat that the listener answers by
// installing one descriptor per mapping (at most maxInstalledFDs); if it
// succeeded, each mmap in order, each only if the one before mapped where
// asked; then the close of every descriptor, whatever the mmaps did, so
// that none stays open in the program. It returns the offset of the
// openat's end (the instruction pointer seccomp reports for it).
func (c *injectCode) mapShared(maps []sharedMapping) int {
	const closeFDs injectLabel = 1
	atFDCWD := int64(unix.AT_FDCWD)
	openEnd := c.syscall(unix.SYS_OPENAT, immInt(atFDCWD), imm(0) /* path */, imm(unix.O_RDONLY|unix.O_CLOEXEC), imm(0))
	c.keep(openResult)
	c.jumpIfFailed(injectEnd)
	if len(maps) == 1 {
		c.mov(fdRegs[0], rax, true)
	} else {
		c.keepHalves(fdRegs[0], fdRegs[1])
	}
	for i, m := range maps {
		c.syscall(unix.SYS_MMAP, imm(m.addr), imm(m.size), imm(uint64(m.prot)), imm(uint64(unix.MAP_SHARED|m.flags)), inReg(fdRegs[i]), imm(0))
		c.keep(mapResults[i])
		if i < len(maps)-1 {
			c.jumpUnlessMapped(closeFDs)
		}
	}
	c.label(closeFDs)
	for i := range maps {
		c.syscall(unix.SYS_CLOSE, inReg(fdRegs[i]))
	}
	return openEnd
}

// agentCode is the exec stop's code: the agent's mmap (its result in
// agentResult) and, with shared memory, if the agent mapped, mapShared of
// the tree and the ring. openEnd is the offset of the openat's end, 0
// without shared memory.
func (f *FastLookups) agentCode() (code []byte, openEnd int) {
	var c injectCode
	c.syscall(unix.SYS_MMAP, imm(uint64(f.Base)), imm(agentMapSize), imm(unix.PROT_READ|unix.PROT_EXEC),
		imm(unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE), immInt(-1) /* no descriptor */, imm(0))
	c.keep(agentResult)
	if f.Shared != nil {
		// Without the tree and a ring of its own, the agent of a
		// transaction's image could neither decide nor record.
		c.jumpUnlessMapped(injectEnd)
		openEnd = c.mapShared(f.sharedMappings(unix.MAP_FIXED_NOREPLACE))
	}
	return c.finish(), openEnd
}

// ringCode is a forked child's code: mapShared of a new ring over its copy
// of its parent's (MAP_FIXED).
func (f *FastLookups) ringCode() (code []byte, openEnd int) {
	var c injectCode
	ring := f.sharedMappings(unix.MAP_FIXED)[1:] // the ring alone
	openEnd = c.mapShared(ring)
	return c.finish(), openEnd
}

// sharedMappings are the tree, read-only, and the ring, read-write, at
// their addresses; ringFlags says whether the ring may replace a mapping
// there.
func (f *FastLookups) sharedMappings(ringFlags int) []sharedMapping {
	treeSpan, ringSpan := f.Shared.sharedSpan()
	return []sharedMapping{
		{addr: f.treeAddr(), size: treeSpan, prot: unix.PROT_READ, flags: unix.MAP_FIXED_NOREPLACE},
		{addr: f.ringAddr(), size: ringSpan, prot: unix.PROT_READ | unix.PROT_WRITE, flags: ringFlags},
	}
}

// regValue is register r's value in regs.
func regValue(regs *unix.PtraceRegs, r reg) uint64 {
	switch r {
	case rbx:
		return regs.Rbx
	case rbp:
		return regs.Rbp
	case r12:
		return regs.R12
	case r13:
		return regs.R13
	case r14:
		return regs.R14
	case r15:
		return regs.R15
	}
	panic("interpose: not a register injected code keeps results in")
}

// injector makes a stopped thread run a code sequence (injectCode) written
// over the bytes at its instruction pointer (an image's entry point at its
// exec stop, where a forked child resumes at its first stop), and then
// puts bytes and registers back.
type injector struct {
	t     *tracer
	tid   int
	mem   int // /proc/TID/mem, a plain descriptor (openMem)
	saved unix.PtraceRegs
	// orig are the bytes the code was written over at origAt, nil
	// before.
	orig   []byte
	origAt uint64
	// sig is a stop signal that arrived meanwhile, to deliver when the
	// thread is resumed; dead says the thread exited (its exit is left
	// for the tracer's loop, t.reaped).
	sig  unix.Signal
	dead bool
}

// newInjector prepares the injection into tid; false if its registers or
// memory cannot be had (then nothing was changed).
func (t *tracer) newInjector(tid int) (*injector, bool) {
	in := &injector{t: t, tid: tid}
	if err := unix.PtraceGetRegs(tid, &in.saved); err != nil {
		return nil, false
	}
	mem, err := openMem(tid)
	if err != nil {
		return nil, false
	}
	in.mem = mem
	return in, true
}

// codeAt is where the injector writes code of n bytes (at most a page):
// at the thread's instruction pointer, or, if the code would run past the
// end of that page, at the page's start. The page holds the instruction the
// thread runs next, so it is executable, and all of it lies in one mapping;
// the next page may be another mapping (a read-only segment) or none, and
// code running into it would fault, killing the program.
func codeAt(ip uint64, n int) uint64 {
	page := uint64(pageSize)
	if ip%page+uint64(n) > page {
		return ip &^ (page - 1)
	}
	return ip
}

// run runs code in the thread, once, and returns the registers at its
// int3; ok is false if it could not be run to there (if the thread is
// gone, in.dead says so). at is where it runs, codeAt(saved.Rip).
func (in *injector) run(code []byte, at uint64) (regs unix.PtraceRegs, ok bool) {
	if len(code) > int(pageSize) {
		return regs, false
	}
	orig := make([]byte, len(code))
	if err := preadFull(in.mem, orig, at); err != nil {
		return regs, false
	}
	in.orig, in.origAt = orig, at
	if err := pwriteAll(in.mem, code, at); err != nil {
		return regs, false
	}
	regs = in.saved
	regs.Rip = at
	regs.Orig_rax = ^uint64(0) // not in a system call: nothing to restart
	regs.Rbx, regs.Rbp, regs.R12, regs.R13, regs.R14, regs.R15 = notRun, notRun, notRun, notRun, notRun, notRun
	if err := unix.PtraceSetRegs(in.tid, &regs); err != nil {
		return regs, false
	}
	regs, sig, alive, ok := in.t.runInjected(in.tid)
	in.sig = sig
	if !alive {
		in.dead = true
	}
	return regs, ok
}

// restore puts the thread's bytes and registers back, whatever happened.
func (in *injector) restore() {
	if !in.dead {
		if in.orig != nil {
			pwriteAll(in.mem, in.orig, in.origAt)
		}
		unix.PtraceSetRegs(in.tid, &in.saved)
	}
}

// close closes the thread's memory, after restore and what is written
// into the new mappings.
func (in *injector) close() { unix.Close(in.mem) }

// sharedFDs returns the descriptors a new image of tgid maps (agentCode):
// the tree's and a new ring's, the caller's. ringMade says whether Ring
// made a ring for tgid (which Failed must forget if it is not mapped).
func (f *FastLookups) sharedFDs(tgid int, logf func(string, ...any)) (fds []int, ringMade bool) {
	s := f.Shared
	tree, err := unix.FcntlInt(uintptr(s.TreeFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	ring, ringMade := f.ringFD(tgid, logf)
	if ring < 0 {
		unix.Close(tree)
		return nil, ringMade
	}
	return []int{tree, ring}, true
}

// ringFD makes a new ring for process tgid and returns a descriptor of it,
// the caller's, or -1; made says whether Ring made one.
func (f *FastLookups) ringFD(tgid int, logf func(string, ...any)) (fd int, made bool) {
	ring, err := f.Shared.Ring(tgid)
	if err != nil {
		logf("txexec: pid %d: no fast-lookup ring: %v", tgid, err)
		return -1, false
	}
	fd, err = unix.FcntlInt(uintptr(ring), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, true
	}
	return fd, true
}

// runShared runs code, whose openat ends at openEnd, with fds for the
// listener to install there (takeFD); the descriptors are closed on the
// supervisor's side whatever happens.
func (in *injector) runShared(code []byte, openEnd int, fds []int) (unix.PtraceRegs, bool) {
	f := in.t.fast
	at := codeAt(in.saved.Rip, len(code))
	f.expectFD(in.tid, fds, at+uint64(openEnd))
	regs, ok := in.run(code, at)
	f.unexpectFD(in.tid)
	return regs, ok
}

// injectAgent maps the agent into the new image of tid, whose executable
// is exe (statExe; nil if unknown). It returns the signal to deliver when
// the thread is resumed (a stop signal that arrived while the injected
// code ran), and false when the thread is gone (its exit is left for the
// tracer's loop, t.reaped).
func (t *tracer) injectAgent(tid int, exe *unix.Stat_t) (sig unix.Signal, alive bool) {
	f := t.fast
	if f.Allowed != nil && !f.Allowed(tid) {
		return 0, true
	}
	if t.goImage(tid, exe) {
		return 0, true
	}
	in, ok := t.newInjector(tid)
	if !ok {
		return 0, true
	}
	code, openEnd := f.inject.agent, f.inject.agentOpen
	var regs unix.PtraceRegs
	mapped := false
	if f.Shared == nil {
		regs, ok = in.run(code, codeAt(in.saved.Rip, len(code)))
		mapped = ok && regValue(&regs, agentResult) == uint64(f.Base)
	} else {
		fds, ringMade := f.sharedFDs(tid, t.logf)
		if fds != nil {
			regs, ok = in.runShared(code, openEnd, fds)
			maps := f.sharedMappings(unix.MAP_FIXED_NOREPLACE)
			mapped = ok && regValue(&regs, agentResult) == uint64(f.Base) &&
				regValue(&regs, mapResults[0]) == maps[0].addr && regValue(&regs, mapResults[1]) == maps[1].addr
		}
		if !mapped && ringMade && f.Shared.Failed != nil {
			f.Shared.Failed(tid)
		}
	}
	defer in.close()
	in.restore()
	if in.dead {
		return 0, false
	}
	sig = in.sig
	if !mapped {
		// Taken (EEXIST), refused, or no descriptors: the slow path.
		return sig, true
	}
	// The configuration last: without its magic the rewriter leaves the
	// image alone.
	if err := pwriteAll(in.mem, agentBlob, uint64(f.Base)); err != nil {
		return sig, true
	}
	page := f.inject.page
	if f.Cwd != nil {
		page = f.configPageWithCwd(f.Cwd(tid))
	}
	if pwriteAll(in.mem, page, uint64(f.Base+agentConfigOff)) == nil {
		t.rewriteKnown(tid, in.mem)
	}
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
	if magic, tree, ok := f.configWords(child); !ok || magic != agentMagic || tree == 0 {
		return 0, true
	}
	in, ok := t.newInjector(child)
	if !ok {
		f.DisableAgent(child)
		return 0, true
	}
	mapped := false
	fd, made := f.ringFD(child, t.logf)
	if fd >= 0 {
		regs, ok := in.runShared(f.inject.ring, f.inject.ringOpen, []int{fd})
		mapped = ok && regValue(&regs, mapResults[0]) == f.ringAddr()
	}
	if !mapped && made && f.Shared.Failed != nil {
		f.Shared.Failed(child)
	}
	defer in.close()
	in.restore()
	if in.dead {
		return 0, false
	}
	if !mapped {
		f.DisableAgent(child)
	}
	return in.sig, true
}

// configWords reads the magic and the tree's address of the agent's
// configuration in the address space of tid (agent_config.magic and
// .tree), in one process_vm_readv of two ranges; ok is false when either
// cannot be read.
func (f *FastLookups) configWords(tid int) (magic, tree uint64, ok bool) {
	var m, tr [8]byte
	local := []unix.Iovec{{Base: &m[0], Len: 8}, {Base: &tr[0], Len: 8}}
	remote := []unix.RemoteIovec{
		{Base: f.Base + agentConfigOff, Len: 8},
		{Base: f.Base + agentConfigOff + agentTreeOff, Len: 8},
	}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == unix.ENOSYS || err == unix.EPERM {
		// Memory's fallback, /proc/PID/mem.
		mem := Memory{Tid: tid}
		if mem.Read(remote[0].Base, m[:]) != nil || mem.Read(remote[1].Base, tr[:]) != nil {
			return 0, 0, false
		}
	} else if err != nil || n != 16 {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(m[:]), binary.LittleEndian.Uint64(tr[:]), true
}

// runInjected resumes tid into the injected code and waits for the int3's
// SIGTRAP; it returns the registers there and a stop signal that arrived
// meanwhile (held back, to be delivered when the thread is resumed for good
// from the SIGTRAP's signal-delivery-stop). alive is false when the thread
// exited, ok false when the registers could not be had.
func (t *tracer) runInjected(tid int) (regs unix.PtraceRegs, pending unix.Signal, alive, ok bool) {
	ptrace(unix.PTRACE_CONT, tid, 0, 0)
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(tid, &ws, unix.WALL|waitNoThread, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return regs, 0, false, false
		}
		if ws.Exited() || ws.Signaled() {
			t.reaped = append(t.reaped, reapedExit{tid, ws})
			return regs, 0, false, false
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		if int(uint32(ws)>>16) == 0 && sig == unix.SIGTRAP {
			if err := unix.PtraceGetRegs(tid, &regs); err != nil {
				return regs, pending, true, false
			}
			return regs, pending, true, true
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
// of a lookup. exe is the executable of tid (statExe), nil if unknown.
// Only the tracer's thread calls it.
func (t *tracer) goImage(tid int, exe *unix.Stat_t) bool {
	if exe == nil {
		return true // unknown: no agent
	}
	key := exeVersion{id: FileID{Dev: exe.Dev, Ino: exe.Ino}, size: exe.Size, ctime: exe.Ctim}
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

// statExe returns the attributes of the executable of process tid
// (/proc/TID/exe), or nil if they cannot be had.
func statExe(tid int) *unix.Stat_t {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(tid)+"/exe", &st) != nil {
		return nil
	}
	return &st
}

// goImage reports whether the executable of tid is a Go program.
func goImage(tid int) bool {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", tid))
	if err != nil {
		return true // unknown: no agent
	}
	defer f.Close()
	return f.Section(".go.buildinfo") != nil
}
