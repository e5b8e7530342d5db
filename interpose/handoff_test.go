package interpose

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openHandler serves every read-only openat with a descriptor reply (the
// supervisor opens the path, as the caller named it, and installs it);
// others it lets run, before reading any memory. For the openat of
// marker it calls onMarker first, on the worker thread.
type openHandler struct {
	marker   string
	onMarker func(c *Call)

	mu sync.Mutex
	// before holds the worker's scheduling attributes when it served
	// each descriptor reply's call, by notification ID.
	// +checklocks:mu
	before map[uint64]*unix.SchedAttr
}

func (h *openHandler) Handle(c *Call) Reply {
	if c.Nr != unix.SYS_OPENAT {
		return Continue()
	}
	flags := c.Args[2].Int()
	if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_TMPFILE) != 0 {
		return Continue()
	}
	p, err := c.ReadPath(c.Args[1].Pointer())
	if err != nil {
		return FromError(err)
	}
	if !filepath.IsAbs(p) {
		base := "/proc/" + strconv.Itoa(c.Tid) + "/cwd"
		if dirfd := c.Args[0].Int(); dirfd != unix.AT_FDCWD {
			base = "/proc/" + strconv.Itoa(c.Tid) + "/fd/" + strconv.Itoa(int(dirfd))
		}
		p = base + "/" + p
	}
	fd, err := unix.Open(p, int(flags)&^unix.O_CLOEXEC, 0)
	if err != nil {
		return FromError(err)
	}
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		unix.Close(fd)
		return FromError(err)
	}
	h.mu.Lock()
	h.before[c.ID] = attr
	h.mu.Unlock()
	if p == h.marker && h.onMarker != nil {
		h.onMarker(c)
	}
	return InstallFD(fd, flags&unix.O_CLOEXEC != 0)
}

// threadPolicy reads the scheduling policy of the supervisor's thread tid
// (proc_pid_stat(5) field 41); -1 if it cannot (the thread has ended).
func threadPolicy(tid int) int {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return -1
	}
	// Fields from the third on follow the command name's ')'.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	policy, err := strconv.Atoi(fields[41-3])
	if err != nil {
		return -1
	}
	return policy
}

// holdCPU runs a SCHED_FIFO thread on cpu until watch returns true or
// holdMax has gone by (the RT throttle leaves the machine 5% of the CPU
// meanwhile). The thread ends with it.
func holdCPU(cpu int, ready chan<- error, watch func() bool) (seen bool) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		ready <- err
		return false
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
		ready <- err
		return false
	}
	ready <- nil
	const holdMax = 3 * time.Second
	for start := time.Now(); time.Since(start) < holdMax; {
		if watch() {
			return true
		}
	}
	return false
}

