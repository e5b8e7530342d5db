package interpose

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

//go:generate sh agent/build.sh agent/agent.bin

// agentBlob is the fast-lookup agent (agent/agent.c laid out by
// agent/agent.ld, built by agent/build.sh; TestAgentBlobIsCurrent checks
// that it is the build of the sources beside it).
//
//go:embed agent/agent.bin
var agentBlob []byte

// The agent's mapping (agent/agent.ld): its pages, by offset from its base.
const (
	agentPageOff    = 0x0000 // the one syscall instruction the filter allows lookups from
	forwardPageOff  = 0x1000 // a syscall from here is notified
	agentEntryOff   = 0x2000 // what trampolines call
	agentConfigOff  = 0xa000 // agentConfig, written by the supervisor
	trampolinesOff  = 0xb000 // trampolineSize bytes each
	slotsOff        = 0xf000 // one 8-byte slot per trampoline: its address
	agentMapSize    = 0x10000
	trampolineSize  = 64
	trampolineN     = (slotsOff - trampolinesOff) / trampolineSize
	agentMagic      = 0x32746e6567617874 // "txagent2", agent_config.magic
	agentDevN       = 64                 // agent_config.devs
	agentDevsOff    = 16
	agentPrefixesSz = agentCwdOff - agentDevsOff - 8*agentDevN
	// agentCwdOff is agent_config.cwd (struct agent_cwd: seq and len,
	// four bytes each, dev and ino, eight, and the path), which
	// PublishCwd writes.
	agentCwdOff     = agentTxOpensOff - agentCwdSize
	agentCwdSize    = 24 + agentCwdPathMax
	agentCwdPathMax = 256 // FL_PATH_MAX: a joined path must fit a record
	// agentDevsUnknown, as agent_config.ndevs, says the forwarded file
	// systems did not fit: every lookup by descriptor is forwarded.
	agentDevsUnknown = 0xffffffff
	// agentTreeOff and agentRingOff are agent_config.tree and .ring: the
	// addresses of the transaction's shared memory in the image, 0 under
	// --passthrough.
	agentTreeOff = 4096 - 16
	agentRingOff = 4096 - 8
	// agentTxOpensOff is agent_config.tx_opens (SharedMemory.NativeOpens).
	agentTxOpensOff = 4096 - 24
)

// DefaultAgentBase is where the agent is mapped in every image of a run
// with fast lookups: fixed for the run, because the filter that allows the
// agent page is installed before the first exec and cannot change; below
// 2 GiB, so that a rewritten site's "jmp *disp32" reaches its slot; and
// far above where non-PIE programs are linked (0x400000) and their brk heap
// starts. An image where it is taken runs without the agent.
const DefaultAgentBase = 0x7ff00000

// FastLookupNrs are the calls the agent may make natively: the lookups that
// return no descriptor (docs/fastpath.md §6, step 1) and the read-only
// opens (step 2, which the filter allows only with openFlagsWrite clear).
var FastLookupNrs = []int{
	unix.SYS_NEWFSTATAT, unix.SYS_STATX, unix.SYS_READLINK, unix.SYS_READLINKAT, unix.SYS_STAT, unix.SYS_LSTAT,
	unix.SYS_ACCESS, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2,
	unix.SYS_OPENAT, unix.SYS_OPEN,
}

// AgentAnsweredNrs are the calls the agent answers itself, with no native
// call: getcwd, from the working directory the supervisor publishes
// (PublishCwd). Their sites are rewritten as the fast lookups' are, but
// the filter lets none of them through from the agent page.
var AgentAnsweredNrs = []int{unix.SYS_GETCWD}

// openFlagsWrite are the open flags that write or create: an access mode
// other than O_RDONLY (3 asks for reading and writing), O_CREAT, O_TRUNC
// and __O_TMPFILE. An open with any of them set is notified from the agent
// page too (docs/fastpath.md §4.1). The kernel reads the flags as an int,
// so the upper half of the register is not compared.
const openFlagsWrite = unix.O_ACCMODE | unix.O_CREAT | unix.O_TRUNC | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// openFlagsArg is the argument that holds the open flags of each opening
// fast-lookup number.
var openFlagsArg = map[int]int{unix.SYS_OPENAT: 2, unix.SYS_OPEN: 1}

