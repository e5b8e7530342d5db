package interpose

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StubEnv marks a re-executed txexec as the init stub. The binary's main (and
// a test binary's TestMain) calls RunStubIfRequested first thing.
const StubEnv = "_TXEXEC_STUB"

// stubUmaskEnv carries the command's umask to the stub.
const stubUmaskEnv = "_TXEXEC_UMASK"

// stubFixedAddressesEnv asks the stub to turn address-space layout
// randomization off (Config.FixedAddresses).
const stubFixedAddressesEnv = "_TXEXEC_FIXED_ADDRESSES"

// addrNoRandomize is ADDR_NO_RANDOMIZE (include/uapi/linux/personality.h).
const addrNoRandomize = 0x0040000

// stubProgramFDEnv carries the number of the descriptor of
// Config.Program.
const stubProgramFDEnv = "_TXEXEC_PROGFD"

// stubNoatimeEnv asks the stub, started in a mount namespace of its own,
// to make every mount there update no atime (SharedMemory.NativeOpens).
const stubNoatimeEnv = "_TXEXEC_NOATIME"

// stubSockEnv carries the number of the stub's control socket descriptor,
// the first above the descriptors the command inherits.
const stubSockEnv = "_TXEXEC_SOCK"

// InheritedFDs are the descriptors from 3 up that txexec itself inherited
// and passes on to the command: the ones open without FD_CLOEXEC (everything txexec opens
// has it), indexed from 3 for syscall.ProcAttr.Files, with -1 where a
// number is free or close-on-exec (closed in the stub, as exec would).
func InheritedFDs() []uintptr {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		fds = append(fds, fd)
	}
	slices.Sort(fds)
	var out []uintptr
	for _, fd := range fds {
		for len(out) < fd-3 {
			out = append(out, ^uintptr(0))
		}
		out = append(out, uintptr(fd))
	}
	return out
}

// RunStubIfRequested turns the process into the stub when it was started as
// one, and never returns in that case.
func RunStubIfRequested() {
	if os.Getenv(StubEnv) != "1" {
		return
	}
	runtime.LockOSThread()
	var err error
	if os.Getenv(stubPidNSEnv) == "1" {
		err = pidNSInit()
	} else {
		err = stubMain()
	}
	fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
	os.Exit(127)
}