// TestDescriptorReplyHandsOffAsIdle: a worker makes a descriptor reply's
// ADDFD as a SCHED_IDLE thread (idleHandoff), so that the scheduler wakes
// the caller on the worker's CPU, and is back in SCHED_NORMAL, its nice
// kept, once the reply is sent; also when the caller has a SIGSTOP
// pending, which does not end its wait for the reply. To see the worker
// inside the ADDFD wait, the caller is held off the CPU: for the marker
// file's open, the handler moves the caller to the other CPU, where a
// SCHED_FIFO thread of the test spins until it sees the worker SCHED_IDLE
// (or gives up).
func TestDescriptorReplyHandsOffAsIdle(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: one held by the test, one for the worker")
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
		t.Skipf("cannot make a SCHED_FIFO thread to hold a CPU: %v", err)
	}
	require.NoError(t, unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0))
	for _, stop := range []bool{false, true} {
		t.Run(map[bool]string{false: "running", true: "stop-pending"}[stop], func(t *testing.T) {
			// attempt runs cat on the marker once and reports whether the
			// holder saw the worker SCHED_IDLE. The holder's watch is at the
			// scheduler's mercy (a loaded machine, the race detector, RT
			// throttling of the holder letting the caller run early): a
			// running caller is tried up to three times, and one sighting
			// is enough; a worker that never hands off fails every time.
			attempt := func() bool {
				dir := t.TempDir()
				marker := filepath.Join(dir, "marker")
				require.NoError(t, os.WriteFile(marker, []byte("marked\n"), 0o644))
				var seenIdle, stopped atomic.Bool
				// held is closed when the thread holding the other CPU ends.
				held := make(chan struct{})
				h := &openHandler{marker: marker, before: map[uint64]*unix.SchedAttr{}}
				h.onMarker = func(c *Call) {
					worker := unix.Gettid()
					var cpu uint32
					unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0)
					other := int(cpu+1) % runtime.NumCPU()
					var set unix.CPUSet
					set.Set(other)
					require.NoError(t, unix.SchedSetaffinity(c.Tid, &set))
					if stop {
						require.NoError(t, unix.Tgkill(c.Tid, c.Tid, unix.SIGSTOP))
						stopped.Store(true)
					}
					ready := make(chan error)
					go func() {
						defer close(held)
						seenIdle.Store(holdCPU(other, ready, func() bool { return threadPolicy(worker) == unix.SCHED_IDLE }))
					}()
					require.NoError(t, <-ready)
				}
				type after struct {
					before, after *unix.SchedAttr
					val           int64
					err           error
				}
				var mu sync.Mutex
				var replies []after
				var markerVal atomic.Int64
				markerVal.Store(-1)
				onReply := func(c *Call, r Reply, val int64, err error) {
					if !r.IsFD() {
						return
					}
					attr, aerr := unix.SchedGetAttr(0, 0)
					require.NoError(t, aerr)
					h.mu.Lock()
					b := h.before[c.ID]
					h.mu.Unlock()
					mu.Lock()
					replies = append(replies, after{before: b, after: attr, val: val, err: err})
					mu.Unlock()
					if stopped.CompareAndSwap(true, false) {
						markerVal.Store(val)
						unix.Kill(c.Tid, unix.SIGCONT)
					}
				}
				out, status := runNotifying(t, h, unix.SYS_OPENAT, onReply, "/bin/cat", marker)
				assert.Equal(t, "marked\n", out)
				assert.Equal(t, 0, status)
				select {
				case <-held:
				case <-time.After(10 * time.Second):
					t.Fatal("the marker's open never held the other CPU")
				}
				// With a SIGSTOP pending the caller may leave its wait before
				// the reply (the kernel then answers the ADDFD at once, and the
				// call is restarted after SIGCONT): only the policy after the
				// reply is checked then.
				if stop {
					assert.GreaterOrEqual(t, markerVal.Load(), int64(0), "the descriptor reply to a caller with a SIGSTOP pending")
				}
				require.NotEmpty(t, replies)
				for _, a := range replies {
					require.NotNil(t, a.before)
					assert.NoError(t, a.err)
					assert.GreaterOrEqual(t, a.val, int64(0))
					assert.Equal(t, uint32(unix.SCHED_NORMAL), a.after.Policy, "policy after a descriptor reply")
					assert.Equal(t, a.before.Nice, a.after.Nice, "nice after a descriptor reply")
				}
				return seenIdle.Load()
			}
			if stop {
				attempt()
				return
			}
			seen := false
			for i := 0; i < 3 && !seen; i++ {
				seen = attempt()
			}
			assert.True(t, seen, "the worker was never SCHED_IDLE while the caller was held off the CPU")
		})
	}
}

// TestIdleHandoffNeedsTheRightToLeaveIdle: a thread that could enter
// SCHED_IDLE but not leave it (no CAP_SYS_NICE, RLIMIT_NICE too low: an
// unprivileged txexec) makes no hand-off, and the probe leaves it
// SCHED_NORMAL.
func TestIdleHandoffNeedsTheRightToLeaveIdle(t *testing.T) {
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NICE, &lim))
	attr, err := unix.SchedGetAttr(0, 0)
	require.NoError(t, err)
	if lim.Cur >= uint64(20-attr.Nice) {
		t.Skipf("RLIMIT_NICE %d lets any thread leave SCHED_IDLE", lim.Cur)
	}
	type result struct {
		h      idleHandoff
		stuck  bool
		err    error
		policy uint32
	}
	done := make(chan result)
	go func() {
		// Never unlocked: the thread, its capabilities changed, ends
		// with the goroutine.
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- result{err: err}
			return
		}
		data[unix.CAP_SYS_NICE/32].Effective &^= 1 << (unix.CAP_SYS_NICE % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- result{err: err}
			return
		}
		h, stuck, err := newIdleHandoff()
		a, aerr := unix.SchedGetAttr(0, 0)
		if aerr != nil {
			done <- result{err: aerr}
			return
		}
		done <- result{h: h, stuck: stuck, err: err, policy: a.Policy}
	}()
	r := <-done
	require.NoError(t, r.err)
	assert.False(t, r.stuck, "the probe left the thread SCHED_IDLE")
	assert.False(t, r.h.on, "a hand-off the thread could not come back from")
	assert.Equal(t, uint32(unix.SCHED_NORMAL), r.policy)
}

// TestHandoffSafe: only a read-only regular file or directory is handed
// over with the CPU: the worker closes its copy only when it runs again,
// and a writable copy left open makes an exec of the file fail (ETXTBSY),
// a pipe's changes what its other end sees.
func TestHandoffSafe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o755))
	for _, tc := range []struct {
		name  string
		flags int
		path  string
		want  bool
	}{{"read-only file", unix.O_RDONLY, file, true}, {"directory", unix.O_RDONLY | unix.O_DIRECTORY, dir, true},
		{"write-only file", unix.O_WRONLY, file, false}, {"read-write file", unix.O_RDWR, file, false}} {
		fd, err := unix.Open(tc.path, tc.flags|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		assert.Equal(t, tc.want, handoffSafe(fd), tc.name)
		unix.Close(fd)
	}
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	assert.False(t, handoffSafe(p[0]), "a pipe's read end")
	unix.Close(p[0])
	unix.Close(p[1])
}
