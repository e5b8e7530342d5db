package store

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"txexec/internal/sysx"
)

// BlobsName is the directory of content-addressed blobs in the state
// directory: STATE/blobs/HASH, HASH the sha256 of the contents in hex.
const BlobsName = "blobs"

// BlobPath returns where the blob of hash lives (it may not exist).
func (s *Store) BlobPath(hash string) string {
	return filepath.Join(s.dir, BlobsName, hash)
}

// validHash reports whether hash is a sha256 in lowercase hex, so that it
// names no other file of the state directory.
func validHash(hash string) bool {
	if len(hash) != 2*sha256.Size {
		return false
	}
	for _, c := range hash {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// PutBlob stores the contents of r and returns their hash. A blob that is
// already stored is shared; a new one is written to a temporary file,
// synced when the store is durable, and renamed into place.
func (s *Store) PutBlob(r io.Reader) (string, error) {
	dir, err := filepath.Abs(filepath.Join(s.dir, BlobsName))
	if err != nil {
		return "", fmt.Errorf("store blob: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("store blob: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("store blob: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a rename: gone already
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), r); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store blob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("store blob: %w", err)
	}
	hash := hex.EncodeToString(h.Sum(nil))
	final := filepath.Join(dir, hash)
	if _, err := os.Stat(final); err == nil {
		return hash, nil
	}
	if s.opt.Durable {
		if err := sysx.Sync([]sysx.SyncTarget{{Path: tmp.Name()}}); err != nil {
			return "", fmt.Errorf("store blob: %w", err)
		}
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("store blob: %w", err)
	}
	if s.opt.Durable {
		if err := sysx.Sync([]sysx.SyncTarget{{Path: dir, Dir: true}}); err != nil {
			return "", fmt.Errorf("store blob: %w", err)
		}
	}
	return hash, nil
}

// OpenBlob opens the blob of hash for reading.
func (s *Store) OpenBlob(hash string) (*os.File, error) {
	if !validHash(hash) {
		return nil, fmt.Errorf("open blob: %q is not a sha256", hash)
	}
	f, err := os.Open(s.BlobPath(hash))
	if err != nil {
		return nil, fmt.Errorf("open blob: %w", err)
	}
	return f, nil
}

// AddRecording records that the run of transaction txID was recorded, in
// the manifest blob of hash, and returns the recording's id.
func (s *Store) AddRecording(txID int64, manifest string) (int64, error) {
	if !validHash(manifest) {
		return 0, fmt.Errorf("add recording: %q is not a sha256", manifest)
	}
	var id int64
	err := s.write(func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO recording (tx_id, created_ns, manifest) VALUES (?, ?, ?)`,
			txID, s.opt.Now().UnixNano(), manifest)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("add recording: %w", err)
	}
	return id, nil
}

// ErrNoRecording is the error of Recording for an id never recorded.
var ErrNoRecording = errors.New("no such recording")

// Recording returns the manifest blob of recording id.
func (s *Store) Recording(id int64) (string, error) {
	var manifest string
	err := s.db.QueryRow(`SELECT manifest FROM recording WHERE id = ?`, id).Scan(&manifest)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("recording %d: %w", id, ErrNoRecording)
	}
	if err != nil {
		return "", fmt.Errorf("recording %d: %w", id, err)
	}
	return manifest, nil
}
