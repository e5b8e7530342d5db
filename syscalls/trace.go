package syscalls

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"txexec/interpose"
)

// FormatCall renders an intercepted call strace-like, from the Args of its
// table entry:
//
//	openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC, 0)
//
// pathOf renders the string argument at a non-NULL address exactly as it
// should appear (the tracer reads it from tracee memory and quotes it, or
// prints the address when it cannot be read); with a nil pathOf string
// arguments are printed as addresses. A call without an entry is printed
// with all six registers: syscall_1000(0x0, 0x0, 0x0, 0x0, 0x0, 0x0).
func FormatCall(e *Entry, c *interpose.Call, pathOf func(addr uintptr) string) string {
	var b strings.Builder
	if e == nil {
		fmt.Fprintf(&b, "syscall_%d(", c.Nr)
		for i, a := range c.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(hex(uint64(a)))
		}
		b.WriteString(")")
		return b.String()
	}
	b.WriteString(e.Name)
	b.WriteString("(")
	cs := e.CaseOf(c.Args)
	for i, f := range e.Args {
		if i >= len(c.Args) {
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if cs != nil && i == cs.When.Arg && cs.When.Mask == 0xffffffff {
			// An argument that is one value (an ioctl request) is
			// printed by the name of its case.
			b.WriteString(cs.Name)
			continue
		}
		b.WriteString(formatArg(e, f, c.Args[i], pathOf))
	}
	b.WriteString(")")
	return b.String()
}

// FormatResult renders the outcome of a call: "= 3",
// "= -1 ENOENT (No such file or directory)", or "= ? (continued)" for a
// call the kernel ran itself after the supervisor let it continue.
func FormatResult(val int64, errno unix.Errno, cont bool) string {
	switch {
	case cont:
		return "= ? (continued)"
	case errno != 0:
		return fmt.Sprintf("= -1 %s (%s)", errnoName(errno), errnoText(errno))
	}
	return "= " + strconv.FormatInt(val, 10)
}

