package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// fileDiff is what show --diff compares for one path: the file that held
// it before the transaction and the one that holds it after ("" is
// /dev/null: absent).
type fileDiff struct {
	path    string
	oldFile string
	newFile string
}

// replay follows a transaction's redo ops in order, for describeOps:
// what holds each touched path at this point (a host path, a staged
// object, or "" for absent) and the lines said so far.
type replay struct {
	existed  map[string]bool
	recorded bool
	areas    []string
	content  map[string]string
	touched  []string
	lines    []string
}

func (r *replay) isStaged(p string) bool {
	for _, a := range r.areas {
		if strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}

// base is what held path before the transaction: the host path itself,
// or "" when absent.
func (r *replay) base(p string) string {
	if e, ok := r.existed[p]; ok || r.recorded {
		if e {
			return p
		}
		return ""
	}
	if _, err := os.Lstat(p); err == nil {
		return p
	}
	return ""
}

// current is what holds p at this point of the replay.
func (r *replay) current(p string) string {
	if r.isStaged(p) {
		return p
	}
	if c, ok := r.content[p]; ok {
		return c
	}
	return r.base(p)
}

func (r *replay) set(p, c string) {
	if _, ok := r.content[p]; !ok {
		r.touched = append(r.touched, p)
	}
	r.content[p] = c
}

func (r *replay) add(format string, a ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, a...))
}

// describeOp says, per kind of redo op, what the op did in a user's words
// and what it did to the contents of the paths it names. Every kind has
// an entry (TestDescribeOpCoversEveryKind).
var describeOp = map[store.OpKind]func(r *replay, op store.RedoOp){
	store.OpRename: describeRename,
	store.OpExchange: func(r *replay, op store.RedoOp) {
		r.add("exchange %s <-> %s", op.Src, op.Path)
		a, b := r.current(op.Src), r.current(op.Path)
		r.set(op.Src, b)
		r.set(op.Path, a)
	},
	store.OpLink: func(r *replay, op store.RedoOp) {
		r.add("link %s -> %s", op.Path, op.Src)
		r.set(op.Path, r.current(op.Src))
	},
	store.OpUnlink: func(r *replay, op store.RedoOp) {
		r.add("remove %s", op.Path)
		r.set(op.Path, "")
	},
	store.OpRmdir: func(r *replay, op store.RedoOp) {
		r.add("rmdir %s", op.Path)
		r.set(op.Path, "")
	},
	store.OpCopyData: func(r *replay, op store.RedoOp) {
		r.add("write %s (in place: it has other hard links)", op.Path)
		r.set(op.Path, op.Src)
	},
	store.OpSetattr: func(r *replay, op store.RedoOp) {
		if op.Attrs&(store.AttrUID|store.AttrGID) != 0 {
			uid, gid := "-", "-"
			if op.Attrs&store.AttrUID != 0 {
				uid = fmt.Sprint(op.UID)
			}
			if op.Attrs&store.AttrGID != 0 {
				gid = fmt.Sprint(op.GID)
			}
			r.add("chown %s:%s %s", uid, gid, op.Path)
		}
		if op.Attrs&store.AttrMode != 0 {
			r.add("chmod %04o %s", op.Mode&0o7777, op.Path)
		}
		if op.Attrs&store.AttrMtime != 0 {
			r.add("set mtime %s %s", op.Mtime.Time().UTC().Format("2006-01-02T15:04:05.000000000Z"), op.Path)
		} else if op.Attrs&store.AttrAtime != 0 {
			r.add("set atime %s", op.Path)
		}
	},
	store.OpSetxattr: func(r *replay, op store.RedoOp) {
		r.add("setxattr %s (%d bytes) %s", op.XattrName, len(op.XattrValue), op.Path)
	},
	store.OpRemovexattr: func(r *replay, op store.RedoOp) {
		r.add("removexattr %s %s", op.XattrName, op.Path)
	},
	store.OpAddFlags: func(r *replay, op store.RedoOp) {
		r.add("%s %s", op.Kind, op.Path)
	},
	store.OpClearFlags: func(r *replay, op store.RedoOp) {
		r.add("%s %s", op.Kind, op.Path)
	},
	store.OpFsyncDir: func(*replay, store.RedoOp) {}, // durability only: not a change
}

