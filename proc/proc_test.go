package proc

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReadCredGoneOrInternal: a thread whose /proc entry is missing is
// gone (ESRCH); any other failure to read it is the supervisor's, an
// internal error that is not an errno (a handler answers errnos to the
// caller, who is alive).
func TestReadCredGoneOrInternal(t *testing.T) {
	c, err := ReadCred(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, uint32(os.Geteuid()), c.EUID)

	_, err = ReadCred(1 << 30) // above any pid_max
	assert.Equal(t, unix.ESRCH, err)

	err = goneOr(&os.PathError{Op: "open", Path: "/proc/1/status", Err: unix.EMFILE})
	var e unix.Errno
	assert.False(t, errors.As(err, &e), "not an errno: %v", err)
	assert.Contains(t, err.Error(), "too many open files")
}

// countedDir is a Dir that counts its references.
type countedDir struct{ refs *int }

func (d countedDir) Retain() Dir { *d.refs++; return d }
func (d countedDir) Release()    { *d.refs-- }

var _ Dir = countedDir{}

// joining is a Binding whose threads pass it on unless it says not to.
type joining struct {
	name     string
	children []int
	stay     bool
}

func (j *joining) Inherited(child int) Binding {
	j.children = append(j.children, child)
	if j.stay {
		return nil
	}
	return j
}

var _ Binding = (*joining)(nil)

// TestBindingAndFSMoves: a thread's binding goes to the threads and
// processes it creates (as its Inherited says), and a thread can move to
// another context, the old one released only when no thread uses it.
func TestBindingAndFSMoves(t *testing.T) {
	var procRefs, txRefs int
	procRefs, txRefs = 2, 2 // cwd and root
	tb := NewTable()
	root := tb.AddRoot(100, NewFS(countedDir{&procRefs}, countedDir{&procRefs}, 0o022))
	tb.Clone(100, 101, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_THREAD)
	assert.Nil(t, tb.Thread(101).Binding(), "no binding to inherit")

	tx := &joining{name: "tx"}
	worker := tb.Thread(101)
	worker.SetBinding(tx)
	outer := worker.SetFS(NewFS(countedDir{&txRefs}, countedDir{&txRefs}, 0o022))
	assert.Same(t, root.FS(), outer, "the thread moved; its process keeps the context")

	tb.Clone(101, 102, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_THREAD)
	tb.Clone(101, 200, uint64(unix.SIGCHLD))
	assert.Equal(t, []int{102, 200}, tx.children)
	assert.Same(t, tx, tb.Thread(102).Binding())
	assert.Same(t, tx, tb.Thread(200).Binding())
	assert.Same(t, worker.FS(), tb.Thread(102).FS(), "CLONE_FS shares the moved context")
	assert.Equal(t, 4, txRefs, "fork copied the moved context")

	tx.stay = true
	tb.Clone(101, 103, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_THREAD)
	assert.Nil(t, tb.Thread(103).Binding(), "Inherited said no")

	tb.Drop(outer)
	assert.Equal(t, 2, procRefs, "the process's context is still used")
	tb.Exited(102)
	tb.Exited(103)
	tb.Exited(200)
	assert.Equal(t, 2, txRefs, "the forked copy is released with its process, the shared one kept")
	inTx := worker.SetFS(outer)
	tb.Drop(inTx)
	assert.Equal(t, 0, txRefs, "the moved context is released once no thread uses it")
}

// TestSpaceFS: an address space has a working directory of its own while
// every thread of it uses one context that no other address space uses
// (docs/fastpath.md §4.5, rule 2).
func TestSpaceFS(t *testing.T) {
	const parent, child, other = 10, 11, 12
	tests := []struct {
		name  string
		flags uint64
		// whether the parent's and the child's address spaces have one,
		// after the clone, and after the child has exited or execed
		parentOwn, childOwn, execed, exited bool
	}{
		{"thread", unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_THREAD, true, true, true, true},
		{"thread without CLONE_FS", unix.CLONE_VM | unix.CLONE_THREAD, false, false, true, true},
		{"fork", uint64(unix.SIGCHLD), true, true, true, true},
		{"vfork", unix.CLONE_VM | unix.CLONE_VFORK, false, false, true, true},
		{"CLONE_FS", unix.CLONE_FS, false, false, false, true},
		{"CLONE_VM and CLONE_FS", unix.CLONE_VM | unix.CLONE_FS, true, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable()
			var refs int
			root := tb.AddRoot(parent, NewFS(countedDir{&refs}, countedDir{&refs}, 0o22))
			tb.Clone(parent, other, uint64(unix.SIGCHLD)) // a process of its own beside
			tb.Clone(parent, child, tt.flags)
			assert.Equal(t, tt.parentOwn, tb.SpaceFS(parent) != nil)
			assert.Equal(t, tt.childOwn, tb.SpaceFS(child) != nil)
			assert.NotNil(t, tb.SpaceFS(other))
			uses := tb.SpacesUsing(root.FS())
			if tt.flags&(unix.CLONE_FS|unix.CLONE_VM) == unix.CLONE_FS {
				assert.ElementsMatch(t, []int{parent, child}, uses)
			} else {
				assert.Len(t, uses, 1)
			}
			if tt.flags&unix.CLONE_THREAD == 0 {
				tb.Execed(child, child)
				assert.Equal(t, tt.execed, tb.SpaceFS(parent) != nil, "after the child's exec")
			}
			tb.Exited(child)
			assert.Equal(t, tt.exited, tb.SpaceFS(parent) != nil, "after the child's exit")
			assert.Nil(t, tb.SpaceFS(child))
		})
	}
}
