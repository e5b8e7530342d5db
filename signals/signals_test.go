package signals

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// TestMayKill: the kill(2) permission rule, including SIGCONT within a
// session — and session 0, which is init's session in the initial pid
// namespace (where CI starts its jobs) but unknowable in a nested one.
func TestMayKill(t *testing.T) {
	user := Sender{Tid: 100, Tgid: 100, UID: 1000, EUID: 1000}
	rootTask := func(session int) Task {
		return Task{Tid: 200, Tgid: 200, Session: session}
	}
	sessionOf := func(sid int) func(int) (int, error) {
		return func(int) (int, error) { return sid, nil }
	}
	for _, tc := range []struct {
		name      string
		s         Sender
		t         Task
		sig       int
		callerSID int
		zeroReal  bool
		want      error
	}{
		{"invalid signal", user, rootTask(5), 65, 5, true, unix.EINVAL},
		{"own process", Sender{Tid: 201, Tgid: 200, UID: 1000, EUID: 1000}, rootTask(5), 9, 6, true, nil},
		{"to another user", user, rootTask(5), 10, 6, true, unix.EPERM},
		{"existence check of another user", user, rootTask(5), 0, 5, true, unix.EPERM},
		{"same real uid", user, Task{Tid: 200, Tgid: 200, UID: 1000}, 10, 6, true, nil},
		{"effective uid matches saved", Sender{Tid: 100, Tgid: 100, UID: 1, EUID: 7}, Task{Tid: 200, Tgid: 200, SUID: 7}, 10, 6, true, nil},
		{"CAP_KILL", Sender{Tid: 100, Tgid: 100, UID: 1000, EUID: 1000, CapKill: true}, rootTask(5), 9, 6, true, nil},
		{"SIGCONT same session", user, rootTask(5), int(unix.SIGCONT), 5, true, nil},
		{"SIGCONT other session", user, rootTask(5), int(unix.SIGCONT), 6, true, unix.EPERM},
		{"SIGCONT in init's session", user, rootTask(0), int(unix.SIGCONT), 0, true, nil},
		{"SIGCONT, sessions not visible here", user, rootTask(0), int(unix.SIGCONT), 0, false, unix.EPERM},
		{"SIGCONT, one session not visible here", user, rootTask(0), int(unix.SIGCONT), 5, false, unix.EPERM},
		{"other signal in init's session", user, rootTask(0), 10, 0, true, unix.EPERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := sessionZeroIsReal
			sessionZeroIsReal = func() bool { return tc.zeroReal }
			defer func() { sessionZeroIsReal = old }()
			assert.Equal(t, tc.want, mayKill(tc.s, tc.t, tc.sig, sessionOf(tc.callerSID)))
		})
	}
}