// stubMain is the child side of the start-up handshake, on one locked OS
// thread:
//  1. read the BPF program from the control socket (the command is argv);
//  2. install the filter on this thread (NEW_LISTENER | WAIT_KILLABLE_RECV);
//  3. send the listener and this thread's id back (SCM_RIGHTS);
//  4. wait until the supervisor has ptrace-seized this thread;
//  5. execve the command: the filter hands that execve to the tracer, which
//     resolves the command in the transaction's view.
func stubMain() error {
	os.Unsetenv(StubEnv)
	os.Unsetenv(stubExecEnv)
	if m, err := strconv.ParseUint(os.Getenv(stubUmaskEnv), 8, 32); err == nil {
		// The supervisor runs with umask 0 (it applies the caller's
		// itself); the command gets the one txexec was started with.
		unix.Umask(int(m))
	}
	os.Unsetenv(stubUmaskEnv)
	stubSockFD, err := strconv.Atoi(os.Getenv(stubSockEnv))
	if err != nil || stubSockFD < 3 {
		return fmt.Errorf("stub: no control socket")
	}
	os.Unsetenv(stubSockEnv)
	sock := os.NewFile(uintptr(stubSockFD), "txexec-control")
	msg := make([]byte, 1<<20)
	n, err := sock.Read(msg)
	if err != nil {
		return fmt.Errorf("stub: read start message: %w", err)
	}
	prog, err := decodeBPF(msg[:n])
	if err != nil {
		return err
	}
	if len(os.Args) < 3 {
		return fmt.Errorf("stub: no command")
	}
	unix.CloseOnExec(stubSockFD)
	if err := setNoNewPrivsIfNeeded(); err != nil {
		return err
	}
	// In a pid namespace the command's children must get the same pids
	// whatever number of threads this stub's runtime made: the last pid
	// is set again just before the exec, through a descriptor opened now,
	// while an open is still the kernel's and not the view's.
	lastPidFD := -1
	if os.Getenv(stubInNSEnv) == "1" {
		if pid := os.Getpid(); pid != commandPid {
			// Said, not let pass: every pid of the run would differ.
			return fmt.Errorf("stub: the command would be pid %d of its namespace, not %d (txexec's init made a thread at that instant); run it again", pid, commandPid)
		}
		if lastPidFD, err = unix.Open(nsLastPid, unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("stub: open %s: %w", nsLastPid, err)
		}
	}
	if os.Getenv(stubNoatimeEnv) == "1" {
		os.Unsetenv(stubNoatimeEnv)
		if err := noatimeMounts(); err != nil {
			return err
		}
	}
	lfd, err := loadFilter(prog)
	if err != nil {
		return fmt.Errorf("stub: install seccomp filter: %w", err)
	}
	if err := sendListener(stubSockFD, lfd); err != nil {
		return fmt.Errorf("stub: send listener: %w", err)
	}
	unix.Close(lfd)
	var ack [1]byte
	if n, err := sock.Read(ack[:]); err != nil || n != 1 {
		return fmt.Errorf("stub: supervisor went away")
	}
	if lastPidFD >= 0 {
		if err := setLastPid(lastPidFD, commandPid); err != nil {
			return err
		}
		unix.Close(lastPidFD)
	}
	if os.Getenv(stubFixedAddressesEnv) == "1" {
		os.Unsetenv(stubFixedAddressesEnv)
		// Inherited through fork and exec, like the filter (but dropped
		// by the exec of a set-user-ID program, PER_CLEAR_ON_SETID).
		cur, _, e := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0) // query
		if e == 0 {
			_, _, e = unix.RawSyscall(unix.SYS_PERSONALITY, cur|addrNoRandomize, 0, 0)
		}
		if e != 0 {
			return fmt.Errorf("stub: turn address randomization off: %w", e)
		}
	}
	env, cred, err := stubEnvAndCred()
	if err != nil {
		return err
	}
	progFD, err := stubProgramFD()
	if err != nil {
		return err
	}
	if cred != nil {
		// Last, after the filter went in as root: the set*id calls are
		// the tree's first notifications (observed, answered CONTINUE).
		if err := cred.set(); err != nil {
			return err
		}
	}
	path, argv := os.Args[1], os.Args[2:]
	if progFD >= 0 {
		err = execFD(progFD, argv, env)
	} else {
		err = syscall.Exec(path, argv, env)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// stubProgramFD is the descriptor of Config.Program, made close-on-exec
// (the program does not inherit it), or -1.
func stubProgramFD() (int, error) {
	s, ok := os.LookupEnv(stubProgramFDEnv)
	if !ok {
		return -1, nil
	}
	os.Unsetenv(stubProgramFDEnv)
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return -1, fmt.Errorf("stub: bad program descriptor %q", s)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// execFD is execveat(fd, "", argv, env, AT_EMPTY_PATH): the exec of the
// file fd is open on, the kernel's path to it being the descriptor.
func execFD(fd int, argv, env []string) error {
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	_, _, e := unix.RawSyscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return e
}

// stubEnvAndCred is the command's environment and credentials: its own
// environment and nil, or, for a command with credentials of its own
// (Config.Cred), the environment read from the memfd and the decoded Cred.
func stubEnvAndCred() ([]string, *Cred, error) {
	enc, ok := os.LookupEnv(stubCredEnv)
	if !ok {
		return os.Environ(), nil, nil
	}
	cred, err := decodeCred(enc)
	if err != nil {
		return nil, nil, err
	}
	fd, err := strconv.Atoi(os.Getenv(stubEnvFDEnv))
	if err != nil || fd < 3 {
		return nil, nil, fmt.Errorf("stub: no environment descriptor")
	}
	f := os.NewFile(uintptr(fd), "txexec-env")
	defer f.Close()
	env, err := ReadEnv(f)
	if err != nil {
		return nil, nil, fmt.Errorf("stub: %w", err)
	}
	return env, cred, nil
}

// setNoNewPrivsIfNeeded sets no_new_privs when the kernel would refuse the
// filter without it: the kernel asks for CAP_SYS_ADMIN in the effective set,
// not for uid 0, so root in a container without that capability needs it
// too. no_new_privs also makes every exec of the command tree ignore
// set-user-ID bits and file capabilities (docs/semantics.md §7). A
// privileged txexec that inherited no_new_privs has the same limit without
// asking for it, and says so once: its setuid programs silently run
// unprivileged.
func setNoNewPrivsIfNeeded() error {
	if !HasEffectiveCap(unix.CAP_SYS_ADMIN) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("stub: set no_new_privs: %w", err)
		}
		return nil
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil && nnp == 1 {
		fmt.Fprintln(os.Stderr, "txexec: warning: no_new_privs is inherited: set-user-ID bits and file capabilities are ignored in the transaction")
	}
	return nil
}

// HasEffectiveCap reports whether this thread has capability c in its
// effective set (in its own user namespace, where the kernel checks it).
func HasEffectiveCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

func putUint32(b []byte, v uint32) { binary.NativeEndian.PutUint32(b, v) }

// ownExecutable is the file the stub is started from: txexec's own path,
// or, where that path does not lead to it (a replay's root, which txexec
// entered after it started), /proc/self/exe, which does.
func ownExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	var here, self unix.Stat_t
	if unix.Stat(exe, &here) != nil || unix.Stat("/proc/self/exe", &self) != nil || here.Dev != self.Dev || here.Ino != self.Ino {
		return "/proc/self/exe", nil
	}
	return exe, nil
}

// noatimeMounts makes every mount of the stub's mount namespace (a copy of
// txexec's, made by clone) update no atime, before the filter (which
// notifies mount_setattr) goes in. Only the copies change: the host's
// mounts, and the propagation between the two, stay as they are.
func noatimeMounts() error {
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOATIME, Attr_clr: unix.MOUNT_ATTR__ATIME}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("stub: --fast-lookups: make the tree's mounts update no atime: mount_setattr: %w", err)
	}
	return nil
}