// describeRename: a host object moved, or a staged object placed (a
// create or a replace, named after the object's type).
func describeRename(r *replay, op store.RedoOp) {
	if !r.isStaged(op.Src) {
		r.add("rename %s -> %s", op.Src, op.Path)
		r.set(op.Path, r.current(op.Src))
		r.set(op.Src, "")
		return
	}
	verb := "create"
	if r.current(op.Path) != "" {
		verb = "replace"
	}
	var st unix.Stat_t
	obj := op.Src
	if unix.Lstat(obj, &st) != nil {
		obj = op.Path
		if unix.Lstat(obj, &st) != nil || st.Ino != op.Ino {
			st.Mode = 0 // unknown
		}
	}
	if st.Mode != 0 {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			verb = "mkdir"
		case unix.S_IFLNK:
			target, _ := os.Readlink(obj)
			r.add("%s symlink %s -> %s", verb, op.Path, target)
			r.set(op.Path, op.Src)
			return
		case unix.S_IFIFO:
			verb += " fifo"
		case unix.S_IFCHR, unix.S_IFBLK:
			verb += " device"
		case unix.S_IFSOCK:
			verb += " socket"
		}
	}
	r.add("%s %s", verb, op.Path)
	r.set(op.Path, op.Src)
}

// describeOps renders a transaction's redo operations, whose staged
// objects are in the staging directories areas, as the changes a user
// made ("create /x/y", "rename /a -> /b", "chmod 0644 /d", …), in order,
// and picks, per path whose contents the transaction replaced or removed,
// the files show --diff compares.
//
// reads (the read set, of which a committed transaction keeps the paths
// its ops name) tells a create from a replace: every host path an op names
// was looked up, so a path it does not hold was absent (inside a directory
// the transaction made). Without a read set (recorded says none was: a
// transaction recorded by an older txexec), the host is asked instead. An
// object's type comes from its staged object while staging exists, else
// from the host path once written through (when it is still the inode the
// op placed).
func describeOps(ops []store.RedoOp, reads []store.ReadRecord, recorded bool, areas []string) (lines []string, diffs []fileDiff) {
	r := replayOps(ops, reads, recorded, areas)
	// The diffs: per path, what held it before against what holds it at
	// the end, where either is a regular file the transaction wrote (a
	// staged one) or removed. Contents that merely moved to another path
	// are shown by the rename line.
	moved := map[string]bool{}
	for _, c := range r.content {
		if c != "" && !r.isStaged(c) {
			moved[c] = true
		}
	}
	for _, p := range r.touched {
		old, cur := r.base(p), r.content[p]
		if old == cur || cur != "" && !r.isStaged(cur) || cur == "" && moved[old] {
			continue
		}
		if !isRegular(old) || !isRegular(cur) {
			continue
		}
		diffs = append(diffs, fileDiff{path: p, oldFile: old, newFile: cur})
	}
	return r.lines, diffs
}

// replayOps follows ops in order (see describeOps).
func replayOps(ops []store.RedoOp, reads []store.ReadRecord, recorded bool, areas []string) *replay {
	r := &replay{existed: map[string]bool{}, recorded: recorded, areas: areas, content: map[string]string{}}
	for _, rec := range reads {
		r.existed[rec.Path] = rec.Exists
	}
	for _, op := range ops {
		if describe, ok := describeOp[op.Kind]; ok {
			describe(r, op)
		} else {
			// A kind this txexec does not know (a newer one's log).
			r.add("%s %s", op.Kind, op.Path)
		}
	}
	return r
}

