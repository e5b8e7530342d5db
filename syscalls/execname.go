package syscalls

import (
	"crypto/rand"
	hexenc "encoding/hex"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// ExecLinks is a private directory of symlinks, through which exec hands
// the kernel a program under the name it was executed by. The kernel
// names the new image (/proc/PID/comm, what ps and pgrep show) after the
// last component of the path execve is given, while exec gives it the
// program's host path: /usr/bin/dash for /bin/sh, a staged object's name
// in the staging area, the interpreter for a script (whose comm is the
// script's name on Linux). When no host path to the program ends in that
// name, the kernel is given DIR/N/NAME, a symlink to the program's host
// path. The directory has an unguessable name and is searchable, never
// listable, by others (their processes exec through it; a symlink to a
// staged object must not reveal its name); only the supervisor writes in
// it, and PTRACE_EVENT_EXEC still checks which file the kernel executed.
//
// Most runs never need a link (a command found on PATH, /bin/sh given as
// such), and making the directory costs a mkdir and a scan of its parent
// for stale ones, about a millisecond of every start: LazyExecLinks makes
// it at the first link.
type ExecLinks struct {
	parent string
	once   sync.Once
	err    error // of making the directory
	dir    string
	// lock is a descriptor on dir, locked (flock) while it is in use: a
	// directory left behind by a txexec that was killed is unlocked, and
	// the next one made in the same place removes it.
	lock int
	seq  atomic.Uint64
}

// execLinksPrefix begins the directory's name.
const execLinksPrefix = "txexec-execnames-"

// staleExecLinksAge is how old an unlocked directory must be to be taken
// for one left behind: a new one is locked right after mkdir.
var staleExecLinksAge = time.Minute

// NewExecLinks makes the directory in parent: the transaction's staging
// directory, or for --passthrough the temporary directory.
func NewExecLinks(parent string) (*ExecLinks, error) {
	l := LazyExecLinks(parent)
	if err := l.make(); err != nil {
		return nil, err
	}
	return l, nil
}

// LazyExecLinks is NewExecLinks that makes the directory at the first
// link; that link fails if it cannot.
func LazyExecLinks(parent string) *ExecLinks { return &ExecLinks{parent: parent, lock: -1} }

// make makes the directory, once.
func (l *ExecLinks) make() error {
	l.once.Do(func() { l.dir, l.lock, l.err = makeExecLinksDir(l.parent) })
	return l.err
}

// makeExecLinksDir makes and locks a directory for ExecLinks in parent,
// removing first those that killed txexecs left there.
func makeExecLinksDir(parent string) (string, int, error) {
	removeStaleExecLinks(parent)
	var r [8]byte
	rand.Read(r[:])
	dir := filepath.Join(parent, execLinksPrefix+hexenc.EncodeToString(r[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", -1, err
	}
	lock, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Flock(lock, unix.LOCK_EX)
		if err != nil {
			unix.Close(lock)
		}
	}
	// Run as root, txexec supervises other users' processes, whose exec
	// walks this directory (as the staging directory's, store.stagingMode).
	if err == nil && os.Geteuid() == 0 {
		if err = os.Chmod(dir, 0o711); err != nil {
			unix.Close(lock)
		}
	}
	if err != nil {
		os.Remove(dir)
		return "", -1, err
	}
	return dir, lock, nil
}

// removeStaleExecLinks removes the directories of ExecLinks in parent that
// no txexec holds any more (it was killed), and that belong to this user.
func removeStaleExecLinks(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), execLinksPrefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		// One just made is not locked yet: only an old one can be stale.
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Geteuid() &&
			time.Since(time.Unix(st.Ctim.Unix())) > staleExecLinksAge &&
			unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(p)
		}
		unix.Close(fd)
	}
}

// Close removes the directory, if it was made, and every link left in it.
func (l *ExecLinks) Close() error {
	l.once.Do(func() { l.err = errors.New("closed") }) // none made from now on
	if l.dir == "" {
		return nil
	}
	err := os.RemoveAll(l.dir)
	unix.Close(l.lock)
	return err
}

// link makes a symlink named name to target and returns its path and what
// removes it.
func (l *ExecLinks) link(name, target string) (string, func(), error) {
	if err := l.make(); err != nil {
		return "", nil, err
	}
	sub := filepath.Join(l.dir, strconv.FormatUint(l.seq.Add(1), 10))
	if err := unix.Mkdir(sub, 0o711); err != nil {
		return "", nil, err
	}
	if err := unix.Chmod(sub, 0o711); err != nil { // whatever the umask
		unix.Rmdir(sub)
		return "", nil, err
	}
	p := sub + "/" + name
	if err := unix.Symlink(target, p); err != nil {
		unix.Rmdir(sub)
		return "", nil, err
	}
	return p, func() {
		unix.Unlink(p)
		unix.Rmdir(sub)
	}, nil
}

// execName is the name the kernel gives the image of execve(path) or
// execveat(dirfd, path) (kbasename of the file name), or for
// execveat(fd, "", AT_EMPTY_PATH) of a program the name of the file fd
// refers to (since Linux 6.14; in the view: a staged object has its view
// name). "" when it cannot be a file name. (For a script run through a
// descriptor Linux takes the name of the interpreter's file, the one the
// kernel is given anyway.)
func (k *Kernel) execName(cl *vfs.Caller, p string, dirfd int32) string {
	if p == "" {
		l, err := k.View.Readlink(cl, cl.Root, "/proc/self/fd/"+strconv.Itoa(int(dirfd)))
		if err != nil {
			return ""
		}
		p = strings.TrimSuffix(l, " (deleted)")
	}
	name := p[strings.LastIndexByte(p, '/')+1:]
	if name == "." || name == ".." {
		return ""
	}
	return name
}

// nameExec makes plan.Path a path whose last component is name and that
// leads to the program plan.Path names: plan.Path itself when its name is
// already that; the path as the caller gave it when it is absolute and the
// kernel finds there the very same file under the same host path (a
// symlink such as /bin/sh, outside any emulated chroot); else a symlink of
// k.ExecLinks. script says the program is the interpreter of a script
// that path names.
func (k *Kernel) nameExec(plan *interpose.ExecPlan, given, name string, script bool) {
	plan.Program = plan.Path
	if name == "" || path.Base(plan.Path) == name {
		return
	}
	if !script && sameHostFile(given, plan) {
		plan.Path = given
		return
	}
	if k.ExecLinks == nil {
		return
	}
	p, cleanup, err := k.ExecLinks.link(name, plan.Path)
	if err != nil {
		k.Logf("txexec: cannot name the program %s %q for the kernel (%v): its process is named %q", plan.Path, name, err, path.Base(plan.Path))
		return
	}
	plan.Path, plan.Cleanup = p, cleanup
}

// sameHostFile reports whether the absolute path p leads the kernel to the
// program of plan, as the same host path (so /proc/PID/exe is unchanged).
// Paths into /proc and /dev are left out: their "self" is the caller, not
// the supervisor.
func sameHostFile(p string, plan *interpose.ExecPlan) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/dev/") {
		return false
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || (interpose.FileID{Dev: st.Dev, Ino: st.Ino}) != plan.Expect {
		return false
	}
	hp, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && hp == plan.Path
}
