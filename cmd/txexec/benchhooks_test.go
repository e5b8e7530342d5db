package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "f"), make([]byte, 64<<10), 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "d", "f"), filepath.Join(dir, "f.1")))
	require.NoError(t, os.Symlink("d/f", filepath.Join(dir, "l")))

	var want int64
	for _, p := range []string{"", "d", "d/f", "l"} { // f.1 is d/f again
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(filepath.Join(dir, p), &st))
		want += st.Blocks * 512
	}
	used, files, err := diskUsage(dir)
	require.NoError(t, err)
	assert.Equal(t, want, used)
	assert.Equal(t, int64(3), files, "d, d/f (once) and l")

	used, files, err = diskUsage(filepath.Join(dir, "missing"))
	require.NoError(t, err, "a transaction that staged nothing may have no staging directory")
	assert.Zero(t, used)
	assert.Zero(t, files)
}

func TestVmHWM(t *testing.T) {
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	require.NoError(t, os.WriteFile(status, []byte("Name:\ttxexec\nVmPeak:\t  900 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n"), 0o644))
	v, err := vmHWM(status)
	require.NoError(t, err)
	assert.Equal(t, int64(12345*1024), v)

	require.NoError(t, os.WriteFile(status, []byte("Name:\ttxexec\n"), 0o644))
	_, err = vmHWM(status)
	require.ErrorContains(t, err, "no VmHWM field")

	v, err = vmHWM("/proc/self/status")
	require.NoError(t, err)
	assert.Positive(t, v)
}

func TestBenchHooksWriteStats(t *testing.T) {
	dir := t.TempDir()
	staging := filepath.Join(dir, "staging")
	require.NoError(t, os.Mkdir(staging, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(staging, "1"), make([]byte, 8192), 0o600))
	stats := filepath.Join(dir, "stats")
	t.Setenv(statsEnv, stats)
	t.Setenv(cpuProfileEnv, "")

	h := startBenchHooks()
	h.measureStaging(staging)
	h.measureStaging(filepath.Join(dir, "missing")) // a smaller later attempt keeps the largest
	h.finish()

	b, err := os.ReadFile(stats)
	require.NoError(t, err)
	kv := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "line %q", l)
		kv[k] = v
	}
	assert.NotEmpty(t, kv["vmhwm_bytes"])
	assert.NotEqual(t, "0", kv["staging_bytes"])
	assert.Equal(t, "1", kv["staging_files"])
}

func TestBenchHooksUnsetDoNothing(t *testing.T) {
	t.Setenv(statsEnv, "")
	t.Setenv(cpuProfileEnv, "")
	h := startBenchHooks()
	h.measureStaging(t.TempDir())
	h.finish()
	assert.Zero(t, h.stagingFiles)
}
