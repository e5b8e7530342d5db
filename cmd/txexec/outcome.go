package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// runOutcome is what a run produced, as --repeat and replay compare it.
type runOutcome struct {
	status         int
	stdout, stderr []byte
	changes        []string
}

// changesEnv names the file a child run writes its kept transaction's
// changes to (changesOf), one per line; it is txexec's, taken out of the
// environment before the command starts.
const changesEnv = "_TXEXEC_CHANGES_FILE"

// changesOf is kept transaction id's changes as --repeat and replay
// compare them: show's lines, then what each path it touched holds at the
// end — a regular file's contents by hash, with its mode and mtime; a
// symlink's target; a directory's mode and mtime; or absent.
func changesOf(st *store.Store, id int64) ([]string, error) {
	_, ops, err := st.Get(id)
	if err != nil {
		return nil, err
	}
	reads, err := st.Reads(id)
	if err != nil {
		return nil, err
	}
	areas, err := st.StagingAreas(id)
	if err != nil {
		return nil, err
	}
	r := replayOps(ops, reads, true, areas)
	out := append([]string(nil), r.lines...)
	paths := append([]string(nil), r.touched...)
	sort.Strings(paths)
	for _, p := range paths {
		out = append(out, p+": "+holding(r.content[p]))
	}
	return out, nil
}

// holding describes the object at path obj ("" for none).
func holding(obj string) string {
	if obj == "" {
		return "absent"
	}
	var st unix.Stat_t
	if err := unix.Lstat(obj, &st); err != nil {
		return "absent"
	}
	attrs := fmt.Sprintf("mode %04o mtime %d.%09d", st.Mode&0o7777, st.Mtim.Sec, st.Mtim.Nsec)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		b, err := os.ReadFile(obj)
		if err != nil {
			return "unreadable: " + err.Error()
		}
		return fmt.Sprintf("file sha256 %x %s", sha256.Sum256(b), attrs)
	case unix.S_IFLNK:
		t, _ := os.Readlink(obj)
		return "symlink -> " + t
	case unix.S_IFDIR:
		return "directory " + attrs
	}
	return fmt.Sprintf("type %o %s", st.Mode&unix.S_IFMT, attrs)
}

// writeChanges writes kept transaction id's changes to path.
func writeChanges(st *store.Store, id int64, path string) error {
	lines, err := changesOf(st, id)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// readChanges reads what writeChanges wrote.
func readChanges(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the child's changes: %w", err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
}
