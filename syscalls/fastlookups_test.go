package syscalls

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/bpf"

	"txexec/fastlookup"
	"txexec/interpose"
	"txexec/vfs"
)

// TestFilterFastLookups runs the table's filter with the fast-lookup
// agent's conditions (interpose.FastLookupRules) for every entry, from the
// agent page, from the page after it (the forward page) and from elsewhere:
// only the fast-lookup numbers from the agent page change their action, to
// ALLOW. Without the option, the filter is the table's and never reads the
// instruction pointer.
func TestFilterFastLookups(t *testing.T) {
	table := newTestTable(t)
	const base = interpose.DefaultAgentBase
	plainRaw, err := interpose.CompileFilter(table.Rules())
	require.NoError(t, err)
	for i, ins := range plainRaw {
		if ins.Code == unix.BPF_LD|unix.BPF_W|unix.BPF_ABS {
			assert.NotContains(t, []uint32{8, 12}, ins.K, "instruction %d of the filter without the option reads the instruction pointer", i)
		}
	}
	plain := compiledFilter(t, table.Rules())
	fast := compiledFilter(t, interpose.FastLookupRules(table.Rules(), base))
	isFast := map[int]bool{}
	for _, nr := range interpose.FastLookupNrs {
		isFast[nr] = true
	}
	at := func(nr int32, ip uint64) bpf.Input {
		in := seccompData(nr, unix.AUDIT_ARCH_X86_64)
		binary.NativeEndian.PutUint64(in[8:], ip)
		return in
	}
	for _, e := range table.Entries() {
		for _, ip := range []uint64{base + 0x1b, base + 0xfff, base + 0x1000 + 0x1b, 0x7f12_3456_7000, base | 1<<32} {
			want, err := bpf.Exec[bpf.NativeEndian](plain, at(int32(e.Nr), ip))
			require.NoError(t, err)
			got, err := bpf.Exec[bpf.NativeEndian](fast, at(int32(e.Nr), ip))
			require.NoError(t, err)
			inAgentPage := ip >= base && ip < base+0x1000
			if isFast[e.Nr] && inAgentPage {
				assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), got, "%s from %#x", e.Name, ip)
				assert.Equal(t, uint32(unix.SECCOMP_RET_USER_NOTIF), want, "%s", e.Name)
			} else {
				assert.Equal(t, want, got, "%s from %#x", e.Name, ip)
			}
		}
	}
	// From the agent page, an open is allowed only with flags that
	// neither write nor create (the kernel reads them as an int: the
	// upper half does not count); from elsewhere it is notified whatever
	// its flags.
	for _, tc := range []struct {
		flags uint64
		want  uint32
	}{
		{unix.O_RDONLY, unix.SECCOMP_RET_ALLOW},
		{unix.O_RDONLY | unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC, unix.SECCOMP_RET_ALLOW},
		{unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOATIME | unix.O_NOCTTY, unix.SECCOMP_RET_ALLOW},
		{0xffffffff_00000000, unix.SECCOMP_RET_ALLOW},
		{unix.O_WRONLY, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_RDWR, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_ACCMODE, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_CREAT, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_WRONLY | unix.O_CREAT, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_TRUNC, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_TMPFILE | unix.O_RDWR, unix.SECCOMP_RET_USER_NOTIF},
		{unix.O_TMPFILE &^ unix.O_DIRECTORY, unix.SECCOMP_RET_USER_NOTIF},
	} {
		for _, call := range []struct {
			nr   int32
			flag int
		}{{unix.SYS_OPENAT, 2}, {unix.SYS_OPEN, 1}} {
			in := at(call.nr, base+0x1b)
			putArg(in, call.flag, tc.flags)
			got, err := bpf.Exec[bpf.NativeEndian](fast, in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "nr %d flags %#x from the agent page", call.nr, tc.flags)
			in = at(call.nr, base+0x1000+0x1b)
			putArg(in, call.flag, tc.flags)
			got, err = bpf.Exec[bpf.NativeEndian](fast, in)
			require.NoError(t, err)
			assert.Equal(t, uint32(unix.SECCOMP_RET_USER_NOTIF), got, "nr %d flags %#x from the forward page", call.nr, tc.flags)
		}
	}
}

