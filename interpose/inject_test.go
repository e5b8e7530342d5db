package interpose

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// testShared is a transaction's side of the shared memory for tests: a
// tree memfd and a ring memfd per process, kept to compare with what the
// images map.
type testShared struct {
	SharedMemory
	tree *os.File
	mu   sync.Mutex
	// +checklocks:mu
	rings map[int]*os.File
	// +checklocks:mu
	failed []int
}

const (
	testTreeMemfd = "txexec-test-tree"
	testRingMemfd = "txexec-test-ring"
)

func newTestShared(t *testing.T) *testShared {
	s := &testShared{rings: map[int]*os.File{}}
	s.tree = testMemfd(t, testTreeMemfd, 3*4096)
	s.SharedMemory = SharedMemory{TreeFD: int(s.tree.Fd()), TreeSize: 3 * 4096, RingSize: 4096,
		Ring: func(tgid int) (int, error) {
			f := testMemfd(t, testRingMemfd, 4096)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.rings[tgid] = f
			return int(f.Fd()), nil
		},
		Failed: func(tgid int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.failed = append(s.failed, tgid)
		},
	}
	return s
}

func testMemfd(t *testing.T, name string, size int64) *os.File {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), name)
	t.Cleanup(func() { f.Close() })
	require.NoError(t, f.Truncate(size))
	return f
}

// ringIno is the inode of the ring memfd made for tgid, 0 if none.
func (s *testShared) ringIno(t *testing.T, tgid int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.rings[tgid]
	if f == nil {
		return 0
	}
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	return st.Ino
}

func (s *testShared) failedTgids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failed)
}

// mapsLine is a line of /proc/PID/maps.
type mapsLine struct {
	start, end uint64
	exec       bool   // the mapping is executable
	pgoff      uint64 // the file offset mapped at start
	ino        uint64
	name       string
}

func readMaps(t *testing.T, pid int) []mapsLine {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	var ms []mapsLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// start-end perms offset dev inode [name]
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 5, line)
		var m mapsLine
		_, err := fmt.Sscanf(f[0], "%x-%x", &m.start, &m.end)
		require.NoError(t, err, line)
		m.exec = len(f[1]) > 2 && f[1][2] == 'x'
		m.pgoff, err = strconv.ParseUint(f[2], 16, 64)
		require.NoError(t, err, line)
		m.ino, err = strconv.ParseUint(f[4], 10, 64)
		require.NoError(t, err, line)
		if len(f) > 5 {
			m.name = strings.Join(f[5:], " ")
		}
		ms = append(ms, m)
	}
	return ms
}

// mappingAt is the mapping that starts at addr.
func mappingAt(ms []mapsLine, addr uint64) (mapsLine, bool) {
	for _, m := range ms {
		if m.start == addr {
			return m, true
		}
	}
	return mapsLine{}, false
}

// openFDs maps each open descriptor of pid to what it refers to.
func openFDs(t *testing.T, pid int) map[int]string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	fds := map[int]string{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		target, err := os.Readlink(dir + "/" + e.Name())
		if err == nil { // the directory's own descriptor, when pid is us, is gone
			fds[fd] = target
		}
	}
	return fds
}

// memfdsOpen counts our descriptors of memfds named name.
func memfdsOpen(t *testing.T, name string) int {
	n := 0
	for _, target := range openFDs(t, os.Getpid()) {
		if strings.HasPrefix(target, "/memfd:"+name+" ") {
			n++
		}
	}
	return n
}

// startAtExec starts a C program traced by the calling thread (which it
// locks) and waits for the SIGTRAP that stops it after its execve, before
// the first instruction of its image: where the exec stop injects.
func startAtExec(t *testing.T) *exec.Cmd {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &unix.SysProcAttr{Ptrace: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var ws unix.WaitStatus
	_, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WALL|waitNoThread, nil)
	require.NoError(t, err)
	require.True(t, ws.Stopped() && ws.StopSignal() == unix.SIGTRAP, "status %#x", ws)
	return cmd
}

