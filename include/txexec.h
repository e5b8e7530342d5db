/*
 * txexec.h — transactions begun by the program itself, under txexec.
 *
 * Header-only: every function is an inline raw system call, nothing to
 * link. The calls are txexec's own (TxOS's sys_xbegin, sys_xend,
 * sys_xabort and its server extensions' xpause and xresume): a supervisor
 * started with `txexec --in-program -- PROGRAM` (or --passthrough) serves
 * them; without txexec the kernel answers ENOSYS, so a program can tell
 * and fall back. Semantics: docs/semantics.md §9 of txexec.
 *
 * A transaction belongs to the thread that called xbegin (and to the
 * threads and processes it then creates); the program's other threads act
 * on the host meanwhile. Memory is not rolled back: xrun re-runs its
 * function, which must start from the state it needs.
 *
 *     static int deposit(void *arg) { ... read, compute, write files ... return 0; }
 *     if (xrun(deposit, &amount, 100) != 0) perror("deposit");
 */
#ifndef TXEXEC_H
#define TXEXEC_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* System-call numbers (txexec's syscalls.PseudoBase + n): far above
 * Linux's table, x32 bit clear. */
#define TXEXEC_SYS_BASE    0x0ffe0000L
#define TXEXEC_SYS_XBEGIN  (TXEXEC_SYS_BASE + 0)
#define TXEXEC_SYS_XEND    (TXEXEC_SYS_BASE + 1)
#define TXEXEC_SYS_XABORT  (TXEXEC_SYS_BASE + 2)
#define TXEXEC_SYS_XPAUSE  (TXEXEC_SYS_BASE + 3)
#define TXEXEC_SYS_XRESUME (TXEXEC_SYS_BASE + 4)

/* xbegin's flags. */
#define TX_NONDURABLE        0x1u /* commit without fsyncs (as --no-durable) */
#define TX_ERROR_UNSUPPORTED 0x2u /* a call without transactional meaning fails
                                     with ENOTSUP instead of dooming */
#define TX_ORDERED           0x4u /* commit after every smaller seq (xbegin_ordered) */

#if defined(__x86_64__)
static inline long txexec_syscall2_(long nr, long a0, long a1)
{
	long ret;
	register long rdi __asm__("rdi") = a0;
	register long rsi __asm__("rsi") = a1;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "r"(rdi), "r"(rsi)
			 : "rcx", "r11", "memory");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}
#else
#error "txexec.h: txexec supervises x86-64 programs only"
#endif

/* Begins a transaction for the calling thread (flat inside one already
 * open, or inside txexec's command-tree transaction). Returns the attempt
 * number: 0, or how many conflicts this thread's transactions lost in a
 * row. -1 with errno ENOSYS when no txexec supervises the program, EINVAL
 * for unknown flags or between xpause and xresume, ENOENT when the thread's
 * working directory was removed, EIO when the store cannot be opened. */
static inline long xbegin(unsigned flags)
{
	return txexec_syscall2_(TXEXEC_SYS_XBEGIN, (long)flags, 0);
}

/* xbegin with TX_ORDERED: the commit waits until every smaller seq of the
 * same supervisor has committed or been given up. Numbers start at 0 and
 * must be dense; a retry after EAGAIN keeps its number, and a program that
 * gives a number up must still settle it (xbegin_ordered, xabort, xend). */
static inline long xbegin_ordered(unsigned flags, unsigned long seq)
{
	return txexec_syscall2_(TXEXEC_SYS_XBEGIN, (long)(flags | TX_ORDERED), (long)seq);
}

/* Commits: 0; or -1 with errno EAGAIN (lost a conflict: every change
 * rolled back, run it again), ECANCELED (doomed by xabort or an
 * unsupported call: rolled back), EBUSY (a thread or process that joined
 * still runs: the transaction stays open), EINVAL (no transaction), EIO
 * (could not commit: rolled back). */
static inline long xend(void)
{
	return txexec_syscall2_(TXEXEC_SYS_XEND, 0, 0);
}

/* Dooms the thread's transaction: the thread stays in it (its further
 * changes are discarded too) until xend, which rolls it back and answers
 * ECANCELED. */
static inline long xabort(void)
{
	return txexec_syscall2_(TXEXEC_SYS_XABORT, 0, 0);
}

/* Until xresume, the thread's calls act on the host, outside its
 * transaction: what it writes then survives an abort (a log line). */
static inline long xpause(void)
{
	return txexec_syscall2_(TXEXEC_SYS_XPAUSE, 0, 0);
}

static inline long xresume(void)
{
	return txexec_syscall2_(TXEXEC_SYS_XRESUME, 0, 0);
}

/* Runs fn(arg) in a transaction until it commits: re-runs it after a
 * conflict, up to max_tries runs in all (0: no limit). Returns 0 once
 * committed; -1 with errno ECANCELED when fn returned non-zero (the
 * transaction is rolled back, fn is not re-run, unless the transaction had
 * lost a conflict already, which is then likely why fn failed: it is
 * re-run), EAGAIN when the tries ran out, or xbegin's or xend's errno. */
static inline int xrun(int (*fn)(void *), void *arg, int max_tries)
{
	for (int attempt = 0; max_tries <= 0 || attempt < max_tries; attempt++) {
		if (xbegin(0) < 0)
			return -1;
		if (fn(arg) != 0) {
			xabort();
			if (xend() < 0 && errno == EAGAIN)
				continue; /* lost a conflict first: likely why fn failed
				             (the view answers ESTALE once it has lost) */
			errno = ECANCELED;
			return -1;
		}
		if (xend() == 0)
			return 0;
		if (errno != EAGAIN)
			return -1;
	}
	errno = EAGAIN;
	return -1;
}

#ifdef __cplusplus
}
#endif

#endif /* TXEXEC_H */
