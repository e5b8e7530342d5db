package interpose

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
)

// Rewriting a call site (docs/fastpath.md §4.4). While the supervisor
// serves the first notified call of a fast-lookup site, the caller waits
// in the call; if the 7 bytes before its instruction pointer are glibc's
// "mov $nr,%eax; syscall" for the number being served, the process has the
// agent, and no other thread can be executing them (the process has one
// thread and shares its address space with no other process), the site
// becomes "jmp *slot" (ff 24 25 disp32), the slot pointing at a new
// trampoline in the agent's range:
//
//	lea -0x80(%rsp),%rsp     skip the red zone
//	mov $nr,%eax
//	movabs $agent_entry,%r11
//	call *%r11
//	lea 0x80(%rsp),%rsp
//	jmp *0(%rip)             back after the site
//	.quad ip
//
// Later calls of the site reach the agent as a function call. The
// trampolines, their slots and the rewritten site are written through
// /proc/PID/mem; which slots are taken is read from the process itself, so
// that what fork copies and exec drops needs no bookkeeping here.
//
// Every site rewritten is remembered by the file it is in (its version:
// identity, size, ctime) and its offset there (knownSites). The first
// rewrite in a mapping of that file in another image also rewrites every
// other site known in it, if its bytes are still the pattern for its
// number: a site that trapped once in a version of a file is an
// instruction boundary in every mapping of that version, and the process
// is as quiet as for the site it traps at. So a program's libraries cost
// about one round trip each rather than one per site (about 20 a process
// in the C build).

// siteLen is the length of "mov $nr,%eax; syscall".
const siteLen = 7

// keepFreeTrampolines is how many trampolines a batch of known sites
// leaves free, for the sites of the image's other files.
const keepFreeTrampolines = trampolineN / 4

// site is a call site to rewrite: the address after its syscall
// instruction, the call's number, and what the rewrite covers of it (the
// siteLen bytes before that address).
type site struct {
	ip     uint64
	nr     uint32
	replay []byte // the instruction before the syscall, if not "mov $nr,%eax"
}

// rewriteSite rewrites the call site of c if it can, with the sites known
// in the same file; any failure leaves the sites as they were (their calls
// stay on the slow path).
func (l *listener) rewriteSite(c *Call) {
	l.tr.rewriteCallSite(c.Tid, c.IP, uint32(c.Nr), c.Valid)
}

// rewriteCallSite rewrites the call site of call nr that thread tid is
// stopped in, ip after its syscall instruction, with the sites known in
// the same file, if it can (see the top of this file); valid reports
// whether tid is still stopped in that call (a notified call's caller may
// have been killed; a ptrace stop always is). The listener calls it for a
// lookup's first call, the tracer's exec stop for an execve the view
// failed with ENOENT or ENOTDIR (docs/fastpath.md §15). Any failure leaves
// the sites as they were (their calls stay on the slow path).
func (t *tracer) rewriteCallSite(tid int, ip uint64, nr uint32, valid func() error) {
	base := uint64(t.fast.Base)
	if ip < siteLen || (ip >= base && ip < base+agentMapSize) {
		return // a forwarded call, or one the agent made
	}
	if !t.rewritable(tid) {
		return
	}
	// The code and the agent's pages are read with a Memory of its own:
	// they are not the call's arguments (the call may still be answered
	// with CONTINUE).
	m := Memory{Tid: tid}
	replay, ok := readSite(m, ip, nr)
	if !ok {
		return // not glibc's pattern
	}
	var magic [8]byte
	if m.Read(uintptr(base+agentConfigOff), magic[:]) != nil || binary.LittleEndian.Uint64(magic[:]) != agentMagic ||
		!t.soleThread(tid) {
		// No agent in this image, or other threads could be running
		// the site: not until the next image.
		t.markUnrewritable(tid)
		return
	}
	slots := make([]byte, 8*trampolineN)
	if m.Read(uintptr(base+slotsOff), slots) != nil {
		return
	}
	// Slots are taken in order and never given back within an image:
	// the free ones are the tail.
	free := 0
	for free < trampolineN && binary.LittleEndian.Uint64(slots[8*free:]) != 0 {
		free++
	}
	if free == trampolineN {
		return // every trampoline taken
	}
	sites := []site{{ip, nr, replay}}
	file, fileOK := mappedFile(tid, ip-siteLen)
	if fileOK {
		if room := trampolineN - free - 1 - keepFreeTrampolines; room > 0 {
			sites = append(sites, t.sites.quietSites(m, file, ip, room)...)
		}
	}

	mem, err := openMem(tid)
	if err != nil {
		return
	}
	defer unix.Close(mem)
	// Still the caller, waiting in this call, and not a recycled pid.
	if valid() != nil {
		return
	}
	written, err := writeSites(mem, base, free, sites)
	t.rewrites.Add(uint64(written))
	if err != nil {
		t.logf("txexec: pid %d: rewrite a call site: %v", tid, err)
	}
	if fileOK && written > 0 {
		t.sites.add(file.version, file.offsetOf(ip), sites[0])
	}
}