// TestFastRingsBackground: with Background running, a record reaches the
// read set without any call being served (no Drain from a handler), and
// Finish stops the goroutine; the read set then holds what the record
// observed (an absence another process's creation conflicts with).
func TestFastRingsBackground(t *testing.T) {
	f, v, tree := newTestFastRings(t)
	dir := t.TempDir()
	_, err := f.Ring(1234)
	require.NoError(t, err)
	f.mu.Lock()
	g := f.byProc[1234]
	f.mu.Unlock()
	f.Background()
	absent := filepath.Join(dir, "absent")
	require.True(t, g.Append(&fastlookup.Record{Generation: tree.Generation(), Nr: unix.SYS_NEWFSTATAT,
		Path: absent, Result: -int64(unix.ENOENT)}))
	pending := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return g.Pending()
	}
	require.Eventually(t, func() bool { return !pending() }, 30*time.Second, time.Millisecond, "fed in the background")
	f.Finish()
	require.NoError(t, v.Validate(nil))
	require.NoError(t, os.WriteFile(absent, nil, 0o644))
	var conflict *vfs.ConflictError
	require.ErrorAs(t, v.Validate(nil), &conflict)
	assert.Equal(t, absent, conflict.Path)
}

// TestNextLook: Background looks often while the rings hold records,
// backs off to 8 ms while they hold none, and to 250 ms once they have held
// none for a second; records bring it back at once.
func TestNextLook(t *testing.T) {
	wait, idle := backgroundBusy, time.Duration(0)
	var waits []time.Duration
	for range 6 {
		wait, idle = nextLook(wait, idle, false)
		waits = append(waits, wait)
	}
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond,
		8 * time.Millisecond, 8 * time.Millisecond, 8 * time.Millisecond}, waits)
	looks := 6
	for wait < backgroundAsleep {
		wait, idle = nextLook(wait, idle, false)
		looks++
	}
	assert.GreaterOrEqual(t, idle, backgroundNap, "asleep only after a second without records")
	assert.Less(t, looks, 140)
	wait, idle = nextLook(wait, idle, false)
	assert.Equal(t, backgroundAsleep, wait)
	wait, idle = nextLook(wait, idle, true)
	assert.Equal(t, backgroundBusy, wait)
	assert.Zero(t, idle)
}

