package vfs

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/proc"
)

// fastEnv is a view with the fast path's tree, and one process's ring.
type fastEnv struct {
	*env
	tree *fastlookup.Tree
	ring *fastlookup.Ring
}

func newFastEnv(t *testing.T, build func(dir string)) *fastEnv {
	t.Helper()
	dir := t.TempDir()
	if build != nil {
		build(dir)
	}
	return newFastEnvOver(t, dir)
}

// newFastEnvOver is newFastEnv over an existing host tree dir (two views
// of the same tree).
func newFastEnvOver(t *testing.T, dir string) *fastEnv {
	t.Helper()
	tree, err := fastlookup.NewTree()
	require.NoError(t, err)
	t.Cleanup(tree.Close)
	tree.Enable(true)
	ring, err := fastlookup.NewRing()
	require.NoError(t, err)
	t.Cleanup(ring.Close)
	host, err := NewHost()
	require.NoError(t, err)
	v, err := NewTx(host, t.TempDir(), TxOptions{FastLookups: tree})
	require.NoError(t, err)
	t.Cleanup(v.Close)
	cwd, err := v.OpenDir(dir)
	require.NoError(t, err)
	root, err := v.OpenDir("/")
	require.NoError(t, err)
	c := &Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root, Umask: 0o022}
	return &fastEnv{env: &env{t: t, dir: dir, v: v, c: c, host: host}, tree: tree, ring: ring}
}

// abs is the absolute path of a path of the test's tree.
func (e *fastEnv) abs(p string) string { return filepath.Join(e.dir, p) }

// agentStat is what the agent does for an lstat of path (fastlookup.h): it
// decides on the shared memory, makes the call natively and records what
// it observed with the generation it read first. ok is false when the
// agent would forward the call.
func (e *fastEnv) agentStat(path string) (rec fastlookup.Record, ok bool) {
	gen, ok := e.tree.Decide(path)
	if !ok {
		return rec, false
	}
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	rec = fastlookup.Record{Generation: gen, Nr: unix.SYS_NEWFSTATAT, Path: path}
	if err != nil {
		rec.Result = -int64(err.(unix.Errno))
		return rec, true
	}
	if e.tree.ObjectChanged(st.Dev, st.Ino) {
		return rec, false
	}
	rec.Observed = true
	rec.Dev, rec.Ino, rec.Mode, rec.UID, rec.GID, rec.Size = st.Dev, st.Ino, st.Mode, st.Uid, st.Gid, st.Size
	rec.Mtime, rec.Ctime = st.Mtim, st.Ctim
	return rec, true
}

// mustAgentStat is agentStat for a call the agent must take.
func (e *fastEnv) mustAgentStat(path string) fastlookup.Record {
	e.t.Helper()
	rec, ok := e.agentStat(path)
	require.True(e.t, ok, "the agent takes %s", path)
	return rec
}

// feed appends recs to the ring and drains it into the view.
func (e *fastEnv) feed(recs ...fastlookup.Record) error {
	e.t.Helper()
	for i := range recs {
		require.True(e.t, e.ring.Append(&recs[i]))
	}
	n, err := e.v.FeedFastLookups(e.ring)
	if err == nil {
		assert.Equal(e.t, len(recs), n)
	}
	return err
}

func (e *fastEnv) readOf(path string) (readRecord, bool) {
	e.v.mu.Lock()
	defer e.v.mu.Unlock()
	r, ok := e.v.reads[path]
	return r, ok
}

// readSet is a copy of the view's read set.
func (e *fastEnv) readSet() map[string]readRecord {
	e.v.mu.Lock()
	defer e.v.mu.Unlock()
	return maps.Clone(e.v.reads)
}