func formatArg(e *Entry, f ArgFmt, a interpose.Arg, pathOf func(uintptr) string) string {
	switch f {
	case ArgInt:
		return strconv.FormatInt(int64(a.Int()), 10)
	case ArgUint:
		return strconv.FormatUint(a.Ulong(), 10)
	case ArgFD:
		if a.Int() == unix.AT_FDCWD {
			return "AT_FDCWD"
		}
		return strconv.FormatInt(int64(a.Int()), 10)
	case ArgPath:
		if a.Pointer() == 0 {
			return "NULL"
		}
		if pathOf == nil {
			return hex(a.Ulong())
		}
		return pathOf(a.Pointer())
	case ArgOpenFlags:
		return openFlags(a.Int())
	case ArgMode:
		return mode(a.ModeT())
	case ArgAtFlags:
		return atFlags(e, a.Int())
	case ArgSignal:
		return signal(a.Int())
	case ArgPtr:
		if a.Pointer() == 0 {
			return "NULL"
		}
		return hex(a.Ulong())
	}
	return hex(a.Ulong())
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// flagName is one named bit pattern; a pattern matches when all its bits are
// set, and composite patterns (O_SYNC includes O_DSYNC) come first.
type flagName struct {
	bits uint32
	name string
}

// oLargefile is O_LARGEFILE as the kernel defines it on x86-64;
// golang.org/x/sys/unix defines it as 0 there, because it is implied.
const oLargefile = 0x8000

var openFlagNames = []flagName{
	{unix.O_CREAT, "O_CREAT"},
	{unix.O_EXCL, "O_EXCL"},
	{unix.O_NOCTTY, "O_NOCTTY"},
	{unix.O_TRUNC, "O_TRUNC"},
	{unix.O_APPEND, "O_APPEND"},
	{unix.O_NONBLOCK, "O_NONBLOCK"},
	{unix.O_SYNC, "O_SYNC"},
	{unix.O_DSYNC, "O_DSYNC"},
	{unix.O_ASYNC, "O_ASYNC"},
	{unix.O_DIRECT, "O_DIRECT"},
	{oLargefile, "O_LARGEFILE"},
	{unix.O_TMPFILE, "O_TMPFILE"},
	{unix.O_DIRECTORY, "O_DIRECTORY"},
	{unix.O_NOFOLLOW, "O_NOFOLLOW"},
	{unix.O_NOATIME, "O_NOATIME"},
	{unix.O_CLOEXEC, "O_CLOEXEC"},
	{unix.O_PATH, "O_PATH"},
}

// openFlags renders O_* flags: the access mode first, as strace does.
func openFlags(v int32) string {
	u := uint32(v)
	var acc string
	switch u & unix.O_ACCMODE {
	case unix.O_RDONLY:
		acc = "O_RDONLY"
	case unix.O_WRONLY:
		acc = "O_WRONLY"
	case unix.O_RDWR:
		acc = "O_RDWR"
	default:
		acc = "O_ACCMODE"
	}
	return joinFlags([]string{acc}, u&^unix.O_ACCMODE, openFlagNames)
}

var atFlagNames = []flagName{
	{unix.AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
	{unix.AT_REMOVEDIR, "AT_REMOVEDIR"},
	{unix.AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW"},
	{unix.AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"},
	{unix.AT_EMPTY_PATH, "AT_EMPTY_PATH"},
	{unix.AT_STATX_FORCE_SYNC, "AT_STATX_FORCE_SYNC"},
	{unix.AT_STATX_DONT_SYNC, "AT_STATX_DONT_SYNC"},
	{unix.AT_RECURSIVE, "AT_RECURSIVE"},
}

// atFlags renders AT_* flags. 0x200 is AT_REMOVEDIR for unlinkat but
// AT_EACCESS for the faccessat family.
func atFlags(e *Entry, v int32) string {
	u := uint32(v)
	if u == 0 {
		return "0"
	}
	names := atFlagNames
	if e.Nr == unix.SYS_FACCESSAT || e.Nr == unix.SYS_FACCESSAT2 {
		names = append([]flagName{{unix.AT_EACCESS, "AT_EACCESS"}}, atFlagNames...)
	}
	return joinFlags(nil, u, names)
}

// joinFlags appends the names of the patterns set in u to parts and the
// remaining unknown bits in hex, joined by "|".
func joinFlags(parts []string, u uint32, names []flagName) string {
	for _, f := range names {
		if f.bits != 0 && u&f.bits == f.bits {
			parts = append(parts, f.name)
			u &^= f.bits
		}
	}
	if u != 0 {
		parts = append(parts, hex(uint64(u)))
	}
	return strings.Join(parts, "|")
}

// mode renders a mode in octal with a leading 0 ("0644"); 0 is "0".
func mode(m uint32) string {
	if m == 0 {
		return "0"
	}
	return "0" + strconv.FormatUint(uint64(m), 8)
}

// signal renders a signal number by name (SIGTERM, SIGRTMIN+3); 0, the
// "does the process exist" probe of kill(2), stays 0.
func signal(v int32) string {
	if v == 0 {
		return "0"
	}
	if name := unix.SignalName(syscall.Signal(v)); name != "" {
		return name
	}
	if v >= sigRTMin && v <= sigRTMax {
		return "SIGRTMIN+" + strconv.Itoa(int(v-sigRTMin))
	}
	return strconv.FormatInt(int64(v), 10)
}

// The kernel's real-time signal range on x86-64 (SIGRTMIN is 32 to the
// kernel; glibc reserves the first few for itself).
const (
	sigRTMin = 32
	sigRTMax = 64
)

func errnoName(e unix.Errno) string {
	if name := unix.ErrnoName(e); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(e))
}

// errnoText is the errno's message with a capital first letter, as strace
// and strerror(3) print it.
func errnoText(e unix.Errno) string {
	s := e.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
