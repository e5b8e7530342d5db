package interpose

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/bpf"
)

// runFilter runs prog, as the kernel's checks (in gVisor's interpreter)
// accept it, on one seccomp_data.
func runFilter(t *testing.T, prog []unix.SockFilter, arch uint32, nr int32, args [6]uint64) string {
	t.Helper()
	insns := make([]bpf.Instruction, len(prog))
	for i, ins := range prog {
		insns[i] = bpf.RawInstruction(ins.Code, ins.Jt, ins.Jf, ins.K)
	}
	p, err := bpf.Compile(insns, false /* optimize */)
	require.NoError(t, err, "the kernel's checks (as gVisor implements them) reject the filter")
	b := make([]byte, 64)
	binary.NativeEndian.PutUint32(b[seccompDataNr:], uint32(nr))
	binary.NativeEndian.PutUint32(b[seccompDataArch:], arch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(b[seccompDataArgs+8*i:], a)
	}
	ret, err := bpf.Exec[bpf.NativeEndian](p, bpf.Input(b))
	require.NoError(t, err)
	return strconv.FormatUint(uint64(ret), 16)
}

func TestFilterArgConditions(t *testing.T) {
	const (
		setflags = 0x40086602 // FS_IOC_SETFLAGS
		tcgets   = 0x5401
	)
	rules := []Rule{
		{Nr: unix.SYS_READ, Action: ActAllow},
		{Nr: unix.SYS_IOCTL, Action: ActNotify, If: &ArgCond{Arg: 1, Mask: 0xffffffff, Value: setflags}},
		{Nr: unix.SYS_IOCTL, Action: ActErrno, Errno: unix.EPERM, If: &ArgCond{Arg: 1, Mask: 0xffffffff, Value: 0x1234}},
		{Nr: unix.SYS_IOCTL, Action: ActAllow},
		{Nr: unix.SYS_CLONE, Action: ActAllow},
		{Nr: unix.SYS_CLONE, Action: ActNotify, If: &ArgCond{Arg: 0, Mask: unix.CLONE_NEWNS, Value: unix.CLONE_NEWNS}},
		{Nr: unix.SYS_CLONE, Action: ActNotify, If: &ArgCond{Arg: 0, Mask: unix.CLONE_NEWUSER, Value: unix.CLONE_NEWUSER}},
		{Nr: unix.SYS_FCNTL, Action: ActAllow},
		{Nr: unix.SYS_FCNTL, Action: ActTrace, If: &ArgCond{Arg: 2, Mask: 0xff00000000000000, Value: 0x4200000000000000}},
		{Nr: unix.SYS_OPENAT, Action: ActAllow, If: &ArgCond{Arg: 0, Mask: 0xffffffff, Value: 5,
			And: &ArgCond{Arg: 2, Mask: unix.O_ACCMODE, Value: 0}}},
		{Nr: unix.SYS_OPENAT, Action: ActNotify},
	}
	prog, err := CompileFilter(rules)
	require.NoError(t, err)

	hex := func(v uint32) string { return strconv.FormatUint(uint64(v), 16) }
	allow := hex(unix.SECCOMP_RET_ALLOW)
	notify := hex(unix.SECCOMP_RET_USER_NOTIF)
	enosys := hex(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	for _, tc := range []struct {
		name string
		arch uint32
		nr   int32
		args [6]uint64
		want string
	}{
		{"ioctl FS_IOC_SETFLAGS", unix.AUDIT_ARCH_X86_64, unix.SYS_IOCTL, [6]uint64{3, setflags}, notify},
		{"ioctl FS_IOC_SETFLAGS with the upper half set, which the kernel ignores", unix.AUDIT_ARCH_X86_64, unix.SYS_IOCTL, [6]uint64{3, 0xdead0000_00000000 | setflags}, notify},
		{"ioctl second case", unix.AUDIT_ARCH_X86_64, unix.SYS_IOCTL, [6]uint64{3, 0x1234}, hex(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))},
		{"ioctl TCGETS", unix.AUDIT_ARCH_X86_64, unix.SYS_IOCTL, [6]uint64{0, tcgets}, allow},
		{"ioctl request in another argument", unix.AUDIT_ARCH_X86_64, unix.SYS_IOCTL, [6]uint64{setflags, tcgets, setflags}, allow},
		{"clone of a thread", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, [6]uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, allow},
		{"clone CLONE_NEWNS", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWNS | uint64(unix.SIGCHLD)}, notify},
		{"clone CLONE_NEWUSER|CLONE_NEWPID", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWPID}, notify},
		{"fcntl high-word case", unix.AUDIT_ARCH_X86_64, unix.SYS_FCNTL, [6]uint64{1, 2, 0x42ff000000000000}, hex(unix.SECCOMP_RET_TRACE)},
		{"fcntl high-word miss", unix.AUDIT_ARCH_X86_64, unix.SYS_FCNTL, [6]uint64{1, 2, 0x41ff000000000000}, allow},
		{"openat, both conditions", unix.AUDIT_ARCH_X86_64, unix.SYS_OPENAT, [6]uint64{5, 0, unix.O_RDONLY | unix.O_PATH}, allow},
		{"openat, the first condition only", unix.AUDIT_ARCH_X86_64, unix.SYS_OPENAT, [6]uint64{5, 0, unix.O_WRONLY}, notify},
		{"openat, the And condition only", unix.AUDIT_ARCH_X86_64, unix.SYS_OPENAT, [6]uint64{6, 0, unix.O_RDONLY}, notify},
		{"read, compiled by libseccomp", unix.AUDIT_ARCH_X86_64, unix.SYS_READ, [6]uint64{}, allow},
		{"a number without rules", unix.AUDIT_ARCH_X86_64, unix.SYS_WRITE, [6]uint64{}, enosys},
		{"x32 ioctl", unix.AUDIT_ARCH_X86_64, 0x40000000 | unix.SYS_IOCTL, [6]uint64{0, tcgets}, enosys},
		{"i386 call with ioctl's x86-64 number", unix.AUDIT_ARCH_I386, unix.SYS_IOCTL, [6]uint64{0, tcgets}, enosys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, runFilter(t, prog, tc.arch, tc.nr, tc.args))
		})
	}
}