// TestInjectedCodeSkips runs the exec stop's code in a traced image and
// reads its result registers: each call runs only if the one before did
// what the next needs, and one that did not leaves nothing behind — no
// mapping, no descriptor, in the image or in the supervisor. Traced with
// no seccomp listener, the injected openat reaches the kernel with its
// null path and fails (EFAULT), as a refused one would. The code runs at
// the instruction pointer, or at its page's start (where codeAt puts code
// that would cross into the next page), and the bytes under it are put
// back.
func TestInjectedCodeSkips(t *testing.T) {
	errno := func(e unix.Errno) uint64 { return uint64(-int64(e)) }
	for _, tc := range []struct {
		name string
		// taken says the agent's range is taken in the image;
		// pageStart runs the code at the start of the page.
		taken, pageStart bool
		agent            func(base uintptr) uint64
		openat           uint64
		newAgents        int
	}{
		{name: "agent range taken", taken: true,
			agent: func(uintptr) uint64 { return errno(unix.EEXIST) }, openat: notRun},
		{name: "openat fails",
			agent: func(base uintptr) uint64 { return uint64(base) }, openat: errno(unix.EFAULT), newAgents: 1},
		{name: "openat fails, at the page's start", pageStart: true,
			agent: func(base uintptr) uint64 { return uint64(base) }, openat: errno(unix.EFAULT), newAgents: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := startAtExec(t)
			pid := cmd.Process.Pid
			tr := newTracer(&hostExec{}, t.Logf)
			in, ok := tr.newInjector(pid)
			require.True(t, ok)
			f := &FastLookups{Base: DefaultAgentBase, Shared: &newTestShared(t).SharedMemory}
			if tc.taken {
				// The page of its first instruction (the dynamic
				// loader's text).
				f.Base = uintptr(in.saved.Rip) &^ (pageSize - 1)
			}
			tr.fast = f
			mapsBefore, fdsBefore := readMaps(t, pid), openFDs(t, pid)
			code, _ := f.agentCode()
			at := codeAt(in.saved.Rip, len(code))
			if tc.pageStart {
				at = in.saved.Rip &^ uint64(pageSize-1)
				require.NotEqual(t, in.saved.Rip, at)
			}
			text := make([]byte, len(code))
			require.NoError(t, Memory{Tid: pid}.Read(uintptr(at), text))
			regs, ok := in.run(code, at)
			in.restore()
			in.close()
			require.True(t, ok)
			textAfter := make([]byte, len(code))
			require.NoError(t, Memory{Tid: pid}.Read(uintptr(at), textAfter))
			assert.Equal(t, text, textAfter, "the bytes put back")
			assert.Equal(t, at+uint64(len(code)), regs.Rip, "stopped after the int3")
			assert.Equal(t, tc.agent(f.Base), regValue(&regs, agentResult), "the agent's mmap")
			assert.Equal(t, tc.openat, regValue(&regs, openResult), "the openat")
			for i, r := range mapResults {
				assert.Equal(t, notRun, regValue(&regs, r), "mapping %d", i)
			}
			mapsAfter := readMaps(t, pid)
			assert.Len(t, mapsAfter, len(mapsBefore)+tc.newAgents)
			if tc.newAgents > 0 {
				m, ok := mappingAt(mapsAfter, uint64(f.Base))
				assert.True(t, ok && m.end == uint64(f.Base)+agentMapSize, "the agent's mapping: %+v", m)
			}
			assert.Equal(t, fdsBefore, openFDs(t, pid))
			var after unix.PtraceRegs
			require.NoError(t, unix.PtraceGetRegs(pid, &after))
			assert.Equal(t, in.saved, after, "the registers put back")
		})
	}
}

