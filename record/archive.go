package record

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// An exported recording is a tar archive: first the member header, whose
// contents say the format and its version; then the manifest; then each
// blob the manifest names, as blobs/HASH.
const (
	headerName   = "TXEXEC-RECORDING"
	headerText   = "txexec recording 1\n"
	manifestName = "manifest.json"
	blobPrefix   = "blobs/"
)

// Export writes the recording whose manifest is m (stored in b) to w.
func Export(w io.Writer, m *Manifest, b Blobs) error {
	tw := tar.NewWriter(w)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(headerName, []byte(headerText)); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var mb bytes.Buffer
	if _, err := Save(bufferBlobs{&mb}, m); err != nil {
		return err
	}
	if err := add(manifestName, mb.Bytes()); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	for _, h := range blobsOf(m) {
		data, err := ReadBlob(b, h)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := add(blobPrefix+h, data); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// blobsOf lists the blobs m names, each once, in the order it names them.
func blobsOf(m *Manifest) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range append([]string{m.Outcome.Stdout, m.Outcome.Stderr}, fileBlobs(m)...) {
		if h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

func fileBlobs(m *Manifest) []string {
	var out []string
	for _, f := range m.Files {
		out = append(out, f.Blob)
	}
	return out
}

// bufferBlobs holds one blob, for Export's manifest.
type bufferBlobs struct{ b *bytes.Buffer }

func (bb bufferBlobs) Put(r io.Reader) (string, error) {
	_, err := bb.b.ReadFrom(r)
	return Hash(bb.b.Bytes()), err
}

func (bb bufferBlobs) Open(string) (io.ReadCloser, error) { return nil, errors.New("write only") }

// ErrNotRecording says a file is not an exported recording.
var ErrNotRecording = errors.New("not an exported txexec recording")

// Import reads an exported recording from r into dir (an empty
// directory): its blobs, each checked against its name, and returns the
// manifest and the blobs.
func Import(r io.Reader, dir string) (*Manifest, Dir, error) {
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil || h.Name != headerName {
		return nil, "", ErrNotRecording
	}
	head, err := io.ReadAll(io.LimitReader(tr, 256))
	if err != nil {
		return nil, "", ErrNotRecording
	}
	if string(head) != headerText {
		return nil, "", fmt.Errorf("recording format %q is not this txexec's (%q)", strings.TrimSpace(string(head)), strings.TrimSpace(headerText))
	}
	var m *Manifest
	blobs := Dir(dir)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("import: %w", err)
		}
		switch {
		case h.Name == manifestName:
			if m, err = decode(tr); err != nil {
				return nil, "", err
			}
		case strings.HasPrefix(h.Name, blobPrefix):
			name := strings.TrimPrefix(h.Name, blobPrefix)
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, "", fmt.Errorf("import: %w", err)
			}
			if !ValidHash(name) || Hash(data) != name {
				return nil, "", fmt.Errorf("import: blob %s does not hold what its name says", name)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return nil, "", fmt.Errorf("import: %w", err)
			}
		default:
			return nil, "", fmt.Errorf("import: unexpected member %q", h.Name)
		}
	}
	if m == nil {
		return nil, "", fmt.Errorf("import: no manifest")
	}
	for _, h := range blobsOf(m) {
		if _, err := os.Stat(filepath.Join(dir, h)); err != nil {
			return nil, "", fmt.Errorf("import: blob %s is missing", h)
		}
	}
	return m, blobs, nil
}
