package interpose

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
)

// Rewriting a call site (docs/fastpath.md §4.4). While the supervisor
// serves the first notified call of a fast-lookup site, the caller waits
// in the call; if the 7 bytes before its instruction pointer are glibc's
// "mov $nr,%eax; syscall" for the number being served, the process has the
// agent, and no other thread can be executing them (the process has one
// thread and shares its address space with no other process), the site
// becomes "jmp *slot" (ff 24 25 disp32), the slot pointing at a new
// trampoline in the agent's range:
//
//	lea -0x80(%rsp),%rsp     skip the red zone
//	mov $nr,%eax
//	movabs $agent_entry,%r11
//	call *%r11
//	lea 0x80(%rsp),%rsp
//	jmp *0(%rip)             back after the site
//	.quad ip
//
// Later calls of the site reach the agent as a function call. The
// trampolines, their slots and the rewritten site are written through
// /proc/PID/mem; which slots are taken is read from the process itself, so
// that what fork copies and exec drops needs no bookkeeping here.

// siteLen is the length of "mov $nr,%eax; syscall".
const siteLen = 7

// rewriteSite rewrites the call site of c if it can; any failure leaves
// the site as it was (its calls stay on the slow path).
func (l *listener) rewriteSite(c *Call) {
	base := uint64(l.fast.Base)
	ip := c.IP
	if ip < siteLen || (ip >= base && ip < base+agentMapSize) {
		return // a forwarded call, or one the agent made
	}
	if !l.tr.rewritable(c.Tid) {
		return
	}
	// The code and the agent's pages are read with a Memory of its own:
	// they are not the call's arguments (the call may still be answered
	// with CONTINUE).
	m := Memory{Tid: c.Tid}
	var site [siteLen]byte
	if m.Read(uintptr(ip-siteLen), site[:]) != nil {
		return
	}
	if site[0] != 0xb8 || binary.LittleEndian.Uint32(site[1:5]) != uint32(c.Nr) || site[5] != 0x0f || site[6] != 0x05 {
		return // not glibc's pattern
	}
	var magic [8]byte
	if m.Read(uintptr(base+agentConfigOff), magic[:]) != nil || binary.LittleEndian.Uint64(magic[:]) != agentMagic ||
		!l.soleThread(c.Tid) {
		// No agent in this image, or other threads could be running
		// the site: not until the next image.
		l.tr.markUnrewritable(c.Tid)
		return
	}
	slots := make([]byte, 8*trampolineN)
	if m.Read(uintptr(base+slotsOff), slots) != nil {
		return
	}
	i := 0
	for i < trampolineN && binary.LittleEndian.Uint64(slots[8*i:]) != 0 {
		i++
	}
	if i == trampolineN {
		return // every trampoline taken
	}
	tramp := base + trampolinesOff + uint64(i)*trampolineSize
	slot := base + slotsOff + uint64(i)*8
	code := trampoline(uint32(c.Nr), base+agentEntryOff, ip)
	var slotVal [8]byte
	binary.LittleEndian.PutUint64(slotVal[:], tramp)
	jmp := []byte{0xff, 0x24, 0x25, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(jmp[3:], uint32(slot))

	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", c.Tid), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer mem.Close()
	// Still the caller, waiting in this call, and not a recycled pid.
	if c.Valid() != nil {
		return
	}
	if _, err := mem.WriteAt(code, int64(tramp)); err != nil {
		return
	}
	if _, err := mem.WriteAt(slotVal[:], int64(slot)); err != nil {
		return
	}
	if _, err := mem.WriteAt(jmp, int64(ip-siteLen)); err != nil {
		l.cfg.Logf("txexec: pid %d: rewrite the call site at %#x: %v", c.Tid, ip-siteLen, err)
	}
	l.rewrites.Add(1)
}

// trampoline is the code of one site's trampoline.
func trampoline(nr uint32, entry, ret uint64) []byte {
	b := []byte{0x48, 0x8d, 0x64, 0x24, 0x80} // lea -0x80(%rsp),%rsp
	b = append(b, 0xb8)                       // mov $nr,%eax
	b = binary.LittleEndian.AppendUint32(b, nr)
	b = append(b, 0x49, 0xbb) // movabs $entry,%r11
	b = binary.LittleEndian.AppendUint64(b, entry)
	b = append(b, 0x41, 0xff, 0xd3)                               // call *%r11
	b = append(b, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00) // lea 0x80(%rsp),%rsp
	b = append(b, 0xff, 0x25, 0x00, 0x00, 0x00, 0x00)             // jmp *0(%rip)
	return binary.LittleEndian.AppendUint64(b, ret)
}

// soleThread reports whether thread tid is its process's only thread and
// no other process runs in its address space.
func (l *listener) soleThread(tid int) bool {
	created := l.tr.threads.Load() // before /proc: a later thread forces a new look
	if !l.tr.soleSince(tid, created) {
		st, err := procfs.Status(tid)
		if err != nil {
			return false
		}
		tgid, err1 := st.Int("Tgid")
		n, err2 := st.Int("Threads")
		if err1 != nil || err2 != nil || tgid != tid || n != 1 {
			return false
		}
		l.tr.noteSole(tid, created)
	}
	return !l.tr.sharesVM(tid)
}