// TestInjectCodeAt: the code goes at the instruction pointer, or at the
// start of its page when it would run past the page's end.
func TestInjectCodeAt(t *testing.T) {
	for _, tc := range []struct {
		ip   uint64
		n    int
		want uint64
	}{
		{0x401000, 200, 0x401000},
		{0x401e38, 200, 0x401e38},
		{0x401f38, 200, 0x401f38}, // ends at the page's end
		{0x401f39, 200, 0x401000},
		{0x401ffe, 200, 0x401000},
	} {
		assert.Equal(t, tc.want, codeAt(tc.ip, tc.n), "%#x + %d", tc.ip, tc.n)
	}
}

// TestInjectAgentFailureCleansUp: an exec stop whose injection fails
// halfway (the openat refused) leaves the image on the slow path (no
// configuration), tells the transaction its ring is not mapped, and closes
// the supervisor's descriptors of the tree and the ring.
func TestInjectAgentFailureCleansUp(t *testing.T) {
	cmd := startAtExec(t)
	pid := cmd.Process.Pid
	s := newTestShared(t)
	tr := newTracer(&hostExec{}, t.Logf)
	tr.fast = &FastLookups{Base: DefaultAgentBase, Shared: &s.SharedMemory}
	require.NoError(t, tr.fast.check())
	fdsBefore := openFDs(t, pid)
	sig, alive := tr.injectAgent(pid, statExe(pid))
	assert.True(t, alive)
	assert.Zero(t, sig)
	assert.Equal(t, []int{pid}, s.failedTgids())
	assert.Equal(t, 1, memfdsOpen(t, testTreeMemfd), "the tree's: ours only")
	assert.Equal(t, 1, memfdsOpen(t, testRingMemfd), "the ring's: ours only")
	assert.Equal(t, fdsBefore, openFDs(t, pid))
	var magic [8]byte
	require.NoError(t, Memory{Tid: pid}.Read(DefaultAgentBase+agentConfigOff, magic[:]))
	assert.Zero(t, magic, "no configuration: the slow path")
}

// TestInjectSharedMemory runs a shell under a session with fast lookups in
// a transaction: its image maps the agent, the tree and a ring of its own,
// a subshell it forks maps a new ring in place of its copy of the
// parent's, and neither keeps a descriptor of the memfds open; the
// supervisor keeps none either. With a tree descriptor that cannot be
// mapped, the image maps no tree and no ring, gets no configuration and
// keeps no descriptor.
func TestInjectSharedMemory(t *testing.T) {
	for _, tc := range []struct {
		name     string
		treeMaps bool
	}{
		{"mapped", true},
		{"tree refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestShared(t)
			if !tc.treeMaps {
				// Write-only: its shared read-only mmap fails (EACCES).
				wo, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", s.tree.Fd()), os.O_WRONLY|unix.O_CLOEXEC, 0)
				require.NoError(t, err)
				t.Cleanup(func() { wo.Close() })
				s.TreeFD = int(wo.Fd())
			}
			f := &FastLookups{Base: DefaultAgentBase, Forwarded: []string{"/proc"}, Shared: &s.SharedMemory}
			sh := startShell(t, f, `echo 1; read a; (echo 2; read b); read c`)
			inherited := InheritedFDs()
			checkFDs := func(pid int) {
				for fd, target := range openFDs(t, pid) {
					assert.True(t, fd < 3 || slices.Contains(inherited, uintptr(fd)), "pid %d's descriptor %d (%s)", pid, fd, target)
					assert.NotContains(t, target, "/memfd:", "pid %d's descriptor %d", pid, fd)
				}
			}

			sh.expect("1")
			pid := sh.s.Pid()
			maps := readMaps(t, pid)
			agent, ok := mappingAt(maps, uint64(f.Base))
			assert.True(t, ok && agent.end == agent.start+agentMapSize, "the agent's mapping")
			tree, treeOK := mappingAt(maps, f.treeAddr())
			ring, ringOK := mappingAt(maps, f.ringAddr())
			var magic [8]byte
			require.NoError(t, Memory{Tid: pid}.Read(f.Base+agentConfigOff, magic[:]))
			if tc.treeMaps {
				assert.True(t, treeOK && strings.HasPrefix(tree.name, "/memfd:"+testTreeMemfd), "the tree: %+v", tree)
				assert.True(t, ringOK && ring.ino == s.ringIno(t, pid), "the ring made for it: %+v", ring)
				assert.Equal(t, "txagent2", string(magic[:]))
				assert.Empty(t, s.failedTgids())
			} else {
				assert.False(t, treeOK, "no tree")
				assert.False(t, ringOK, "no ring")
				assert.Zero(t, magic, "no configuration: the slow path")
				assert.Equal(t, []int{pid}, s.failedTgids())
			}
			checkFDs(pid)

			sh.send("a")
			sh.expect("2")
			live := sh.s.Live()
			require.Len(t, live, 2)
			child := live[0]
			if child == pid {
				child = live[1]
			}
			childRing, ok := mappingAt(readMaps(t, child), f.ringAddr())
			if tc.treeMaps {
				assert.True(t, ok && childRing.ino == s.ringIno(t, child), "a new ring: %+v", childRing)
				assert.NotEqual(t, ring.ino, childRing.ino, "not its parent's")
			} else {
				assert.False(t, ok, "no ring: the child of an image without the agent is left alone")
				assert.Zero(t, s.ringIno(t, child))
			}
			checkFDs(child)

			sh.send("b")
			sh.send("c")
			ws, err := sh.s.Wait()
			require.NoError(t, err)
			assert.Equal(t, 0, ExitStatus(ws))
			ours := 1
			if !tc.treeMaps {
				ours = 2 // and the write-only one
			}
			assert.Equal(t, ours, memfdsOpen(t, testTreeMemfd), "the supervisor's tree descriptors: ours only")
			s.mu.Lock()
			rings := len(s.rings)
			s.mu.Unlock()
			assert.Equal(t, rings, memfdsOpen(t, testRingMemfd), "the supervisor's ring descriptors: ours only")
		})
	}
}

