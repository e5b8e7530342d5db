package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

	"txexec/determ"
	"txexec/interpose"
)

// The calls served by the deterministic environment (--deterministic,
// package determ): the clocks, sleeps, getrandom, uname and the CPU
// affinity mask. They replace their entries of the table only in a
// deterministic run (WithDeterminism), so that a run without the option
// lets the kernel run them at native speed (docs/semantics.md §10).

// DeterministicEntries are the entries that replace Entries' in a
// deterministic run.
func DeterministicEntries() []Entry {
	return []Entry{
		partial(unix.SYS_CLOCK_GETTIME, "clock_gettime", ClockGettime,
			"the virtual clock: the wall clocks start at 2000-01-01T00:00:00Z, the others at 100 s; every read moves it by 1 ms", ArgInt, ArgPtr),
		partial(unix.SYS_GETTIMEOFDAY, "gettimeofday", Gettimeofday,
			"the virtual wall clock; the time zone is UTC", ArgPtr, ArgPtr),
		partial(unix.SYS_TIME, "time", Time, "the virtual wall clock", ArgPtr),
		partial(unix.SYS_CLOCK_GETRES, "clock_getres", ClockGetres, "1 ns for every clock", ArgInt, ArgPtr),
		partial(unix.SYS_NANOSLEEP, "nanosleep", Nanosleep,
			"moves the virtual clock by the time asked and returns at once", ArgPtr, ArgPtr),
		partial(unix.SYS_CLOCK_NANOSLEEP, "clock_nanosleep", ClockNanosleep,
			"moves the virtual clock by the time asked (to it, with TIMER_ABSTIME) and returns at once", ArgInt, ArgHex, ArgPtr, ArgPtr),
		partial(unix.SYS_GETRANDOM, "getrandom", Getrandom,
			"bytes of the caller's seeded stream (docs/semantics.md §10)", ArgPtr, ArgUint, ArgHex),
		partial(unix.SYS_UNAME, "uname", Uname,
			"the node name is txexec and the domain name (none); the rest is the host's", ArgPtr),
		partial(unix.SYS_SCHED_GETAFFINITY, "sched_getaffinity", SchedGetaffinity,
			"CPUs 0–3, whatever the pid", ArgInt, ArgUint, ArgPtr),
		partial(unix.SYS_FSTAT, "fstat", Fstat,
			"served as fstatat(fd, \"\", AT_EMPTY_PATH), as glibc spells fstat, so that it shows the view's virtual inode numbers and times", ArgFD, ArgPtr),
	}
}

// WithDeterminism returns entries with those of DeterministicEntries in
// place of theirs.
func WithDeterminism(entries []Entry) []Entry {
	over := map[int]Entry{}
	for _, e := range DeterministicEntries() {
		over[e.Nr] = e
	}
	out := make([]Entry, len(entries))
	for i, e := range entries {
		if d, ok := over[e.Nr]; ok {
			e = d
		}
		out[i] = e
	}
	return out
}

// monotonicBase is where the clocks other than the wall clocks start: a
// machine that has been up for 100 s.
const monotonicBase = 100 * time.Second

// Clock ids as include/uapi/linux/time.h numbers them (x/sys lacks some).
const (
	clockRealtime       = 0
	clockThreadCputime  = 3
	clockRealtimeCoarse = 5
	clockRealtimeAlarm  = 8
	clockSGICycle       = 10 // never implemented
	clockTAI            = 11
	maxClocks           = 16
)

// clockValid reports whether the kernel knows clock id: the fixed ids but
// 10, and the negative ids of CPU-time and descriptor clocks (which the
// virtual clock serves as a monotonic clock).
func clockValid(id int32) bool {
	return id < 0 || id < maxClocks && id != clockSGICycle && id <= clockTAI
}

