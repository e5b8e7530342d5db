package syscalls

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/bpf"

	"txexec/determ"
)

// TestDeterministicEntries: each entry of DeterministicEntries replaces
// the passthrough entry of its call, so that a run without --deterministic
// lets the kernel run it (nothing is trapped), and one with it has the
// filter hand it to the supervisor; nothing else changes.
func TestDeterministicEntries(t *testing.T) {
	base := Entries()
	byNr := map[int]Entry{}
	for _, e := range base {
		byNr[e.Nr] = e
	}
	over := map[int]bool{}
	for _, d := range DeterministicEntries() {
		e, ok := byNr[d.Nr]
		require.True(t, ok, "%s replaces no entry", d.Name)
		assert.Equal(t, e.Name, d.Name, "entry %d", d.Nr)
		assert.Equal(t, Passthrough, e.Support, "%s must cost nothing without --deterministic", d.Name)
		assert.Len(t, d.Args, len(e.Args), "%s: --trace formats the same arguments", d.Name)
		over[d.Nr] = true
	}
	table, err := NewTable(WithDeterminism(base))
	require.NoError(t, err)
	prog := compiledFilter(t, table.Rules())
	for _, e := range table.Entries() {
		ret, err := bpf.Exec[bpf.NativeEndian](prog, seccompData(int32(e.Nr), unix.AUDIT_ARCH_X86_64))
		require.NoError(t, err)
		if over[e.Nr] {
			assert.Equal(t, strconv.FormatUint(unix.SECCOMP_RET_USER_NOTIF, 16), strconv.FormatUint(uint64(ret), 16), e.Name)
			continue
		}
		assert.Equal(t, byNr[e.Nr].Support, e.Support, "%s is not deterministic's", e.Name)
	}
}

// TestVirtualClocks: the wall clocks read determ.Epoch plus the virtual
// time, the others 100 s plus it; an absolute sleep's time converts back.
func TestVirtualClocks(t *testing.T) {
	d := 1500 * time.Millisecond
	for _, c := range []struct {
		name string
		id   int32
		want unix.Timespec
	}{
		{"CLOCK_REALTIME", unix.CLOCK_REALTIME, unix.Timespec{Sec: 946684801, Nsec: 5e8}},
		{"CLOCK_TAI", clockTAI, unix.Timespec{Sec: 946684801, Nsec: 5e8}},
		{"CLOCK_MONOTONIC", unix.CLOCK_MONOTONIC, unix.Timespec{Sec: 101, Nsec: 5e8}},
		{"CLOCK_BOOTTIME", unix.CLOCK_BOOTTIME, unix.Timespec{Sec: 101, Nsec: 5e8}},
		{"a process's CPU clock", -6, unix.Timespec{Sec: 101, Nsec: 5e8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.True(t, clockValid(c.id))
			assert.Equal(t, c.want, clockAt(c.id, d))
			assert.Equal(t, d, sinceEpoch(c.id, c.want))
		})
	}
	for _, id := range []int32{clockSGICycle, 12, 16, 1 << 20} {
		assert.False(t, clockValid(id), "clock %d", id)
	}
	assert.Equal(t, int64(946684800), determ.Epoch.Unix())
}