// TestInjectSecondFDRefused: an image that can take the tree's descriptor
// but not the ring's (its RLIMIT_NOFILE reached in between) gets the
// second as missingFD: the ring's mmap fails on it, the tree's descriptor
// is still closed, and the image is on the slow path.
func TestInjectSecondFDRefused(t *testing.T) {
	s := newTestShared(t)
	f := &FastLookups{Base: DefaultAgentBase, Forwarded: []string{"/proc"}, Shared: &s.SharedMemory}
	// The image's descriptors: 0–2 and the ones txexec passes on. The
	// first free number fits under the limit, the next one does not.
	open := map[int]bool{0: true, 1: true, 2: true}
	for _, fd := range InheritedFDs() {
		open[int(fd)] = true
	}
	free := func(from int) int {
		for open[from] {
			from++
		}
		return from
	}
	limit := free(free(0) + 1)
	sh := startShell(t, f, fmt.Sprintf(`ulimit -n %d && exec sh -c 'echo 1; read a'`, limit))
	sh.expect("1")
	pid := sh.s.Pid()
	maps := readMaps(t, pid)
	tree, ok := mappingAt(maps, f.treeAddr())
	assert.True(t, ok && strings.HasPrefix(tree.name, "/memfd:"+testTreeMemfd), "the tree: %+v", tree)
	_, ok = mappingAt(maps, f.ringAddr())
	assert.False(t, ok, "no ring")
	var magic [8]byte
	require.NoError(t, Memory{Tid: pid}.Read(f.Base+agentConfigOff, magic[:]))
	assert.Zero(t, magic, "no configuration: the slow path")
	assert.Equal(t, []int{pid}, s.failedTgids())
	for fd, target := range openFDs(t, pid) {
		assert.NotContains(t, target, "/memfd:", "descriptor %d", fd)
	}
	sh.send("a")
	ws, err := sh.s.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, ExitStatus(ws))
	assert.Equal(t, 1, memfdsOpen(t, testTreeMemfd), "the supervisor's tree descriptors: ours only")
}

