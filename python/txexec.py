"""txexec's in-program transaction API for Python (include/txexec.h for C).

The file-system changes a thread makes between begin() and end() are one
ACID transaction, served by the txexec supervisor the program runs under
(``txexec --in-program -- python3 server.py``); docs/semantics.md §9 of
txexec says what holds. A transaction belongs to the calling thread.

A ``with`` block cannot run its body again, so the retrying form is a loop
of attempts::

    for attempt in txexec.attempts():
        with attempt:
            n = int(open("counter").read())
            open("counter", "w").write(f"{n + 1}\\n")

or a function run until it commits: ``txexec.run(fn, *args)``. A single
attempt is ``with txexec.transaction(): ...``, which raises Conflict when it
loses. Memory is not rolled back: a retried body must start from the state
it needs. Without txexec, begin() raises NotSupervised.
"""

import ctypes
import errno
import os

__all__ = [
    "TX_NONDURABLE", "TX_ERROR_UNSUPPORTED", "TX_ORDERED",
    "TxError", "NotSupervised", "Conflict", "Aborted", "Busy",
    "begin", "end", "abort", "pause", "resume",
    "transaction", "attempts", "run", "DEFAULT_MAX_TRIES",
]

# System-call numbers of txexec's own calls (include/txexec.h).
_SYS_BASE = 0x0FFE0000
_SYS_XBEGIN, _SYS_XEND, _SYS_XABORT, _SYS_XPAUSE, _SYS_XRESUME = (
    _SYS_BASE + i for i in range(5))

TX_NONDURABLE = 0x1
TX_ERROR_UNSUPPORTED = 0x2
TX_ORDERED = 0x4

DEFAULT_MAX_TRIES = 100

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


class TxError(OSError):
    """A call of the API failed."""


class NotSupervised(TxError):
    """The program does not run under txexec (xbegin: ENOSYS)."""


class Conflict(TxError):
    """The transaction lost a conflict; every change was rolled back."""


class Aborted(TxError):
    """The transaction was doomed (abort(), an unsupported call), rolled back."""


class Busy(TxError):
    """A thread or process that joined the transaction still runs."""


_BY_ERRNO = {
    errno.ENOSYS: (NotSupervised, "not running under txexec (xbegin: ENOSYS); "
                   "start the program with txexec --in-program -- PROGRAM"),
    errno.EAGAIN: (Conflict, "transaction lost a conflict and was rolled back"),
    errno.ECANCELED: (Aborted, "transaction aborted and rolled back"),
    errno.EBUSY: (Busy, "a thread or process of the transaction still runs"),
}


def _call(nr, name, a0=0, a1=0):
    r = _syscall(ctypes.c_long(nr), ctypes.c_long(a0), ctypes.c_long(a1))
    if r < 0:
        e = ctypes.get_errno()
        cls, text = _BY_ERRNO.get(e, (TxError, os.strerror(e)))
        raise cls(e, f"txexec: {name}: {text}")
    return r


def begin(flags=0, seq=None):
    """Begin a transaction for the calling thread (flat inside one).

    Returns the attempt number: 0, or how many conflicts this thread's
    transactions lost in a row. With seq, the commit waits for every
    smaller seq of the same supervisor (TX_ORDERED)."""
    if seq is not None:
        return _call(_SYS_XBEGIN, "xbegin", flags | TX_ORDERED, seq)
    return _call(_SYS_XBEGIN, "xbegin", flags)


def end():
    """Commit; raises Conflict, Aborted or Busy when it does not."""
    _call(_SYS_XEND, "xend")


def abort():
    """Doom the transaction: end() then rolls it back and raises Aborted."""
    _call(_SYS_XABORT, "xabort")


def pause():
    """Until resume(), the thread's calls act on the host, outside it."""
    _call(_SYS_XPAUSE, "xpause")


def resume():
    _call(_SYS_XRESUME, "xresume")


class _Attempt:
    """One run of a transaction's body: a context manager."""

    def __init__(self, flags, seq):
        self._flags, self._seq = flags, seq
        self.committed = False
        self.conflict = False
        self.number = 0

    def __enter__(self):
        self.number = begin(self._flags, self._seq)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                end()
            except Conflict:
                self.conflict = True
                return False
            self.committed = True
            return False
        abort()
        try:
            end()
        except Conflict:
            # Lost a conflict before the body failed: likely why it
            # failed (the view answers ESTALE once it has lost).
            self.conflict = True
            return True
        except Aborted:
            pass
        return False


def attempts(max_tries=DEFAULT_MAX_TRIES, flags=0, seq=None):
    """Yield attempts until one commits (use each in a with block).

    An exception in the body rolls the attempt back and propagates, unless
    the transaction had lost a conflict (then the body runs again). Raises
    Conflict when max_tries attempts all lost (0: no limit)."""
    tries = 0
    while not max_tries or tries < max_tries:
        tries += 1
        a = _Attempt(flags, seq)
        yield a
        if a.committed:
            return
        if not a.conflict:
            raise TxError(errno.EINVAL, "txexec: an attempt was not used in a with block")
    raise Conflict(errno.EAGAIN, f"txexec: transaction lost a conflict {max_tries} times in a row")


def run(fn, *args, max_tries=DEFAULT_MAX_TRIES, flags=0, **kwargs):
    """Run fn(*args, **kwargs) in a transaction until it commits; its result."""
    for attempt in attempts(max_tries, flags):
        with attempt:
            result = fn(*args, **kwargs)
    return result


class transaction:
    """One attempt: ``with transaction(): ...`` commits at the end of the
    block, raises Conflict when it loses, and rolls back (re-raising) when
    the block raises."""

    def __init__(self, flags=0, seq=None):
        self._attempt = _Attempt(flags, seq)

    def __enter__(self):
        return self._attempt.__enter__()

    def __exit__(self, exc_type, exc, tb):
        suppressed = self._attempt.__exit__(exc_type, exc, tb)
        if self._attempt.conflict:
            raise Conflict(errno.EAGAIN, "txexec: xend: transaction lost a conflict and was rolled back")
        return suppressed
