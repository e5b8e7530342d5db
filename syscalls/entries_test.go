package syscalls

import (
	"encoding/binary"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/bpf"

	"txexec/interpose"
)

func newTestTable(t *testing.T) *Table {
	t.Helper()
	table, err := NewTable(AllEntries())
	require.NoError(t, err, "NewTable(AllEntries())")
	return table
}

// unixSyscalls parses the unix.SYS_* constants for linux/amd64 from the
// golang.org/x/sys module this package builds with, so that the test does
// not keep a second list of system calls in step by hand.
func unixSyscalls(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("go", "list", "-mod=mod", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	require.NoError(t, err, "locate golang.org/x/sys with go list")
	file := filepath.Join(strings.TrimSpace(string(out)), "unix", "zsysnum_linux_amd64.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	nums := make(map[string]int)
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "SYS_") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s is not a literal", name.Name)
				n, err := strconv.Atoi(lit.Value)
				require.NoError(t, err, name.Name)
				nums[name.Name] = n
			}
		}
	}
	require.Greater(t, len(nums), 300, "parsed too few SYS_ constants from %s", file)
	return nums
}

func TestEveryUnixSyscallHasOneEntry(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the table is for x86-64")
	}
	table, err := NewTable(Entries())
	require.NoError(t, err)
	want := unixSyscalls(t)
	for constName, nr := range want {
		e := table.Lookup(nr)
		if !assert.NotNil(t, e, "unix.%s (%d) has no entry", constName, nr) {
			continue
		}
		assert.Equal(t, strings.ToLower(strings.TrimPrefix(constName, "SYS_")), e.Name,
			"entry %d is named after unix.%s", nr, constName)
	}
	assert.Len(t, table.Entries(), len(want), "entries without a unix.SYS_ constant")

	// Below the highest number, the only numbers without an entry are the
	// range x86-64 left unused when numbering was unified at 424.
	entries := table.Entries()
	for nr := 0; nr <= entries[len(entries)-1].Nr; nr++ {
		if nr > unix.SYS_UPROBE && nr < unix.SYS_PIDFD_SEND_SIGNAL {
			assert.Nil(t, table.Lookup(nr), "number %d is in the unused range", nr)
			continue
		}
		assert.NotNil(t, table.Lookup(nr), "number %d has no entry", nr)
	}
}

func funcName(h Handler) string {
	name := runtime.FuncForPC(reflect.ValueOf(h).Pointer()).Name()
	return name[strings.LastIndex(name, ".")+1:]
}