func fastTree(dir string) {
	for _, d := range []string{"d/a/b/c", "d/empty", "e"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for _, f := range []string{"d/f", "d/g", "d/a/b/c/h", "e/x"} {
		must(os.WriteFile(filepath.Join(dir, f), []byte("data of "+f), 0o644))
	}
	must(os.Link(filepath.Join(dir, "e/x"), filepath.Join(dir, "e/y")))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// TestFastDirsFromWalks: the directories a walk goes through become fast,
// with their identity, and the agent takes a lookup in them.
func TestFastDirsFromWalks(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, ok := e.tree.Decide(e.abs("d/f"))
	assert.False(t, ok, "d was not walked yet")
	_, err := e.v.Stat(e.c, e.c.Root, e.abs("d/a/b/c/h"), unix.AT_SYMLINK_NOFOLLOW)
	require.NoError(t, err)
	for _, d := range []string{"/", e.dir, e.abs("d"), e.abs("d/a/b/c")} {
		assert.True(t, e.tree.IsFastDir(d), d)
	}
	e.mustAgentStat(e.abs("d/f"))
	e.mustAgentStat(e.abs("d/a/b/c/h"))
	_, ok = e.tree.Decide("/proc/self/status")
	assert.False(t, ok, "never under /proc")
	_, err = e.v.Stat(e.c, e.c.Root, "/proc/self/status", 0)
	require.NoError(t, err)
	assert.False(t, e.tree.IsFastDir("/proc"))
	assert.False(t, e.tree.IsFastDir("/proc/self"))
}

// TestFastLinksFromWalks: a symlink the view followed is published for
// the agent (Tree.AddLink) with the path it leads to, in the middle of a
// path and at its end, relative or absolute; not one it did not follow,
// nor one whose target goes through another symlink; and a symlink the
// transaction replaced is not followed by the agent any more.
func TestFastLinksFromWalks(t *testing.T) {
	e := newFastEnv(t, func(dir string) {
		fastTree(dir)
		must(os.Symlink("d", filepath.Join(dir, "l")))
		must(os.Symlink(filepath.Join(dir, "d/a"), filepath.Join(dir, "al")))
		must(os.Symlink("d/f", filepath.Join(dir, "fl")))
		must(os.Symlink("l/a", filepath.Join(dir, "via")))
		must(os.Symlink("d/g", filepath.Join(dir, "nf")))
		must(os.Symlink("via", filepath.Join(dir, "ol")))
		must(os.Symlink("fl", filepath.Join(dir, "cl")))
	})
	stat := func(p string, flags int) {
		t.Helper()
		_, err := e.v.Stat(e.c, e.c.Root, e.abs(p), flags)
		require.NoError(t, err, p)
	}
	stat("l/f", unix.AT_SYMLINK_NOFOLLOW)
	stat("al/b", unix.AT_SYMLINK_NOFOLLOW)
	stat("fl", 0)
	stat("via/b", unix.AT_SYMLINK_NOFOLLOW)
	stat("nf", unix.AT_SYMLINK_NOFOLLOW)
	stat("ol", 0)
	stat("cl", 0)
	for link, want := range map[string]string{"l": e.abs("d"), "al": e.abs("d/a"), "fl": e.abs("d/f"), "cl": e.abs("fl")} {
		got, ok := e.tree.Link(e.abs(link))
		assert.True(t, ok, link)
		assert.Equal(t, want, got, link)
	}
	_, ok := e.tree.Link(e.abs("via"))
	assert.False(t, ok, "a target through another symlink")
	_, ok = e.tree.Link(e.abs("nf"))
	assert.False(t, ok, "a symlink not followed")
	_, ok = e.tree.Link(e.abs("ol"))
	assert.False(t, ok, "a symlink to one not published")
	p, ok := e.tree.Resolve(e.abs("cl"), true)
	require.True(t, ok)
	assert.Equal(t, e.abs("d/f"), p, "a chain")

	p, ok = e.tree.Resolve(e.abs("l/a/b"), false)
	require.True(t, ok)
	assert.Equal(t, e.abs("d/a/b"), p)
	e.mustAgentStat(p)

	require.NoError(t, e.v.Unlink(e.c, e.c.Root, e.abs("l"), 0))
	require.NoError(t, e.v.Symlink(e.c, "e", e.c.Root, e.abs("l")))
	_, ok = e.tree.Resolve(e.abs("l/x"), false)
	assert.False(t, ok, "the transaction replaced the symlink: forwarded")
	p, ok = e.tree.Resolve(e.abs("al/b"), false)
	assert.True(t, ok, "another symlink still followed")
	assert.Equal(t, e.abs("d/a/b"), p)
}

// TestPublicationBeforeChange: every kind of change is in the changed set,
// published with a new generation, by the time the view's call returns —
// the agent forwards lookups of what changed, and only of that.
func TestPublicationBeforeChange(t *testing.T) {
	cases := []struct {
		name      string
		change    func(e *fastEnv) error
		changed   []string // the agent must forward these
		unchanged []string // and may still take these
	}{
		{"create", func(e *fastEnv) error {
			e.create("d/new", "x", 0o644)
			return nil
		}, []string{"d/new", "d"}, []string{"d/f", "d/a/b/c/h"}},
		{"unlink", func(e *fastEnv) error { return e.v.Unlink(e.c, e.c.Cwd, "d/f", 0) },
			[]string{"d/f", "d"}, []string{"d/g"}},
		{"mkdir", func(e *fastEnv) error { return e.v.Mkdir(e.c, e.c.Cwd, "d/m", 0o755) },
			[]string{"d/m", "d/m/x"}, []string{"d/g"}},
		{"symlink", func(e *fastEnv) error { return e.v.Symlink(e.c, "f", e.c.Cwd, "d/s") },
			[]string{"d/s"}, []string{"d/f"}},
		{"rename", func(e *fastEnv) error { return e.v.Rename(e.c, e.c.Cwd, "d/f", e.c.Cwd, "e/f2", 0) },
			[]string{"d/f", "e/f2", "d", "e"}, []string{"d/g", "e/x"}},
		{"chmod", func(e *fastEnv) error { return e.v.Chmod(e.c, e.c.Cwd, "d/f", 0o600, 0) },
			[]string{"d/f"}, []string{"d/g"}},
		{"chmod of a directory", func(e *fastEnv) error { return e.v.Chmod(e.c, e.c.Cwd, "d/a", 0o700, 0) },
			[]string{"d/a", "d/a/b/c/h"}, []string{"d/g"}},
		{"utimens", func(e *fastEnv) error {
			return e.v.Utimens(e.c, e.c.Cwd, "d/g", &[2]unix.Timespec{{Sec: 1}, {Sec: 2}}, 0)
		}, []string{"d/g"}, []string{"d/f"}},
		{"open for writing", func(e *fastEnv) error {
			fd, err := e.v.Open(e.c, e.c.Cwd, "d/g", OpenHow{Flags: unix.O_WRONLY})
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, []string{"d/g"}, []string{"d/f"}},
		{"setxattr", func(e *fastEnv) error {
			return e.v.Setxattr(e.c, e.c.Cwd, "d/g", XattrOp{}, "user.k", []byte("v"), 0)
		}, []string{"d/g"}, []string{"d/f"}},
		{"truncate", func(e *fastEnv) error { return e.v.Truncate(e.c, e.c.Cwd, "d/g", 1) },
			[]string{"d/g"}, []string{"d/f"}},
		{"rmdir", func(e *fastEnv) error { return e.v.Unlink(e.c, e.c.Cwd, "d/empty", unix.AT_REMOVEDIR) },
			[]string{"d/empty", "d/empty/x", "d"}, []string{"d/f"}},
		{"link", func(e *fastEnv) error { return e.v.Link(e.c, e.c.Cwd, "d/f", e.c.Cwd, "d/l", 0) },
			[]string{"d/l", "d/f"}, []string{"d/g"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newFastEnv(t, fastTree)
			for _, p := range []string{"d/a/b/c/h", "d/g", "e/x"} {
				_, err := e.v.Stat(e.c, e.c.Cwd, p, 0)
				require.NoError(t, err)
			}
			for _, p := range append(append([]string{}, c.changed...), c.unchanged...) {
				if _, err := os.Lstat(e.abs(p)); err == nil && p != "d" && p != "e" && p != "d/a" {
					e.mustAgentStat(e.abs(p))
				}
			}
			before := e.tree.Generation()
			require.NoError(t, c.change(e))
			after := e.tree.Generation()
			assert.Greater(t, after, before, "the change published a generation")
			for _, p := range c.changed {
				gen, ok := e.tree.Decide(e.abs(p))
				assert.False(t, ok, "the agent must forward %s", p)
				at, changed := e.tree.ChangedAt(e.abs(p))
				assert.True(t, changed, p)
				assert.True(t, at > before && at <= gen, "%s changed at %d, between %d and %d", p, at, before, gen)
			}
			for _, p := range c.unchanged {
				_, ok := e.tree.Decide(e.abs(p))
				assert.True(t, ok, "the agent still takes %s", p)
			}
		})
	}
}

// TestPublicationOfOtherNames: a file the transaction changed by one name
// is in the changed objects, so that the agent forwards a lookup by a hard
// link the view never saw; and a record that claims it anyway dooms.
func TestPublicationOfOtherNames(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "e/x", 0)
	require.NoError(t, err)
	early := e.mustAgentStat(e.abs("e/y"))
	require.NoError(t, e.v.Chmod(e.c, e.c.Cwd, "e/x", 0o600, 0))
	_, ok := e.tree.Decide(e.abs("e/y"))
	require.True(t, ok, "the path e/y itself is unchanged")
	_, ok = e.agentStat(e.abs("e/y"))
	assert.False(t, ok, "the object it names is changed: forwarded")

	require.NoError(t, e.feed(early), "observed before the chmod: a read before the change")
	assert.NoError(t, e.v.Doomed())

	late := early
	late.Generation = e.tree.Generation()
	require.NoError(t, e.feed(late))
	require.Error(t, e.v.Doomed())
	assert.Contains(t, e.v.Doomed().Error(), "after the transaction changed it")
}

// TestGenerationOrder: each change publishes a generation after the last;
// a path's change generation lies between the generation a lookup read
// before the call that changed it and the one after.
func TestGenerationOrder(t *testing.T) {
	e := newFastEnv(t, fastTree)
	var gens []uint64
	for _, name := range []string{"n1", "n2", "n3"} {
		before := e.tree.Generation()
		e.create("d/"+name, "", 0o644)
		at, ok := e.tree.ChangedAt(e.abs("d/" + name))
		require.True(t, ok)
		assert.Greater(t, at, before)
		assert.LessOrEqual(t, at, e.tree.Generation())
		gens = append(gens, at)
	}
	assert.IsIncreasing(t, gens)
	g := e.tree.Generation()
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/n1", 0)
	require.NoError(t, err)
	assert.Equal(t, g, e.tree.Generation(), "a lookup publishes nothing")
}

// TestRenameInvalidatesFastDirsBelow: renaming a directory removes the
// fast directories at and under its old name; none appears under the new
// one.
func TestRenameInvalidatesFastDirsBelow(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/a/b/c/h", 0)
	require.NoError(t, err)
	for _, d := range []string{"d/a", "d/a/b", "d/a/b/c"} {
		require.True(t, e.tree.IsFastDir(e.abs(d)), d)
	}
	e.mustAgentStat(e.abs("d/a/b/c/h"))
	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "d/a", e.c.Cwd, "d/z", 0))
	for _, d := range []string{"d/a", "d/a/b", "d/a/b/c"} {
		assert.False(t, e.tree.IsFastDir(e.abs(d)), d)
	}
	_, err = e.v.Stat(e.c, e.c.Cwd, "d/z/b/c/h", 0)
	require.NoError(t, err)
	for _, d := range []string{"d/z", "d/z/b", "d/z/b/c"} {
		assert.False(t, e.tree.IsFastDir(e.abs(d)), d)
	}
	for _, p := range []string{"d/a/b/c/h", "d/z/b/c/h"} {
		_, ok := e.tree.Decide(e.abs(p))
		assert.False(t, ok, p)
	}
	assert.True(t, e.tree.IsFastDir(e.abs("d")), "the parent keeps its unchanged entries")
}

