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
