// Package tx is txexec's in-program transaction API for Go programs: the
// calling goroutine's file-system changes between Begin and End are one
// ACID transaction, served by the txexec supervisor the program runs under
// (`txexec --in-program -- ./server`). It is include/txexec.h for Go;
// docs/semantics.md §9 says what holds.
//
// A transaction belongs to an OS thread, as in TxOS, and a goroutine is
// not one: Begin therefore locks the goroutine to its thread
// (runtime.LockOSThread) until the transaction ends. Goroutines the
// function starts run on other threads, outside the transaction.
//
// Without txexec, Begin fails with ErrNotSupervised.
//
// Linux analogue: none; TxOS's sys_xbegin, sys_xend and sys_xabort and its
// server extensions' xpause and xresume. It must not import txexec's other
// packages: it runs in the supervised program, which imports only it (the
// call numbers are repeated from syscalls/txapi.go; TestUnderTxexec fails
// when they differ).
package tx
