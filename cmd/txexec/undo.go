package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"txexec/internal/cli"
	"txexec/store"
	"txexec/txn"
)

// cmdUndo is txexec undo ID [--dry-run] [--force].
func cmdUndo(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	m := &txn.Manager{Store: st, Durable: c.opts.Durable}
	res, err := m.Undo(c.id, txn.UndoOptions{Force: c.force, DryRun: c.dryRun})
	var conflict *txn.UndoConflictError
	var refused *txn.UndoRefusedError
	switch {
	case errors.As(err, &conflict):
		fmt.Fprintf(c.errOut, "txexec: %v\n", conflict)
		fmt.Fprintf(c.errOut, "txexec: nothing was changed; txexec undo %d --force undoes the rest\n", c.id)
		return exitConflict
	case errors.As(err, &refused):
		fmt.Fprintf(c.errOut, "txexec: %v\n", refused)
		return exitRefused
	case err != nil && res != nil && res.ID != 0:
		c.id = res.ID
		return c.fail(err, "undone")
	case err != nil:
		return c.fail(err, "undone")
	}
	skipped := func() {
		if len(res.Skipped) == 0 {
			return
		}
		fmt.Fprintf(c.errOut, "txexec: skipped (--force) %d paths changed again since transaction %d, and what is above or below them:\n", len(res.Skipped), c.id)
		for _, s := range res.Skipped {
			fmt.Fprintf(c.errOut, "  %s\n", s)
		}
	}
	if c.dryRun {
		for _, s := range res.Steps {
			fmt.Fprintln(c.out, s)
		}
		skipped()
		return 0
	}
	skipped()
	if res.ID == 0 {
		fmt.Fprintf(c.errOut, "txexec: nothing of transaction %d is left to undo\n", c.id)
		return 0
	}
	fmt.Fprintf(c.errOut, "txexec: transaction %d undid transaction %d (%d changes put back); txexec undo %d redoes it\n",
		res.ID, c.id, len(res.Steps), res.ID)
	return 0
}

// cmdGC is txexec gc [ID...] [--all] [--keep-last=N] [--max-size=SIZE].
func cmdGC(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	if c.keepLast != nil || c.maxSize != nil {
		r, err := st.Retention()
		if err == nil {
			if c.keepLast != nil {
				r.KeepLast = *c.keepLast
			}
			if c.maxSize != nil {
				r.MaxBytes = *c.maxSize
			}
			err = st.SetRetention(r)
		}
		if err != nil {
			fmt.Fprintf(c.errOut, "txexec: %v\n", err)
			return exitInternal
		}
	}
	dropped, err := st.DropUndo(c.ids, c.all)
	if err != nil {
		return c.fail(err, "collected")
	}
	for _, id := range dropped {
		if err := st.RemoveUndo(id); err != nil {
			fmt.Fprintf(c.errOut, "txexec: %v\n", err)
			return exitInternal
		}
		fmt.Fprintf(c.out, "transaction %d: before-images dropped\n", id)
	}
	if _, err := st.GCUndo(); err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	r, err := st.Retention()
	if err == nil {
		var recs []store.TxRecord
		recs, err = st.Log(0)
		n := 0
		for _, rec := range recs {
			if rec.Undo.Undoable(rec.State) {
				n++
			}
		}
		fmt.Fprintf(c.out, "before-images: %d transactions can be undone, %s held; retention: the last %d, at most %s\n",
			n, formatSize(heldBytes(recs)), r.KeepLast, formatSize(r.MaxBytes))
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	return 0
}

// parseSize parses a size in bytes with an optional K, M, G or T suffix
// (powers of 1024).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for i, suf := range []string{"K", "M", "G", "T"} {
		if v, ok := strings.CutSuffix(strings.ToUpper(s), suf); ok {
			s, mult = v, int64(1)<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, errors.New("expected a size in bytes (K, M, G, T suffixes)")
	}
	return n * mult, nil
}

// formatSize renders bytes as du -h would.
func formatSize(n int64) string {
	units := []string{"B", "K", "M", "G", "T"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}

// undoMark is what txexec log says of r's before-images.
func undoMark(r store.TxRecord) string {
	switch {
	case r.Undo.UndoneBy != 0:
		return fmt.Sprintf("undone by %d", r.Undo.UndoneBy)
	case r.Undo.Undoable(r.State) && r.OpN > 0:
		return "undoable, " + formatSize(r.Undo.Bytes)
	}
	return ""
}

// heldBytes is the space the before-images of recs hold.
func heldBytes(recs []store.TxRecord) int64 {
	var n int64
	for _, r := range recs {
		if r.Undo.State == store.UndoKeep {
			n += r.Undo.Bytes
		}
	}
	return n
}

// flagValue is the value of flag a, "--name=V" or "--name V" (the next
// word, taken from rest).
func flagValue(a string, rest []string) (string, []string, error) {
	if _, v, ok := strings.Cut(a, "="); ok {
		return v, rest, nil
	}
	if len(rest) < 2 {
		return "", rest, cli.Usagef("gc: %s needs a value", a)
	}
	return rest[1], rest[1:], nil
}