// writeSites rewrites sites through mem, a descriptor of the image's
// /proc/PID/mem, with the trampolines and slots from the free'th on, which
// must have room: the trampolines and their slots first, then each site's
// jump. It returns how many sites were rewritten (the first ones, in
// order) and why it stopped short, if it did.
func writeSites(mem int, base uint64, free int, sites []site) (int, error) {
	n := len(sites)
	tramps := make([]byte, n*trampolineSize)
	slotVals := make([]byte, n*8)
	first := base + trampolinesOff + uint64(free)*trampolineSize
	for i, s := range sites {
		copy(tramps[i*trampolineSize:], trampoline(s, base+agentEntryOff))
		binary.LittleEndian.PutUint64(slotVals[8*i:], first+uint64(i)*trampolineSize)
	}
	if err := pwriteAll(mem, tramps, first); err != nil {
		return 0, err
	}
	if err := pwriteAll(mem, slotVals, base+slotsOff+uint64(free)*8); err != nil {
		return 0, err
	}
	for i, s := range sites {
		jmp := []byte{0xff, 0x24, 0x25, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(jmp[3:], uint32(base+slotsOff+uint64(free+i)*8))
		if err := pwriteAll(mem, jmp, s.ip-siteLen); err != nil {
			return i, fmt.Errorf("the call site at %#x: %w", s.ip-siteLen, err)
		}
	}
	return n, nil
}

// rewriteKnown rewrites, in image tid just given the agent at its exec
// stop, the sites known in the files the kernel mapped for it (the program,
// and its interpreter, ld.so), through mem, a descriptor of its
// /proc/PID/mem. Without it each of those files cost a notification in
// every process, at its first call (ld.so's access of /etc/ld.so.preload
// in every process of the C build), which the batch of §4.4 then follows.
// The image has one thread, which has not run yet; its slots are all free.
// Anything that fails leaves the rest to the rewriter, as before.
func (t *tracer) rewriteKnown(tid, mem int) {
	maps, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(maps)
	m := Memory{Tid: tid}
	var sites []site
	for a := uint64(0); ; {
		q, found, err := queryExecFileMapping(maps, a, procmapQueryNext)
		if err != nil || !found || q.VMAEnd <= a {
			break // none left, or a kernel before PROCMAP_QUERY: the rewriter's batches
		}
		a = q.VMAEnd
		if q.Inode == 0 || !t.sites.knows(FileID{Dev: unix.Mkdev(q.DevMajor, q.DevMinor), Ino: q.Inode}) {
			continue // none known: not worth map_files's lookup of the version
		}
		f, ok := mappingVersion(tid, mapping{start: q.VMAStart, end: q.VMAEnd, pgoff: q.VMAOffset})
		if !ok {
			continue
		}
		if room := trampolineN - keepFreeTrampolines - len(sites); room > 0 {
			sites = append(sites, t.sites.quietSites(m, f, 0, room)...)
		}
	}
	if len(sites) == 0 {
		return
	}
	written, err := writeSites(mem, uint64(t.fast.Base), 0, sites)
	t.rewrites.Add(uint64(written))
	if err != nil {
		t.logf("txexec: pid %d: rewrite a known call site: %v", tid, err)
	}
}

// openMem opens /proc/TID/mem for reading and writing. A plain
// descriptor, not an *os.File: the rewriter and the injection use one for
// a few reads and writes, and the runtime's setting up of a file (its
// finalizer, non-blocking mode, the poller's try) cost as much as the open.
func openMem(tid int) (int, error) {
	for {
		fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: "/proc/" + strconv.Itoa(tid) + "/mem", Err: err}
		}
		return fd, nil
	}
}

