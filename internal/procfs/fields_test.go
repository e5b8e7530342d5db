package procfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const status = "Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nNSpgid:\t7\t3\n" +
	"Uid:\t1000\t1001\t1002\t1003\nGid:\t5\t6\t7\t8\nGroups:\t4 24 27 \nVmHWM:\t    1234 kB\n" +
	"CapEff:\t000001ffffffffff\nnot a field\nUmask:\t0777\n"

func TestParse(t *testing.T) {
	f := Parse([]byte(status))
	assert.Equal(t, "sleep", f["Name"])
	assert.Equal(t, "S (sleeping)", f["State"])
	assert.Equal(t, []string{"S", "(sleeping)"}, f.Words("State"))
	assert.False(t, f.Has("not a field"))

	umask, err := f.Uint("Umask", 8)
	require.NoError(t, err)
	assert.Equal(t, uint64(0o022), umask, "a repeated key keeps its first value")

	tgid, err := f.Int("Tgid")
	require.NoError(t, err)
	assert.Equal(t, 42, tgid)

	pgid, err := f.LastInt("NSpgid")
	require.NoError(t, err)
	assert.Equal(t, 3, pgid, "the innermost namespace's id is the last")

	uids, err := f.IDs("Uid")
	require.NoError(t, err)
	assert.Equal(t, [4]uint32{1000, 1001, 1002, 1003}, uids)

	groups, err := f.Uint32s("Groups")
	require.NoError(t, err)
	assert.Equal(t, []uint32{4, 24, 27}, groups)

	hwm, err := f.Bytes("VmHWM")
	require.NoError(t, err)
	assert.Equal(t, int64(1234*1024), hwm)

	capEff, err := f.Uint("CapEff", 16)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x1ffffffffff), capEff)
}

func TestParseErrors(t *testing.T) {
	f := Parse([]byte("Uid:\t1 2 3\nTgid:\tx\nVmHWM:\t12 MB\nGroups:\t1 -2\n"))
	for name, err := range map[string]error{
		"missing": func() error { _, err := f.Int("Pid"); return err }(),
		"ids":     func() error { _, err := f.IDs("Uid"); return err }(),
		"number":  func() error { _, err := f.Int("Tgid"); return err }(),
		"unit":    func() error { _, err := f.Bytes("VmHWM"); return err }(),
		"groups":  func() error { _, err := f.Uint32s("Groups"); return err }(),
		"last":    func() error { _, err := f.LastInt("NSsid"); return err }(),
	} {
		assert.Error(t, err, name)
	}
}

func TestStatusAndFDInfo(t *testing.T) {
	f, err := Status(os.Getpid())
	require.NoError(t, err)
	tgid, err := f.Int("Tgid")
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), tgid)

	r, err := os.Open("/dev/null")
	require.NoError(t, err)
	defer r.Close()
	info, err := FDInfo(os.Getpid(), int(r.Fd()))
	require.NoError(t, err)
	assert.True(t, info.Has("flags"))

	_, err = FDInfo(os.Getpid(), 1<<20)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = Status(1 << 30) // above any pid_max
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestParseKeys: with keys, Parse keeps those alone, with the values it
// would give them without.
func TestParseKeys(t *testing.T) {
	all := Parse([]byte(status))
	some := Parse([]byte(status), "Uid", "Umask", "Absent")
	assert.Equal(t, Fields{"Uid": all["Uid"], "Umask": all["Umask"]}, some)

	f, err := Status(os.Getpid(), "Tgid", "Threads")
	require.NoError(t, err)
	assert.Len(t, f, 2)
	tgid, err := f.Int("Tgid")
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), tgid)
}

// TestReadLongFile: a file longer than Read's first buffer is read whole.
func TestReadLongFile(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "Key%d:\t%d\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "fields")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	f, err := Read(path)
	require.NoError(t, err)
	assert.Len(t, f, 1000)
	n, err := f.Int("Key999")
	require.NoError(t, err)
	assert.Equal(t, 999, n)
}