// TestFeedUnchangedPath: a record of an unchanged path adds the read to the
// read set with what the caller observed; validation then catches a later
// change on the host.
func TestFeedUnchangedPath(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/g", 0) // walks d
	require.NoError(t, err)
	rec := e.mustAgentStat(e.abs("d/f"))
	absent := e.mustAgentStat(e.abs("d/nothing"))
	require.Equal(t, -int64(unix.ENOENT), absent.Result)
	_, had := e.readOf(e.abs("d/f"))
	require.False(t, had, "the view never read d/f itself")

	require.NoError(t, e.feed(rec, absent))
	require.NoError(t, e.v.Doomed())
	r, ok := e.readOf(e.abs("d/f"))
	require.True(t, ok)
	assert.True(t, r.exists)
	assert.True(t, r.meta, "a stat reads the attributes")
	assert.Equal(t, FileID{Dev: rec.Dev, Ino: rec.Ino}, r.id)
	assert.Equal(t, rec.Size, r.size)
	r, ok = e.readOf(e.abs("d/nothing"))
	require.True(t, ok)
	assert.False(t, r.exists)
	require.NoError(t, e.v.Validate(nil))

	must(os.WriteFile(e.abs("d/f"), []byte("changed by another process"), 0o644))
	var conflict *ConflictError
	require.ErrorAs(t, e.v.Validate(nil), &conflict)
	assert.Equal(t, e.abs("d/f"), conflict.Path)

	must(os.WriteFile(e.abs("d/f"), []byte("data of d/f"), 0o644)) // same size again; mtime moved
	require.ErrorAs(t, e.v.Validate(nil), &conflict)

	e2 := newFastEnv(t, fastTree)
	_, err = e2.v.Stat(e2.c, e2.c.Cwd, "d/g", 0)
	require.NoError(t, err)
	require.NoError(t, e2.feed(e2.mustAgentStat(e2.abs("d/nothing"))))
	must(os.WriteFile(e2.abs("d/nothing"), nil, 0o644))
	require.ErrorAs(t, e2.v.Validate(nil), &conflict, "created after the transaction found it absent")
}