// pwriteAll writes b at address at of mem, a /proc/TID/mem descriptor.
func pwriteAll(mem int, b []byte, at uint64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(mem, b, int64(at))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("pwrite", err)
		case n == 0:
			return io.ErrShortWrite
		}
		b, at = b[n:], at+uint64(n)
	}
	return nil
}

// preadFull reads len(b) bytes at address at of mem, a /proc/TID/mem
// descriptor.
func preadFull(mem int, b []byte, at uint64) error {
	for len(b) > 0 {
		n, err := unix.Pread(mem, b, int64(at))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("pread", err)
		case n == 0:
			return io.ErrUnexpectedEOF
		}
		b, at = b[n:], at+uint64(n)
	}
	return nil
}

// siteSpan is how much code before a site's end readSite looks at: the
// longest pattern, "mov $nr,%eax; mov %r,%r; mov $imm,%r; syscall".
const siteSpan = 15

// readSite reads the code before ip, the end of a syscall instruction of
// process m that made call nr, and matches it against the two patterns
// of glibc's inline system calls whose last siteLen bytes a site's jump
// may cover:
//
//	b8 <nr>  0f 05                              mov $nr,%eax; syscall
//	b8 <nr>  4x 89 /r  b? <imm32>  0f 05        mov $nr,%eax; mov %r,%r; mov $imm,%r32; syscall
//
// The second is open(2) as glibc makes it (ld.so's and libc's
// __open_nocancel: openat(AT_FDCWD, ...)); the jump covers its
// "mov $imm,%r32" (returned as replay, which the trampoline runs first) and
// the syscall. The mov before the jump stays in place: any path into the
// covered bytes' start reaches the trampoline, which checks the number in
// eax (trampoline).
func readSite(m Memory, ip uint64, nr uint32) (replay []byte, ok bool) {
	if ip < siteSpan {
		return nil, false
	}
	var code [siteSpan]byte
	if m.Read(uintptr(ip-siteSpan), code[:]) != nil {
		// The start of a mapping may be near: the short pattern only.
		if m.Read(uintptr(ip-siteLen), code[siteSpan-siteLen:]) != nil {
			return nil, false
		}
	}
	return matchSite(code, nr)
}

// matchSite matches code, the siteSpan bytes before a site's end, for
// readSite.
func matchSite(code [siteSpan]byte, nr uint32) (replay []byte, ok bool) {
	movNr := func(b []byte) bool { return b[0] == 0xb8 && binary.LittleEndian.Uint32(b[1:5]) == nr }
	if code[siteSpan-2] != 0x0f || code[siteSpan-1] != 0x05 {
		return nil, false
	}
	if movNr(code[siteSpan-siteLen:]) {
		return nil, true
	}
	// mov %r,%r (89 /r, register to register, with REX.W and R or B),
	// whose destination is not rax (the number) or rsp; then a mov of an
	// immediate to a 32-bit register other than eax and esp (b9..bf).
	rex, modrm, imm := code[5], code[7], code[8]
	dest := modrm&7 | (rex&1)<<3
	if movNr(code[:]) && rex&0xfa == 0x48 && code[6] == 0x89 && modrm&0xc0 == 0xc0 && dest != 0 && dest != 4 &&
		imm >= 0xb9 && imm <= 0xbf && imm != 0xbc {
		return append([]byte(nil), code[8:13]...), true
	}
	return nil, false
}

// isSitePattern reports whether code, the siteLen bytes a rewritten site
// covers, are still what readSite found there: s's "mov $nr,%eax" or its
// replayed instruction, then the syscall.
func isSitePattern(code []byte, s site) bool {
	if len(code) != siteLen || code[5] != 0x0f || code[6] != 0x05 {
		return false
	}
	if s.replay != nil {
		return string(code[:5]) == string(s.replay)
	}
	return code[0] == 0xb8 && binary.LittleEndian.Uint32(code[1:5]) == s.nr
}

