package syscalls

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// sockaddrStorage is sizeof(struct sockaddr_storage): move_addr_to_kernel
// refuses a longer address with EINVAL.
const sockaddrStorage = 128

// Bind implements bind(2). The address is copied in once and the call is
// performed by the supervisor on its duplicate of the socket (the same
// open socket): an AF_UNIX path is resolved in the caller's view and the
// socket file made there (vfs.Tx.BindUnix); any other address is bound by
// the kernel with the caller's credentials and capabilities.
func Bind(k *Kernel, c *interpose.Call) interpose.Reply {
	fd, addrAddr, n := c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Int()
	if fd < 0 {
		return interpose.Fail(unix.EBADF)
	}
	if n < 0 || n > sockaddrStorage {
		return interpose.Fail(unix.EINVAL)
	}
	addr := make([]byte, n)
	if n > 0 {
		if err := c.Read(addrAddr, addr); err != nil {
			return k.reply(c, 0, err)
		}
	}
	return k.resolvedCall(c, unix.AT_FDCWD, "", func(cl *vfs.Caller, cwd *vfs.Handle, _ string) (int64, error) {
		sock, err := c.GetFD(int(fd))
		if err != nil {
			return 0, err
		}
		defer unix.Close(sock)
		if path, ok := unixPath(addr); ok {
			return 0, k.View.BindUnix(cl, cwd, path, sock)
		}
		return 0, k.View.BindAddr(cl, sock, addr)
	})
}

// unixPath returns the path of an AF_UNIX address that names one (not an
// abstract name, not autobind): sun_path up to its first NUL, as
// unix_mkname_bsd reads it.
func unixPath(addr []byte) (string, bool) {
	const famLen = 2
	if len(addr) <= famLen || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || addr[famLen] == 0 {
		return "", false
	}
	p := addr[famLen:]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p), true
}
