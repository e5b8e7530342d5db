package interpose

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

func openMaps(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestProcmapQueryMatchesParse: for every mapping of a running
// dynamically linked program (its executable, ld.so, libc, the vDSO, its
// stack, its heap), at its first, a middle and its last byte, PROCMAP_QUERY
// finds what the parse of /proc/PID/maps finds, and mappedFile the
// version of the file its path names.
func TestProcmapQueryMatchesParse(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	// Until ld.so has mapped libc: sleep's own calls come after.
	var lines []mapsLine
	for tries := 0; ; tries++ {
		lines = readMaps(t, pid)
		libc := false
		for _, l := range lines {
			libc = libc || strings.Contains(l.name, "libc.so")
		}
		if libc {
			break
		}
		require.Less(t, tries, 1000, "sleep never mapped libc")
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	maps := openMaps(t, pid)
	if _, _, err := queryExecFileMapping(maps, 0, 0); err == errNoProcmapQuery {
		testenv.SkipOrFail(t, "the kernel has no PROCMAP_QUERY (Linux 6.11)")
	}
	execFiles := 0
	for _, l := range lines {
		for _, a := range []uint64{l.start, (l.start + l.end) / 2 &^ 7, l.end - 1} {
			q, found, err := queryExecFileMapping(maps, a, 0)
			require.NoError(t, err)
			parsed, parsedFound := parseMappedFile(openMaps(t, pid), a)
			want := l.exec && l.name != "" && l.name[0] == '/'
			assert.Equal(t, want, found, "query at %#x of %+v", a, l)
			assert.Equal(t, want, parsedFound, "parse at %#x of %+v", a, l)
			if !want {
				continue
			}
			execFiles++
			assert.Equal(t, mapping{start: l.start, end: l.end, pgoff: l.pgoff}, parsed)
			assert.Equal(t, parsed, mapping{start: q.VMAStart, end: q.VMAEnd, pgoff: q.VMAOffset})
			m, ok := mappedFile(pid, a)
			require.True(t, ok, "mappedFile at %#x of %+v", a, l)
			var st unix.Stat_t
			require.NoError(t, unix.Stat(l.name, &st))
			assert.Equal(t, exeVersion{id: FileID{Dev: st.Dev, Ino: st.Ino}, size: st.Size, ctime: st.Ctim}, m.version, l.name)
			assert.Equal(t, a-l.start+l.pgoff, m.offsetOf(a))
		}
	}
	assert.GreaterOrEqual(t, execFiles, 3*3, "sleep, ld.so and libc have executable mappings")

	// Addresses in no mapping, below and above them all.
	for _, a := range []uint64{0, lines[0].start - 1, 1 << 62} {
		_, found, err := queryExecFileMapping(maps, a, 0)
		require.NoError(t, err)
		assert.False(t, found, "%#x", a)
		_, ok := mappedFile(pid, a)
		assert.False(t, ok, "%#x", a)
	}
}
