package syscalls

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/proc"
	"txexec/vfs"
)

// txView stands for a transaction's view: any view but the host's.
type txView struct{ vfs.View }

// TestPtraceRefusedWithMessage: every ptrace is refused with EPERM and a
// line naming the call and both pids (the target outside the transaction
// said so), except that a target that does not exist is ESRCH, as Linux
// answers, with nothing to say.
func TestPtraceRefusedWithMessage(t *testing.T) {
	self := os.Getpid()
	for _, tc := range []struct {
		name    string
		view    vfs.View
		req     uint64
		pid     int
		want    interpose.Reply
		message string
	}{
		{name: "outside the transaction", view: txView{}, req: unix.PTRACE_SEIZE, pid: 1, want: interpose.Fail(unix.EPERM),
			message: fmt.Sprintf("txexec: refused ptrace of pid %d on pid 1, which is outside the transaction", self)},
		{name: "inside the transaction", view: txView{}, req: unix.PTRACE_ATTACH, pid: self, want: interpose.Fail(unix.EPERM),
			message: fmt.Sprintf("txexec: refused ptrace of pid %d on pid %d: txexec is already its tracer, and nested tracing is not supported", self, self)},
		{name: "traceme", view: txView{}, req: unix.PTRACE_TRACEME, pid: 1, want: interpose.Fail(unix.EPERM),
			message: fmt.Sprintf("txexec: refused ptrace(PTRACE_TRACEME) of pid %d: txexec is already its tracer, and nested tracing is not supported", self)},
		{name: "no such process", view: txView{}, req: unix.PTRACE_SEIZE, pid: 1<<31 - 1, want: interpose.Fail(unix.ESRCH)},
		{name: "passthrough", view: &vfs.Host{}, req: unix.PTRACE_SEIZE, pid: 1, want: interpose.Fail(unix.EPERM),
			message: fmt.Sprintf("txexec: refused ptrace of pid %d on pid 1: processes under txexec cannot trace, nested tracing is not supported", self)},
		{name: "passthrough, inside", view: &vfs.Host{}, req: unix.PTRACE_SEIZE, pid: self, want: interpose.Fail(unix.EPERM),
			message: fmt.Sprintf("txexec: refused ptrace of pid %d on pid %d: txexec is already its tracer, and nested tracing is not supported", self, self)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged []string
			procs := proc.NewTable()
			procs.AddRoot(self, nil)
			k := &Kernel{Procs: procs, View: tc.view, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
			c := &interpose.Call{Tid: self, Nr: unix.SYS_PTRACE}
			c.Args[0], c.Args[1] = interpose.Arg(tc.req), interpose.Arg(tc.pid)
			assert.Equal(t, tc.want, Ptrace(k, c))
			if tc.message == "" {
				assert.Empty(t, logged)
			} else {
				assert.Equal(t, []string{tc.message}, logged)
			}
		})
	}
}