// TestFeedAfterHostChangeDooms: the host changed between the agent's call
// and the feed: the view names another object there (or none), or another
// version of the one it read; the transaction is doomed at once.
func TestFeedAfterHostChangeDooms(t *testing.T) {
	cases := []struct {
		name   string
		before func(e *fastEnv) // the view's reads, before the agent's
		host   func(e *fastEnv) // another process, after the agent's call
		path   string
	}{
		{"replaced", nil, func(e *fastEnv) {
			must(os.WriteFile(e.abs("d/f.new"), []byte("new"), 0o644))
			must(os.Rename(e.abs("d/f.new"), e.abs("d/f")))
		}, "d/f"},
		{"removed", nil, func(e *fastEnv) { must(os.Remove(e.abs("d/f"))) }, "d/f"},
		{"created", nil, func(e *fastEnv) { must(os.WriteFile(e.abs("d/nothing"), nil, 0o644)) }, "d/nothing"},
		{"swapped for a symlink", nil, func(e *fastEnv) {
			must(os.Remove(e.abs("d/f")))
			must(os.Symlink("g", e.abs("d/f")))
		}, "d/f"},
		{"modified after the view read it", func(e *fastEnv) {
			_, err := e.v.Stat(e.c, e.c.Cwd, "d/f", 0)
			require.NoError(e.t, err)
			must(os.Chmod(e.abs("d/f"), 0o600)) // the agent will see this
		}, nil, "d/f"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newFastEnv(t, fastTree)
			_, err := e.v.Stat(e.c, e.c.Cwd, "d/g", 0)
			require.NoError(t, err)
			if c.before != nil {
				c.before(e)
			}
			rec := e.mustAgentStat(e.abs(c.path))
			if c.host != nil {
				c.host(e)
			}
			require.NoError(t, e.feed(rec))
			require.Error(t, e.v.Doomed())
			assert.Contains(t, e.v.Doomed().Error(), "changed on the host while the transaction read it")
			assert.Contains(t, e.v.Doomed().Error(), e.abs(c.path))
		})
	}
}

