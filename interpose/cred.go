package interpose

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cred are the credentials a command is executed with when they are not
// the supervisor's: those the kernel gives a set-ID program (real ids of
// its caller, effective and saved ids of the file's owner or group), for a
// wrapped program whose supervisor runs as root (docs/semantics.md §7).
//
// The stub loads the filter as root, then sets them on its own thread
// just before the execve (setgroups, setresgid, setresuid, made as raw
// system calls on that one thread: the execve takes the calling thread's
// credentials). The executed file carries no set-ID bit, so the kernel
// keeps them and computes the rest as for a set-ID execution: a new
// effective id differing from the real one sets AT_SECURE, makes the
// process non-dumpable, and with an effective uid 0 grants root's
// capabilities (security/commoncap.c, cap_bprm_creds_from_file: its
// "is_setid" compares the new effective ids with the old real ones).
type Cred struct {
	Uid, Euid, Suid uint32
	Gid, Egid, Sgid uint32
	Groups          []uint32
}

// The stub's variables for a command with its own credentials: Cred,
// encoded, and the descriptor of the sealed memfd holding the command's
// environment.
const (
	stubCredEnv  = "_TXEXEC_CRED"
	stubEnvFDEnv = "_TXEXEC_ENVFD"
)

// encode is "uid,euid,suid:gid,egid,sgid:group,group,...".
func (c *Cred) encode() string {
	var groups []string
	for _, g := range c.Groups {
		groups = append(groups, strconv.FormatUint(uint64(g), 10))
	}
	return fmt.Sprintf("%d,%d,%d:%d,%d,%d:%s", c.Uid, c.Euid, c.Suid, c.Gid, c.Egid, c.Sgid, strings.Join(groups, ","))
}

func decodeCred(s string) (*Cred, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("stub: bad credentials %q", s)
	}
	ids := func(s string) ([]uint32, error) {
		var out []uint32
		if s == "" {
			return nil, nil
		}
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("stub: bad credentials %q", s)
			}
			out = append(out, uint32(n))
		}
		return out, nil
	}
	u, err := ids(parts[0])
	if err != nil || len(u) != 3 {
		return nil, fmt.Errorf("stub: bad credentials %q", s)
	}
	g, err := ids(parts[1])
	if err != nil || len(g) != 3 {
		return nil, fmt.Errorf("stub: bad credentials %q", s)
	}
	groups, err := ids(parts[2])
	if err != nil {
		return nil, err
	}
	return &Cred{Uid: u[0], Euid: u[1], Suid: u[2], Gid: g[0], Egid: g[1], Sgid: g[2], Groups: groups}, nil
}

// set gives the calling thread (only) these credentials, group ids first:
// setresgid needs the privilege setresuid gives up.
func (c *Cred) set() error {
	var groups unsafe.Pointer
	if len(c.Groups) > 0 {
		groups = unsafe.Pointer(&c.Groups[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(c.Groups)), uintptr(groups), 0); e != 0 {
		return fmt.Errorf("stub: setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.Gid), uintptr(c.Egid), uintptr(c.Sgid)); e != 0 {
		return fmt.Errorf("stub: setresgid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.Uid), uintptr(c.Euid), uintptr(c.Suid)); e != 0 {
		return fmt.Errorf("stub: setresuid: %w", e)
	}
	return nil
}

// envMemfd is a sealed memfd holding env as NUL-terminated strings.
func envMemfd(env []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("txexec-env", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("create environment memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "txexec-env")
	var b []byte
	for _, kv := range env {
		b = append(append(b, kv...), 0)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write environment memfd: %w", err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal environment memfd: %w", err)
	}
	return f, nil
}

// ReadEnv reads an environment written as NUL-terminated strings (by
// envMemfd, or by a wrapped program's launcher) from the start of f.
func ReadEnv(f *os.File) ([]string, error) {
	var b []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := unix.Pread(int(f.Fd()), buf, off)
		if err != nil {
			return nil, fmt.Errorf("read environment: %w", err)
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
		off += int64(n)
	}
	if len(b) == 0 {
		return nil, nil
	}
	if b[len(b)-1] != 0 {
		return nil, fmt.Errorf("read environment: unterminated entry")
	}
	var env []string
	for _, kv := range strings.Split(string(b[:len(b)-1]), "\x00") {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		}
	}
	return env, nil
}
