package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/internal/cli"
	"txexec/internal/wrap"
)

// wrapSubcommands are the subcommands cmdWrap runs (their command lines
// are not parseSubcommand's: paths, and run options to record).
var wrapSubcommands = map[string]bool{"wrap": true, "unwrap": true}

// wrapRunOptions are the run options txexec wrap may record for a wrapped
// program. --passthrough would remove the protection, --trace write as
// root wherever it was told; --help and --version run nothing.
var wrapRunOptions = []string{"on-exit", "retry", "no-durable", "unsupported", "output", "signals", "exclude", "state-dir"}

// wrapLine is a parsed "txexec wrap|unwrap ..." command line.
type wrapLine struct {
	name    string // wrap or unwrap
	list    bool   // wrap --list
	check   bool   // wrap --check
	dir     string // --wrapped-dir
	options []string
	paths   []string
}

// parseWrap parses "wrap [--list|--check] [--wrapped-dir DIR] [run
// options] PATH..." and "unwrap PATH...".
func parseWrap(name string, args []string) (*wrapLine, error) {
	l := &wrapLine{name: name, dir: wrap.DefaultDir}
	var runArgs []string
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		if a == "--" {
			l.paths = append(l.paths, args...)
			break
		}
		if !strings.HasPrefix(a, "-") {
			l.paths = append(l.paths, a)
			continue
		}
		opt, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case name == "wrap" && a == "--list":
			l.list = true
		case name == "wrap" && a == "--check":
			l.check = true
		case opt == "wrapped-dir":
			if !hasVal {
				if len(args) == 0 {
					return nil, cli.Usagef("%s: option --wrapped-dir needs a value", name)
				}
				val, args = args[0], args[1:]
			}
			l.dir = val
		case name == "wrap" && strings.HasPrefix(a, "--") && slices.Contains(wrapRunOptions, opt):
			o := cli.Lookup(opt)
			if o.Kind == cli.RequiredValue && !hasVal {
				if len(args) == 0 {
					return nil, cli.Usagef("wrap: option --%s needs a value", opt)
				}
				val, args, hasVal = args[0], args[1:], true
			}
			if (opt == "state-dir" || opt == "exclude") && hasVal {
				// The program runs in its caller's working directory.
				abs, err := filepath.Abs(val)
				if err != nil {
					return nil, err
				}
				val = abs
			}
			w := "--" + opt
			if hasVal {
				w += "=" + val
			}
			runArgs = append(runArgs, w)
		case name == "wrap" && strings.HasPrefix(a, "--") && cli.Lookup(opt) != nil:
			return nil, cli.Usagef("wrap: --%s cannot be recorded for a wrapped program", opt)
		default:
			return nil, cli.Usagef("%s: unknown option %s (see txexec --help)", name, a)
		}
	}
	if l.list && l.check {
		return nil, cli.Usagef("wrap: --list or --check, not both")
	}
	if (l.list || l.check) && (len(l.paths) > 0 || len(runArgs) > 0) {
		return nil, cli.Usagef("wrap: --list and --check take no paths or run options")
	}
	if !l.list && !l.check && len(l.paths) == 0 {
		return nil, cli.Usagef("%s: which programs? (usage: txexec %s PATH...)", name, name)
	}
	// Checked as a run's command line would be when the program runs.
	if _, err := cli.Parse(append(slices.Clone(runArgs), "--", "true")); err != nil {
		return nil, err
	}
	l.options = runArgs
	if !filepath.IsAbs(l.dir) {
		abs, err := filepath.Abs(l.dir)
		if err != nil {
			return nil, err
		}
		l.dir = abs
	}
	return l, nil
}

// cmdWrap runs "txexec wrap ..." or "txexec unwrap ...".
func cmdWrap(name string, args []string, out, errOut io.Writer) int {
	l, err := parseWrap(name, args)
	if err != nil {
		fmt.Fprintf(errOut, "txexec: %v\n", err)
		return exitUsage
	}
	if l.list {
		return wrapList(l, out, errOut)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(errOut, "txexec: %s: only root can %s set-ID programs\n", name, name)
		return exitRefused
	}
	// The directories wrap makes (the wrapped directory and those above
	// it) must be searchable by every user, whatever root's umask: the
	// files it makes get their modes explicitly.
	unix.Umask(0o022)
	if name == "unwrap" {
		return unwrapPaths(l, out, errOut)
	}
	if l.check {
		return wrapCheck(l, out, errOut)
	}
	w, err := newWrapper(l)
	if err != nil {
		fmt.Fprintf(errOut, "txexec: wrap: %v\n", err)
		return exitRefused
	}
	status := 0
	for _, p := range l.paths {
		path, err := wrap.Canonical(p)
		if err == nil {
			var c *wrap.Config
			if c, err = w.Wrap(path); err == nil {
				fmt.Fprintf(out, "wrapped %s (original in %s)\n", path, c.Original)
				continue
			}
		}
		fmt.Fprintf(errOut, "txexec: wrap %s: %v\n", p, unwrapPathErr(err))
		status = exitRefused
	}
	return status
}

// ownExecutable is this txexec binary's canonical path.
func ownExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}