func isFastLookupNr(nr int) bool {
	for _, n := range FastLookupNrs {
		if n == nr {
			return true
		}
	}
	return false
}

// isAgentNr reports whether a site of nr is rewritten to reach the agent.
func isAgentNr(nr int) bool {
	for _, n := range AgentAnsweredNrs {
		if n == nr {
			return true
		}
	}
	return isFastLookupNr(nr)
}

// FastLookups configures the fast path for read-only lookups
// (docs/fastpath.md): the agent injected at every exec stop and the call
// sites of single-threaded processes rewritten to reach it: lookups and
// read-only opens, by path and by descriptor (steps 1 and 2). Under
// --passthrough that is all; in a transaction (Shared set) every image
// also maps the tree's shared memory read-only and a ring of its own
// process read-write (docs/fastpath.md §4.5–4.7), which the agent follows
// fastlookup.h's protocol with for the lookups by path (the rest it
// forwards there).
type FastLookups struct {
	// Base is the agent's address (DefaultAgentBase): page-aligned, below
	// 2 GiB less the agent's size.
	Base uintptr
	// Forwarded are the absolute paths of the subtrees whose lookups the
	// agent always forwards to the supervisor (what it emulates or passes
	// through: /proc, /sys, /dev, the excluded subtrees).
	Forwarded []string
	// Allowed, if set, says whether the process tgid, stopped at the exec
	// of a new image, may have the agent: false when the supervisor
	// answers its lookups differently from the kernel (its root is
	// virtual after a chroot).
	Allowed func(tgid int) bool
	// Cwd, if set, is the working directory of process tgid, stopped at
	// the exec of a new image, to write into the agent's configuration
	// with the rest (later changes are PublishCwd's). Without it the
	// agent forwards every path relative to the working directory.
	Cwd func(tgid int) AgentCwd

	// devs are the devices (st_dev) of the file systems mounted at or
	// under a Forwarded subtree, read by check: a lookup relative to a
	// descriptor on one of them is forwarded. nil with devsUnknown when
	// they did not fit the agent's configuration.
	devs        []uint64
	devsUnknown bool

	// Shared, when set, is the transaction's side: the memory the agent
	// consults and records into. Without it (--passthrough) the agent
	// decides by the path or the descriptor alone.
	Shared *SharedMemory

	// inject is what every injection writes, made once by check from the
	// fields above.
	inject injection

	// pendingMu guards pending: the descriptors the tracer's injected
	// openat of a thread is to receive (takeFD).
	pendingMu sync.Mutex
	// +checklocks:pendingMu
	pending map[int]pendingFD

	// cwdMu makes PublishCwd's writes of a sequence lock one writer's.
	cwdMu sync.Mutex
}

// injection is what the tracer writes into every image with the agent:
// the agent's configuration page, the exec stop's code (agentCode) and a
// forked child's (ringCode, with Shared), each code with the offset of its
// openat's end.
type injection struct {
	page      []byte
	agent     []byte
	agentOpen int
	ring      []byte
	ringOpen  int
}

// SharedMemory is what a transaction shares with the agent of each image
// (docs/fastpath.md §4.1), as memfds interpose maps and knows nothing more
// of: one for the tree, mapped read-only, and one per process, mapped
// read-write. Both are mapped below the agent's base, the ring right below
// it and the tree below the ring.
type SharedMemory struct {
	// TreeFD is a descriptor of the tree's memfd that can only be mapped
	// read-only (the memfd is sealed against writable mappings, too);
	// TreeSize its size in bytes.
	TreeFD   int
	TreeSize int
	// RingSize is the size of every ring.
	RingSize int
	// Ring makes a new ring for process tgid, which replaces whatever ring
	// it had (at the exec of a new image, and in a forked child before it
	// runs, which must not share its parent's, §4.4), and returns its
	// memfd, still the caller's. Failed is called when tgid could not map
	// the ring Ring made for it last: it records nothing.
	Ring   func(tgid int) (fd int, err error)
	Failed func(tgid int)
	// NativeOpens lets the agent make read-only opens natively too
	// (agent_config.tx_opens, docs/fastpath.md §4.6). The tree then runs
	// in a mount namespace of its own, a copy of txexec's whose every
	// mount updates no atime, made when the stub starts: the program's
	// reads through a descriptor the agent opened leave the host's atimes
	// alone, as reads through the view's own descriptors (opened on its
	// private noatime mount) do. It needs CAP_SYS_ADMIN.
	NativeOpens bool
}

