package interpose

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"strings"

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
	agentMagic      = 0x31746e6567617874 // "txagent1", agent_config.magic
	agentPrefixesSz = 4096 - 16
)

// DefaultAgentBase is where the agent is mapped in every image of a run
// with fast lookups: fixed for the run, because the filter that allows the
// agent page is installed before the first exec and cannot change; below
// 2 GiB, so that a rewritten site's "jmp *disp32" reaches its slot; and
// far above where non-PIE programs are linked (0x400000) and their brk heap
// starts. An image where it is taken runs without the agent.
const DefaultAgentBase = 0x7ff00000

// FastLookupNrs are the calls the agent may make natively: the lookups that
// return no descriptor (docs/fastpath.md §6, step 1).
var FastLookupNrs = []int{
	unix.SYS_NEWFSTATAT, unix.SYS_STATX, unix.SYS_READLINK, unix.SYS_READLINKAT,
	unix.SYS_ACCESS, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2,
}

func isFastLookupNr(nr int) bool {
	for _, n := range FastLookupNrs {
		if n == nr {
			return true
		}
	}
	return false
}

// FastLookups configures the fast path for read-only lookups
// (docs/fastpath.md): the agent injected at every exec stop and the call
// sites of single-threaded processes rewritten to reach it. This is step 1
// under --passthrough only: the transaction's side (the changed set and
// fast directories mapped read-only next to the agent, a ring per process
// drained into the view's read set, docs/fastpath.md §4.5–4.7) is to be
// added here and at the exec stop's injection (inject.go), and consulted
// by the agent where agent.c's fast_path says.
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
}

// check validates f.
func (f *FastLookups) check() error {
	if f.Base%uintptr(pageSize) != 0 || f.Base == 0 || f.Base+agentMapSize > 1<<31 {
		return fmt.Errorf("fast lookups: agent base %#x is not a page below 2 GiB", f.Base)
	}
	if _, err := f.configPage(); err != nil {
		return err
	}
	return nil
}

// configPage is the agent's configuration page (agent.c struct
// agent_config): magic, disabled (0), and the forwarded prefixes.
func (f *FastLookups) configPage() ([]byte, error) {
	page := make([]byte, 4096)
	binary.LittleEndian.PutUint64(page[0:], agentMagic)
	off := 16
	for _, p := range f.Forwarded {
		p = strings.TrimRight(p, "/")
		if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
			return nil, fmt.Errorf("fast lookups: forwarded subtree %q is not an absolute path", p)
		}
		if off+len(p)+2 > len(page) {
			return nil, fmt.Errorf("fast lookups: the forwarded subtrees do not fit in %d bytes", agentPrefixesSz)
		}
		off += copy(page[off:], p) + 1
	}
	return page, nil
}

// FastLookupRules returns rules with, before each fast-lookup number's own
// rules, one that allows the call when its instruction pointer lies in the
// agent page at base (docs/fastpath.md §4.1). Every other call of these
// numbers, and every call of another number from the agent page, is decided
// as without the agent.
func FastLookupRules(rules []Rule, base uintptr) []Rule {
	out := make([]Rule, 0, len(rules)+len(FastLookupNrs))
	done := map[int]bool{}
	for _, r := range rules {
		if isFastLookupNr(r.Nr) && !done[r.Nr] {
			done[r.Nr] = true
			out = append(out, Rule{Nr: r.Nr, Action: ActAllow, If: &ArgCond{
				Arg: ArgInstructionPointer, Mask: ^uint64(pageSize - 1), Value: uint64(base + agentPageOff)}})
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
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	var one [4]byte
	binary.LittleEndian.PutUint32(one[:], 1)
	_, err = mem.WriteAt(one[:], int64(f.Base+agentConfigOff+8))
	return err
}
