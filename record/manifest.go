package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Version is the manifest format; a manifest of another version is
// refused, not guessed at.
const Version = 1

// Blobs stores and returns file contents by the sha256 of their bytes
// (lowercase hex).
type Blobs interface {
	Put(r io.Reader) (string, error)
	Open(hash string) (io.ReadCloser, error)
}

// Manifest is one recording.
type Manifest struct {
	Version int
	Argv    []string
	Env     []string
	Cwd     string
	Seed    uint64
	// Files are what the run read of the host, by path.
	Files   []File
	Outcome Outcome
}

// File types in a manifest.
const (
	TypeAbsent  = "absent" // the run found nothing at the path
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other" // a FIFO, socket or device: not made by a replay
)

// File is one host path the run looked at.
type File struct {
	Path      string
	Type      string
	Mode      uint32 // permission bits, set-ID and sticky bits
	UID, GID  uint32
	Size      int64
	MtimeSec  int64
	MtimeNsec int64
	// Blob holds a regular file's contents when the run read them; a
	// file only looked at is made with its size and no data.
	Blob string `json:",omitempty"`
	// Target is a symlink's.
	Target string `json:",omitempty"`
	// Listing is a directory's entries when the run listed it.
	Listing []Entry `json:",omitempty"`
}

// Entry is one name of a directory listing, with what a replay needs to
// make a stand-in for an entry the run did not otherwise look at.
type Entry struct {
	Name   string
	Type   string
	Mode   uint32
	Size   int64
	Target string `json:",omitempty"`
}

// Outcome is what a run produced: what a replay must repeat.
type Outcome struct {
	Status int
	// Stdout and Stderr are blobs.
	Stdout, Stderr string
	// Changes are the transaction's changes in words, one per line, each
	// file's resulting contents as a hash.
	Changes []string
}

// Save stores m as a blob and returns its hash.
func Save(b Blobs, m *Manifest) (string, error) {
	m.Version = Version
	data, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return "", fmt.Errorf("save manifest: %w", err)
	}
	return b.Put(bytes.NewReader(data))
}

// Load reads the manifest of hash.
func Load(b Blobs, hash string) (*Manifest, error) {
	r, err := b.Open(hash)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return decode(r)
}

func decode(r io.Reader) (*Manifest, error) {
	var m Manifest
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if m.Version != Version {
		return nil, fmt.Errorf("recording format %d is not this txexec's (%d)", m.Version, Version)
	}
	return &m, nil
}

// ReadBlob returns the contents of blob hash.
func ReadBlob(b Blobs, hash string) ([]byte, error) {
	r, err := b.Open(hash)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Dir is a directory of blobs named by their hash: an imported recording.
type Dir string

var _ Blobs = Dir("")

// Put implements Blobs.
func (d Dir) Put(r io.Reader) (string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	h := Hash(data)
	return h, os.WriteFile(filepath.Join(string(d), h), data, 0o600)
}

// Open implements Blobs.
func (d Dir) Open(hash string) (io.ReadCloser, error) {
	if !ValidHash(hash) {
		return nil, fmt.Errorf("blob %q: not a sha256", hash)
	}
	return os.Open(filepath.Join(string(d), hash))
}
