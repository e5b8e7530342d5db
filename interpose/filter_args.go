package interpose

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Rules that depend on an argument (an ioctl request, a clone flag) are
// compiled by txexec itself into a prologue that runs before libseccomp's
// program, because libseccomp 2.5.4 lets a rule without conditions for a
// number subsume every conditioned rule of the same number: "notify ioctl
// FS_IOC_SETFLAGS, allow every other ioctl" would compile to "allow
// ioctl". The prologue is small and checked instruction by instruction by
// the tests (TestFilterArgConditions), which run it in a BPF interpreter.
//
// Layout, for each conditioned number N with cases C1..Ck and default D:
//
//	ld arch; jeq X86_64 ? next : ja end
//	ld nr
//	jeq N ? next : ja <next number>
//	  (C1) ld args[a].lo; and mask.lo; jeq value.lo ? next : <C2>
//	       ld args[a].hi; and mask.hi; jeq value.hi ? next : <C2>
//	       ret C1's action
//	  (a half whose mask is 0 is not compared; and with 0xffffffff is
//	  left out)
//	  ...
//	  ret D
//	...
//	end: libseccomp's program (which decides every other call, and every
//	     call of another architecture)
//
// seccomp_data is { int nr; u32 arch; u64 ip; u64 args[6]; }, little-endian.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataIP   = 8
	seccompDataArgs = 16
)

// argPrologue splits rules into the prologue for the numbers that have
// conditioned rules and the rules libseccomp compiles (every other number).
func argPrologue(rules []Rule) ([]unix.SockFilter, []Rule, error) {
	type numberRules struct {
		cases []Rule
		dflt  *Rule
	}
	var order []int
	byNr := map[int]*numberRules{}
	for i := range rules {
		r := &rules[i]
		if r.If == nil {
			continue
		}
		for c := r.If; c != nil; c = c.And {
			if (c.Arg < 0 || c.Arg > 5) && c.Arg != ArgInstructionPointer {
				return nil, nil, fmt.Errorf("filter rule for syscall %d: no argument %d", r.Nr, c.Arg)
			}
			if c.Value&^c.Mask != 0 {
				return nil, nil, fmt.Errorf("filter rule for syscall %d: value %#x has bits outside mask %#x, so it never matches", r.Nr, c.Value, c.Mask)
			}
		}
		n := byNr[r.Nr]
		if n == nil {
			n = &numberRules{}
			byNr[r.Nr] = n
			order = append(order, r.Nr)
		}
		n.cases = append(n.cases, *r)
	}
	var plain []Rule
	for i := range rules {
		r := &rules[i]
		n := byNr[r.Nr]
		switch {
		case n == nil:
			plain = append(plain, *r)
		case r.If == nil && n.dflt != nil:
			return nil, nil, fmt.Errorf("filter rule for syscall %d: two rules without a condition", r.Nr)
		case r.If == nil:
			n.dflt = r
		}
	}
	if len(order) == 0 {
		return nil, plain, nil
	}

	var p []unix.SockFilter
	stmt := func(code uint16, k uint32) { p = append(p, unix.SockFilter{Code: code, K: k}) }
	jump := func(code uint16, k uint32, jt, jf uint8) {
		p = append(p, unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf})
	}
	// Forward jumps to the end of the prologue are patched once its
	// length is known: their K is set to the distance.
	var toEnd []int
	jumpToEnd := func() {
		toEnd = append(toEnd, len(p))
		stmt(unix.BPF_JMP|unix.BPF_JA, 0)
	}

	stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArch)
	jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AUDIT_ARCH_X86_64, 1, 0)
	jumpToEnd()
	stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataNr)
	for _, nr := range order {
		n := byNr[nr]
		if n.dflt == nil {
			return nil, nil, fmt.Errorf("filter rule for syscall %d: conditioned rules need a rule without a condition for the other calls", nr)
		}
		// jeq nr ? body : ja <next number>; the ja's offset is patched
		// after the body.
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(nr), 1, 0)
		skip := len(p)
		stmt(unix.BPF_JMP|unix.BPF_JA, 0)
		for _, c := range n.cases {
			p = append(p, caseMatch(*c.If, filterReturn(c))...)
		}
		stmt(unix.BPF_RET|unix.BPF_K, filterReturn(*n.dflt))
		// A still holds nr where the ja lands: the body always returns.
		p[skip].K = uint32(len(p) - skip - 1)
	}
	for _, i := range toEnd {
		p[i].K = uint32(len(p) - i - 1)
	}
	return p, plain, nil
}

// caseMatch is one case of a conditioned number: it returns ret when the
// argument matches (and each of its And conditions), and otherwise falls
// through to the next case (which loads what it compares itself).
func caseMatch(c ArgCond, ret uint32) []unix.SockFilter {
	var p []unix.SockFilter
	// Each half that is compared is ld; and; jeq ? next : <miss>, where
	// miss is the instruction after the ret, patched at the end.
	var misses []int
	for cond := &c; cond != nil; cond = cond.And {
		off := uint32(seccompDataArgs + 8*cond.Arg)
		if cond.Arg == ArgInstructionPointer {
			off = seccompDataIP
		}
		halves := []struct {
			off         uint32
			mask, value uint32
		}{
			{off, uint32(cond.Mask), uint32(cond.Value)},                 // low word
			{off + 4, uint32(cond.Mask >> 32), uint32(cond.Value >> 32)}, // high word
		}
		for _, h := range halves {
			if h.mask == 0 {
				continue
			}
			p = append(p, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: h.off})
			if h.mask != 0xffffffff {
				p = append(p, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: h.mask})
			}
			misses = append(misses, len(p))
			p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: h.value})
		}
	}
	p = append(p, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: ret})
	miss := len(p)
	for _, i := range misses {
		p[i].Jt = 0
		p[i].Jf = uint8(miss - i - 1)
	}
	return p
}

// filterReturn is the seccomp return value of a rule's action.
func filterReturn(r Rule) uint32 {
	switch r.Action {
	case ActAllow:
		return unix.SECCOMP_RET_ALLOW
	case ActNotify:
		return unix.SECCOMP_RET_USER_NOTIF
	case ActTrace:
		return unix.SECCOMP_RET_TRACE
	}
	return unix.SECCOMP_RET_ERRNO | uint32(r.Errno&unix.SECCOMP_RET_DATA)
}
