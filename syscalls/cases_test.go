package syscalls

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/bpf"

	"txexec/interpose"
)

func caseHandlerA(k *Kernel, c *interpose.Call) interpose.Reply { return interpose.Return(1) }
func caseHandlerB(k *Kernel, c *interpose.Call) interpose.Reply { return interpose.Return(2) }

// casesTable is a table whose ioctl and clone are decided by an argument.
func casesTable(t *testing.T) *Table {
	t.Helper()
	table, err := NewTable([]Entry{
		passthrough(unix.SYS_READ, "read", ArgFD, ArgPtr, ArgUint),
		withCases(passthrough(unix.SYS_IOCTL, "ioctl", ArgFD, ArgHex, ArgHex),
			Case{Name: "FS_IOC_SETFLAGS", When: argIs(1, unix.FS_IOC_SETFLAGS), Support: Emulated, Handler: caseHandlerA},
			Case{Name: "BLKDISCARD", When: argIs(1, unix.BLKDISCARD), Support: Refused, Errno: unix.EPERM, Note: "no"},
		),
		withCases(passthrough(unix.SYS_CLONE, "clone", ArgHex, ArgPtr, ArgPtr, ArgPtr, ArgHex),
			Case{Name: "CLONE_NEWNS", When: argHas(0, unix.CLONE_NEWNS), Support: Partial, Handler: caseHandlerB, Note: "ns"},
		),
	})
	require.NoError(t, err)
	return table
}

func TestCasesDecideInFilterAndDispatch(t *testing.T) {
	table := casesTable(t)
	compiled := compiledFilter(t, table.Rules())
	hex := func(v uint32) string { return strconv.FormatUint(uint64(v), 16) }
	for _, tc := range []struct {
		name    string
		nr      int
		args    [6]interpose.Arg
		action  uint32
		handler string
		call    string
	}{
		{"ioctl FS_IOC_SETFLAGS", unix.SYS_IOCTL, [6]interpose.Arg{3, unix.FS_IOC_SETFLAGS}, unix.SECCOMP_RET_USER_NOTIF, "caseHandlerA", "ioctl(3, FS_IOC_SETFLAGS, 0x0)"},
		{"ioctl BLKDISCARD", unix.SYS_IOCTL, [6]interpose.Arg{3, unix.BLKDISCARD}, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM), "", "ioctl(3, BLKDISCARD, 0x0)"},
		{"ioctl TCGETS", unix.SYS_IOCTL, [6]interpose.Arg{0, unix.TCGETS}, unix.SECCOMP_RET_ALLOW, "", "ioctl(0, 0x5401, 0x0)"},
		{"clone CLONE_NEWNS", unix.SYS_CLONE, [6]interpose.Arg{unix.CLONE_NEWNS | unix.CLONE_NEWPID}, unix.SECCOMP_RET_USER_NOTIF, "caseHandlerB", "clone(0x20020000, NULL, NULL, NULL, 0x0)"},
		{"clone of a thread", unix.SYS_CLONE, [6]interpose.Arg{unix.CLONE_VM | unix.CLONE_THREAD}, unix.SECCOMP_RET_ALLOW, "", "clone(0x10100, NULL, NULL, NULL, 0x0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := seccompData(int32(tc.nr), unix.AUDIT_ARCH_X86_64)
			for i, a := range tc.args {
				putArg(data, i, uint64(a))
			}
			ret, err := bpf.Exec[bpf.NativeEndian](compiled, data)
			require.NoError(t, err)
			assert.Equal(t, hex(tc.action), hex(ret), "filter action")
			e := table.Lookup(tc.nr)
			h := e.HandlerFor(tc.args)
			if tc.handler == "" {
				assert.Nil(t, h, "the filter decides this call alone")
			} else {
				require.NotNil(t, h)
				assert.Equal(t, tc.handler, funcName(h))
			}
			assert.Equal(t, tc.call, FormatCall(e, &interpose.Call{Nr: tc.nr, Args: tc.args}, nil))
		})
	}
}

func TestCasesInMarkdown(t *testing.T) {
	md := Markdown(casesTable(t))
	assert.Contains(t, md, "| 16 | ioctl | passthrough |  |\n| 16 | ioctl(FS_IOC_SETFLAGS) | emulated |  |\n| 16 | ioctl(BLKDISCARD) | refused (EPERM) | no |\n")
	assert.Contains(t, md, "| 56 | clone(CLONE_NEWNS) | partial | ns |")
}

func TestCasesRejected(t *testing.T) {
	ioctl := func(cases ...Case) []Entry {
		return []Entry{withCases(passthrough(unix.SYS_IOCTL, "ioctl", ArgFD, ArgHex, ArgHex), cases...)}
	}
	for _, tc := range []struct {
		name    string
		entries []Entry
		err     string
	}{
		{"emulated case without handler", ioctl(Case{Name: "X", When: argIs(1, 1), Support: Emulated}), "ioctl X is emulated but has no handler"},
		{"passthrough case with handler", ioctl(Case{Name: "X", When: argIs(1, 1), Support: Passthrough, Handler: caseHandlerA}), "must not have a handler"},
		{"refused case without note", ioctl(Case{Name: "X", When: argIs(1, 1), Support: Refused, Errno: unix.EPERM}), "needs a note"},
		{"same value twice", ioctl(
			Case{Name: "X", When: argIs(1, 1), Support: Emulated, Handler: caseHandlerA},
			Case{Name: "Y", When: argIs(1, 1), Support: Emulated, Handler: caseHandlerB}), "X and Y are the same case"},
		{"argument the call does not have", ioctl(Case{Name: "X", When: argIs(3, 1), Support: Emulated, Handler: caseHandlerA}), "has no argument 3"},
		{"exec case", ioctl(Case{Name: "X", When: argIs(1, 1), Support: Exec}), "no argument cases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTable(tc.entries)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestCaseNamesAreUniqueInTheTable(t *testing.T) {
	for _, e := range newTestTable(t).Entries() {
		names := map[string]bool{}
		for _, cs := range e.Cases {
			assert.False(t, names[cs.Name], "%s has two cases named %s", e.Name, cs.Name)
			names[cs.Name] = true
			assert.False(t, strings.ContainsAny(cs.Name, " ()|"), "case name %q is one word", cs.Name)
		}
	}
}
