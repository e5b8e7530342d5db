package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"txexec/syscalls"
)

// options are the parsed command line of a run.
type options struct {
	onExit      string // success|commit|abort|keep
	retryN      int
	durable     bool
	unsupported syscalls.Policy
	output      string // live|defer
	signals     string // defer|immediate
	excludes    []string
	passthrough bool
	trace       bool
	traceFile   string
	stateDir    string
	argv        []string
}

// usageError is a bad command line: one line on stderr, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// parseRun parses "[options] -- COMMAND [ARG...]". Options end at "--" or
// at the first word that is not an option.
func parseRun(args []string) (*options, error) {
	o := &options{onExit: "success", durable: true, output: "live", signals: "defer"}
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if !strings.HasPrefix(a, "--") {
			break
		}
		args = args[1:]
		name, val, hasVal := strings.Cut(a[2:], "=")
		needVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if len(args) == 0 {
				return "", usagef("option --%s needs a value", name)
			}
			v := args[0]
			args = args[1:]
			return v, nil
		}
		oneOf := func(v string, allowed ...string) error {
			for _, x := range allowed {
				if v == x {
					return nil
				}
			}
			return usagef("--%s=%s: expected one of %s", name, v, strings.Join(allowed, ", "))
		}
		var err error
		switch name {
		case "on-exit":
			if o.onExit, err = needVal(); err == nil {
				err = oneOf(o.onExit, "success", "commit", "abort", "keep")
			}
		case "retry":
			var v string
			if v, err = needVal(); err == nil {
				o.retryN, err = strconv.Atoi(v)
				if err != nil || o.retryN < 0 {
					err = usagef("--retry %s: expected a count", v)
				}
			}
		case "no-durable":
			o.durable = false
		case "unsupported":
			var v string
			if v, err = needVal(); err == nil {
				if err = oneOf(v, "abort", "error", "allow"); err == nil {
					o.unsupported = map[string]syscalls.Policy{"abort": syscalls.PolicyAbort, "error": syscalls.PolicyError, "allow": syscalls.PolicyAllow}[v]
				}
			}
		case "output":
			if o.output, err = needVal(); err == nil {
				err = oneOf(o.output, "live", "defer")
			}
		case "signals":
			if o.signals, err = needVal(); err == nil {
				err = oneOf(o.signals, "defer", "immediate")
			}
		case "exclude":
			var v string
			if v, err = needVal(); err == nil {
				if err = checkExclude(v); err == nil {
					o.excludes = append(o.excludes, v)
				}
			}
		case "passthrough":
			o.passthrough = true
		case "trace":
			o.trace = true
			o.traceFile = val
		case "state-dir":
			o.stateDir, err = needVal()
		default:
			err = usagef("unknown option --%s (see txexec --help)", name)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(args) == 0 {
		return nil, usagef("no command given (usage: txexec [options] -- COMMAND [ARG...])")
	}
	o.argv = args
	return o, nil
}

// checkExclude refuses an --exclude the view could not honour: it excludes
// directory subtrees, named by a path whose last component is not a
// symlink, that exist when the transaction begins.
func checkExclude(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return fmt.Errorf("--exclude %s: %w", p, unwrapPathErr(err))
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("--exclude %s: a symlink; name the directory it points to", p)
	case !fi.IsDir():
		return fmt.Errorf("--exclude %s: not a directory (only directory subtrees can be excluded)", p)
	}
	return nil
}