func TestFilterArgConditionsMatchesAgreesWithFilter(t *testing.T) {
	c := ArgCond{Arg: 1, Mask: 0xffffffff, Value: 0x40086602}
	assert.True(t, c.Matches([6]Arg{3, 0xffffffff_40086602}))
	assert.False(t, c.Matches([6]Arg{3, 0x40086601}))
	c.And = &ArgCond{Arg: 2, Mask: 3, Value: 0}
	assert.True(t, c.Matches([6]Arg{3, 0x40086602, 4}))
	assert.False(t, c.Matches([6]Arg{3, 0x40086602, 1}))
}

func TestFilterArgConditionsRejected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []Rule
		err   string
	}{
		{"no rule for the other calls", []Rule{
			{Nr: unix.SYS_IOCTL, Action: ActNotify, If: &ArgCond{Arg: 1, Mask: 0xffffffff, Value: 1}},
		}, "need a rule without a condition"},
		{"two defaults", []Rule{
			{Nr: unix.SYS_IOCTL, Action: ActNotify, If: &ArgCond{Arg: 1, Mask: 0xffffffff, Value: 1}},
			{Nr: unix.SYS_IOCTL, Action: ActAllow},
			{Nr: unix.SYS_IOCTL, Action: ActNotify},
		}, "two rules without a condition"},
		{"value outside the mask", []Rule{
			{Nr: unix.SYS_IOCTL, Action: ActNotify, If: &ArgCond{Arg: 1, Mask: 0xff, Value: 0x100}},
			{Nr: unix.SYS_IOCTL, Action: ActAllow},
		}, "never matches"},
		{"no such argument in an And condition", []Rule{
			{Nr: unix.SYS_IOCTL, Action: ActNotify, If: &ArgCond{Arg: 1, Mask: 1, Value: 1, And: &ArgCond{Arg: 7, Mask: 1, Value: 1}}},
			{Nr: unix.SYS_IOCTL, Action: ActAllow},
		}, "no argument 7"},
		{"no such argument", []Rule{
			{Nr: unix.SYS_IOCTL, Action: ActNotify, If: &ArgCond{Arg: 6, Mask: 1, Value: 1}},
			{Nr: unix.SYS_IOCTL, Action: ActAllow},
		}, "no argument 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileFilter(tc.rules)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