// TestFeedReadBeforeChange: a record whose generation precedes the
// transaction's change of its path is a read of the host before the
// change: kept in the read set, not compared with the view's new state;
// one at or after the change's generation dooms (the agent had to forward).
func TestFeedReadBeforeChange(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/g", 0)
	require.NoError(t, err)
	rec := e.mustAgentStat(e.abs("d/f"))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "d/f", 0))
	newRec := e.mustAgentStat(e.abs("d/g")) // unchanged: fed normally alongside
	require.NoError(t, e.feed(rec, newRec))
	require.NoError(t, e.v.Doomed())
	r, ok := e.readOf(e.abs("d/f"))
	require.True(t, ok)
	assert.True(t, r.exists, "the read of the host before the unlink")
	assert.Equal(t, FileID{Dev: rec.Dev, Ino: rec.Ino}, r.id)
	assert.True(t, r.meta)
	require.NoError(t, e.v.Validate(nil))
	must(os.Chmod(e.abs("d/f"), 0o600))
	var conflict *ConflictError
	require.ErrorAs(t, e.v.Validate(nil), &conflict, "validated like any read")

	// A record of the host object that disagrees with the read the view
	// made before the change: another process changed it in between.
	e = newFastEnv(t, fastTree)
	_, err = e.v.Stat(e.c, e.c.Cwd, "d/f", 0)
	require.NoError(t, err)
	must(os.Chmod(e.abs("d/f"), 0o600))
	rec = e.mustAgentStat(e.abs("d/f"))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "d/f", 0))
	require.NoError(t, e.feed(rec))
	assert.Error(t, e.v.Doomed())

	// After the change: doomed.
	e = newFastEnv(t, fastTree)
	_, err = e.v.Stat(e.c, e.c.Cwd, "d/g", 0)
	require.NoError(t, err)
	rec = e.mustAgentStat(e.abs("d/f"))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "d/f", 0))
	rec.Generation = e.tree.Generation()
	require.NoError(t, e.feed(rec))
	require.Error(t, e.v.Doomed())
	assert.Contains(t, e.v.Doomed().Error(), "after the transaction changed it")
}

// TestFeedMalformed: a record the agent never writes is rejected: not fed,
// and the transaction is doomed (the program wrote its ring itself).
func TestFeedMalformed(t *testing.T) {
	cases := []struct {
		name string
		edit func(e *fastEnv, r *fastlookup.Record)
	}{
		{"relative path", func(e *fastEnv, r *fastlookup.Record) { r.Path = r.Path[1:] }},
		{"dot-dot", func(e *fastEnv, r *fastlookup.Record) { r.Path = e.dir + "/d/a/../f" }},
		{"not a lookup", func(e *fastEnv, r *fastlookup.Record) { r.Nr = unix.SYS_UNLINKAT }},
		{"generation from the future", func(e *fastEnv, r *fastlookup.Record) { r.Generation = e.tree.Generation() + 1 }},
		{"identity of a failure", func(e *fastEnv, r *fastlookup.Record) { r.Result = -int64(unix.ENOENT) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newFastEnv(t, fastTree)
			_, err := e.v.Stat(e.c, e.c.Cwd, "d/g", 0)
			require.NoError(t, err)
			rec := e.mustAgentStat(e.abs("d/f"))
			c.edit(e, &rec)
			err = e.feed(rec)
			var bad *fastlookup.MalformedError
			require.ErrorAs(t, err, &bad)
			require.Error(t, e.v.Doomed())
			assert.Contains(t, e.v.Doomed().Error(), "malformed fast-lookup record")
			_, ok := e.readOf(e.abs("d/f"))
			assert.False(t, ok, "nothing of it reached the read set")
		})
	}
}

// TestFeedReadlink: readlink made as an lstat (EINVAL for a non-symlink)
// records the entry, not the attributes.
// TestFeedReadlinkChangedDirectory: a readlink of a directory the
// transaction made an entry in (its own attributes changed) reads only its
// type: fed without a conflict, and without a read of its attributes; one
// whose name changed before the record was to be forwarded: doomed.
func TestFeedReadlinkChangedDirectory(t *testing.T) {
	e := newFastEnv(t, fastTree)
	d := e.abs("d")
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/f", 0)
	require.NoError(t, err)
	var dst unix.Stat_t
	require.NoError(t, unix.Lstat(d, &dst))
	require.NoError(t, e.v.Symlink(e.c, "f", e.c.Cwd, "d/new"))
	_, selfChanged := e.tree.ChangedAt(d)
	require.True(t, selfChanged, "an entry made in d changes its attributes")
	_, nameChanged := e.tree.NameChangedAt(d)
	require.False(t, nameChanged)
	rec := fastlookup.Record{Generation: e.tree.Generation(), Nr: unix.SYS_READLINK, Path: d, Result: -int64(unix.EINVAL),
		Observed: true, Dev: dst.Dev, Ino: dst.Ino, Mode: dst.Mode, UID: dst.Uid, GID: dst.Gid, Size: dst.Size, Mtime: dst.Mtim, Ctime: dst.Ctim}
	require.NoError(t, e.feed(rec))
	require.NoError(t, e.v.Doomed())
	r, ok := e.readOf(d)
	require.True(t, ok)
	assert.False(t, r.meta, "no attribute read")

	stat := rec
	stat.Nr, stat.Result = unix.SYS_NEWFSTATAT, 0
	require.NoError(t, e.feed(stat))
	assert.Error(t, e.v.Doomed(), "a stat of it was the agent's to forward")

	e2 := newFastEnv(t, fastTree)
	_, err = e2.v.Stat(e2.c, e2.c.Cwd, "d/a/b", 0)
	require.NoError(t, err)
	var bst unix.Stat_t
	require.NoError(t, unix.Lstat(e2.abs("d/a/b"), &bst))
	require.NoError(t, e2.v.Rename(e2.c, e2.c.Cwd, "d/a", e2.c.Cwd, "d/z", 0))
	rec = fastlookup.Record{Generation: e2.tree.Generation(), Nr: unix.SYS_READLINK, Path: e2.abs("d/a/b"), Result: -int64(unix.EINVAL),
		Observed: true, Dev: bst.Dev, Ino: bst.Ino, Mode: bst.Mode, Mtime: bst.Mtim, Ctime: bst.Ctim}
	require.NoError(t, e2.feed(rec))
	assert.Error(t, e2.v.Doomed(), "a directory renamed away before the record")
}