// isRegular reports whether p is "" (absent) or a regular file.
func isRegular(p string) bool {
	if p == "" {
		return true
	}
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// maxDiffSize is the largest file show --diff compares line by line.
const maxDiffSize = 1 << 20

// writeFileDiff writes the unified diff of ch.oldFile against ch.newFile
// (either "" for absent), labelled with ch.path.
func writeFileDiff(w io.Writer, ch fileDiff) error {
	read := func(p string) ([]byte, error) {
		if p == "" {
			return nil, nil
		}
		return os.ReadFile(p)
	}
	a, err := read(ch.oldFile)
	if err != nil {
		return err
	}
	b, err := read(ch.newFile)
	if err != nil {
		return err
	}
	if bytes.Equal(a, b) {
		return nil
	}
	oldLabel, newLabel := ch.path, ch.path
	if ch.oldFile == "" {
		oldLabel = "/dev/null"
	}
	if ch.newFile == "" {
		newLabel = "/dev/null"
	}
	if isBinary(a) || isBinary(b) {
		_, err := fmt.Fprintf(w, "Binary files %s and %s differ\n", oldLabel, newLabel)
		return err
	}
	if _, err := fmt.Fprintf(w, "--- %s\n+++ %s\n", oldLabel, newLabel); err != nil {
		return err
	}
	_, err = io.WriteString(w, unifiedHunks(splitLines(a), splitLines(b), 3))
	return err
}

func isBinary(b []byte) bool {
	return len(b) > maxDiffSize || bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// splitLines splits b into lines, each with its "\n" (the last one may
// have none).
func splitLines(b []byte) []string {
	var lines []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, string(b))
			break
		}
		lines = append(lines, string(b[:i+1]))
		b = b[i+1:]
	}
	return lines
}

// edit is one line of a diff: ' ' kept, '-' removed, '+' added.
type edit struct {
	op   byte
	line string
}

// maxLCSCells bounds the table of the line-by-line comparison; beyond
// it the differing middle is shown as removed, then added.
const maxLCSCells = 4 << 20

// diffLines is a shortest edit script from a to b: common prefix and
// suffix, then a longest common subsequence of the middle.
func diffLines(a, b []string) []edit {
	var pre, suf []edit
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		pre = append(pre, edit{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		suf = append(suf, edit{' ', a[len(a)-1]})
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	out := pre
	n, m := len(a), len(b)
	if n*m > maxLCSCells {
		for _, l := range a {
			out = append(out, edit{'-', l})
		}
		for _, l := range b {
			out = append(out, edit{'+', l})
		}
	} else {
		// lcs[i][j]: the LCS length of a[i:] and b[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && a[i] == b[j]:
				out = append(out, edit{' ', a[i]})
				i, j = i+1, j+1
			case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
				out = append(out, edit{'+', b[j]})
				j++
			default:
				out = append(out, edit{'-', a[i]})
				i++
			}
		}
	}
	for k := len(suf) - 1; k >= 0; k-- {
		out = append(out, suf[k])
	}
	return out
}

// unifiedHunks renders the diff of a and b as unified-diff hunks with ctx
// lines of context.
func unifiedHunks(a, b []string, ctx int) string {
	edits := diffLines(a, b)
	var sb strings.Builder
	// Positions in a and b (0-based) before each edit.
	ai := make([]int, len(edits)+1)
	bi := make([]int, len(edits)+1)
	for k, e := range edits {
		ai[k+1], bi[k+1] = ai[k], bi[k]
		if e.op != '+' {
			ai[k+1]++
		}
		if e.op != '-' {
			bi[k+1]++
		}
	}
	for k := 0; k < len(edits); {
		if edits[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after
		// the last change that is at most 2*ctx kept lines further on.
		start := max(0, k-ctx)
		end := k
		for end < len(edits) {
			if edits[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(edits) && edits[run].op == ' ' {
				run++
			}
			if run == len(edits) || run-end > 2*ctx {
				end = min(len(edits), end+ctx)
				break
			}
			end = run
		}
		oldN, newN := ai[end]-ai[start], bi[end]-bi[start]
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(ai[start], oldN), hunkRange(bi[start], newN))
		for _, e := range edits[start:end] {
			sb.WriteByte(e.op)
			sb.WriteString(e.line)
			if !strings.HasSuffix(e.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return sb.String()
}

// hunkRange is "start,count" of a hunk header, 1-based, as diff -u
// writes it (an empty range names the line before it).
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