// clockAt is what clock id reads at virtual time d since determ.Epoch.
func clockAt(id int32, d time.Duration) unix.Timespec {
	switch id {
	case clockRealtime, clockRealtimeCoarse, clockRealtimeAlarm, clockTAI:
		return unix.NsecToTimespec(determ.Wall(d).UnixNano())
	}
	return unix.NsecToTimespec(int64(monotonicBase + d))
}

// sinceEpoch turns a time of clock id into virtual time since Epoch.
func sinceEpoch(id int32, ts unix.Timespec) time.Duration {
	switch id {
	case clockRealtime, clockRealtimeCoarse, clockRealtimeAlarm, clockTAI:
		return time.Duration(ts.Nano() - determ.Epoch.UnixNano())
	}
	return time.Duration(ts.Nano()) - monotonicBase
}

// ClockGettime implements clock_gettime(2) on the virtual clock.
func ClockGettime(k *Kernel, c *interpose.Call) interpose.Reply {
	id := c.Args[0].Int()
	tpAddr := c.Args[1].Pointer()
	if !clockValid(id) {
		return interpose.Fail(unix.EINVAL)
	}
	ts := clockAt(id, k.Determ.Now())
	return k.reply(c, 0, interpose.WriteValue(c.Memory, tpAddr, &ts))
}

// Gettimeofday implements gettimeofday(2) on the virtual wall clock.
func Gettimeofday(k *Kernel, c *interpose.Call) interpose.Reply {
	tvAddr := c.Args[0].Pointer()
	tzAddr := c.Args[1].Pointer()
	if tvAddr != 0 {
		tv := unix.NsecToTimeval(determ.Wall(k.Determ.Now()).UnixNano())
		if err := interpose.WriteValue(c.Memory, tvAddr, &tv); err != nil {
			return k.reply(c, 0, err)
		}
	}
	if tzAddr != 0 {
		var tz [2]int32 // struct timezone: UTC, no DST
		if err := interpose.WriteValue(c.Memory, tzAddr, &tz); err != nil {
			return k.reply(c, 0, err)
		}
	}
	return interpose.Return(0)
}

// Time implements time(2) on the virtual wall clock.
func Time(k *Kernel, c *interpose.Call) interpose.Reply {
	tlocAddr := c.Args[0].Pointer()
	sec := determ.Wall(k.Determ.Now()).Unix()
	if tlocAddr != 0 {
		if err := interpose.WriteValue(c.Memory, tlocAddr, &sec); err != nil {
			return k.reply(c, 0, err)
		}
	}
	return interpose.Return(sec)
}

// ClockGetres implements clock_getres(2): every virtual clock has a
// resolution of 1 ns.
func ClockGetres(k *Kernel, c *interpose.Call) interpose.Reply {
	id := c.Args[0].Int()
	resAddr := c.Args[1].Pointer()
	if !clockValid(id) {
		return interpose.Fail(unix.EINVAL)
	}
	if resAddr == 0 {
		return interpose.Return(0)
	}
	res := unix.Timespec{Nsec: 1}
	return k.reply(c, 0, interpose.WriteValue(c.Memory, resAddr, &res))
}

// readSleep copies in a sleep's struct timespec, checked as
// timespec64_valid does.
func readSleep(c *interpose.Call, addr uintptr) (unix.Timespec, error) {
	var ts unix.Timespec
	if err := interpose.ReadValue(c.Memory, addr, &ts); err != nil {
		return ts, err
	}
	if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= int64(time.Second) {
		return ts, unix.EINVAL
	}
	return ts, nil
}