// testShell is a shell run under a session, talked to line by line.
type testShell struct {
	t   *testing.T
	s   *Session
	in  *os.File
	out *bufio.Reader
}

// startShell runs script with sh under a session with fast lookups f,
// every call allowed but execve and the opens (notified, and let run).
func startShell(t *testing.T, f *FastLookups, script string) *testShell {
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	s, err := Start(Config{
		Path:    "/bin/sh",
		Argv:    []string{"sh", "-c", script},
		Env:     os.Environ(),
		Files:   [3]*os.File{inR, outW, os.Stderr},
		Handler: getuidHandler{},
		Events:  &hostExec{},
		Rules: allowRest([]Rule{
			{Nr: unix.SYS_EXECVE, Action: ActTrace}, {Nr: unix.SYS_EXECVEAT, Action: ActTrace},
			{Nr: unix.SYS_OPENAT, Action: ActNotify}, {Nr: unix.SYS_OPEN, Action: ActNotify},
		}),
		FastLookups: f,
	})
	require.NoError(t, err)
	inR.Close()
	outW.Close()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		s.Kill()
		s.Wait()
	})
	return &testShell{t: t, s: s, in: inW, out: bufio.NewReader(outR)}
}

func (sh *testShell) expect(line string) {
	got, err := sh.out.ReadString('\n')
	require.NoError(sh.t, err)
	require.Equal(sh.t, line+"\n", got)
}

func (sh *testShell) send(line string) {
	_, err := sh.in.WriteString(line + "\n")
	require.NoError(sh.t, err)
}

// TestPublishCwd: the exec stop writes the working directory FastLookups.Cwd
// gives into the agent's configuration, and PublishCwd replaces it later
// under its sequence lock (even when done); a path too long for a record
// with a name joined to it, or not absolute, is published unknown; a
// process without the agent is left alone.
func TestPublishCwd(t *testing.T) {
	f := &FastLookups{Base: DefaultAgentBase, Forwarded: []string{"/proc"},
		Cwd: func(int) AgentCwd { return AgentCwd{Path: "/start", Dev: 7, Ino: 8} }}
	sh := startShell(t, f, `echo 1; read a`)
	sh.expect("1")
	pid := sh.s.Pid()
	read := func() (seq uint32, cwd AgentCwd) {
		b := make([]byte, agentCwdSize)
		require.NoError(t, Memory{Tid: pid}.Read(f.Base+agentConfigOff+agentCwdOff, b))
		n := binary.LittleEndian.Uint32(b[4:])
		require.Less(t, int(n), agentCwdPathMax)
		return binary.LittleEndian.Uint32(b), AgentCwd{Path: string(b[24 : 24+n]),
			Dev: binary.LittleEndian.Uint64(b[8:]), Ino: binary.LittleEndian.Uint64(b[16:])}
	}
	seq, cwd := read()
	assert.Zero(t, seq)
	assert.Equal(t, AgentCwd{Path: "/start", Dev: 7, Ino: 8}, cwd)
	for i, tc := range []struct{ publish, want AgentCwd }{
		{AgentCwd{Path: "/a/b"}, AgentCwd{Path: "/a/b"}},
		{AgentCwd{Path: "/" + strings.Repeat("x", agentCwdPathMax-2), Dev: 1}, AgentCwd{}},
		{AgentCwd{Path: "/" + strings.Repeat("x", agentCwdPathMax-3), Dev: 1}, AgentCwd{Path: "/" + strings.Repeat("x", agentCwdPathMax-3), Dev: 1}},
		{AgentCwd{Path: "relative"}, AgentCwd{}},
		{AgentCwd{}, AgentCwd{}},
	} {
		require.NoError(t, f.PublishCwd(pid, tc.publish))
		seq, cwd := read()
		assert.Equal(t, uint32(2*(i+1)), seq, "%+v", tc.publish)
		assert.Equal(t, tc.want, cwd)
	}
	assert.NoError(t, f.PublishCwd(os.Getpid(), AgentCwd{Path: "/"}), "no agent here")
}
