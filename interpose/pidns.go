package interpose

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// stubPidNSEnv marks a stub started as the init of a new pid namespace
// (Config.PidNamespace).
const stubPidNSEnv = "_TXEXEC_PIDNS"

// stubExecEnv carries Config.StubExec to the init of a pid namespace, for
// the stub it starts; one argument a line.
const stubExecEnv = "_TXEXEC_STUB_EXEC"

// stubInNSEnv marks the stub that init starts: the one that installs the
// filter and executes the command, as pid 2 of the namespace.
const stubInNSEnv = "_TXEXEC_IN_PIDNS"

// pidNSInit is the init of a pid namespace (pid 1): it starts the stub
// again as its child, with the same arguments and descriptors, and then
// only reaps: the command and every orphan of the tree. It exits, with
// the command's status, when it has no child left, since its exit would
// kill every process left in the namespace. It is not traced and
// installs no filter: it makes no call on the tree's behalf.
//
// Why an init of our own: as pid 1 the command itself would ignore every
// signal it has no handler for (SIGTERM, SIGINT) and take on orphans it
// does not expect; as pid 2 it behaves as it does on the host.
func pidNSInit() error {
	os.Unsetenv(stubPidNSEnv)
	files := []uintptr{0, 1, 2}
	files = append(files, InheritedFDs()...)
	exe, err := ownExecutable()
	if err != nil {
		return fmt.Errorf("pid namespace init: find own executable: %w", err)
	}
	// Its own threads have taken pids, as many as its runtime made: the
	// command's comes after a fixed one instead.
	if err := setLastPid(-1, commandPid-1); err != nil {
		return err
	}
	argv := os.Args
	if stubExec := os.Getenv(stubExecEnv); stubExec != "" {
		prefix := strings.Split(stubExec, "\n")
		exe, argv = prefix[0], append(prefix, os.Args[1:]...)
	}
	child, _, err := syscall.StartProcess(exe, argv, &syscall.ProcAttr{
		Env: append(os.Environ(), stubInNSEnv+"=1"), Files: files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return fmt.Errorf("pid namespace init: start stub: %w", err)
	}
	// Nothing of the tree's stays open here: a pipe the command writes
	// must see its end when the tree is done, not when init is.
	for _, fd := range files {
		if fd != ^uintptr(0) {
			unix.Close(int(fd))
		}
	}
	status := 0
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			os.Exit(status) // ECHILD: the namespace is empty
		}
		if pid == child {
			status = ExitStatus(ws)
		}
	}
}

// commandPid is the command's pid in its namespace; the processes and
// threads it makes take the pids after it, in the order they are made.
const commandPid = 100

// nsLastPid is the last pid allocated in the caller's pid namespace
// (pid_namespaces(7)); writing it needs CAP_SYS_ADMIN, which a pid
// namespace needs anyway.
const nsLastPid = "/proc/sys/kernel/ns_last_pid"

// setLastPid makes last the last pid allocated in the namespace, through
// fd, a descriptor open for writing on nsLastPid, or through a new one
// when fd is -1.
func setLastPid(fd, last int) error {
	if fd < 0 {
		var err error
		if fd, err = unix.Open(nsLastPid, unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("pid namespace: open %s: %w", nsLastPid, err)
		}
		defer unix.Close(fd)
	}
	if _, err := unix.Pwrite(fd, []byte(strconv.Itoa(last)), 0); err != nil {
		return fmt.Errorf("pid namespace: set %s: %w", nsLastPid, err)
	}
	return nil
}

// sendListener sends the listener lfd and this thread's id to the
// supervisor. In a pid namespace the id is the namespace's, which the
// supervisor cannot use: the thread's credentials go along, whose pid
// the kernel translates into the receiver's namespace (scm_check_creds
// lets a sender with CAP_SYS_ADMIN name a thread, not only its process).
func sendListener(sock, lfd int) error {
	var tid [4]byte
	putUint32(tid[:], uint32(unix.Gettid()))
	oob := unix.UnixRights(lfd)
	if os.Getenv(stubInNSEnv) == "1" {
		os.Unsetenv(stubInNSEnv)
		oob = append(oob, unix.UnixCredentials(&unix.Ucred{Pid: int32(unix.Gettid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})...)
	}
	return unix.Sendmsg(sock, tid[:], oob, nil, 0)
}
