package fastlookup

import (
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func newRing(t *testing.T) *Ring {
	g, err := NewRing()
	require.NoError(t, err)
	t.Cleanup(g.Close)
	return g
}

func statRecord(path string, gen uint64) *Record {
	return &Record{Generation: gen, Nr: unix.SYS_NEWFSTATAT, Path: path, Observed: true,
		Dev: 1, Ino: 2, UID: 3, GID: 4, Size: 5, Mode: unix.S_IFREG | 0o644,
		Mtime: unix.Timespec{Sec: 6, Nsec: 7}, Ctime: unix.Timespec{Sec: 8, Nsec: 9}}
}

// drainPaths drains g and returns the paths fed, in order.
func drainPaths(t *testing.T, g *Ring) []string {
	var got []string
	_, err := g.Drain(func(r *Record) error { got = append(got, r.Path); return nil })
	require.NoError(t, err)
	return got
}

func TestRingRoundTrip(t *testing.T) {
	g := newRing(t)
	want := statRecord("/usr/include/stdio.h", 7)
	require.True(t, g.Append(want))
	var got []Record
	n, err := g.Drain(func(r *Record) error { got = append(got, *r); return nil })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	want.Position = 0
	assert.Equal(t, *want, got[0])
	assert.Empty(t, drainPaths(t, g), "each record is fed once")
}

// TestRingWrapAround fills the ring, drains it, and goes round it several
// times: the per-slot sequence numbers tell a slot of this lap from one of
// the last.
func TestRingWrapAround(t *testing.T) {
	g := newRing(t)
	next := 0
	for lap := range 3 {
		var want []string
		for {
			p := fmt.Sprintf("/f%d", next)
			if !g.Append(statRecord(p, 1)) {
				break
			}
			want = append(want, p)
			next++
		}
		require.Len(t, want, RingN, "lap %d: the ring holds RingN records", lap)
		assert.Equal(t, want, drainPaths(t, g), "lap %d", lap)
		// Half a lap, so that the next lap straddles the slot array's end.
		for i := 0; i < RingN/2; i++ {
			require.True(t, g.Append(statRecord(fmt.Sprintf("/h%d", next), 1)))
			next++
		}
		assert.Len(t, drainPaths(t, g), RingN/2)
	}
	assert.Equal(t, uint64(next), g.Tail())
}

// TestRingHoles: a reserved, unpublished slot holds the tail back, but the
// records after it are fed (once); publishing it lets the tail move on.
func TestRingHoles(t *testing.T) {
	g := newRing(t)
	require.True(t, g.Append(statRecord("/a", 1)))
	hole, ok := g.Reserve()
	require.True(t, ok)
	require.True(t, g.Append(statRecord("/c", 1)))
	assert.Equal(t, []string{"/a", "/c"}, drainPaths(t, g))
	assert.Equal(t, uint64(1), g.Tail(), "the tail stops at the hole")
	assert.Equal(t, uint64(1), atomic.LoadUint64(&g.r.tail), "and the agent sees it there")
	assert.Empty(t, drainPaths(t, g), "/c is not fed again")

	g.Publish(hole, statRecord("/b", 1))
	require.True(t, g.Append(statRecord("/d", 1)))
	assert.Equal(t, []string{"/b", "/d"}, drainPaths(t, g))
	assert.Equal(t, uint64(4), g.Tail())
	assert.Empty(t, g.done, "nothing consumed is remembered behind the tail")

	// A thread that dies in the agent: ReleaseHoles frees its slot.
	_, ok = g.Reserve()
	require.True(t, ok)
	require.True(t, g.Append(statRecord("/e", 1)))
	_, ok = g.Reserve() // a trailing hole too
	require.True(t, ok)
	var fed []string
	_, err := g.ReleaseHoles(func(r *Record) error { fed = append(fed, r.Path); return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"/e"}, fed)
	assert.Equal(t, uint64(7), g.Tail())
	assert.Empty(t, g.done)

	// A slot published with no record (the agent forwarded) is consumed.
	require.True(t, g.Append(&Record{Nr: NrNone}))
	assert.Empty(t, drainPaths(t, g))
	assert.Equal(t, uint64(8), g.Tail())
}

// TestRingFull: a full ring refuses a reservation (the agent forwards)
// until the drain frees slots.
func TestRingFull(t *testing.T) {
	g := newRing(t)
	hole, ok := g.Reserve()
	require.True(t, ok)
	for i := 1; i < RingN; i++ {
		require.True(t, g.Append(statRecord("/x", 1)))
	}
	assert.False(t, g.Append(statRecord("/y", 1)))
	assert.Len(t, drainPaths(t, g), RingN-1)
	assert.False(t, g.Append(statRecord("/y", 1)), "the hole still holds the whole lap")
	g.Publish(hole, statRecord("/h", 1))
	assert.Equal(t, []string{"/h"}, drainPaths(t, g))
	assert.True(t, g.Append(statRecord("/y", 1)))
}

// TestRingReadlink: a symlink's target read natively decodes with its
// length as the result.
func TestRingReadlink(t *testing.T) {
	g := newRing(t)
	want := statRecord("/usr/bin/cc", 7)
	want.Nr, want.Mode, want.Size, want.Result = unix.SYS_READLINK, unix.S_IFLNK|0o777, 20, 20
	require.True(t, g.Append(want))
	var got []Record
	_, err := g.Drain(func(r *Record) error { got = append(got, *r); return nil })
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, int64(20), got[0].Result)
	assert.Equal(t, uint32(unix.S_IFLNK|0o777), got[0].Mode)
}

