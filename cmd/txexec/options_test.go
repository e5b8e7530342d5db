package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseRunExclude: --exclude takes an existing directory, named
// without a final symlink; anything else is refused with a one-line reason
// rather than silently excluding nothing.
func TestParseRunExclude(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(dir, link))
	for _, tc := range []struct {
		path, err string
	}{
		{dir, ""},
		{file, "not a directory"},
		{link, "a symlink"},
		{filepath.Join(dir, "absent"), "no such file or directory"},
	} {
		o, err := parseRun([]string{"--exclude", tc.path, "--", "true"})
		if tc.err == "" {
			require.NoError(t, err)
			assert.Equal(t, []string{tc.path}, o.Excludes)
			continue
		}
		require.Error(t, err, tc.path)
		assert.Contains(t, err.Error(), tc.err)
		assert.Contains(t, err.Error(), "--exclude "+tc.path)
	}
}
