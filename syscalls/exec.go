package syscalls

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// The kernel reads at most BINPRM_BUF_SIZE bytes of a "#!" line and follows
// at most this many nested interpreters.
const (
	binprmBufSize  = 256
	maxInterpDepth = 4
)

var _ interpose.ProcessEvents = (*Kernel)(nil)

// Clone implements interpose.ProcessEvents.
func (k *Kernel) Clone(parent, child int, flags uint64) {
	k.Procs.Clone(parent, child, flags)
	tgid := parent
	if t := k.Procs.Thread(parent); t != nil && t.Proc != nil {
		tgid = t.Proc.Tgid
	}
	if k.FastRings != nil {
		k.FastRings.Clone(tgid, child, flags)
	}
	k.agentCwdsClone(tgid, child, flags)
	if k.Determ != nil {
		k.Determ.Clone(parent, child)
	}
}

// Execed implements interpose.ProcessEvents.
func (k *Kernel) Execed(tgid, formerTid int) {
	k.Procs.Execed(tgid, formerTid)
	k.agentCwdsLeft(tgid)
	if k.Determ != nil {
		k.Determ.Execed(tgid, formerTid)
		// The new image must read the clock through system calls, and
		// its C library's stack-protector and pointer-guard values
		// (AT_RANDOM) come from its seeded stream.
		var random [16]byte
		k.Determ.Random(tgid, random[:])
		if err := interpose.DeterminizeAuxv(tgid, random); err != nil {
			k.Logf("txexec: killed pid %d: cannot hide the vDSO from it (--deterministic): %v", tgid, err)
			unix.Kill(tgid, unix.SIGKILL)
		}
	}
}

// Exited implements interpose.ProcessEvents.
func (k *Kernel) Exited(tid int, ws unix.WaitStatus) {
	if k.FastRings != nil {
		k.FastRings.Exited(tid)
	}
	k.Programs.exited(tid)
	k.Procs.Exited(tid)
	k.agentCwdsLeft(tid)
	if k.Determ != nil {
		k.Determ.Exited(tid)
	}
}

// Exec implements interpose.ProcessEvents: it plans an execve/execveat. The
// path is resolved in the caller's view to a host file, which the kernel is
// given by a path ending in the name it was executed by (nameExec), so that
// the process is named as on Linux. Interpreter scripts
// are handled here rather than by the kernel, so that the script is opened
// by its interpreter through the caller's view under the name it was
// executed by (as Linux passes it), and the interpreter itself is looked up
// in the view.
func (k *Kernel) Exec(req *interpose.ExecRequest) interpose.ExecPlan {
	if k.FastRings != nil {
		k.FastRings.Drain()
	}
	k, err := k.serving(req.Tid)
	if err != nil {
		return interpose.ExecPlan{Errno: unix.EIO}
	}
	plan, err := k.planExec(req)
	name := "execve"
	if req.Nr == unix.SYS_EXECVEAT {
		name = "execveat"
	}
	if k.Trace != nil {
		path, _ := (interpose.Memory{Tid: req.Tid}).ReadPath(req.PathAddr)
		res := "= 0 (-> " + plan.Program + ")"
		if err != nil {
			res = FormatResult(-1, errnoOf(err), false)
		}
		k.Trace.line(req.Tid, fmt.Sprintf("%s(%q) %s", name, path, res))
	}
	if err != nil {
		e := errnoOf(err)
		if e == unix.EIO {
			k.Logf("txexec: internal error in %s of pid %d: %v", name, req.Tid, err)
		}
		return interpose.ExecPlan{Errno: e}
	}
	return plan
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}

func (k *Kernel) planExec(req *interpose.ExecRequest) (interpose.ExecPlan, error) {
	if req.Flags&^(unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW) != 0 {
		return interpose.ExecPlan{}, unix.EINVAL
	}
	path, err := req.ReadPath(req.PathAddr)
	if err != nil {
		return interpose.ExecPlan{}, err
	}
	t := k.Procs.Thread(req.Tid)
	if t == nil {
		return interpose.ExecPlan{}, fmt.Errorf("exec from unknown thread %d", req.Tid)
	}
	cred, err := t.Cred()
	if err != nil {
		return interpose.ExecPlan{}, err
	}
	cwd, root, umask := t.FS().Get()
	defer cwd.Release()
	defer root.Release()
	cl := &vfs.Caller{Tid: req.Tid, Tgid: t.Proc.Tgid, Cred: cred, Cwd: cwd.(*vfs.Handle), Root: root.(*vfs.Handle), Umask: umask}
	at := cl.Cwd
	var fdFile interpose.FileID // of the descriptor execveat(fd, "") executes
	if req.Dirfd != unix.AT_FDCWD && !strings.HasPrefix(path, "/") {
		fd, err := interpose.GetFD(req.Tid, int(req.Dirfd))
		if err != nil {
			return interpose.ExecPlan{}, err
		}
		var st unix.Stat_t
		if path == "" && unix.Fstat(fd, &st) == nil {
			fdFile = interpose.FileID{Dev: st.Dev, Ino: st.Ino}
		}
		h, err := k.View.HandleOf(cl, fd)
		if err != nil {
			unix.Close(fd)
			return interpose.ExecPlan{}, err
		}
		defer h.Release()
		at = h
	}
	// The name a script sees as its own: what was passed, or for
	// execveat(fd, "", AT_EMPTY_PATH) /dev/fd/N as Linux spells it. Through
	// a close-on-exec descriptor that name is gone once the interpreter
	// runs, so Linux refuses to run a script that way (binfmt_script,
	// BINPRM_FLAGS_PATH_INACCESSIBLE).
	s := execSubject{name: path, fd: -1}
	if path == "" {
		s.name = "/dev/fd/" + strconv.Itoa(int(req.Dirfd))
		s.fd = int(req.Dirfd)
		s.fdFile = fdFile
	} else if req.Dirfd != unix.AT_FDCWD && !strings.HasPrefix(path, "/") {
		s.name = "/dev/fd/" + strconv.Itoa(int(req.Dirfd)) + "/" + path
	}
	if req.Dirfd != unix.AT_FDCWD && !strings.HasPrefix(path, "/") {
		cloexec, err := interpose.CloseOnExec(req.Tid, int(req.Dirfd))
		if err != nil {
			return interpose.ExecPlan{}, err
		}
		s.nameGone = cloexec
	}
	plan, err := k.planExecFile(cl, at, path, int(req.Flags), s, 0)
	if err != nil {
		return interpose.ExecPlan{}, err
	}
	script := plan.ArgvPrefix != nil
	name := ""
	if path != "" || !script {
		name = k.execName(cl, path, req.Dirfd)
	}
	k.nameExec(&plan, path, name, script)
	return plan, nil
}

