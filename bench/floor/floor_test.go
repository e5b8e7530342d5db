package floor

import (
	"strconv"
	"testing"
)

// minCalls is the minimum number of timed calls per benchmark run, so that
// tiny b.N values (the framework's probe runs) still give a stable ns/call.
const minCalls = 2000

var modes = []struct {
	name string
	args []string
}{
	{"native", []string{"-m"}},
	{"notify", nil},
	{"notify-syncwake", []string{"-s"}},
	{"notify-continue", []string{"-c"}},
	{"notify-idvalid", []string{"-v"}},
	{"native-pinned", []string{"-m", "-p"}},
	{"notify-pinned", []string{"-p"}},
	{"notify-syncwake-pinned", []string{"-s", "-p"}},
	{"notify-continue-pinned", []string{"-c", "-p"}},
	{"open-native", []string{"-o", "-m"}},
	{"open-notify-addfd-syncwake", []string{"-o", "-s"}},
	{"open-notify-addfd-syncwake-pinned", []string{"-o", "-s", "-p"}},
	{"native-gap", []string{"-m", "-b", "1000"}},
	{"notify-syncwake-gap", []string{"-s", "-b", "1000"}},
	{"notify-syncwake-two-callers", []string{"-s", "-2"}},
	{"notify-syncwake-idvalid-two-callers-gap", []string{"-s", "-v", "-2", "-b", "1000"}},
	{"open-notify-addfd-syncwake-two-callers", []string{"-o", "-s", "-2"}},
}

func TestFloorModes(t *testing.T) {
	bin := Build(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ns, err := Run(bin, append([]string{"-n", "300"}, m.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			// Plausible: more than a few ns, less than 10 ms per call.
			if ns < 10 || ns > 10e6 {
				t.Fatalf("implausible ns_per_call=%g", ns)
			}
			t.Logf("%s: %.0f ns/call", m.name, ns)
		})
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	bin := Build(t)
	for _, args := range [][]string{{"-n", "0"}, {"-f", "relative"}, {"-m", "-s"}, {"-m", "-2"}, {"-x"}, {"-b", "-1"}, {"-b", "x"}} {
		if _, err := Run(bin, args...); err == nil {
			t.Errorf("Run(%q): want error", args)
		}
	}
}

func benchFloor(b *testing.B, args ...string) {
	bin := Build(b)
	n := max(b.N, minCalls)
	b.ResetTimer()
	ns, err := Run(bin, append([]string{"-n", strconv.Itoa(n)}, args...)...)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ns, "ns/call")
}

// BenchmarkNativeStat: fstatat with no seccomp filter.
func BenchmarkNativeStat(b *testing.B) { benchFloor(b, "-m") }

// BenchmarkBareNotifyStat: fstatat trapped by SECCOMP_RET_USER_NOTIF and
// emulated by the bare C supervisor.
func BenchmarkBareNotifyStat(b *testing.B) { benchFloor(b) }

// BenchmarkBareNotifyStatSyncWake: as BenchmarkBareNotifyStat with
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP set on the listener.
func BenchmarkBareNotifyStatSyncWake(b *testing.B) { benchFloor(b, "-s") }

// BenchmarkBareNotifyContinue: the supervisor replies
// SECCOMP_USER_NOTIF_FLAG_CONTINUE instead of emulating.
func BenchmarkBareNotifyContinue(b *testing.B) { benchFloor(b, "-c") }

// Pinned variants: supervisor and child both on CPU 0.
func BenchmarkBareNotifyStatPinned(b *testing.B)         { benchFloor(b, "-p") }
func BenchmarkBareNotifyStatSyncWakePinned(b *testing.B) { benchFloor(b, "-s", "-p") }
func BenchmarkBareNotifyContinuePinned(b *testing.B)     { benchFloor(b, "-c", "-p") }

// BenchmarkBareNotifyOpenSyncWake: open+close with openat trapped and
// answered by installing the supervisor's descriptor (ADDFD with SEND).
func BenchmarkBareNotifyOpenSyncWake(b *testing.B) { benchFloor(b, "-o", "-s") }

// BenchmarkBareNotifyOpenSyncWakeIdle: the same, each ADDFD made as a
// SCHED_IDLE thread, as txexec's workers make it (interpose/handoff.go).
func BenchmarkBareNotifyOpenSyncWakeIdle(b *testing.B) { benchFloor(b, "-o", "-s", "-i") }
