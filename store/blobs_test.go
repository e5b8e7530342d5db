package store

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBlobsAndRecordings: blobs are named by their sha256 and shared;
// a name that is not one is refused; a recording names its manifest.
func TestBlobsAndRecordings(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Durable: true})
	require.NoError(t, err)
	defer s.Close()
	h, err := s.PutBlob(strings.NewReader("hello"))
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("hello"))
	assert.Equal(t, hex.EncodeToString(sum[:]), h)
	again, err := s.PutBlob(strings.NewReader("hello"))
	require.NoError(t, err)
	assert.Equal(t, h, again)
	ents, err := os.ReadDir(s.BlobPath(""))
	require.NoError(t, err)
	assert.Len(t, ents, 1, "one file per contents, no temporary left")
	f, err := s.OpenBlob(h)
	require.NoError(t, err)
	b, _ := io.ReadAll(f)
	f.Close()
	assert.Equal(t, "hello", string(b))
	for _, bad := range []string{"", "../txexec.db", strings.ToUpper(h), h[:10]} {
		_, err := s.OpenBlob(bad)
		assert.Error(t, err, bad)
		_, err = s.AddRecording(1, bad)
		assert.Error(t, err, bad)
	}

	id, err := s.AddRecording(7, h)
	require.NoError(t, err)
	got, err := s.Recording(id)
	require.NoError(t, err)
	assert.Equal(t, h, got)
	_, err = s.Recording(id + 1)
	assert.ErrorIs(t, err, ErrNoRecording)
}
