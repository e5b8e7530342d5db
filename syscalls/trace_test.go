package syscalls

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"txexec/interpose"
)

// call builds an intercepted call from register values.
func call(nr int, args ...uint64) *interpose.Call {
	c := &interpose.Call{Nr: nr}
	for i, a := range args {
		c.Args[i] = interpose.Arg(a)
	}
	return c
}

// reg is a negative C int as it sits in a 64-bit register.
func reg(v int32) uint64 { return uint64(int64(v)) }

func TestFormatCall(t *testing.T) {
	table := newTestTable(t)
	paths := map[uintptr]string{0x1000: "/etc/passwd", 0x2000: "/tmp/x", 0x3000: "user.mime_type"}
	pathOf := func(addr uintptr) string { return strconv.Quote(paths[addr]) }
	for _, tc := range []struct {
		name string
		c    *interpose.Call
		want string
	}{
		{"openat", call(unix.SYS_OPENAT, reg(unix.AT_FDCWD), 0x1000, unix.O_RDONLY|unix.O_CLOEXEC, 0),
			`openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC, 0)`},
		{"openat create", call(unix.SYS_OPENAT, 3, 0x2000, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW, 0o644),
			`openat(3, "/tmp/x", O_WRONLY|O_CREAT|O_TRUNC|O_NOFOLLOW, 0644)`},
		{"open sync tmpfile", call(unix.SYS_OPEN, 0x2000, unix.O_RDWR|unix.O_SYNC|unix.O_TMPFILE, 0o600),
			`open("/tmp/x", O_RDWR|O_SYNC|O_TMPFILE, 0600)`},
		{"open dsync largefile unknown bit", call(unix.SYS_OPEN, 0x2000, unix.O_WRONLY|unix.O_DSYNC|0x8000|0x4000000, 0),
			`open("/tmp/x", O_WRONLY|O_DSYNC|O_LARGEFILE|0x4000000, 0)`},
		{"open path directory", call(unix.SYS_OPEN, 0x2000, unix.O_PATH|unix.O_DIRECTORY, 0),
			`open("/tmp/x", O_RDONLY|O_DIRECTORY|O_PATH, 0)`},
		{"NULL path", call(unix.SYS_OPEN, 0, unix.O_RDONLY, 0),
			`open(NULL, O_RDONLY, 0)`},
		{"newfstatat", call(unix.SYS_NEWFSTATAT, 5, 0x1000, 0x7ffd1000, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH),
			`newfstatat(5, "/etc/passwd", 0x7ffd1000, AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH)`},
		{"stat NULL buffer", call(unix.SYS_STAT, 0x1000, 0),
			`stat("/etc/passwd", NULL)`},
		{"unlinkat removedir", call(unix.SYS_UNLINKAT, reg(unix.AT_FDCWD), 0x2000, unix.AT_REMOVEDIR),
			`unlinkat(AT_FDCWD, "/tmp/x", AT_REMOVEDIR)`},
		{"faccessat2 eaccess", call(unix.SYS_FACCESSAT2, reg(unix.AT_FDCWD), 0x2000, unix.W_OK, unix.AT_EACCESS),
			`faccessat2(AT_FDCWD, "/tmp/x", 2, AT_EACCESS)`},
		{"at flags zero", call(unix.SYS_UNLINKAT, 4, 0x2000, 0),
			`unlinkat(4, "/tmp/x", 0)`},
		{"mkdir", call(unix.SYS_MKDIR, 0x2000, 0o755),
			`mkdir("/tmp/x", 0755)`},
		{"chown unchanged", call(unix.SYS_FCHOWN, 3, reg(-1), 0),
			`fchown(3, -1, 0)`},
		{"read", call(unix.SYS_READ, 3, 0xc000100000, 4096),
			`read(3, 0xc000100000, 4096)`},
		{"kill", call(unix.SYS_KILL, 1234, uint64(unix.SIGTERM)),
			`kill(1234, SIGTERM)`},
		{"kill probe", call(unix.SYS_KILL, reg(-1), 0),
			`kill(-1, 0)`},
		{"tgkill realtime", call(unix.SYS_TGKILL, 10, 11, 34),
			`tgkill(10, 11, SIGRTMIN+2)`},
		{"rt_sigaction", call(unix.SYS_RT_SIGACTION, uint64(unix.SIGCHLD), 0x7000, 0, 8),
			`rt_sigaction(SIGCHLD, 0x7000, NULL, 8)`},
		{"xattr name", call(unix.SYS_GETXATTR, 0x1000, 0x3000, 0, 0),
			`getxattr("/etc/passwd", "user.mime_type", NULL, 0)`},
		{"no args", call(unix.SYS_GETPID),
			`getpid()`},
		{"rename", call(unix.SYS_RENAME, 0x1000, 0x2000),
			`rename("/etc/passwd", "/tmp/x")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatCall(table.Lookup(tc.c.Nr), tc.c, pathOf))
		})
	}
}

func TestFormatCallWithoutPathReader(t *testing.T) {
	e := newTestTable(t).Lookup(unix.SYS_OPEN)
	assert.Equal(t, `open(0x1000, O_RDONLY, 0)`, FormatCall(e, call(unix.SYS_OPEN, 0x1000), nil))
}

func TestFormatCallUnknown(t *testing.T) {
	c := call(1000, 1, 0xff, 0, 0, 0, 0xffffffffffffffff)
	assert.Equal(t, "syscall_1000(0x1, 0xff, 0x0, 0x0, 0x0, 0xffffffffffffffff)", FormatCall(nil, c, nil))
}

func TestFormatResult(t *testing.T) {
	for _, tc := range []struct {
		val   int64
		errno unix.Errno
		cont  bool
		want  string
	}{
		{3, 0, false, "= 3"},
		{0, 0, false, "= 0"},
		{-1, unix.ENOENT, false, "= -1 ENOENT (No such file or directory)"},
		{-1, unix.EACCES, false, "= -1 EACCES (Permission denied)"},
		{-1, unix.EXDEV, false, "= -1 EXDEV (Invalid cross-device link)"},
		{0, 0, true, "= ? (continued)"},
		{-1, unix.Errno(4095), false, "= -1 errno 4095 (Errno 4095)"},
	} {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			assert.Equal(t, tc.want, FormatResult(tc.val, tc.errno, tc.cont))
		})
	}
}