// trampoline is the code of site s's trampoline, entry the agent's.
// For a site whose covered bytes are not its "mov $nr,%eax", it runs the
// covered instruction, then calls the agent only if eax holds the site's
// number and makes any other call itself, as the site would have: then
// the agent serves exactly the calls the site made with that number, on
// whatever path it was reached.
//
//	<replay>                 the covered instruction
//	cmp $nr,%eax
//	jne 1f
//	lea -0x80(%rsp),%rsp ... the call of the agent, as for the short pattern
//	jmp 2f
//	1: syscall
//	2: jmp *0(%rip)           back after the site
//	.quad ip
func trampoline(s site, entry uint64) []byte {
	var b []byte
	if s.replay != nil {
		b = append(b, s.replay...)
		b = append(b, 0x3d) // cmp $nr,%eax
		b = binary.LittleEndian.AppendUint32(b, s.nr)
		b = append(b, 0x75, 5+10+3+8+2) // jne 1f
	}
	b = append(b, 0x48, 0x8d, 0x64, 0x24, 0x80) // lea -0x80(%rsp),%rsp
	if s.replay == nil {
		b = append(b, 0xb8) // mov $nr,%eax
		b = binary.LittleEndian.AppendUint32(b, s.nr)
	}
	b = append(b, 0x49, 0xbb) // movabs $entry,%r11
	b = binary.LittleEndian.AppendUint64(b, entry)
	b = append(b, 0x41, 0xff, 0xd3)                               // call *%r11
	b = append(b, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00) // lea 0x80(%rsp),%rsp
	if s.replay != nil {
		b = append(b, 0xeb, 2)    // jmp 2f
		b = append(b, 0x0f, 0x05) // 1: syscall
	}
	b = append(b, 0xff, 0x25, 0x00, 0x00, 0x00, 0x00) // 2: jmp *0(%rip)
	return binary.LittleEndian.AppendUint64(b, s.ip)
}

// soleThread reports whether thread tid is its process's only thread and
// no other process runs in its address space.
func (t *tracer) soleThread(tid int) bool {
	created := t.threads.Load() // before /proc: a later thread forces a new look
	if !t.soleSince(tid, created) {
		st, err := procfs.Status(tid, "Tgid", "Threads")
		if err != nil {
			return false
		}
		tgid, err1 := st.Int("Tgid")
		n, err2 := st.Int("Threads")
		if err1 != nil || err2 != nil || tgid != tid || n != 1 {
			return false
		}
		t.noteSole(tid, created)
	}
	return !t.sharesVM(tid)
}

// mapping is the executable mapping of a file that holds a call site.
type mapping struct {
	start, end uint64 // its addresses
	pgoff      uint64 // the file offset mapped at start
	version    exeVersion
}

// offsetOf is the file offset of address a of the mapping.
func (m mapping) offsetOf(a uint64) uint64 { return a - m.start + m.pgoff }

// mappedFile finds the executable file mapping of process tid that holds
// address a, and the version of its file (through map_files, which names
// the mapped file itself, whatever its path has become since); false for
// anything else (anonymous memory, a mapping that is not executable). The
// kernel describes the one mapping (PROCMAP_QUERY) where it can, else every
// line of /proc/PID/maps is parsed (before Linux 6.11).
func mappedFile(tid int, a uint64) (mapping, bool) {
	maps, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return mapping{}, false
	}
	defer unix.Close(maps)
	var m mapping
	q, found, err := queryExecFileMapping(maps, a, 0)
	switch {
	case err == errNoProcmapQuery:
		if m, found = parseMappedFile(maps, a); !found {
			return mapping{}, false
		}
	case err != nil || !found || q.Inode == 0:
		return mapping{}, false
	default:
		m = mapping{start: q.VMAStart, end: q.VMAEnd, pgoff: q.VMAOffset}
	}
	return mappingVersion(tid, m)
}

