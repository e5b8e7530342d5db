package txn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/store"
	"txexec/vfs"
)

// UndoOptions configure Manager.Undo.
type UndoOptions struct {
	// Force undoes what can be undone when some paths were changed again
	// after the transaction: those, and everything above or below them,
	// are skipped (UndoResult.Skipped).
	Force bool
	// DryRun plans and validates, and changes nothing.
	DryRun bool
}

// ChangedPath is a path a transaction changed that was changed again
// after it: By is the later transaction that did (0: a process txexec did
// not supervise), What says how it differs from what the transaction left.
type ChangedPath struct {
	Path string
	By   int64
	What string
}

func (c ChangedPath) String() string {
	by := "by a process outside txexec"
	if c.By != 0 {
		by = fmt.Sprintf("by transaction %d", c.By)
	}
	return fmt.Sprintf("%s (%s, %s)", c.Path, c.What, by)
}

// UndoResult is what Manager.Undo did or, for a dry run, would do.
type UndoResult struct {
	// ID is the undo transaction (0 for a dry run, or when nothing was
	// left to undo).
	ID int64
	// Steps say, in order, what it puts back.
	Steps []string
	// Skipped are the paths --force left as they are.
	Skipped []ChangedPath
}

// UndoConflictError refuses an undo: paths the transaction changed were
// changed again after it. Nothing was applied.
type UndoConflictError struct {
	ID      int64
	Changed []ChangedPath
}

func (e *UndoConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transaction %d cannot be undone: %d of the paths it changed were changed again since", e.ID, len(e.Changed))
	for _, c := range e.Changed {
		b.WriteString("\n  " + c.String())
	}
	return b.String()
}

// UndoRefusedError is a transaction that cannot be undone at all, and why.
type UndoRefusedError struct {
	ID  int64
	Why string
}

func (e *UndoRefusedError) Error() string {
	return fmt.Sprintf("transaction %d cannot be undone: %s", e.ID, e.Why)
}

// undoStep is one step of an undo: the ops that put back one op of the
// transaction, the staged objects they need, and the paths they change.
type undoStep struct {
	desc  string
	ops   []store.RedoOp
	tail  []store.RedoOp // ops that go after every step (times of remade directories)
	stage []stageReq
	paths []string
}

// stageReq is an object the undo stages before its commit point: a hard
// link to a before-image, or a directory made anew.
type stageReq struct {
	name       string // in the undo's staging area on the mount
	mountPoint string // "" for the state directory's
	image      string // the before-image to link; "" for a directory
	// imageOf is the inode the before-image stands for: the object it
	// is, or the one it is a copy of (see keeping.copy and remake).
	imageOf uint64
	dir     *beforeImage
	// op is the index in ops of the op whose Src (and Ino) the staged
	// object fills in.
	op int
}

// Undo puts back what applied transaction id changed, as a new
// transaction that commits as any other (durable, crash-safe through the
// same redo log, and keeping before-images itself, so that undoing it
// redoes id). It first checks that every path id changed still holds
// what id left there; a path changed since, by a later transaction or
// from outside, refuses the undo with an *UndoConflictError (nothing is
// applied), unless opt.Force, which skips those paths. It checks again at
// the commit point, where a change that came meanwhile aborts it.
func (m *Manager) Undo(id int64, opt UndoOptions) (*UndoResult, error) {
	rec, ops, err := m.Store.Get(id)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.Undo.UndoneBy != 0:
		return nil, &UndoRefusedError{ID: id, Why: fmt.Sprintf("transaction %d undid it already", rec.Undo.UndoneBy)}
	case rec.State != store.StateApplied:
		return nil, &UndoRefusedError{ID: id, Why: "it is " + string(rec.State) + "; only a transaction written through can be undone"}
	case rec.Undo.State == store.UndoNone:
		return nil, &UndoRefusedError{ID: id, Why: "it kept no before-images (--undo=none, or made by a txexec without undo)"}
	case rec.Undo.State == store.UndoDropped:
		return nil, &UndoRefusedError{ID: id, Why: "its before-images were dropped (retention or txexec gc)"}
	}
	recs, err := loadRecords(m.Store, id, ops)
	if err != nil {
		return nil, fmt.Errorf("read the before-images of transaction %d: %w", id, err)
	}
	if !recs.ended {
		return nil, &UndoRefusedError{ID: id, Why: "its before-images are incomplete"}
	}
	for _, b := range recs.before {
		if b.Lost {
			return nil, &UndoRefusedError{ID: id, Why: "its before-images are incomplete: a power loss during its write-through lost the record of " +
				string(b.Kind) + " " + ops[b.N].Path}
		}
	}
	changed, err := m.changedSince(rec.Seq, recs.after)
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 && !opt.Force {
		return nil, &UndoConflictError{ID: id, Changed: changed}
	}
	steps, err := planUndo(ops, recs, changed)
	if err != nil {
		return nil, err
	}
	res := &UndoResult{Skipped: changed}
	for _, s := range steps {
		res.Steps = append(res.Steps, s.desc)
	}
	if opt.DryRun || len(steps) == 0 {
		return res, nil
	}
	return res, m.commitUndo(id, rec.Seq, recs.after, changed, steps, res)
}