// goName is a syscall's name in Go case: inotify_add_watch → InotifyAddWatch.
func goName(name string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(name, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func TestEntryInvariants(t *testing.T) {
	for _, e := range newTestTable(t).Entries() {
		t.Run(e.Name, func(t *testing.T) {
			switch e.Support {
			case Emulated, Partial:
				require.NotNil(t, e.Handler, "%v entries need a handler", e.Support)
				assert.Equal(t, goName(e.Name), funcName(e.Handler), "handler of an emulated call is named after it")
			case Observed:
				require.NotNil(t, e.Handler, "observed entries need a handler")
				assert.Contains(t, []string{"Umask", "CredsChanged"}, funcName(e.Handler))
			case NoTxMeaning:
				require.NotNil(t, e.Handler, "no-tx-meaning entries need a handler")
				assert.Equal(t, "unsupportedCall", funcName(e.Handler))
			case Passthrough, Exec, Refused:
				assert.Nil(t, e.Handler, "%v entries are not served by a handler", e.Support)
			}
			if e.Support == Partial || e.Support == Refused || e.Support == NoTxMeaning {
				assert.NotEmpty(t, e.Note, "%v entries explain themselves", e.Support)
			}
			if e.Support == Refused {
				assert.NotZero(t, e.Errno, "refused entries need an errno")
				assert.Less(t, int(e.Errno), int(unix.SECCOMP_RET_DATA)+1, "errno fits SECCOMP_RET_DATA")
			} else {
				assert.Zero(t, e.Errno, "only refused entries have an errno")
			}
			// Calls whose arguments the supervisor must read from tracee
			// memory (strings: paths, names) are never left to the kernel:
			// another thread could change them between check and use
			// (docs/architecture.md §3).
			if slices.Contains(e.Args, ArgPath) {
				assert.NotContains(t, []Support{Passthrough, Observed}, e.Support,
					"a call with a string argument in tracee memory must not be passthrough or observed")
			}
			assert.LessOrEqual(t, len(e.Args), 6, "x86-64 calls have at most six arguments")
			for _, cs := range e.Cases {
				switch cs.Support {
				case Emulated, Partial, Observed:
					assert.NotNil(t, cs.Handler, "%s(%s) is %v and needs a handler", e.Name, cs.Name, cs.Support)
				case NoTxMeaning:
					require.NotNil(t, cs.Handler)
					assert.Equal(t, "unsupportedCall", funcName(cs.Handler), "%s(%s)", e.Name, cs.Name)
				default:
					assert.Nil(t, cs.Handler, "%s(%s) is %v and is not served by a handler", e.Name, cs.Name, cs.Support)
				}
			}
		})
	}
}

// TestClassification pins the decisions the design depends on.
func TestClassification(t *testing.T) {
	table := newTestTable(t)
	for _, tc := range []struct {
		nr      int
		support Support
		errno   unix.Errno
	}{
		{unix.SYS_OPENAT, Emulated, 0},
		{unix.SYS_GETDENTS64, Partial, 0},
		{unix.SYS_INOTIFY_ADD_WATCH, Partial, 0},
		{unix.SYS_UMASK, Observed, 0},
		{unix.SYS_SETRESUID, Observed, 0},
		{unix.SYS_EXECVE, Exec, 0},
		{unix.SYS_EXECVEAT, Exec, 0},
		{unix.SYS_READ, Passthrough, 0},
		{unix.SYS_RESTART_SYSCALL, Passthrough, 0},
		{unix.SYS_RT_SIGRETURN, Passthrough, 0},
		{unix.SYS_PTRACE, Partial, 0},
		{unix.SYS__SYSCTL, Refused, unix.ENOSYS},
		{unix.SYS_MOUNT, NoTxMeaning, 0},
		{unix.SYS_IO_URING_SETUP, NoTxMeaning, 0},
		{unix.SYS_OPEN_BY_HANDLE_AT, NoTxMeaning, 0},
		// Its flags are in memory: refused so that libc uses clone,
		// whose namespace flags the filter sees.
		{unix.SYS_CLONE3, Refused, unix.ENOSYS},
		{unix.SYS_CLONE, Passthrough, 0},
		{unix.SYS_IOCTL, Passthrough, 0},
	} {
		e := table.Lookup(tc.nr)
		require.NotNil(t, e, "syscall %d", tc.nr)
		assert.Equal(t, tc.support, e.Support, e.Name)
		assert.Equal(t, tc.errno, e.Errno, e.Name)
	}
}

// TestClassificationOfCases pins the argument cases the design depends
// on: attribute ioctls are served, terminal ioctls are not cases at all,
// namespace clones follow --unsupported.
func TestClassificationOfCases(t *testing.T) {
	table := newTestTable(t)
	for _, tc := range []struct {
		nr      int
		args    [6]interpose.Arg
		support Support
	}{
		{unix.SYS_IOCTL, [6]interpose.Arg{3, unix.FS_IOC_SETFLAGS}, Partial},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0x401c5820 /* FS_IOC_FSSETXATTR */}, Partial},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0x40086604 /* EXT4_IOC_SETVERSION */}, Partial},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, unix.BLKDISCARD}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0x2285 /* SG_IO */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0xc0484e43 /* NVME_IOCTL_IO_CMD */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0xc0484e41 /* NVME_IOCTL_ADMIN_CMD */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0x40304e42 /* NVME_IOCTL_SUBMIT_IO */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, unix.LOOP_SET_FD}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0xc0185879 /* FITRIM */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0xc038586b /* XFS_IOC_OPEN_BY_HANDLE */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0xc018587b /* XFS_IOC_ATTRMULTI_BY_HANDLE */}, NoTxMeaning},
		{unix.SYS_IOCTL, [6]interpose.Arg{3, 0xc0109428 /* BTRFS_IOC_QUOTA_CTL */}, NoTxMeaning},
		{unix.SYS_CLONE, [6]interpose.Arg{unix.CLONE_NEWUSER | interpose.Arg(unix.SIGCHLD)}, NoTxMeaning},
	} {
		cs := table.Lookup(tc.nr).CaseOf(tc.args)
		require.NotNil(t, cs, "syscall %d with %#x", tc.nr, tc.args[1])
		assert.Equal(t, tc.support, cs.Support, cs.Name)
	}
	for _, free := range []interpose.Arg{unix.TCGETS, unix.TIOCGWINSZ, unix.TCSETS, unix.TIOCSPGRP, 0x541b /* FIONREAD */, unix.FS_IOC_GETFLAGS} {
		assert.Nil(t, table.Lookup(unix.SYS_IOCTL).CaseOf([6]interpose.Arg{0, free}), "ioctl %#x costs no round trip", uint64(free))
	}
	assert.Nil(t, table.Lookup(unix.SYS_CLONE).CaseOf([6]interpose.Arg{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID}), "pthread_create's clone")
}