func TestRingMalformed(t *testing.T) {
	ok := statRecord("/ok", 1)
	cases := []struct {
		name string
		edit func(r *Record, s *recordLayout)
		why  string
	}{
		{"not a lookup", func(r *Record, s *recordLayout) { s.nr = unix.SYS_UNLINK }, "no fast lookup"},
		{"relative", func(r *Record, s *recordLayout) { copy(s.path[:], "a/b\x00"); s.pathLen = 3 }, "not absolute"},
		{"dot-dot", func(r *Record, s *recordLayout) { copy(s.path[:], "/a/../b\x00"); s.pathLen = 7 }, "not absolute and clean"},
		{"empty component", func(r *Record, s *recordLayout) { copy(s.path[:], "/a//b\x00"); s.pathLen = 5 }, "clean"},
		{"trailing slash", func(r *Record, s *recordLayout) { copy(s.path[:], "/a/\x00"); s.pathLen = 3 }, "clean"},
		{"length past the slot", func(r *Record, s *recordLayout) { s.pathLen = PathMax + 10 }, "path length"},
		{"no NUL", func(r *Record, s *recordLayout) {
			copy(s.path[:], strings.Repeat("/x", PathMax/2))
			s.pathLen = PathMax - 1
		}, "path length"},
		{"NUL inside", func(r *Record, s *recordLayout) { s.path[1] = 0 }, "NUL inside"},
		{"empty", func(r *Record, s *recordLayout) { s.pathLen = 0 }, "path length"},
		{"result out of range", func(r *Record, s *recordLayout) { s.result = -5000 }, "result"},
		{"stat returning a number", func(r *Record, s *recordLayout) { s.result = 3 }, "result"},
		{"readlink of no symlink", func(r *Record, s *recordLayout) { s.nr = unix.SYS_READLINK; s.result = 4 }, "result"},
		{"readlink past the size", func(r *Record, s *recordLayout) {
			s.nr, s.mode, s.size, s.result = unix.SYS_READLINK, unix.S_IFLNK|0o777, 3, 4
		}, "result"},
		{"readlink without identity", func(r *Record, s *recordLayout) {
			s.nr, s.mode, s.size, s.result, s.flags = unix.SYS_READLINK, unix.S_IFLNK|0o777, 4, 4, 0
		}, "result"},
		{"identity of nothing", func(r *Record, s *recordLayout) { s.result = -int64(unix.ENOENT) }, "identity"},
		{"no identity of something", func(r *Record, s *recordLayout) { s.flags = 0 }, "identity"},
		{"unknown flag", func(r *Record, s *recordLayout) { s.flags |= 8 }, "flags"},
		{"relative path", func(r *Record, s *recordLayout) { s.flags |= flRelative }, "not one component"},
		{"relative dot-dot", func(r *Record, s *recordLayout) {
			s.flags |= flRelative
			copy(s.path[:], "..\x00")
			s.pathLen = 2
		}, "not one component"},
		{"descriptor without identity", func(r *Record, s *recordLayout) { s.flags = flDescriptor }, "descriptor record"},
		{"descriptor of an open", func(r *Record, s *recordLayout) { s.flags |= flDescriptor; s.nr = unix.SYS_OPENAT; s.result = 3 }, "descriptor record"},
		{"descriptor and relative", func(r *Record, s *recordLayout) { s.flags |= flDescriptor | flRelative }, "flags"},
		{"relative two names", func(r *Record, s *recordLayout) {
			s.flags |= flRelative
			copy(s.path[:], "a/b\x00")
			s.pathLen = 3
		}, "not one component"},
		{"bad type", func(r *Record, s *recordLayout) { s.mode = 0o644 }, "attributes"},
		{"bad nanoseconds", func(r *Record, s *recordLayout) { s.mtimeNsec = 2e9 }, "attributes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newRing(t)
			pos, reserved := g.Reserve()
			require.True(t, reserved)
			g.Publish(pos, ok)
			slot := &g.r.slots[pos%RingN]
			c.edit(ok, slot)
			require.True(t, g.Append(statRecord("/after", 1)))
			var fed []string
			n, err := g.Drain(func(r *Record) error { fed = append(fed, r.Path); return nil })
			var bad *MalformedError
			require.ErrorAs(t, err, &bad)
			assert.Contains(t, bad.Why, c.why)
			assert.Equal(t, uint64(0), bad.Position)
			assert.Equal(t, 1, n)
			assert.Equal(t, []string{"/after"}, fed, "the malformed record is not fed, the next one is")
			assert.Equal(t, uint64(2), g.Tail(), "and both are consumed")
		})
	}
}