// TestFastRingsSpares: spares are made once a process took a ring, not
// before (a tree of one process pays for none); with Background running,
// Ring hands out rings made ahead, each once and empty whatever the rings
// before it held, and a ring dropped at an exit or a replacement is closed
// off the caller's goroutine, after its records were fed; Finish closes
// every ring left, the spares too.
func TestFastRingsSpares(t *testing.T) {
	f, v, tree := newTestFastRings(t)
	spares := func() []*fastlookup.Ring {
		f.keptMu.Lock()
		defer f.keptMu.Unlock()
		return append([]*fastlookup.Ring(nil), f.spare...)
	}
	assert.False(t, f.keep(), "no ring taken: none made ahead")
	assert.Empty(t, spares())
	_, err := f.Ring(1)
	require.NoError(t, err)
	f.Exited(1)
	f.Background()
	require.Eventually(t, func() bool { return len(spares()) == spareRingN }, 30*time.Second, time.Millisecond, "spares made ahead")
	ringOf := func(tgid int) *fastlookup.Ring {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.byProc[tgid]
	}
	absent := filepath.Join(t.TempDir(), "absent")
	seen := map[*fastlookup.Ring]bool{}
	for tgid := 2; tgid <= 3*spareRingN; tgid++ {
		ahead := spares()
		fd, err := f.Ring(tgid)
		require.NoError(t, err)
		g := ringOf(tgid)
		require.NotNil(t, g)
		assert.Equal(t, fd, g.FD())
		if len(ahead) > 0 {
			assert.Contains(t, ahead, g, "ring %d: a spare", tgid)
		}
		assert.False(t, seen[g], "ring %d handed out twice", tgid)
		seen[g] = true
		assert.False(t, g.Pending(), "ring %d: empty", tgid)
		assert.Zero(t, g.Tail(), "ring %d: never used", tgid)
		// Each ring gets a record, which its drop feeds.
		require.True(t, g.Append(&fastlookup.Record{Generation: tree.Generation(), Nr: unix.SYS_NEWFSTATAT,
			Path: absent, Result: -int64(unix.ENOENT)}))
		if tgid%2 == 0 {
			f.Exited(tgid)
		} else {
			_, err := f.Ring(tgid) // a new image's: the old one is dropped
			require.NoError(t, err)
			assert.NotSame(t, g, ringOf(tgid))
			f.Exited(tgid)
		}
	}
	// Every ring dropped is closed in the background: the spares are the
	// only rings left open, and after Finish none is.
	require.Eventually(t, func() bool { return ringMemfds(t) == len(spares()) }, 30*time.Second, time.Millisecond,
		"dropped rings closed in the background")
	f.Finish()
	assert.Empty(t, spares())
	assert.Zero(t, ringMemfds(t), "every ring closed by Finish")
	// The records were fed: the absence is in the read set.
	require.NoError(t, os.WriteFile(absent, nil, 0o644))
	var conflict *vfs.ConflictError
	require.ErrorAs(t, v.Validate(nil), &conflict)
	assert.Equal(t, absent, conflict.Path)
}

// ringMemfds counts this process's descriptors of rings' memfds.
func ringMemfds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/memfd:txexec-fastlookup-ring (deleted)" {
			n++
		}
	}
	return n
}

// TestFastRingsDropHole: a process that exits with a slot of its ring
// reserved and never published (a thread killed in the agent) and a
// record published after it: the drop feeds the record behind the hole.
// A ring with nothing reserved is dropped without feeding.
func TestFastRingsDropHole(t *testing.T) {
	f, v, tree := newTestFastRings(t)
	for _, tgid := range []int{1, 2} {
		_, err := f.Ring(tgid)
		require.NoError(t, err)
	}
	f.mu.Lock()
	g := f.byProc[1]
	f.mu.Unlock()
	_, ok := g.Reserve() // the hole
	require.True(t, ok)
	absent := filepath.Join(t.TempDir(), "absent")
	require.True(t, g.Append(&fastlookup.Record{Generation: tree.Generation(), Nr: unix.SYS_NEWFSTATAT,
		Path: absent, Result: -int64(unix.ENOENT)}))
	f.Exited(1)
	f.Exited(2) // empty
	assert.Zero(t, ringMemfds(t), "both closed")
	require.NoError(t, os.WriteFile(absent, nil, 0o644))
	var conflict *vfs.ConflictError
	require.ErrorAs(t, v.Validate(nil), &conflict, "the record behind the hole was fed")
	assert.Equal(t, absent, conflict.Path)
}

// newTestFastRings is the rings' registry of a new transaction's view over
// the host, with its enabled fast-lookup tree; both closed at the test's
// end.
func newTestFastRings(t *testing.T) (*FastRings, *vfs.Tx, *fastlookup.Tree) {
	t.Helper()
	host, err := vfs.NewHost()
	require.NoError(t, err)
	tree, err := fastlookup.NewTree()
	require.NoError(t, err)
	t.Cleanup(func() { tree.Close() })
	tree.Enable(true)
	v, err := vfs.NewTx(host, t.TempDir(), vfs.TxOptions{FastLookups: tree})
	require.NoError(t, err)
	t.Cleanup(func() { v.Close() })
	return NewFastRings(v, tree), v, tree
}