// seccompData is struct seccomp_data as the filter reads it.
func seccompData(nr int32, arch uint32) bpf.Input {
	b := make([]byte, 64) // nr, arch, instruction_pointer, args[6]: all zero
	binary.NativeEndian.PutUint32(b[0:], uint32(nr))
	binary.NativeEndian.PutUint32(b[4:], arch)
	return b
}

// putArg sets argument i of a seccompData.
func putArg(in bpf.Input, i int, v uint64) {
	binary.NativeEndian.PutUint64(in[16+8*i:], v)
}

// filterReturnOf is the seccomp return value the filter gives for r.
func filterReturnOf(r interpose.Rule) uint32 {
	switch r.Action {
	case interpose.ActNotify:
		return unix.SECCOMP_RET_USER_NOTIF
	case interpose.ActTrace:
		return unix.SECCOMP_RET_TRACE
	case interpose.ActAllow:
		return unix.SECCOMP_RET_ALLOW
	}
	return uint32(unix.SECCOMP_RET_ERRNO) | uint32(r.Errno)
}

// compiledFilter compiles rules into the seccomp filter and loads it into
// gVisor's classic-BPF interpreter, which checks it as the kernel does.
func compiledFilter(t *testing.T, rules []interpose.Rule) bpf.Program {
	t.Helper()
	raw, err := interpose.CompileFilter(rules)
	require.NoError(t, err, "CompileFilter")
	insns := make([]bpf.Instruction, len(raw))
	for i, ins := range raw {
		insns[i] = bpf.RawInstruction(ins.Code, ins.Jt, ins.Jf, ins.K)
	}
	prog, err := bpf.Compile(insns, false /* optimize */)
	require.NoError(t, err, "the kernel's checks (as gVisor implements them) reject the filter")
	return prog
}

