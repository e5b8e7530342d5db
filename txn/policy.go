package txn

import "fmt"

// OnExit is what a run does with its transaction once the command tree has
// exited (txexec --on-exit).
type OnExit int

const (
	// OnExitSuccess commits if the command exited 0, aborts otherwise.
	OnExitSuccess OnExit = iota
	// OnExitCommit commits whatever the exit status.
	OnExitCommit
	// OnExitAbort always aborts: a dry run.
	OnExitAbort
	// OnExitKeep neither commits nor aborts: the transaction is kept for a
	// later txexec commit or abort.
	OnExitKeep
)

// OnExitNames are the policies' names on the command line, in the order of
// their values.
var OnExitNames = []string{"success", "commit", "abort", "keep"}

func (p OnExit) String() string {
	if p < 0 || int(p) >= len(OnExitNames) {
		return fmt.Sprintf("OnExit(%d)", int(p))
	}
	return OnExitNames[p]
}

// ParseOnExit is the policy of a name in OnExitNames.
func ParseOnExit(name string) (OnExit, bool) {
	for i, n := range OnExitNames {
		if n == name {
			return OnExit(i), true
		}
	}
	return 0, false
}

// Outcome is what becomes of a run's transaction.
type Outcome int

const (
	// Commit: validate and write through (a conflict may still abort it).
	Commit Outcome = iota
	// Abort: discard the transaction.
	Abort
	// Keep: store it prepared, for txexec commit or abort later.
	Keep
)

func (o Outcome) String() string {
	switch o {
	case Commit:
		return "commit"
	case Abort:
		return "abort"
	case Keep:
		return "keep"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Settle decides the outcome of a run whose command tree exited with
// status, under policy p; doomed says the view was doomed while it ran
// (an unsupported call, an internal error, a conflict seen early).
//
// A doomed transaction under OnExitSuccess goes the commit way even when
// the command failed: a doom by conflict is often why it failed (its view
// answered ESTALE), and the commit is what reports the conflict and lets
// the run retry; a doomed commit never reaches its commit point.
func Settle(p OnExit, status int, doomed bool) Outcome {
	switch p {
	case OnExitCommit:
		return Commit
	case OnExitAbort:
		return Abort
	case OnExitKeep:
		return Keep
	}
	if status == 0 || doomed {
		return Commit
	}
	return Abort
}

// AbortCertain reports whether, once the command has exited with status,
// the transaction will abort whatever the rest of the tree does: then the
// rest of the tree can be stopped at once. A kept transaction is never
// certain to abort; a doomed one always is, unless kept.
func AbortCertain(p OnExit, status int, doomed bool) bool {
	if p == OnExitKeep {
		return false
	}
	return doomed || Settle(p, status, false) == Abort
}

// Exit statuses of txexec for transactions that could not commit.
const (
	// ExitConflict: the commit lost to another (EX_TEMPFAIL: try again).
	ExitConflict = 75
	// ExitInternal: txexec itself failed (EX_SOFTWARE).
	ExitInternal = 70
)

// AfterFailedCommit decides what follows a commit of run attempt (from 0)
// that failed, conflict saying whether it lost to another transaction:
// another attempt (retry, when --retry allows retries more), or txexec's
// exit status. status and doomed are the attempt's command status and
// whether its view was doomed.
//
// A conflict gives ExitConflict when the command succeeded, or when its
// view was doomed (the conflict, seen while the command ran, is why it
// failed). Otherwise a command that failed gives its own status, and one
// that succeeded but could not commit for another reason ExitInternal.
func AfterFailedCommit(conflict bool, attempt, retries, status int, doomed bool) (retry bool, exit int) {
	switch {
	case conflict && attempt < retries:
		return true, 0
	case conflict && (status == 0 || doomed):
		return false, ExitConflict
	case status != 0:
		return false, status
	}
	return false, ExitInternal
}