// newWrapper is a Wrapper that records this txexec binary and its
// launcher template.
func newWrapper(l *wrapLine) (*wrap.Wrapper, error) {
	exe, err := ownExecutable()
	if err != nil {
		return nil, err
	}
	tmpl, err := wrap.FindTemplate(exe)
	if err != nil {
		return nil, err
	}
	image, err := os.ReadFile(tmpl)
	if err != nil {
		return nil, err
	}
	if !wrap.IsLauncher(image) {
		return nil, fmt.Errorf("%s is not a txexec launcher", tmpl)
	}
	return &wrap.Wrapper{Dir: l.dir, Txexec: exe, Template: image, Options: l.options}, nil
}

func unwrapPaths(l *wrapLine, out, errOut io.Writer) int {
	status := 0
	for _, p := range l.paths {
		path, err := wrap.Canonical(p)
		if err == nil {
			var c *wrap.Config
			if c, err = wrap.Unwrap(path); err == nil {
				fmt.Fprintf(out, "unwrapped %s (mode %04o, owner %d:%d)\n", path, c.Mode, c.UID, c.GID)
				continue
			}
		}
		fmt.Fprintf(errOut, "txexec: unwrap %s: %v\n", p, unwrapPathErr(err))
		status = exitRefused
	}
	return status
}

// stateNames say what wrap --list shows for each wrap.State.
var stateNames = map[wrap.State]string{
	wrap.InPlace:       "wrapped",
	wrap.Replaced:      "replaced (run txexec wrap --check)",
	wrap.NoLongerSetID: "no longer set-ID (run txexec wrap --check)",
	wrap.Gone:          "gone (run txexec wrap --check)",
	wrap.Foreign:       "something else is there",
}

func wrapList(l *wrapLine, out, errOut io.Writer) int {
	cs, bad, err := wrap.List(l.dir)
	if err != nil {
		fmt.Fprintf(errOut, "txexec: wrap --list: %v\n", err)
		return exitRefused
	}
	for _, err := range bad {
		fmt.Fprintf(errOut, "txexec: wrap --list: %v\n", err)
	}
	for _, c := range cs {
		opts := strings.Join(c.Options, " ")
		if opts == "" {
			opts = "-"
		}
		fmt.Fprintf(out, "%s\t%04o %d:%d\t%s\t%s\t%s\n", c.Path, c.Mode, c.UID, c.GID, c.Txexec, opts, stateNames[wrap.StateOf(c)])
	}
	if len(bad) > 0 {
		return exitRefused
	}
	return 0
}

// wrapCheck finds wrapped paths that a package upgrade or removal changed,
// wraps the new privileged (set-ID or file-capability) programs again and drops the wraps of those gone.
// It needs the launcher template only to wrap again: as dpkg's hook, with
// nothing wrapped, it does nothing and cannot fail.
func wrapCheck(l *wrapLine, out, errOut io.Writer) int {
	cs, bad, err := wrap.List(l.dir)
	if err != nil {
		fmt.Fprintf(errOut, "txexec: wrap --check: %v\n", err)
		return exitRefused
	}
	status := 0
	for _, err := range bad {
		fmt.Fprintf(errOut, "txexec: wrap --check: %v\n", err)
		status = exitRefused
	}
	var w *wrap.Wrapper // made at the first wrap that needs it
	wrapper := func() (*wrap.Wrapper, error) {
		var err error
		if w == nil {
			w, err = newWrapper(l)
		}
		return w, err
	}
	for _, c := range cs {
		switch wrap.StateOf(c) {
		case wrap.InPlace:
			// A launcher made by an older build of this txexec is
			// replaced by this build's (a launcher goes with the txexec
			// its configuration names).
			if exe, err := ownExecutable(); err != nil || exe != c.Txexec {
				continue
			}
			w, err := wrapper()
			var image []byte
			if err == nil {
				image, err = wrap.Configure(w.Template, c.ConfPath())
			}
			var updated bool
			if err == nil {
				updated, err = wrap.Refresh(c, image)
			}
			if err != nil {
				fmt.Fprintf(errOut, "txexec: wrap --check: %s: cannot update its launcher: %v\n", c.Path, err)
				status = exitRefused
			} else if updated {
				fmt.Fprintf(out, "%s: its launcher updated to %s's\n", c.Path, w.Txexec)
			}
		case wrap.Replaced:
			w, err := wrapper()
			if err == nil {
				_, err = w.Rewrap(c)
			}
			if err != nil {
				fmt.Fprintf(errOut, "txexec: wrap --check: %s was replaced by a new privileged program, which could not be wrapped: %v\n", c.Path, err)
				status = exitRefused
				continue
			}
			fmt.Fprintf(out, "%s: replaced by a new privileged program (a package upgrade?); wrapped again\n", c.Path)
		case wrap.NoLongerSetID, wrap.Gone:
			what := "no longer set-ID"
			if wrap.StateOf(c) == wrap.Gone {
				what = "gone"
			}
			if err := wrap.Drop(c); err != nil {
				fmt.Fprintf(errOut, "txexec: wrap --check: %s: %v\n", c.Path, err)
				status = exitRefused
				continue
			}
			fmt.Fprintf(out, "%s: %s; its wrap is dropped\n", c.Path, what)
		case wrap.Foreign:
			fmt.Fprintf(errOut, "txexec: wrap --check: %s: neither its launcher nor a set-ID program; left as it is\n", c.Path)
			status = exitRefused
		}
	}
	return status
}
