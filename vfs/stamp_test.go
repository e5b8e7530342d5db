package vfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fixedClock is a view clock that moves by one second at each reading,
// from 2000-01-01.
func fixedClock() func() time.Time {
	now := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

// TestSortedListings: with SortedListings a host directory lists by
// name, then the names the transaction made, by name.
func TestSortedListings(t *testing.T) {
	names := []string{"delta", "alpha", "charlie", "bravo"}
	e := newEnv(t, func(dir string) {
		for _, n := range names {
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
		}
	})
	e.v.SortedListings = true
	e.create("zulu", "", 0o644)
	e.create("echo", "", 0o644)
	ents, err := e.listing(".")
	require.NoError(t, err)
	var got []string
	for _, d := range ents {
		got = append(got, d.Name)
	}
	assert.Equal(t, []string{"alpha", "bravo", "charlie", "delta", "echo", "zulu"}, got)
}

// TestStampTimes: with StampTimes, a staged file written through a
// descriptor shows the view's clock at the next stat, on the staged object
// itself (fstat agrees); a time the program set stays; the commit's
// journal stamps what was written since.
func TestStampTimes(t *testing.T) {
	e := newEnv(t, nil)
	e.v.Now, e.v.StampTimes = fixedClock(), true
	e.create("f", "one", 0o644)
	st, err := e.v.Stat(e.c, e.c.Cwd, "f", 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.Mtim.Sec, int64(946684800), "the view's clock, not the host's")
	assert.Less(t, st.Mtim.Sec, int64(946684800+100), "the view's clock, not the host's")
	first := st.Mtim

	fd, err := e.v.Open(e.c, e.c.Cwd, "f", OpenHow{Flags: unix.O_RDONLY})
	require.NoError(t, err)
	var fst unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &fst))
	unix.Close(fd)
	assert.Equal(t, first, fst.Mtim, "fstat, which the kernel serves, agrees")

	again, err := e.v.Stat(e.c, e.c.Cwd, "f", 0)
	require.NoError(t, err)
	assert.Equal(t, first, again.Mtim, "unchanged: not stamped again")

	e.appendTo("f", "two")
	st, err = e.v.Stat(e.c, e.c.Cwd, "f", 0)
	require.NoError(t, err)
	assert.Greater(t, st.Mtim.Sec, first.Sec, "written since: the clock's next time")
	assert.Less(t, st.Mtim.Sec, int64(946684800+100))

	set := unix.Timespec{Sec: 12345}
	e.must(e.v.Utimens(e.c, e.c.Cwd, "f", &[2]unix.Timespec{set, set}, 0), "utimens")
	st, err = e.v.Stat(e.c, e.c.Cwd, "f", 0)
	require.NoError(t, err)
	assert.Equal(t, set, st.Mtim, "a time the program set is not stamped over")

	e.must(e.v.Utimens(e.c, e.c.Cwd, "f", nil, 0), "touch")
	st, err = e.v.Stat(e.c, e.c.Cwd, "f", 0)
	require.NoError(t, err)
	assert.Less(t, st.Mtim.Sec, int64(946684800+100), "UTIME_NOW is the view's clock")

	e.create("g", "new", 0o644)
	_, err = e.v.CommitJournal()
	require.NoError(t, err)
	st, err = e.v.Stat(e.c, e.c.Cwd, "g", 0)
	require.NoError(t, err)
	assert.Less(t, st.Mtim.Sec, int64(946684800+100), "the commit stamps what nothing stat'ed")
}

// TestVirtualInodes: with VirtualInodes, stat and the listing agree on
// numbers given in the order of first showing; a host file keeps its
// number when it is staged, and a hard link shares it.
func TestVirtualInodes(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "host"), []byte("h"), 0o644))
	})
	e.v.VirtualInodes = true
	ino := func(path string) uint64 {
		t.Helper()
		st, err := e.v.Stat(e.c, e.c.Cwd, path, 0)
		require.NoError(t, err)
		return st.Ino
	}
	host := ino("host")
	assert.Greater(t, host, uint64(firstVirtualIno))
	e.create("new", "n", 0o644)
	assert.Equal(t, host+1, ino("new"), "the next number")
	e.appendTo("host", "staged now")
	assert.Equal(t, host, ino("host"), "a staged host file keeps its number")
	e.must(e.v.Link(e.c, e.c.Cwd, "new", e.c.Cwd, "alias", 0), "link")
	assert.Equal(t, ino("new"), ino("alias"))
	ents, err := e.listing(".")
	require.NoError(t, err)
	for _, d := range ents {
		assert.Equal(t, ino(d.Name), d.Ino, "d_ino of %s", d.Name)
	}
	var stx unix.Statx_t
	stx, err = e.v.Statx(e.c, e.c.Cwd, "host", 0, unix.STATX_INO)
	require.NoError(t, err)
	assert.Equal(t, host, stx.Ino)
}