// mappingVersion is m, a file mapping of process tid, with the version of
// its file (through map_files, which names the mapped file itself,
// whatever its path has become since); false if that is no regular file.
func mappingVersion(tid int, m mapping) (mapping, bool) {
	// map_files names a mapping by its range in unpadded hex (maps pads
	// to 8 digits, which map_files refuses).
	var st unix.Stat_t
	name := "/proc/" + strconv.Itoa(tid) + "/map_files/" + strconv.FormatUint(m.start, 16) + "-" + strconv.FormatUint(m.end, 16)
	if unix.Stat(name, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return mapping{}, false
	}
	m.version = exeVersion{id: FileID{Dev: st.Dev, Ino: st.Ino}, size: st.Size, ctime: st.Ctim}
	return m, true
}

// parseMappedFile finds, in maps, a descriptor of /proc/PID/maps, the
// executable file mapping that holds address a (its version left out).
func parseMappedFile(maps int, a uint64) (mapping, bool) {
	sc := bufio.NewScanner(fdReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 {
			continue
		}
		rng := bytes.SplitN(fields[0], []byte("-"), 2)
		if len(rng) != 2 {
			continue
		}
		start, err1 := strconv.ParseUint(string(rng[0]), 16, 64)
		end, err2 := strconv.ParseUint(string(rng[1]), 16, 64)
		if err1 != nil || err2 != nil || a < start || a >= end {
			continue
		}
		pgoff, err := strconv.ParseUint(string(fields[2]), 16, 64)
		if err != nil || len(fields[1]) < 3 || fields[1][2] != 'x' || string(fields[4]) == "0" {
			return mapping{}, false
		}
		return mapping{start: start, end: end, pgoff: pgoff}, true
	}
	return mapping{}, false
}

// fdReader reads a descriptor the caller owns.
type fdReader int

func (r fdReader) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(int(r), b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// knownSites remembers the call sites rewritten in each version of a file:
// their offsets in it and their numbers.
type knownSites struct {
	mu sync.Mutex
	// +checklocks:mu
	files map[exeVersion]map[uint64]knownSite
	// ids are the files that have sites in files, of any version: the
	// exec stop asks before it reads a mapping's version.
	// +checklocks:mu
	ids map[FileID]bool
}

// knownSite is a site known at an offset of a file.
type knownSite struct {
	nr     uint32
	replay string
}

// maxKnownFiles and maxKnownSites bound knownSites.
const (
	maxKnownFiles = 1024
	maxKnownSites = trampolineN
)

// add remembers site s at offset off of file v.
func (k *knownSites) add(v exeVersion, off uint64, s site) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.files == nil || len(k.files) >= maxKnownFiles {
		k.files, k.ids = map[exeVersion]map[uint64]knownSite{}, map[FileID]bool{}
	}
	k.ids[v.id] = true
	sites := k.files[v]
	if sites == nil {
		sites = map[uint64]knownSite{}
		k.files[v] = sites
	}
	if len(sites) < maxKnownSites {
		sites[off] = knownSite{s.nr, string(s.replay)}
	}
}

// knows reports whether some version of file id has known sites.
func (k *knownSites) knows(id FileID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ids[id]
}

// quietSites returns up to max sites known in m's file, other than the one
// returning at ip, that lie in m and whose bytes in the process are the
// pattern for their number (not rewritten yet, and the same code).
func (k *knownSites) quietSites(mem Memory, m mapping, ip uint64, max int) []site {
	k.mu.Lock()
	var cand []site
	for off, ks := range k.files[m.version] {
		if off < m.pgoff+siteLen || off-m.pgoff > m.end-m.start {
			continue
		}
		a := m.start + off - m.pgoff
		if a != ip {
			s := site{ip: a, nr: ks.nr}
			if ks.replay != "" {
				s.replay = []byte(ks.replay)
			}
			cand = append(cand, s)
		}
	}
	k.mu.Unlock()
	if len(cand) == 0 {
		return nil
	}
	// One read for every candidate's bytes.
	buf := make([]byte, len(cand)*siteLen)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := make([]unix.RemoteIovec, len(cand))
	for i, s := range cand {
		remote[i] = unix.RemoteIovec{Base: uintptr(s.ip - siteLen), Len: siteLen}
	}
	n, _ := unix.ProcessVMReadv(mem.Tid, local, remote, 0)
	var out []site
	for i, s := range cand {
		if (i+1)*siteLen > n || len(out) == max {
			break
		}
		if isSitePattern(buf[i*siteLen:(i+1)*siteLen], s) {
			out = append(out, s)
		}
	}
	return out
}