func TestFeedReadlink(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/g", 0)
	require.NoError(t, err)
	rec := e.mustAgentStat(e.abs("d/f"))
	rec.Nr, rec.Result = unix.SYS_READLINK, -int64(unix.EINVAL)
	require.NoError(t, e.feed(rec))
	require.NoError(t, e.v.Doomed())
	r, ok := e.readOf(e.abs("d/f"))
	require.True(t, ok)
	assert.True(t, r.exists)
	assert.False(t, r.meta)
	assert.Equal(t, uint32(unix.S_IFREG), r.typ)
}

// TestAgentConcurrentWithChanges runs an agent (in a goroutine, on the
// shared memory alone) while the view changes the paths it looks up and
// the supervisor drains its ring: every record is either a read before a
// change or of an unchanged path, so the transaction must never be doomed
// (the host does not change). Run with -race, it checks the protocol's
// ordering too.
func TestAgentConcurrentWithChanges(t *testing.T) {
	e := newFastEnv(t, fastTree)
	for _, p := range []string{"d/f", "d/g", "e/x", "d/a/b/c/h"} {
		_, err := e.v.Stat(e.c, e.c.Cwd, p, 0)
		require.NoError(t, err)
	}
	paths := []string{e.abs("d/f"), e.abs("d/g"), e.abs("e/x"), e.abs("e/y"), e.abs("d/n1"), e.abs("d/a/b/c/h")}
	stop := make(chan struct{})
	done := make(chan struct{})
	var taken atomic.Int64
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if rec, ok := e.agentStat(paths[i%len(paths)]); ok && e.ring.Append(&rec) {
				taken.Add(1)
			}
		}
	}()
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); <-done }) }
	defer halt()
	changes := []func() error{
		func() error { return e.v.Unlink(e.c, e.c.Cwd, "d/f", 0) },
		func() error { e.create("d/n1", "new", 0o644); return nil },
		func() error { return e.v.Rename(e.c, e.c.Cwd, "d/g", e.c.Cwd, "e/g2", 0) },
		func() error { return e.v.Chmod(e.c, e.c.Cwd, "e/x", 0o600, 0) },
		func() error { return e.v.Rename(e.c, e.c.Cwd, "d/a", e.c.Cwd, "e/a", 0) },
	}
	fed := 0
	for _, change := range changes {
		// Let the agent take a few lookups before each change (some
		// path of the list is unchanged until the last one).
		last := taken.Load()
		for i := 0; taken.Load() < last+5; i++ {
			require.Less(t, i, 1_000_000, "the agent takes no lookup")
			n, err := e.v.FeedFastLookups(e.ring)
			require.NoError(t, err)
			fed += n
			runtime.Gosched()
		}
		require.NoError(t, change())
	}
	halt()
	n, err := e.v.FeedFastLookups(e.ring)
	require.NoError(t, err)
	fed += n
	assert.Equal(t, int(taken.Load()), fed, "every record the agent published was fed")
	assert.NoError(t, e.v.Doomed())
	require.NoError(t, e.v.Validate(nil))
}

// TestFeedRelative: a record of a name looked up relative to a fast
// directory's descriptor is fed as the record of the name's path there;
// one relative to a directory the tree never offered is malformed.
func TestFeedRelative(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "d/g", 0) // walks d: a fast directory
	require.NoError(t, err)
	var dst unix.Stat_t
	must(unix.Stat(e.abs("d"), &dst))
	gen, ok := e.tree.DecideAt(dst.Dev, dst.Ino, "f")
	require.True(t, ok, "d is a fast directory by identity")
	rec := e.mustAgentStat(e.abs("d/f"))
	rec.Generation, rec.Path, rec.Relative, rec.DirDev, rec.DirIno = gen, "f", true, dst.Dev, dst.Ino
	require.NoError(t, e.feed(rec))
	require.NoError(t, e.v.Doomed())
	r, ok := e.readOf(e.abs("d/f"))
	require.True(t, ok, "read as d/f")
	assert.True(t, r.meta)
	assert.Equal(t, FileID{Dev: rec.Dev, Ino: rec.Ino}, r.id)

	e2 := newFastEnv(t, fastTree)
	rec.DirIno++ // no fast directory
	err = e2.feed(rec)
	var bad *fastlookup.MalformedError
	require.ErrorAs(t, err, &bad)
	assert.Contains(t, bad.Why, "no fast directory")
	require.Error(t, e2.v.Doomed())
}