// TestFilterActions compiles the seccomp filter from the table and runs it
// in gVisor's classic-BPF interpreter for every entry.
func TestFilterActions(t *testing.T) {
	table := newTestTable(t)
	rules := table.Rules()
	prog := compiledFilter(t, rules)

	run := func(nr int32, arch uint32) uint32 {
		t.Helper()
		ret, err := bpf.Exec[bpf.NativeEndian](prog, seccompData(nr, arch))
		require.NoError(t, err, "run filter for nr %d arch %#x", nr, arch)
		return ret
	}
	enosys := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)

	byNr := make(map[int]interpose.Rule, len(rules))
	for _, r := range rules {
		byNr[r.Nr] = r
	}
	for _, e := range table.Entries() {
		r, ok := byNr[e.Nr]
		require.True(t, ok, "%s has no rule", e.Name)
		var want uint32
		switch r.Action {
		case interpose.ActNotify:
			want = unix.SECCOMP_RET_USER_NOTIF
		case interpose.ActTrace:
			want = unix.SECCOMP_RET_TRACE
		case interpose.ActAllow:
			want = unix.SECCOMP_RET_ALLOW
		case interpose.ActErrno:
			want = uint32(unix.SECCOMP_RET_ERRNO) | uint32(r.Errno)
		default:
			t.Fatalf("%s: unknown action %v", e.Name, r.Action)
		}
		// The action follows from the support level, whatever Rules does.
		switch e.Support {
		case Emulated, Partial, Observed, NoTxMeaning:
			assert.Equal(t, interpose.ActNotify, r.Action, e.Name)
		case Passthrough:
			assert.Equal(t, interpose.ActAllow, r.Action, e.Name)
		case Exec:
			assert.Equal(t, interpose.ActTrace, r.Action, e.Name)
		case Refused:
			assert.Equal(t, interpose.ActErrno, r.Action, e.Name)
			assert.Equal(t, e.Errno, r.Errno, e.Name)
		}
		assert.Equal(t, strconv.FormatUint(uint64(want), 16), strconv.FormatUint(uint64(run(int32(e.Nr), unix.AUDIT_ARCH_X86_64)), 16),
			"filter action for %s (%d, %v)", e.Name, e.Nr, e.Support)
		// Each argument case, with its value and with the upper half of
		// the register set where the kernel ignores it.
		for _, cs := range e.Cases {
			want := rule(e.Nr, cs.Support, cs.Errno)
			for _, high := range []uint64{0, 0xffffffff_00000000 &^ cs.When.Mask} {
				in := seccompData(int32(e.Nr), unix.AUDIT_ARCH_X86_64)
				putArg(in, cs.When.Arg, cs.When.Value|high)
				ret, err := bpf.Exec[bpf.NativeEndian](prog, in)
				require.NoError(t, err)
				assert.Equal(t, strconv.FormatUint(uint64(filterReturnOf(want)), 16), strconv.FormatUint(uint64(ret), 16),
					"filter action for %s(%s) with upper half %#x", e.Name, cs.Name, high)
			}
		}
	}

	const x32SyscallBit = 0x40000000 // __X32_SYSCALL_BIT
	for _, tc := range []struct {
		name string
		nr   int32
		arch uint32
	}{
		{"unknown number", 1000, unix.AUDIT_ARCH_X86_64},
		{"number after txexec's own", SysXresume + 1, unix.AUDIT_ARCH_X86_64},
		{"x32 xbegin", x32SyscallBit | SysXbegin, unix.AUDIT_ARCH_X86_64},
		{"unused range", unix.SYS_UPROBE + 1, unix.AUDIT_ARCH_X86_64},
		{"negative number", -1, unix.AUDIT_ARCH_X86_64},
		{"x32 read", x32SyscallBit | unix.SYS_READ, unix.AUDIT_ARCH_X86_64},
		{"x32 openat", x32SyscallBit | unix.SYS_OPENAT, unix.AUDIT_ARCH_X86_64},
		{"i386 read", 3, unix.AUDIT_ARCH_I386},
		{"i386 open", 5, unix.AUDIT_ARCH_I386},
		{"i386 number of x86-64 read", unix.SYS_READ, unix.AUDIT_ARCH_I386},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, strconv.FormatUint(uint64(enosys), 16), strconv.FormatUint(uint64(run(tc.nr, tc.arch)), 16))
		})
	}
}