// pendingFD are the descriptors an injected openat of a thread receives
// (one or two): the call must come from ip, the end of the injected
// openat's syscall instruction.
type pendingFD struct {
	fds []int
	ip  uint64
}

// sharedSpan is the size of the range below the agent's base that the
// tree and a ring take, in whole pages.
func (s *SharedMemory) sharedSpan() (tree, ring uint64) {
	p := uint64(pageSize)
	round := func(n int) uint64 { return (uint64(n) + p - 1) &^ (p - 1) }
	return round(s.TreeSize), round(s.RingSize)
}

// ringAddr and treeAddr are where the ring and the tree are mapped.
func (f *FastLookups) ringAddr() uint64 {
	_, ring := f.Shared.sharedSpan()
	return uint64(f.Base) - ring
}

func (f *FastLookups) treeAddr() uint64 {
	tree, _ := f.Shared.sharedSpan()
	return f.ringAddr() - tree
}

// expectFD arranges for the injected openat of tid, returning at ip, to
// receive fds (which the reply then owns), at most maxInstalledFDs.
func (f *FastLookups) expectFD(tid int, fds []int, ip uint64) {
	f.pendingMu.Lock()
	defer f.pendingMu.Unlock()
	if f.pending == nil {
		f.pending = map[int]pendingFD{}
	}
	f.pending[tid] = pendingFD{fds: fds, ip: ip}
}

// unexpectFD cancels expectFD, closing the descriptors if no reply took
// them.
func (f *FastLookups) unexpectFD(tid int) {
	f.pendingMu.Lock()
	defer f.pendingMu.Unlock()
	if p, ok := f.pending[tid]; ok {
		for _, fd := range p.fds {
			unix.Close(fd)
		}
		delete(f.pending, tid)
	}
}

// takeFD is the reply to an openat of tid at ip that the tracer injected
// to bring a descriptor in: only a thread the tracer holds in an
// injection (every other thread of the image is gone at an exec stop, and
// a forked child has one), from the injected code's address.
func (f *FastLookups) takeFD(c *Call) (Reply, bool) {
	f.pendingMu.Lock()
	defer f.pendingMu.Unlock()
	p, ok := f.pending[c.Tid]
	if !ok || p.ip != c.IP {
		return Reply{}, false
	}
	delete(f.pending, c.Tid)
	if len(p.fds) == 1 {
		return InstallFD(p.fds[0], true /* cloexec */), true
	}
	return installFDs(true /* cloexec */, p.fds...), true
}

// check validates f.
func (f *FastLookups) check() error {
	if f.Base%uintptr(pageSize) != 0 || f.Base == 0 || f.Base+agentMapSize > 1<<31 {
		return fmt.Errorf("fast lookups: agent base %#x is not a page below 2 GiB", f.Base)
	}
	devs, err := forwardedDevs(f.Forwarded)
	if err != nil {
		return err
	}
	f.devs, f.devsUnknown = devs, len(devs) > agentDevN
	if f.devsUnknown {
		f.devs = nil
	}
	if s := f.Shared; s != nil {
		tree, ring := s.sharedSpan()
		if s.TreeSize <= 0 || s.RingSize <= 0 || s.Ring == nil || tree+ring+uint64(pageSize) > uint64(f.Base) {
			return fmt.Errorf("fast lookups: the shared memory (%d and %d bytes) does not fit below the agent", s.TreeSize, s.RingSize)
		}
	}
	page, err := f.configPage()
	if err != nil {
		return err
	}
	f.inject.page = page
	f.inject.agent, f.inject.agentOpen = f.agentCode()
	if f.Shared != nil {
		f.inject.ring, f.inject.ringOpen = f.ringCode()
	}
	return nil
}

