package interpose

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTrampoline: the trampoline's bytes, as the design lays them out.
func TestTrampoline(t *testing.T) {
	b := trampoline(site{ip: 0x7f0011223344, nr: 262}, 0x7ff02000)
	assert.Len(t, b, 45)
	assert.LessOrEqual(t, len(b), trampolineSize)
	assert.Equal(t, []byte{0x48, 0x8d, 0x64, 0x24, 0x80, 0xb8, 6, 1, 0, 0}, b[:10])
	assert.Equal(t, []byte{0x44, 0x33, 0x22, 0x11, 0x00, 0x7f, 0, 0}, b[37:])
}

// TestTrampolineReplay: a site whose covered bytes are "mov $-100,%edi;
// syscall" gets a trampoline that runs the mov, calls the agent when eax
// holds the number and makes the call itself otherwise.
func TestTrampolineReplay(t *testing.T) {
	replay := []byte{0xbf, 0x9c, 0xff, 0xff, 0xff}
	b := trampoline(site{ip: 0x7f0011223344, nr: 257, replay: replay}, 0x7ff02000)
	assert.Len(t, b, 56)
	assert.LessOrEqual(t, len(b), trampolineSize)
	assert.Equal(t, replay, b[:5])
	assert.Equal(t, []byte{0x3d, 1, 1, 0, 0, 0x75, 28}, b[5:12], "cmp $257,%eax; jne to the syscall")
	assert.Equal(t, []byte{0x48, 0x8d, 0x64, 0x24, 0x80, 0x49, 0xbb}, b[12:19], "the agent's call, without mov $nr,%eax")
	assert.Equal(t, []byte{0x0f, 0x05}, b[12+28:12+30], "jne's target is the syscall")
	assert.Equal(t, []byte{0xeb, 2}, b[38:40], "the agent's return skips the syscall")
	assert.Equal(t, []byte{0xff, 0x25, 0, 0, 0, 0}, b[42:48])
	assert.Equal(t, []byte{0x44, 0x33, 0x22, 0x11, 0x00, 0x7f, 0, 0}, b[48:])
}

// TestMatchSite: glibc 2.36's two patterns, as ld.so and libc have them,
// and code that only looks like them.
func TestMatchSite(t *testing.T) {
	span := func(b ...byte) (c [siteSpan]byte) {
		copy(c[siteSpan-len(b):], b)
		return c
	}
	// newfstatat: mov $0x106,%eax; syscall
	replay, ok := matchSite(span(0xb8, 0x06, 0x01, 0, 0, 0x0f, 0x05), 262)
	assert.True(t, ok)
	assert.Nil(t, replay)
	_, ok = matchSite(span(0xb8, 0x06, 0x01, 0, 0, 0x0f, 0x05), 257)
	assert.False(t, ok, "another number")

	// __open_nocancel: mov $0x101,%eax; mov %rdi,%rsi; mov $-100,%edi; syscall
	open := []byte{0xb8, 0x01, 0x01, 0, 0, 0x48, 0x89, 0xfe, 0xbf, 0x9c, 0xff, 0xff, 0xff, 0x0f, 0x05}
	replay, ok = matchSite(span(open...), 257)
	assert.True(t, ok)
	assert.Equal(t, []byte{0xbf, 0x9c, 0xff, 0xff, 0xff}, replay)
	_, ok = matchSite(span(open...), 2)
	assert.False(t, ok, "another number")

	for name, mutate := range map[string]func(b []byte){
		"no syscall":          func(b []byte) { b[14] = 0x34 }, // sysenter
		"mov to eax":          func(b []byte) { b[8] = 0xb8 },
		"mov to esp":          func(b []byte) { b[8] = 0xbc },
		"not a mov imm32":     func(b []byte) { b[8] = 0x90 },
		"mov from memory":     func(b []byte) { b[7] = 0x3e },             // mov %rdi,(%rsi)
		"mov to rax":          func(b []byte) { b[7] = 0xf8 },             // mov %rdi,%rax
		"mov to r8 (REX.B)":   func(b []byte) { b[5], b[7] = 0x49, 0xf8 }, // mov %rdi,%r8: allowed
		"not REX.W":           func(b []byte) { b[5] = 0x40 },
		"another instruction": func(b []byte) { b[6] = 0x8b },
	} {
		b := append([]byte(nil), open...)
		mutate(b)
		_, ok := matchSite(span(b...), 257)
		assert.Equal(t, name == "mov to r8 (REX.B)", ok, name)
	}
}

// TestIsSitePattern: a known site is rewritten only where its covered
// bytes are still what they were.
func TestIsSitePattern(t *testing.T) {
	short := site{nr: 21}
	assert.True(t, isSitePattern([]byte{0xb8, 21, 0, 0, 0, 0x0f, 0x05}, short))
	assert.False(t, isSitePattern([]byte{0xb8, 22, 0, 0, 0, 0x0f, 0x05}, short))
	assert.False(t, isSitePattern([]byte{0xff, 0x24, 0x25, 0, 0xf0, 0xff, 0x7f}, short), "rewritten already")
	long := site{nr: 257, replay: []byte{0xbf, 0x9c, 0xff, 0xff, 0xff}}
	assert.True(t, isSitePattern([]byte{0xbf, 0x9c, 0xff, 0xff, 0xff, 0x0f, 0x05}, long))
	assert.False(t, isSitePattern([]byte{0xbe, 0x9c, 0xff, 0xff, 0xff, 0x0f, 0x05}, long))
}
