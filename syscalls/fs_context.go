package syscalls

import (
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// Chdir implements chdir(2): the working directory is virtual (package
// proc); the kernel's idea of the tracee's cwd is never used.
func Chdir(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	return k.pathCall(c, unix.AT_FDCWD, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" {
			return 0, unix.ENOENT
		}
		return 0, k.setCwd(c, cl, at, path, 0 /* flags */)
	})
}

// Fchdir implements fchdir(2).
func Fchdir(k *Kernel, c *interpose.Call) interpose.Reply {
	return k.fdCall(c, c.Args[0].Int(), func(cl *vfs.Caller, h *vfs.Handle) (int64, error) {
		return 0, k.setCwd(c, cl, h, "", unix.AT_EMPTY_PATH)
	})
}

func (k *Kernel) setCwd(c *interpose.Call, cl *vfs.Caller, at *vfs.Handle, path string, flags int) error {
	d, err := k.View.Chdir(cl, at, path, flags)
	if err != nil {
		return err
	}
	t := k.Procs.Thread(c.Tid)
	if t == nil {
		d.Release()
		return unix.ESRCH
	}
	fs := t.FS()
	fs.SetCwd(d)
	k.cwdChanged(fs)
	return nil
}

// Chroot implements chroot(2).
func Chroot(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	return k.pathCall(c, unix.AT_FDCWD, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" {
			return 0, unix.ENOENT
		}
		d, err := k.View.Chroot(cl, at, path)
		if err != nil {
			return 0, err
		}
		t := k.Procs.Thread(c.Tid)
		if t == nil {
			d.Release()
			return 0, unix.ESRCH
		}
		t.FS().SetRoot(d)
		if k.AgentOff != nil {
			k.AgentOff(c.Tid)
		}
		return 0, nil
	})
}

// Getcwd implements getcwd(2): it returns the length including the NUL.
func Getcwd(k *Kernel, c *interpose.Call) interpose.Reply {
	bufAddr := c.Args[0].Pointer()
	size := c.Args[1].SizeT()
	return k.resolvedCall(c, unix.AT_FDCWD, "", func(cl *vfs.Caller, _ *vfs.Handle, _ string) (int64, error) {
		p, err := k.View.Getcwd(cl)
		if err != nil {
			return 0, err
		}
		b := append([]byte(p), 0)
		if uint64(len(b)) > size {
			return 0, unix.ERANGE
		}
		return int64(len(b)), c.Write(bufAddr, b)
	})
}

// Umask implements umask(2) by observation: the virtual umask (used for
// every file the supervisor creates) follows the register argument, and the
// kernel keeps its own in step.
func Umask(k *Kernel, c *interpose.Call) interpose.Reply {
	mask := c.Args[0].ModeT()
	if t := k.Procs.Thread(c.Tid); t != nil {
		t.FS().SetUmask(mask)
	}
	return interpose.Continue()
}

// CredsChanged observes the setuid family and capset: the thread's
// credentials are re-read at its next intercepted call.
func CredsChanged(k *Kernel, c *interpose.Call) interpose.Reply {
	if t := k.Procs.Thread(c.Tid); t != nil {
		t.CredsChanging()
	}
	return interpose.Continue()
}