// forwardedDevs returns the devices of the file systems mounted, in the
// supervisor's mount namespace (which the tree shares under
// --passthrough), at or under one of the subtrees: a descriptor's st_dev
// says whether it is on one of them, which a path relative to it would
// not. A file system mounted there later is not in the list.
func forwardedDevs(subtrees []string) ([]uint64, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("fast lookups: %w", err)
	}
	var devs []uint64
	seen := map[uint64]bool{}
	for _, line := range strings.Split(string(info), "\n") {
		// id parent major:minor root mountpoint ...
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(fields[2], "%d:%d", &major, &minor); err != nil {
			continue
		}
		point := unescapeMountinfo(fields[4])
		for _, s := range subtrees {
			s = strings.TrimRight(s, "/")
			if point == s || strings.HasPrefix(point, s+"/") {
				dev := unix.Mkdev(major, minor)
				if !seen[dev] {
					seen[dev] = true
					devs = append(devs, dev)
				}
			}
		}
	}
	return devs, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// configPage is the agent's configuration page (agent.c struct
// agent_config): magic, disabled (0), the forwarded file systems' devices,
// the forwarded prefixes, and in a transaction the addresses of the tree
// and the ring.
func (f *FastLookups) configPage() ([]byte, error) {
	page := make([]byte, 4096)
	binary.LittleEndian.PutUint64(page[0:], agentMagic)
	if f.devsUnknown {
		binary.LittleEndian.PutUint32(page[12:], agentDevsUnknown)
	} else {
		binary.LittleEndian.PutUint32(page[12:], uint32(len(f.devs)))
		for i, d := range f.devs {
			binary.LittleEndian.PutUint64(page[agentDevsOff+8*i:], d)
		}
	}
	off := agentDevsOff + 8*agentDevN
	for _, p := range f.Forwarded {
		p = strings.TrimRight(p, "/")
		if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
			return nil, fmt.Errorf("fast lookups: forwarded subtree %q is not an absolute path", p)
		}
		if off+len(p)+2 > agentCwdOff {
			return nil, fmt.Errorf("fast lookups: the forwarded subtrees do not fit in %d bytes", agentPrefixesSz)
		}
		off += copy(page[off:], p) + 1
	}
	if f.Shared != nil {
		binary.LittleEndian.PutUint64(page[agentTreeOff:], f.treeAddr())
		binary.LittleEndian.PutUint64(page[agentRingOff:], f.ringAddr())
		if f.Shared.NativeOpens {
			binary.LittleEndian.PutUint32(page[agentTxOpensOff:], 1)
		}
	}
	return page, nil
}

// FastLookupRules returns rules with, before each fast-lookup number's own
// rules, one that allows the call when its instruction pointer lies in the
// agent page at base (docs/fastpath.md §4.1) and, for an open, its flags
// neither write nor create. Every other call of these numbers, and every
// call of another number from the agent page, is decided as without the
// agent.
func FastLookupRules(rules []Rule, base uintptr) []Rule {
	out := make([]Rule, 0, len(rules)+len(FastLookupNrs))
	done := map[int]bool{}
	for _, r := range rules {
		if isFastLookupNr(r.Nr) && !done[r.Nr] {
			done[r.Nr] = true
			cond := &ArgCond{Arg: ArgInstructionPointer, Mask: ^uint64(pageSize - 1), Value: uint64(base + agentPageOff)}
			if arg, ok := openFlagsArg[r.Nr]; ok {
				cond.And = &ArgCond{Arg: arg, Mask: openFlagsWrite, Value: 0}
			}
			out = append(out, Rule{Nr: r.Nr, Action: ActAllow, If: cond})
		}
		out = append(out, r)
	}
	return out
}

// DisableAgent makes the agent in the process of thread tid forward every
// lookup from now on (agent_config.disabled), for a process whose lookups
// the supervisor answers differently from the kernel (after a chroot).
// Its children inherit the flag with the memory; FastLookups.Allowed keeps
// the agent out of its later images. A process without the agent is left
// alone.
func (f *FastLookups) DisableAgent(tid int) error {
	m := Memory{Tid: tid}
	var magic [8]byte
	if m.Read(f.Base+agentConfigOff, magic[:]) != nil || binary.LittleEndian.Uint64(magic[:]) != agentMagic {
		return nil
	}
	mem, err := openMem(tid)
	if err != nil {
		return err
	}
	defer unix.Close(mem)
	var one [4]byte
	binary.LittleEndian.PutUint32(one[:], 1)
	return goneIfShort(pwriteAll(mem, one[:], uint64(f.Base+agentConfigOff+8)))
}