// TestFeedDescriptor: the record of a fstat of a descriptor is read as the
// view would serve it: the object it knows by that identity, or by the
// descriptor's path when it knows none; a descriptor of an object the
// transaction changed, recorded after the change, dooms it.
func TestFeedDescriptor(t *testing.T) {
	e := newFastEnv(t, fastTree)
	_, err := e.v.Stat(e.c, e.c.Cwd, "d", 0) // walks d, not d/f
	require.NoError(t, err)
	rec := e.mustAgentStat(e.abs("d/f"))
	rec.Descriptor = true
	require.NoError(t, e.feed(rec))
	require.NoError(t, e.v.Doomed())
	r, ok := e.readOf(e.abs("d/f"))
	require.True(t, ok, "found by the descriptor's path")
	assert.True(t, r.data, "the stat of an open descriptor reads the data (statGranules)")
	assert.False(t, r.meta)

	// A chmod by another process changes nothing a reader of the data
	// read: a later fstat that sees it dooms nothing; a stat of the path,
	// which reads the attributes, does.
	must(os.Chmod(e.abs("d/f"), 0o600))
	again := e.mustAgentStat(e.abs("d/f"))
	again.Descriptor = true
	require.NoError(t, e.feed(again))
	require.NoError(t, e.v.Doomed(), "a chmod is no change of the data")
	require.NoError(t, e.v.Validate(nil))
	byPath := e.mustAgentStat(e.abs("d/f"))
	require.NoError(t, e.feed(byPath))
	require.Error(t, e.v.Doomed(), "the attributes read now are not those of the first read")
	must(os.Chmod(e.abs("d/f"), 0o644))

	e = newFastEnv(t, fastTree)
	_, err = e.v.Stat(e.c, e.c.Cwd, "d", 0)
	require.NoError(t, err)
	other := e.mustAgentStat(e.abs("d/g"))
	other.Descriptor, other.Path = true, e.abs("d/f") // a path that names another object
	require.NoError(t, e.feed(other))
	_, ok = e.readOf(e.abs("d/g"))
	assert.False(t, ok, "nothing known of it: the host would have answered")
	require.NoError(t, e.v.Doomed())

	late := e.mustAgentStat(e.abs("d/f"))
	late.Descriptor = true
	fd, err := e.v.Open(e.c, e.c.Cwd, "d/f", OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND})
	require.NoError(t, err) // staged: the object changed
	unix.Close(fd)
	late.Generation = e.tree.Generation() // as if made after the change
	require.NoError(t, e.feed(late))
	require.Error(t, e.v.Doomed())
	assert.Contains(t, e.v.Doomed().Error(), "a fast lookup read a descriptor of an object the transaction changed")
}

