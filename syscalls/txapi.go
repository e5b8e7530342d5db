package syscalls

import (
	"golang.org/x/sys/unix"

	"txexec/interpose"
)

// The in-program transaction API (TxOS's sys_xbegin, sys_xend, sys_xabort
// and its server extensions' xpause and xresume; include/txexec.h): calls
// that exist only under txexec. Their numbers lie far above Linux's table
// (which is below 1024 and grows by a few a year) and have the x32 bit
// (0x40000000) clear, so that the filter sees them as native calls; the
// kernel answers ENOSYS to them when no txexec supervises the caller, which
// is how a program tells (docs/semantics.md §9).
const (
	// PseudoBase is the first number of txexec's own calls.
	PseudoBase = 0x0ffe0000

	SysXbegin  = PseudoBase + 0
	SysXend    = PseudoBase + 1
	SysXabort  = PseudoBase + 2
	SysXpause  = PseudoBase + 3
	SysXresume = PseudoBase + 4
)

// xbegin's flags (include/txexec.h's TX_*).
const (
	// TxNondurable: the commit skips the fsyncs of staged data and of the
	// write-through (as --no-durable).
	TxNondurable = 1 << 0
	// TxErrorUnsupported: a call without transactional meaning fails with
	// ENOTSUP instead of dooming the transaction (--unsupported=error).
	TxErrorUnsupported = 1 << 1
	// TxOrdered: the commit waits until every smaller sequence number
	// (xbegin's second argument) of the same supervisor has committed or
	// been given up (txn.CommitOrder).
	TxOrdered = 1 << 2

	txKnownFlags = TxNondurable | TxErrorUnsupported | TxOrdered
)

// PseudoEntries returns txexec's own calls, as rows of the syscall table:
// the filter sends them to the supervisor, and docs/syscalls.md lists them
// apart from Linux's (Markdown).
func PseudoEntries() []Entry {
	return []Entry{
		partial(SysXbegin, "xbegin", Xbegin,
			"txexec's own call: begins a transaction for the calling thread (flat inside one); answers the attempt number", ArgHex, ArgUint),
		partial(SysXend, "xend", Xend,
			"txexec's own call: commits the thread's transaction; EAGAIN after a conflict, ECANCELED when it was doomed (both rolled back)"),
		partial(SysXabort, "xabort", Xabort,
			"txexec's own call: dooms the thread's transaction; its xend rolls it back and answers ECANCELED"),
		partial(SysXpause, "xpause", Xpause,
			"txexec's own call: the thread's calls act on the host, outside its transaction, until xresume"),
		partial(SysXresume, "xresume", Xresume,
			"txexec's own call: ends an xpause"),
	}
}

// AllEntries is the table txexec runs with: Linux's calls and its own.
func AllEntries() []Entry { return append(Entries(), PseudoEntries()...) }

// Xbegin implements xbegin(flags, seq).
func Xbegin(k *Kernel, c *interpose.Call) interpose.Reply {
	flags := c.Args[0].Uint()
	seq := c.Args[1].Ulong()
	if flags&^txKnownFlags != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	attempt, err := k.programs().begin(c, flags, seq)
	return k.reply(c, attempt, err)
}

// Xend implements xend().
func Xend(k *Kernel, c *interpose.Call) interpose.Reply {
	return k.reply(c, 0, k.programs().end(k, c))
}

// Xabort implements xabort().
func Xabort(k *Kernel, c *interpose.Call) interpose.Reply {
	return k.reply(c, 0, k.programs().abort(k, c))
}

// Xpause implements xpause().
func Xpause(k *Kernel, c *interpose.Call) interpose.Reply {
	return k.reply(c, 0, k.programs().pause(k, c))
}

// Xresume implements xresume().
func Xresume(k *Kernel, c *interpose.Call) interpose.Reply {
	return k.reply(c, 0, k.programs().resume(c))
}