// TestRingRelative: a record of a name relative to a fast directory
// carries the directory's identity through the ring.
func TestRingRelative(t *testing.T) {
	g := newRing(t)
	rec := statRecord("man1", 1)
	rec.Relative, rec.DirDev, rec.DirIno = true, 7, 8
	require.True(t, g.Append(rec))
	var got []Record
	_, err := g.Drain(func(r *Record) error { got = append(got, *r); return nil })
	require.NoError(t, err)
	require.Len(t, got, 1)
	rec.Position = 0
	assert.Equal(t, *rec, got[0])
}

// TestRingDescriptor: a record of a lookup of a descriptor itself keeps
// its flag through the ring.
func TestRingDescriptor(t *testing.T) {
	g := newRing(t)
	rec := statRecord("/var/tmp/f", 1)
	rec.Descriptor = true
	require.True(t, g.Append(rec))
	var got []Record
	_, err := g.Drain(func(r *Record) error { got = append(got, *r); return nil })
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.True(t, got[0].Descriptor)
	assert.False(t, got[0].Relative)
}

// TestRingCorruptHead: a head the program set far ahead is bounded by one
// lap; one behind the tail reads nothing.
func TestRingCorruptHead(t *testing.T) {
	g := newRing(t)
	require.True(t, g.Append(statRecord("/a", 1)))
	atomic.StoreUint64(&g.r.head, 1<<62)
	assert.Equal(t, []string{"/a"}, drainPaths(t, g))
	assert.Equal(t, uint64(1), g.Tail())
	atomic.StoreUint64(&g.r.head, 0)
	assert.Empty(t, drainPaths(t, g))
	assert.Equal(t, uint64(1), g.Tail())
}

// TestCleanAbsolute: a record's absolute path is accepted exactly when
// it is what path.Clean makes of it.
func TestCleanAbsolute(t *testing.T) {
	for _, p := range []string{
		"/", "/a", "/a/b", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/...", "/a/.b", "/a..",
		"", "a", "a/b", "//", "//a", "/a/", "/a//b", "/.", "/..", "/a/.", "/a/..", "/a/./b", "/a/../b", "/./a",
	} {
		want := strings.HasPrefix(p, "/") && path.Clean(p) == p
		assert.Equal(t, want, cleanAbsolute(p), "%q", p)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { cleanAbsolute("/usr/lib/x86_64-linux-gnu/libc.so.6") }))
}
