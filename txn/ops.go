package txn

import (
	"errors"
	"fmt"
	"path/filepath"

	"txexec/store"
)

// opKind is everything txn knows of one kind of redo op: the shape
// CheckOps requires of it, how Apply performs it, and what Preflight must
// find free of immutable and append-only flags. Adding a kind is one entry
// in opKinds plus its functions; TestOpKindsCoverStore fails until every
// store.OpKinds entry has one.
type opKind struct {
	// src: the op names a second path, Src (a staged object, or the host
	// object moved or linked).
	src bool
	// noIno: the op expects no inode (fsyncdir names a directory, whatever
	// is there at the end); every other op names the inode it expects,
	// which is what makes it idempotent.
	noIno bool
	// ino2: the op also expects an inode at Path (exchange).
	ino2 bool
	// attrs: the op carries attributes (Attrs and the fields it selects).
	attrs bool
	// xattr: the op names an extended attribute.
	xattr bool
	// check, when set, checks what the fields above cannot say.
	check func(op store.RedoOp) error
	// apply performs the op on the host, or says why it skipped it.
	apply func(a *applier, op store.RedoOp) (skipped string, err error)
	// touches says what the op changes on the host, for Preflight.
	touches func(op store.RedoOp) footprint
}

// footprint is what a redo op changes on the host: directories it adds
// or changes entries in, directories it removes an entry from, objects it
// changes, and a path whose object, if there, it replaces (which removes
// that object from its directory).
type footprint struct {
	dirsChanged, dirsShrunk, objects []string
	replaced                         string
}

var opKinds = map[store.OpKind]opKind{
	store.OpRename: {src: true, apply: (*applier).rename, touches: func(op store.RedoOp) footprint {
		return footprint{
			dirsChanged: []string{filepath.Dir(op.Src), filepath.Dir(op.Path)},
			dirsShrunk:  []string{filepath.Dir(op.Src)},
			objects:     []string{op.Src},
			replaced:    op.Path,
		}
	}},
	store.OpExchange: {src: true, ino2: true, apply: (*applier).exchange, touches: func(op store.RedoOp) footprint {
		return footprint{
			dirsChanged: []string{filepath.Dir(op.Src), filepath.Dir(op.Path)},
			dirsShrunk:  []string{filepath.Dir(op.Src), filepath.Dir(op.Path)},
			objects:     []string{op.Src},
			replaced:    op.Path,
		}
	}},
	store.OpLink: {src: true, apply: (*applier).link, touches: func(op store.RedoOp) footprint {
		return footprint{dirsChanged: []string{filepath.Dir(op.Path)}, objects: []string{op.Src}}
	}},
	store.OpUnlink:      {apply: (*applier).remove, touches: removes},
	store.OpRmdir:       {apply: (*applier).remove, touches: removes},
	store.OpSetattr:     {attrs: true, apply: (*applier).setattr, touches: changesObject},
	store.OpCopyData:    {src: true, apply: (*applier).copyData, touches: changesObject},
	store.OpSetxattr:    {xattr: true, apply: (*applier).xattr, touches: changesObject},
	store.OpRemovexattr: {xattr: true, apply: (*applier).xattr, touches: changesObject},
	store.OpAddFlags: {apply: (*applier).addFlags, check: func(op store.RedoOp) error {
		if op.Mode == 0 || op.Mode&^addableFlags != 0 {
			return fmt.Errorf("inode flags %#x are not immutable or append-only", op.Mode)
		}
		return nil
	}},
	store.OpClearFlags: {apply: (*applier).addFlags, check: func(op store.RedoOp) error {
		if op.Mode == 0 || op.Mode&^addableFlags != 0 {
			return fmt.Errorf("inode flags %#x are not immutable or append-only", op.Mode)
		}
		return nil
	}},
	store.OpFsyncDir: {noIno: true, apply: (*applier).fsyncDir},
}

// removes is the footprint of an unlink or rmdir.
func removes(op store.RedoOp) footprint {
	d := []string{filepath.Dir(op.Path)}
	return footprint{dirsChanged: d, dirsShrunk: d, objects: []string{op.Path}}
}

// changesObject is the footprint of an op that changes an object's data
// or attributes in place.
func changesObject(op store.RedoOp) footprint {
	return footprint{objects: []string{op.Path}}
}

// CheckOps reports the first malformed op in ops: an unknown kind, a path
// that is not absolute and clean, a missing inode or source. The committer
// checks the list before it enters the redo log, where a bad op would stop
// recovery for good.
func CheckOps(ops []store.RedoOp) error {
	for i, op := range ops {
		if err := checkOp(op); err != nil {
			return fmt.Errorf("redo op %d (%s %s): %w", i, op.Kind, op.Path, err)
		}
	}
	return nil
}

func checkOp(op store.RedoOp) error {
	k, ok := opKinds[op.Kind]
	if !ok {
		return errors.New("unknown kind")
	}
	if k.check != nil {
		if err := k.check(op); err != nil {
			return err
		}
	}
	paths := []string{op.Path}
	if k.src {
		paths = append(paths, op.Src)
	} else if op.Src != "" {
		return errors.New("unexpected source")
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return fmt.Errorf("path %q is not absolute and clean", p)
		}
	}
	if op.Ino == 0 && !k.noIno {
		return errors.New("no expected inode")
	}
	switch {
	case k.ino2 && op.Ino2 == 0:
		return errors.New("no expected inode at the path (Ino2)")
	case !k.ino2 && op.Ino2 != 0:
		return errors.New("second inode on an op on one object")
	case op.Attrs != 0 && !k.attrs:
		return errors.New("attributes on an op that sets none")
	case op.XattrName != "" && !k.xattr:
		return errors.New("extended attribute on an op that sets none")
	case op.XattrName == "" && k.xattr:
		return errors.New("no extended attribute name")
	}
	return nil
}
