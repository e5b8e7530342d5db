package interpose

import (
	"debug/elf"
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

// injectCode is "mov $SYS_mmap,%eax; syscall; int3". The number is in the
// code, not set in rax: the thread is stopped inside execve, whose return
// value the kernel stores in rax after the stop.
var injectCode = []byte{0xb8, unix.SYS_MMAP, 0, 0, 0, 0x0f, 0x05, 0xcc}

// injectAgent maps the agent into the new image of tid. It returns the
// signal to deliver when the thread is resumed (a stop signal that arrived
// while the injected call ran), and false when the thread is gone (its
// exit is left for the tracer's loop, t.reaped).
func (t *tracer) injectAgent(tid int) (sig unix.Signal, alive bool) {
	f := t.fast
	if f.Allowed != nil && !f.Allowed(tid) {
		return 0, true
	}
	if goImage(tid) {
		return 0, true
	}
	var saved unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &saved); err != nil {
		return 0, true
	}
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, true
	}
	defer mem.Close()
	entry := int64(saved.Rip)
	orig := make([]byte, len(injectCode))
	if _, err := mem.ReadAt(orig, entry); err != nil {
		return 0, true
	}
	if _, err := mem.WriteAt(injectCode, entry); err != nil {
		return 0, true
	}
	regs := saved
	regs.Orig_rax = ^uint64(0) // not in a system call: nothing to restart
	regs.Rdi = uint64(f.Base)
	regs.Rsi = agentMapSize
	regs.Rdx = unix.PROT_READ | unix.PROT_EXEC
	regs.R10 = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_FIXED_NOREPLACE
	regs.R8 = ^uint64(0) // no descriptor
	regs.R9 = 0
	var got uint64
	if err := unix.PtraceSetRegs(tid, &regs); err == nil {
		var ok bool
		got, sig, ok = t.runInjected(tid)
		if !ok {
			return 0, false
		}
	}
	// Put the image back as the kernel made it, whatever happened.
	mem.WriteAt(orig, entry)
	unix.PtraceSetRegs(tid, &saved)
	if got != uint64(f.Base) {
		return sig, true // taken (EEXIST), or refused: the slow path
	}
	page, err := f.configPage()
	if err != nil {
		return sig, true
	}
	// The configuration last: without its magic the rewriter leaves the
	// image alone.
	if _, err := mem.WriteAt(agentBlob, int64(f.Base)); err != nil {
		return sig, true
	}
	mem.WriteAt(page, int64(f.Base+agentConfigOff))
	return sig, true
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

// goImage reports whether the executable of tid is a Go program.
func goImage(tid int) bool {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", tid))
	if err != nil {
		return true // unknown: no agent
	}
	defer f.Close()
	return f.Section(".go.buildinfo") != nil
}
