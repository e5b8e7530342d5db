package interpose

import "encoding/binary"

// injectCode assembles the straight-line x86-64 code an injection writes
// over a stopped thread's instruction pointer (inject.go): system calls in
// order, each number and argument set by the code itself, results kept in
// callee-saved registers, forward jumps that skip what depends on a call
// that failed, and a single int3 at the end, where the tracer reads every
// result with one PTRACE_GETREGS. It knows only the instructions it needs.
type injectCode struct {
	b []byte
	// labels are the offsets of the places jumps go to; jumps the rel32
	// fields still to fill in, with the label each goes to.
	labels map[injectLabel]int
	jumps  []injectJump
}

// injectLabel names a place in the code; injectEnd is the final int3.
type injectLabel int

const injectEnd injectLabel = 0

type injectJump struct {
	at    int // offset of the rel32 field
	label injectLabel
}

// reg is an x86-64 general register, by its encoding.
type reg uint8

const (
	rax reg = 0
	rdx reg = 2
	rbx reg = 3
	rbp reg = 5
	rsi reg = 6
	rdi reg = 7
	r8  reg = 8
	r9  reg = 9
	r10 reg = 10
	r12 reg = 12
	r13 reg = 13
	r14 reg = 14
	r15 reg = 15
)

// syscallArgRegs are where the kernel takes a system call's arguments.
var syscallArgRegs = [6]reg{rdi, rsi, rdx, r10, r8, r9}

// keptReg reports whether r keeps a value across the code's system calls
// and argument loads: the callee-saved registers, which the syscall
// instruction preserves and no argument load writes.
func keptReg(r reg) bool {
	switch r {
	case rbx, rbp, r12, r13, r14, r15:
		return true
	}
	return false
}

// operand is a system call's argument: a constant, or a kept register's
// value (a descriptor an earlier call returned).
type operand struct {
	imm   uint64
	reg   reg
	isReg bool
}

// imm and immInt are constant arguments; inReg a kept register's value.
func imm(v uint64) operand   { return operand{imm: v} }
func immInt(v int64) operand { return operand{imm: uint64(v)} }

func inReg(r reg) operand {
	if !keptReg(r) {
		panic("interpose: an injected call's argument must come from a kept register")
	}
	return operand{reg: r, isReg: true}
}

// rex returns the REX prefix for w (64-bit operand) with r and b the
// registers in ModRM's reg and rm fields, or 0 if none is needed.
func rex(w bool, r, b reg) byte {
	p := byte(0x40)
	if w {
		p |= 8
	}
	if r >= 8 {
		p |= 4
	}
	if b >= 8 {
		p |= 1
	}
	if p == 0x40 {
		return 0
	}
	return p
}

func (c *injectCode) emit(b ...byte) { c.b = append(c.b, b...) }

func (c *injectCode) prefixed(w bool, r, b reg, op ...byte) {
	if p := rex(w, r, b); p != 0 {
		c.emit(p)
	}
	c.emit(op...)
}

// movImm sets dst to v, in the shortest of: mov $imm32,%r32 (zero-extended),
// mov $simm32,%r64 (sign-extended), movabs $imm64,%r64.
func (c *injectCode) movImm(dst reg, v uint64) {
	switch {
	case v <= 0xffffffff:
		c.prefixed(false, 0, dst, 0xb8+byte(dst&7))
		c.b = binary.LittleEndian.AppendUint32(c.b, uint32(v))
	case int64(v) == int64(int32(v)):
		c.prefixed(true, 0, dst, 0xc7, 0xc0|byte(dst&7))
		c.b = binary.LittleEndian.AppendUint32(c.b, uint32(v))
	default:
		c.prefixed(true, 0, dst, 0xb8+byte(dst&7))
		c.b = binary.LittleEndian.AppendUint64(c.b, v)
	}
}

// mov copies src to dst: all 64 bits, or (low32) the low 32 bits,
// zero-extended.
func (c *injectCode) mov(dst, src reg, low32 bool) {
	c.prefixed(!low32, src, dst, 0x89, 0xc0|byte(src&7)<<3|byte(dst&7))
}

// syscall makes system call nr with args; the number is set by the code,
// never left in rax by the tracer (at an exec stop the kernel stores
// execve's return value in rax after the stop). It returns the offset of
// the end of its syscall instruction: the instruction pointer seccomp
// reports for the call.
func (c *injectCode) syscall(nr int, args ...operand) int {
	c.movImm(rax, uint64(nr))
	for i, a := range args {
		if a.isReg {
			c.mov(syscallArgRegs[i], a.reg, false)
		} else {
			c.movImm(syscallArgRegs[i], a.imm)
		}
	}
	c.emit(0x0f, 0x05) // syscall
	return len(c.b)
}

// keep copies the last call's result to dst.
func (c *injectCode) keep(dst reg) {
	if !keptReg(dst) {
		panic("interpose: an injected call's result must be kept in a kept register")
	}
	c.mov(dst, rax, false)
}

// keepHalves copies the last call's result's low 32 bits to lo and its high
// 32 bits to hi (two descriptors in one value: installFDs).
func (c *injectCode) keepHalves(lo, hi reg) {
	c.keep(hi)
	c.mov(lo, rax, true)
	c.prefixed(true, 0, hi, 0xc1, 0xe8|byte(hi&7), 32) // shr $32,%hi
}

// jumpUnlessMapped jumps to l unless the last call, an mmap, returned the
// address it was asked for (its first argument, still in rdi).
func (c *injectCode) jumpUnlessMapped(l injectLabel) {
	c.emit(0x48, 0x39, 0xf8) // cmp %rdi,%rax
	c.jump(0x85, l)          // jne
}

// jumpIfFailed jumps to l if the last call failed (returned -errno).
func (c *injectCode) jumpIfFailed(l injectLabel) {
	c.emit(0x48, 0x85, 0xc0) // test %rax,%rax
	c.jump(0x88, l)          // js
}

// jump emits the conditional jump 0f cc with a rel32 to l, filled in by
// finish.
func (c *injectCode) jump(cc byte, l injectLabel) {
	c.emit(0x0f, cc)
	c.jumps = append(c.jumps, injectJump{at: len(c.b), label: l})
	c.emit(0, 0, 0, 0)
}

// label places l here; jumps may only go forward to it.
func (c *injectCode) label(l injectLabel) {
	if c.labels == nil {
		c.labels = map[injectLabel]int{}
	}
	c.labels[l] = len(c.b)
}

// finish ends the code with int3 (the label injectEnd) and returns it.
func (c *injectCode) finish() []byte {
	c.label(injectEnd)
	c.emit(0xcc)
	for _, j := range c.jumps {
		to, ok := c.labels[j.label]
		if !ok || to < j.at+4 {
			panic("interpose: an injected jump to a missing or earlier label")
		}
		binary.LittleEndian.PutUint32(c.b[j.at:], uint32(to-(j.at+4)))
	}
	return c.b
}