// execSubject is what an exec names, beyond the path resolved in the view.
type execSubject struct {
	// name is the name a script is given as its own.
	name string
	// nameGone says that name no longer exists once exec has closed the
	// close-on-exec descriptors.
	nameGone bool
	// fd is the caller's descriptor that is the program itself
	// (execveat AT_EMPTY_PATH), or -1.
	fd int
	// fdFile is the file fd is open on.
	fdFile interpose.FileID
}

func (k *Kernel) planExecFile(cl *vfs.Caller, at *vfs.Handle, path string, flags int, s execSubject, depth int) (interpose.ExecPlan, error) {
	exe, err := k.View.Executable(cl, at, path, flags)
	if err != nil {
		return interpose.ExecPlan{}, err
	}
	defer unix.Close(exe.FD)
	if exe.Path == "" {
		if s.fd < 0 {
			// Renamed or removed while it was being resolved.
			return interpose.ExecPlan{}, unix.ENOENT
		}
		// A memfd or an unlinked file: the kernel reaches it through the
		// caller's own descriptor, opened before exec closes it. Which
		// file that is when the kernel opens it is checked at
		// PTRACE_EVENT_EXEC against Expect, as for any path.
		exe.Path = "/proc/self/fd/" + strconv.Itoa(s.fd)
	} else if s.fd >= 0 && s.fdFile == (interpose.FileID{Dev: exe.Dev, Ino: exe.Ino}) {
		// The caller's descriptor is open on the very file the view
		// executes: the kernel is given it, as natively, with no walk of
		// the directories above the file, which the caller may not be
		// allowed to search (a wrapped program kept where only root can
		// reach it, docs/semantics.md §7).
		exe.Path = "/proc/self/fd/" + strconv.Itoa(s.fd)
	}
	head := make([]byte, binprmBufSize)
	n, _ := unix.Pread(exe.FD, head, 0)
	head = head[:max(n, 0)]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return interpose.ExecPlan{Path: exe.Path, Expect: interpose.FileID{Dev: exe.Dev, Ino: exe.Ino}}, nil
	}
	if depth >= maxInterpDepth {
		return interpose.ExecPlan{}, unix.ELOOP
	}
	interp, arg, err := parseShebang(head[2:])
	if err != nil {
		return interpose.ExecPlan{}, err
	}
	if s.nameGone {
		return interpose.ExecPlan{}, unix.ENOENT
	}
	plan, err := k.planExecFile(cl, cl.Cwd, interp, 0 /* flags */, execSubject{name: interp, fd: -1}, depth+1)
	if err != nil {
		return interpose.ExecPlan{}, err
	}
	// argv becomes: interpreter [arg] script-name original-argv[1:].
	prefix := []string{interp}
	if arg != "" {
		prefix = append(prefix, arg)
	}
	if plan.ArgvPrefix != nil {
		// A nested interpreter: its own prefix comes first, then ours
		// without the leading interpreter name it already supplied.
		prefix = append(plan.ArgvPrefix, prefix[1:]...)
	}
	plan.ArgvPrefix = append(prefix, s.name)
	return plan, nil
}

// parseShebang parses the rest of a "#!" line as binfmt_script does: the
// interpreter is the first word, the optional argument the rest of the line
// with surrounding blanks removed.
func parseShebang(b []byte) (interp, arg string, err error) {
	line, _, complete := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimLeft(line, " \t")
	if !complete && !bytes.ContainsAny(line, " \t") {
		// The interpreter name would be truncated.
		return "", "", unix.ENOEXEC
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 {
		return "", "", unix.ENOEXEC
	}
	i := bytes.IndexAny(line, " \t")
	if i < 0 {
		return string(line), "", nil
	}
	return string(line[:i]), string(bytes.Trim(line[i:], " \t")), nil
}