// changedSince compares each path's after-state with the host and names
// what changed those that differ: the first transaction committed after
// commit seq whose write set has the path or one below it, else an
// outside process.
func (m *Manager) changedSince(seq int64, after []PathState) ([]ChangedPath, error) {
	var changed []ChangedPath
	for _, a := range after {
		now, err := StateOf(a.Path)
		if err != nil {
			return nil, err
		}
		if what := differs(a, now); what != "" {
			changed = append(changed, ChangedPath{Path: a.Path, What: what})
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	paths := make([]string, len(changed))
	for i, c := range changed {
		paths[i] = c.Path
	}
	by, err := m.Store.ChangedAfter(seq, paths)
	if err != nil {
		return nil, err
	}
	for i := range changed {
		changed[i].By = by[changed[i].Path]
	}
	return changed, nil
}

// differs says how now differs from the after-state a ("" when it does
// not).
func differs(a, now PathState) string {
	switch {
	case a.Exists && !now.Exists:
		return "removed"
	case !a.Exists && now.Exists:
		return "created"
	case !a.Exists:
		return ""
	case a.Ino != now.Ino || a.Type != now.Type:
		return "replaced"
	case a.Mode != now.Mode || a.UID != now.UID || a.GID != now.GID:
		return "attributes changed"
	case a.Size != now.Size || a.Mtime != now.Mtime:
		return "modified"
	}
	return ""
}

// related reports whether p is q or above or below it.
func related(p, q string) bool {
	return p == q || strings.HasPrefix(p, q+"/") || strings.HasPrefix(q, p+"/")
}

// planUndo builds the steps that put back the recorded ops of ops in
// reverse order, leaving out those that touch a changed path or one above
// or below it.
func planUndo(ops []store.RedoOp, recs records, changed []ChangedPath) ([]undoStep, error) {
	staged := func(p string) bool { return inAreas(recs.staging, p) }
	skip := func(paths []string) bool {
		for _, p := range paths {
			for _, c := range changed {
				if related(p, c.Path) {
					return true
				}
			}
		}
		return false
	}
	var steps []undoStep
	for i := len(recs.before) - 1; i >= 0; i-- {
		b := recs.before[i]
		if b.N >= len(ops) || ops[b.N].Kind != b.Kind {
			return nil, fmt.Errorf("the before-image records do not match the redo log (op %d)", b.N)
		}
		s, err := inverse(ops[b.N], &recs.before[i], staged)
		if err != nil {
			return nil, err
		}
		if len(s.ops) == 0 && len(s.tail) == 0 || skip(s.paths) {
			continue
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// inverse is the step that puts back op, whose before-image is b.
func inverse(op store.RedoOp, b *beforeImage, staged func(string) bool) (undoStep, error) {
	p := op.Path
	s := undoStep{paths: []string{p}}
	switch op.Kind {
	case store.OpRename:
		moved := !staged(op.Src)
		if moved {
			s.paths = append(s.paths, op.Src)
			s.ops = append(s.ops, store.RedoOp{Kind: store.OpRename, Src: p, Path: op.Src, Ino: op.Ino})
			s.desc = fmt.Sprintf("rename %s -> %s", p, op.Src)
		}
		switch {
		case b.Absent && moved:
		case b.Absent:
			kind, verb := store.OpUnlink, "remove"
			if b.Placed == unix.S_IFDIR {
				kind, verb = store.OpRmdir, "rmdir"
			}
			s.ops = append(s.ops, store.RedoOp{Kind: kind, Path: p, Ino: op.Ino})
			s.desc = verb + " " + p
		case b.Type == unix.S_IFDIR:
			s.remakeDir(p, b)
		default:
			s.putBack(p, b)
		}
	case store.OpExchange:
		s.paths = append(s.paths, op.Src)
		s.ops = []store.RedoOp{{Kind: store.OpExchange, Src: op.Src, Path: p, Ino: op.Ino2, Ino2: op.Ino}}
		s.desc = fmt.Sprintf("exchange %s <-> %s", op.Src, p)
	case store.OpLink:
		s.ops = []store.RedoOp{{Kind: store.OpUnlink, Path: p, Ino: op.Ino}}
		s.desc = "remove " + p
	case store.OpUnlink:
		s.putBack(p, b)
	case store.OpRmdir:
		s.remakeDir(p, b)
	case store.OpSetattr:
		s.ops = []store.RedoOp{{Kind: store.OpSetattr, Path: p, Ino: op.Ino, Attrs: op.Attrs,
			Mode: b.Mode, UID: b.UID, GID: b.GID, Atime: b.Atime, Mtime: b.Mtime}}
		s.desc = "put back the attributes of " + p
	case store.OpCopyData:
		s.ops = []store.RedoOp{{Kind: store.OpCopyData, Path: p, Ino: op.Ino}}
		s.stage = []stageReq{{name: "data-" + strconv.Itoa(b.N), mountPoint: b.MountPoint, image: b.Image, op: 0}}
		s.desc = "put back the contents of " + p
	case store.OpSetxattr, store.OpRemovexattr:
		if b.XattrAbsent {
			s.ops = []store.RedoOp{{Kind: store.OpRemovexattr, Path: p, Ino: op.Ino, XattrName: op.XattrName}}
		} else {
			s.ops = []store.RedoOp{{Kind: store.OpSetxattr, Path: p, Ino: op.Ino, XattrName: op.XattrName, XattrValue: b.XattrValue}}
		}
		s.desc = fmt.Sprintf("put back the extended attribute %s of %s", op.XattrName, p)
	case store.OpAddFlags:
		if f := op.Mode &^ b.Flags; f != 0 {
			s.ops = []store.RedoOp{{Kind: store.OpClearFlags, Path: p, Ino: op.Ino, Mode: f}}
			s.desc = "clear the inode flags of " + p
		}
	case store.OpClearFlags:
		if f := op.Mode & b.Flags; f != 0 {
			s.tail = []store.RedoOp{{Kind: store.OpAddFlags, Path: p, Ino: op.Ino, Mode: f}}
			s.desc = "set the inode flags of " + p
		}
	case store.OpFsyncDir:
	default:
		return s, fmt.Errorf("undo of a %s op is not known", op.Kind)
	}
	return s, nil
}

// putBack puts the before-image of the object b kept back at p, replacing
// what is there.
func (s *undoStep) putBack(p string, b *beforeImage) {
	s.stage = append(s.stage, stageReq{name: "image-" + strconv.Itoa(b.N), mountPoint: b.MountPoint, image: b.Image, imageOf: b.Ino, op: len(s.ops)})
	s.ops = append(s.ops, store.RedoOp{Kind: store.OpRename, Path: p})
	if s.desc == "" {
		s.desc = "put back " + p
	}
}

// remakeDir makes the directory b recorded anew at p (its inode cannot
// come back), with its owner, mode and extended attributes; its times
// are set once everything in it is back.
func (s *undoStep) remakeDir(p string, b *beforeImage) {
	s.stage = append(s.stage, stageReq{name: "dir-" + strconv.Itoa(b.N), mountPoint: b.MountPoint, dir: b, op: len(s.ops)})
	s.ops = append(s.ops, store.RedoOp{Kind: store.OpRename, Path: p})
	s.tail = append(s.tail, store.RedoOp{Kind: store.OpSetattr, Path: p, Attrs: store.AttrAtime | store.AttrMtime,
		Atime: b.Atime, Mtime: b.Mtime})
	if f := b.Flags & (store.FlagImmutable | store.FlagAppend); f != 0 {
		s.tail = append(s.tail, store.RedoOp{Kind: store.OpAddFlags, Path: p, Mode: f})
	}
	if s.desc == "" {
		s.desc = "mkdir " + p
	}
}

// commitUndo begins the undo transaction of id, stages what its steps
// need, and commits it, validating at the commit point that no
// transaction committed since it began, and no outside process, changed
// the paths it puts back.
func (m *Manager) commitUndo(id, seq int64, after []PathState, changed []ChangedPath, steps []undoStep, res *UndoResult) error {
	release, err := m.Store.LockCommits(store.LockShared)
	if err != nil {
		return err
	}
	defer release()
	t, err := m.Store.Begin(store.TxInfo{Command: []string{"txexec", "undo", strconv.FormatInt(id, 10)}, KeepUndo: true})
	if err != nil {
		return err
	}
	res.ID = t.ID
	fail := func(err error) error {
		m.abort(t.ID, err.Error())
		return &CommitError{Err: err}
	}
	areas := map[string]string{"": m.Store.StagingDir(t.ID)}
	var ops, tail []store.RedoOp
	var flagsFirst []store.RedoOp
	// A directory made anew, or an object put back from a copy, has a
	// new inode: the ops after it that expect the one it stands for
	// expect it instead.
	remade := map[uint64]uint64{}
	renumber := func(ops []store.RedoOp) {
		for i := range ops {
			if n, ok := remade[ops[i].Ino]; ok {
				ops[i].Ino = n
			}
			if n, ok := remade[ops[i].Ino2]; ok {
				ops[i].Ino2 = n
			}
		}
	}
	for _, s := range steps {
		renumber(s.ops)
		for _, r := range s.stage {
			area, ok := areas[r.mountPoint]
			if !ok {
				if area, err = m.Store.AddStagingArea(t.ID, r.mountPoint); err != nil {
					return fail(err)
				}
				areas[r.mountPoint] = area
			}
			path := filepath.Join(area, r.name)
			ino, err := stageForUndo(path, r)
			if err != nil {
				return fail(err)
			}
			s.ops[r.op].Src = path
			if s.ops[r.op].Kind == store.OpRename {
				// Placed: the op expects the staged object. A copy in
				// place expects the object at its path.
				s.ops[r.op].Ino = ino
			}
			for i := range s.tail {
				if s.tail[i].Path == s.ops[r.op].Path && s.tail[i].Ino == 0 {
					s.tail[i].Ino = ino
				}
			}
			if r.dir != nil && r.dir.Ino != 0 {
				remade[r.dir.Ino] = ino
			}
			if r.imageOf != 0 && r.imageOf != ino {
				remade[r.imageOf] = ino
			}
		}
		for _, op := range s.ops {
			if op.Kind == store.OpClearFlags {
				flagsFirst = append(flagsFirst, op)
			} else {
				ops = append(ops, op)
			}
		}
		tail = append(tail, s.tail...)
	}
	renumber(tail)
	// Times of remade directories after everything in them is back;
	// flags last of all, as CommitJournal orders them.
	sort.SliceStable(tail, func(i, j int) bool {
		return tail[i].Kind != store.OpAddFlags && tail[j].Kind == store.OpAddFlags
	})
	ops = append(append(flagsFirst, ops...), tail...)
	if err := CheckOps(ops); err != nil {
		return fail(fmt.Errorf("internal error: %w", err))
	}
	stagingAreas := make([]string, 0, len(areas))
	for _, a := range areas {
		stagingAreas = append(stagingAreas, a)
	}
	if m.Durable {
		if err := SyncStaged(ops, stagingAreas); err != nil {
			return fail(err)
		}
	}
	p := store.Prepared{Ops: ops, Writes: undoWrites(ops, stagingAreas), Undoes: id}
	touched := map[string]bool{}
	for _, g := range p.Writes {
		touched[g.Path] = true
	}
	validate := func(since []store.WriteSet) error {
		for _, ws := range since {
			for _, g := range ws.Granules {
				for path := range touched {
					if related(g.Path, path) {
						return &vfs.ConflictError{Path: g.Path, Reason: fmt.Sprintf("changed by transaction %d, committed while the undo was prepared", ws.TxID)}
					}
				}
			}
		}
		now, err := m.changedSince(seq, after)
		if err != nil {
			return err
		}
		for _, c := range now {
			if !skipped(changed, c.Path) {
				return &vfs.ConflictError{Path: c.Path, Reason: c.What + " while the undo was prepared"}
			}
		}
		return Preflight(p.Ops)
	}
	return m.commit(t.ID, p, p, validate, true, m.abort, nil)
}

func skipped(changed []ChangedPath, p string) bool {
	for _, c := range changed {
		if c.Path == p {
			return true
		}
	}
	return false
}

// undoWrites is the write set of an undo: every host path its ops name is
// an entry changed (its name made, removed or made to name another
// object), which is what the transactions that read them must conflict
// with.
func undoWrites(ops []store.RedoOp, areas []string) []store.Granule {
	seen := map[string]bool{}
	var out []store.Granule
	for _, op := range ops {
		for _, p := range []string{op.Path, op.Src} {
			if p == "" || seen[p] {
				continue
			}
			inArea := false
			for _, a := range areas {
				inArea = inArea || strings.HasPrefix(p, a+"/")
			}
			if !inArea {
				seen[p] = true
				out = append(out, store.Granule{Kind: vfs.GranuleEntry, Path: p})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// stageForUndo makes r's object at path in the undo's staging area and
// returns its inode: a hard link to the before-image, or a directory
// with the recorded owner, mode, extended attributes and inode flags
// (but immutable and append-only, set at the end).
func stageForUndo(path string, r stageReq) (uint64, error) {
	if r.dir == nil {
		if err := unix.Linkat(unix.AT_FDCWD, r.image, unix.AT_FDCWD, path, 0); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return 0, fmt.Errorf("the before-image %s is gone", r.image)
			}
			return 0, &os.LinkError{Op: "link", Old: r.image, New: path, Err: err}
		}
	} else {
		b := r.dir
		if err := unix.Mkdir(path, 0o700); err != nil {
			return 0, &os.PathError{Op: "mkdir", Path: path, Err: err}
		}
		if err := unix.Lchown(path, int(b.UID), int(b.GID)); err != nil {
			return 0, &os.PathError{Op: "chown", Path: path, Err: err}
		}
		if err := unix.Chmod(path, b.Mode); err != nil {
			return 0, &os.PathError{Op: "chmod", Path: path, Err: err}
		}
		for name, v := range b.Xattrs {
			if err := unix.Lsetxattr(path, name, v, 0); err != nil {
				return 0, &os.PathError{Op: "setxattr " + name, Path: path, Err: err}
			}
		}
		if f := b.Flags &^ (store.FlagImmutable | store.FlagAppend); f != 0 {
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				_, err = sysx.ChangeInodeFlags(fd, f, 0)
				unix.Close(fd)
			}
			if err != nil && !sysx.NoInodeFlags(err) {
				return 0, &os.PathError{Op: "set inode flags of", Path: path, Err: err}
			}
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st.Ino, nil
}

// FileChange is one regular file a transaction changed, for show --diff:
// the file that held its contents before (a before-image; "" when it was
// absent) and the one that holds them now ("" when it is absent).
type FileChange struct {
	Path, Old, New string
}

// ChangedFiles returns, per path whose contents applied transaction id
// replaced, removed or made, in the order of its ops, the before-image
// and the host file that holds what id left there: for show --diff of a
// transaction whose before-images are kept. A path changed since id by
// anything is left out (what holds it is no longer what id left).
func ChangedFiles(s *store.Store, id int64, ops []store.RedoOp) ([]FileChange, error) {
	recs, err := loadRecords(s, id, ops)
	if err != nil {
		return nil, err
	}
	if !recs.ended {
		return nil, fmt.Errorf("the before-images of transaction %d are incomplete", id)
	}
	after := map[string]PathState{}
	for _, a := range recs.after {
		after[a.Path] = a
	}
	first := map[string]*beforeImage{}
	var order []string
	for i := range recs.before {
		b := &recs.before[i]
		if b.N >= len(ops) {
			continue
		}
		p := ops[b.N].Path
		if _, ok := first[p]; !ok {
			first[p] = b
			order = append(order, p)
		}
	}
	var out []FileChange
	for _, p := range order {
		b := first[p]
		a, ok := after[p]
		if !ok {
			continue
		}
		now, err := StateOf(p)
		if err != nil || differs(a, now) != "" {
			continue
		}
		fc := FileChange{Path: p}
		if op := ops[b.N]; op.Kind == store.OpRename && b.Absent && !inAreas(recs.staging, op.Src) {
			continue // moved there: show's rename line says it
		}
		switch {
		case b.Image != "" && b.Type == unix.S_IFREG:
			fc.Old = b.Image
		case b.Absent || b.Kind == store.OpRename && b.Type != unix.S_IFDIR:
		default:
			continue // not a file's contents (attributes, directories)
		}
		if a.Exists {
			if a.Type != unix.S_IFREG {
				continue
			}
			fc.New = p
		}
		if fc.Old == "" && fc.New == "" {
			continue
		}
		out = append(out, fc)
	}
	return out, nil
}

// inAreas reports whether p is in one of the staging areas.
func inAreas(areas []string, p string) bool {
	for _, a := range areas {
		if strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}