// AgentCwd is what the agent of a process knows of its working directory
// (docs/fastpath.md §4.5, rule 2): its path in the view, absolute and
// clean, and under --passthrough the directory's identity (Dev, Ino),
// which the path must still resolve to for the agent to use it. The zero
// AgentCwd is unknown: the agent forwards every path relative to the
// working directory, and getcwd.
type AgentCwd struct {
	Path     string
	Dev, Ino uint64
}

// fit is c, or unknown when its path is not absolute or too long for a
// record to hold with a name joined to it.
func (c AgentCwd) fit() AgentCwd {
	if len(c.Path) >= agentCwdPathMax-1 || !strings.HasPrefix(c.Path, "/") || strings.IndexByte(c.Path, 0) >= 0 {
		return AgentCwd{}
	}
	return c
}

// configPageWithCwd is the configuration page with cwd as the working
// directory, for an image stopped at its exec: no other process runs in
// its new address space yet, so it is written with the rest, its sequence
// lock at 0.
func (f *FastLookups) configPageWithCwd(cwd AgentCwd) []byte {
	cwd = cwd.fit()
	page := append([]byte(nil), f.inject.page...)
	binary.LittleEndian.PutUint32(page[agentCwdOff+4:], uint32(len(cwd.Path)))
	binary.LittleEndian.PutUint64(page[agentCwdOff+8:], cwd.Dev)
	binary.LittleEndian.PutUint64(page[agentCwdOff+16:], cwd.Ino)
	copy(page[agentCwdOff+24:], cwd.Path)
	return page
}

// PublishCwd writes cwd into the configuration of the agent of the address
// space of thread tid (agent_config.cwd), through /proc/PID/mem, as a
// sequence lock: its counter made odd, then the rest, then the counter
// made even, each its own write, so that an agent reading it meanwhile
// (another thread, or another process of the address space) finds the
// counter odd or changed and forwards. A path longer than a record can
// hold with a name joined to it is published unknown. An address space
// without the agent is left alone.
func (f *FastLookups) PublishCwd(tid int, cwd AgentCwd) error {
	cwd = cwd.fit()
	f.cwdMu.Lock()
	defer f.cwdMu.Unlock()
	m := Memory{Tid: tid}
	var magic, seq [8]byte
	if m.Read(f.Base+agentConfigOff, magic[:]) != nil || binary.LittleEndian.Uint64(magic[:]) != agentMagic {
		return nil
	}
	addr := uint64(f.Base + agentConfigOff + agentCwdOff)
	if err := m.Read(uintptr(addr), seq[:4]); err != nil {
		return err
	}
	odd := binary.LittleEndian.Uint32(seq[:]) | 1
	// A plain descriptor, as the rewriter's (openMem).
	mem, err := openMem(tid)
	if err != nil {
		return err
	}
	defer unix.Close(mem)
	body := make([]byte, 24+len(cwd.Path))
	binary.LittleEndian.PutUint32(body[4:], uint32(len(cwd.Path)))
	binary.LittleEndian.PutUint64(body[8:], cwd.Dev)
	binary.LittleEndian.PutUint64(body[16:], cwd.Ino)
	copy(body[24:], cwd.Path)
	binary.LittleEndian.PutUint32(seq[:], odd)
	if err := pwriteAll(mem, seq[:4], addr); err != nil {
		return goneIfShort(err)
	}
	if err := pwriteAll(mem, body[4:], addr+4); err != nil {
		return goneIfShort(err)
	}
	binary.LittleEndian.PutUint32(seq[:], odd+1)
	return goneIfShort(pwriteAll(mem, seq[:4], addr))
}

// goneIfShort is err, or ESRCH for a write of /proc/PID/mem that wrote
// nothing: the kernel's mem_rw copies nothing once the address space is
// gone (the process exited meanwhile).
func goneIfShort(err error) error {
	if errors.Is(err, io.ErrShortWrite) {
		return unix.ESRCH
	}
	return err
}
