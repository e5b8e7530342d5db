package txn

import (
	"fmt"
	"path/filepath"
	"strings"

	"txexec/internal/sysx"
	"txexec/store"
)

// SyncStaged makes durable, before the commit point, everything the
// write-through of ops will take from the staging areas (absolute paths):
// each staged regular file's data and attributes and each staged
// directory (fsync; the objects ops name in an area), each area's entries
// (fsync of the area) and each area's own entry (fsync of its parent).
// After it, a crash at any point of the write-through loses nothing that
// recovery needs. It makes one fsync per object instead of one syncfs(2)
// per file system: syncfs does not reach every file system (FUSE's but
// virtiofs), and on a failing disk it reports an error to one caller
// only, not necessarily this one.
//
// A symlink, FIFO or device is made durable by its area's fsync, with the
// entry that names it (it cannot be opened to fsync).
func SyncStaged(ops []store.RedoOp, areas []string) error {
	var targets []sysx.SyncTarget
	seen := map[string]bool{}
	add := func(t sysx.SyncTarget) {
		if !seen[t.Path] {
			seen[t.Path] = true
			targets = append(targets, t)
		}
	}
	inArea := func(p string) bool {
		for _, a := range areas {
			if strings.HasPrefix(p, a+"/") {
				return true
			}
		}
		return false
	}
	for _, op := range ops {
		for _, p := range []string{op.Src, op.Path} {
			if p != "" && inArea(p) {
				add(sysx.SyncTarget{Path: p})
			}
		}
	}
	for _, a := range areas {
		add(sysx.SyncTarget{Path: a, Dir: true})
		add(sysx.SyncTarget{Path: filepath.Dir(a), Dir: true})
	}
	if err := sysx.Sync(targets); err != nil {
		return fmt.Errorf("make the staged changes durable: %w", err)
	}
	return nil
}