// TestNativeFstatIsTheViews: the agent answers the fstat of a descriptor of
// an object in the natives table itself (fastlookup.h step 5); so for
// every such object, after every kind of change, the view's stat of the
// descriptor must be the kernel's fstat, field for field. The files the
// transaction created or staged are in it; a file linked, renamed,
// unlinked, one whose ctime alone changed, a hard-linked host file and an
// O_TMPFILE file are not (their stat in the view is not their object's).
func TestNativeFstatIsTheViews(t *testing.T) {
	e := newFastEnv(t, func(dir string) {
		fastTree(dir)
		must(os.Link(filepath.Join(dir, "d/g"), filepath.Join(dir, "d/g2")))
	})
	// native fstats fd as the agent does and reports whether the agent
	// answers it; when it does, the view's answer must be the same.
	native := func(fd int, what string) bool {
		t.Helper()
		var st unix.Stat_t
		require.NoError(t, unix.Fstat(fd, &st))
		if !e.tree.NativeFstat(st.Dev, st.Ino) {
			return false
		}
		assert.True(t, e.tree.ObjectChanged(st.Dev, st.Ino), "%s: an own object is a changed one", what)
		dup, err := unix.Dup(fd)
		require.NoError(t, err)
		h, err := e.v.HandleOf(e.c, dup)
		require.NoError(t, err)
		defer h.Release()
		readsBefore := e.readSet()
		view, err := e.v.Stat(e.c, h, "", unix.AT_EMPTY_PATH)
		require.NoError(t, err)
		assert.Equal(t, view, st, "%s: the view's stat is the kernel's fstat", what)
		assert.Equal(t, readsBefore, e.readSet(), "%s: the view's stat records nothing, nor does the agent", what)
		return true
	}
	open := func(path string, flags int) int {
		t.Helper()
		fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: uint64(flags), Mode: 0o640})
		require.NoError(t, err, path)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}

	made := open("d/new", unix.O_CREAT|unix.O_RDWR)
	assert.True(t, native(made, "created"))
	_, err := unix.Write(made, []byte("some data"))
	require.NoError(t, err)
	assert.True(t, native(made, "written"))
	require.NoError(t, unix.Ftruncate(made, 3))
	assert.True(t, native(made, "truncated by descriptor"))
	require.NoError(t, e.v.Truncate(e.c, e.c.Cwd, "d/new", 100000))
	assert.True(t, native(made, "truncated by path"))
	require.NoError(t, e.v.Chmod(e.c, e.c.Cwd, "d/new", 0o600, 0))
	assert.True(t, native(made, "chmod"))
	require.NoError(t, e.v.Chown(e.c, e.c.Cwd, "d/new", 1234, 5678, 0))
	assert.True(t, native(made, "chown"))
	require.NoError(t, e.v.Utimens(e.c, e.c.Cwd, "d/new", &[2]unix.Timespec{{Sec: 5}, {Sec: 6, Nsec: 7}}, 0))
	assert.True(t, native(made, "utimensat"))
	again := open("d/new", unix.O_RDONLY)
	assert.True(t, native(again, "a second descriptor"))

	staged := open("d/f", unix.O_WRONLY|unix.O_APPEND)
	assert.True(t, native(staged, "a host file staged"))
	_, err = unix.Write(staged, []byte("more"))
	require.NoError(t, err)
	assert.True(t, native(staged, "a host file staged and written"))

	require.NoError(t, e.v.Link(e.c, e.c.Cwd, "d/new", e.c.Cwd, "d/new2", 0))
	assert.False(t, native(made, "linked"), "the view's ctime and link count")
	renamed := open("d/r", unix.O_CREAT|unix.O_RDWR)
	require.True(t, native(renamed, "created"))
	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "d/r", e.c.Cwd, "d/r2", 0))
	assert.False(t, native(renamed, "renamed"), "the view's ctime")
	gone := open("d/u", unix.O_CREAT|unix.O_RDWR)
	require.True(t, native(gone, "created"))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "d/u", 0))
	assert.False(t, native(gone, "unlinked"), "the view's link count, 0")
	touched := open("d/c", unix.O_CREAT|unix.O_RDWR)
	require.True(t, native(touched, "created"))
	require.NoError(t, e.v.Chown(e.c, e.c.Cwd, "d/c", ^uint32(0), ^uint32(0), 0))
	assert.False(t, native(touched, "chown to -1, -1"), "only the view's ctime moves")
	linked := open("d/g", unix.O_WRONLY|unix.O_APPEND)
	assert.False(t, native(linked, "a hard-linked host file staged"), "the view keeps its link count")
	tmp, err := e.v.Open(e.c, e.c.Cwd, "d", OpenHow{Flags: unix.O_TMPFILE | unix.O_RDWR, Mode: 0o600})
	require.NoError(t, err)
	defer unix.Close(tmp)
	assert.False(t, native(tmp, "O_TMPFILE"))
	host, err := unix.Open(e.abs("e/x"), unix.O_RDONLY, 0)
	require.NoError(t, err)
	defer unix.Close(host)
	assert.False(t, native(host, "a host file"))
}

// TestNativeFstatConcurrentWithChanges: an agent that fstats a file of
// the view's own in a loop, and answers natively while the natives table
// has it (checked after the call, as the agent does), never answers with
// what the view would not have: each change that sets the view's answer
// apart (a link: the link count and the view's ctime; a rename; an
// unlink) drops the file before the kernel's object changes, so every
// native answer is the one from before the first change.
func TestNativeFstatConcurrentWithChanges(t *testing.T) {
	e := newFastEnv(t, fastTree)
	fd, err := e.v.Open(e.c, e.c.Cwd, "d/new", OpenHow{Flags: unix.O_CREAT | unix.O_RDWR, Mode: 0o644})
	require.NoError(t, err)
	defer unix.Close(fd)
	var before unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &before))
	require.True(t, e.tree.NativeFstat(before.Dev, before.Ino))

	stop := make(chan struct{})
	done := make(chan struct{})
	var native, wrong atomic.Int64
	var bad atomic.Pointer[unix.Stat_t]
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || !e.tree.NativeFstat(st.Dev, st.Ino) {
				continue
			}
			native.Add(1)
			if st != before {
				wrong.Add(1)
				bad.Store(&st)
			}
		}
	}()
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); <-done }) }
	defer halt()
	for i := 0; native.Load() < 100; i++ {
		require.Less(t, i, 1_000_000, "the agent answers no fstat natively")
		runtime.Gosched()
	}
	require.NoError(t, e.v.Link(e.c, e.c.Cwd, "d/new", e.c.Cwd, "d/new2", 0))
	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "d/new", e.c.Cwd, "e/new3", 0))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "e/new3", 0))
	after := native.Load()
	for i := 0; i < 1000; i++ {
		runtime.Gosched()
	}
	halt()
	assert.Zero(t, wrong.Load(), "a native answer the view would not have given: %+v", bad.Load())
	assert.False(t, e.tree.NativeFstat(before.Dev, before.Ino))
	assert.LessOrEqual(t, native.Load(), after+1, "none after the changes (one may have checked before the last)")
}