// Nanosleep implements nanosleep(2): the virtual clock moves by the time
// asked, and the caller goes on at once (so rem is never written).
func Nanosleep(k *Kernel, c *interpose.Call) interpose.Reply {
	reqAddr := c.Args[0].Pointer()
	ts, err := readSleep(c, reqAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	k.Determ.Sleep(time.Duration(ts.Nano()))
	return interpose.Return(0)
}

// ClockNanosleep implements clock_nanosleep(2) as Nanosleep; with
// TIMER_ABSTIME the clock moves to the time asked. It returns the error
// number instead of failing (clock_nanosleep(2): "returns the error
// number"), as the system call does: the kernel's return is -errno, which
// the reply gives.
func ClockNanosleep(k *Kernel, c *interpose.Call) interpose.Reply {
	id := c.Args[0].Int()
	flags := c.Args[1].Int()
	reqAddr := c.Args[2].Pointer()
	if !clockValid(id) || id == clockThreadCputime {
		// posix_cpu_nsleep: a thread's own CPU clock cannot be slept on.
		return interpose.Fail(unix.EINVAL)
	}
	ts, err := readSleep(c, reqAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if flags&unix.TIMER_ABSTIME != 0 {
		k.Determ.SleepUntil(sinceEpoch(id, ts))
	} else {
		k.Determ.Sleep(time.Duration(ts.Nano()))
	}
	return interpose.Return(0)
}

// Fstat implements fstat(2) as fstatat(fd, NULL, AT_EMPTY_PATH), which
// the view serves (the kernel serves fstat itself outside deterministic
// runs).
func Fstat(k *Kernel, c *interpose.Call) interpose.Reply {
	fd := c.Args[0].Int()
	statAddr := c.Args[1].Pointer()
	return newfstatat(k, c, fd, 0 /* NULL path */, statAddr, unix.AT_EMPTY_PATH)
}

// getrandom's flags (include/uapi/linux/random.h).
const (
	grndNonblock = 0x1
	grndRandom   = 0x2
	grndInsecure = 0x4
)

// maxRandomRead bounds one getrandom answer, as the kernel's own is
// bounded (MAX_RW_COUNT); a caller asking for more gets a short read, as
// getrandom(2) allows.
const maxRandomRead = 32 << 20

// Getrandom implements getrandom(2) from the caller's seeded stream.
func Getrandom(k *Kernel, c *interpose.Call) interpose.Reply {
	bufAddr := c.Args[0].Pointer()
	n := c.Args[1].SizeT()
	flags := c.Args[2].Uint()
	if flags&^(grndNonblock|grndRandom|grndInsecure) != 0 || flags&(grndRandom|grndInsecure) == grndRandom|grndInsecure {
		return interpose.Fail(unix.EINVAL)
	}
	n = min(n, maxRandomRead)
	const chunk = 64 << 10
	buf := make([]byte, min(n, chunk))
	for done := uint64(0); done < n; {
		b := buf[:min(n-done, chunk)]
		k.Determ.Random(c.Tid, b)
		if err := c.Write(bufAddr+uintptr(done), b); err != nil {
			if done > 0 {
				return interpose.Return(int64(done))
			}
			return k.reply(c, 0, err)
		}
		done += uint64(len(b))
	}
	return interpose.Return(int64(n))
}

// Uname implements uname(2): the host's, with the fixed node name and no
// domain name, as a UTS namespace that set them would show.
func Uname(k *Kernel, c *interpose.Call) interpose.Reply {
	bufAddr := c.Args[0].Pointer()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return k.reply(c, 0, err)
	}
	u.Nodename = [65]byte{}
	copy(u.Nodename[:], determ.Hostname)
	u.Domainname = [65]byte{}
	copy(u.Domainname[:], "(none)")
	return k.reply(c, 0, interpose.WriteValue(c.Memory, bufAddr, &u))
}

// SchedGetaffinity implements sched_getaffinity(2): CPUs 0 to
// determ.CPUs-1, for any pid. Like the kernel, it wants a buffer of whole
// longs at least as large as its mask, and returns the bytes it wrote.
func SchedGetaffinity(k *Kernel, c *interpose.Call) interpose.Reply {
	size := c.Args[1].Uint()
	maskAddr := c.Args[2].Pointer()
	const maskBytes = 8 // one long: nr_cpu_ids ≤ 64
	if size < maskBytes || size%maskBytes != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	mask := uint64(1)<<determ.CPUs - 1
	return k.reply(c, maskBytes, interpose.WriteValue(c.Memory, maskAddr, &mask))
}
