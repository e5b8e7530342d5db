package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/internal/wrap"
	"txexec/interpose"
)

// wrappedRunWord is the first word of the command line a wrapped
// program's launcher (launcher/launcher.c) executes txexec with, as root:
//
//	txexec _wrapped --config=PATH --env-fd=N --caller=RUID,RGID,EGID --groups=G,... -- ARGV...
//
// It is no subcommand a person types and is in no help: it gives root
// nothing root does not have, and anyone else cannot use it (txexec
// refuses unless it runs as root). The caller's arguments follow "--"
// and are the program's argv, never options of txexec's: the run options
// are the configuration's, recorded by txexec wrap.
const wrappedRunWord = "_wrapped"

// wrappedRun is a parsed _wrapped command line.
type wrappedRun struct {
	conf       string
	envFD      int
	ruid       uint32
	rgid, egid uint32
	groups     []uint32
	argv       []string
}

func parseWrappedRun(args []string) (*wrappedRun, error) {
	r := &wrappedRun{envFD: -1}
	haveCaller, haveGroups := false, false
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		if a == "--" {
			r.argv = args
			break
		}
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "--config":
			r.conf = v
		case "--env-fd":
			r.envFD, err = strconv.Atoi(v)
		case "--caller":
			var ids []uint32
			ids, err = parseIDs(v)
			if err == nil && len(ids) != 3 {
				err = fmt.Errorf("expected RUID,RGID,EGID")
			}
			if err == nil {
				r.ruid, r.rgid, r.egid, haveCaller = ids[0], ids[1], ids[2], true
			}
		case "--groups":
			r.groups, err = parseIDs(v)
			haveGroups = true
		default:
			return nil, fmt.Errorf("unexpected argument %q", a)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", a, err)
		}
	}
	if r.conf == "" || r.envFD < 3 || !haveCaller || !haveGroups || len(r.argv) == 0 {
		return nil, fmt.Errorf("incomplete command line")
	}
	return r, nil
}

func parseIDs(s string) ([]uint32, error) {
	if s == "" {
		return nil, nil
	}
	var ids []uint32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return nil, err
		}
		ids = append(ids, uint32(n))
	}
	return ids, nil
}

// credFor is what the kernel gives the caller executing the original:
// real ids the caller's; effective and saved ids the file's owner for a
// set-user-ID file, the file's group for a set-group-ID one, the caller's
// otherwise; groups unchanged. The caller's effective uid is not known
// (the launcher's is root): for a set-group-ID-only program it is taken
// to be the real one (docs/semantics.md §7).
func credFor(c *wrap.Config, r *wrappedRun) *interpose.Cred {
	cred := &interpose.Cred{
		Uid: r.ruid, Euid: r.ruid, Suid: r.ruid,
		Gid: r.rgid, Egid: r.egid, Sgid: r.egid,
		Groups: slices.Clone(r.groups),
	}
	if c.Setuid() {
		cred.Euid, cred.Suid = c.UID, c.UID
	}
	if c.Setgid() {
		cred.Egid, cred.Sgid = c.GID, c.GID
	}
	return cred
}

// runWrapped runs a wrapped program for its launcher.
func runWrapped(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "txexec: wrapped program: "+format+"\n", a...)
		return exitInternal
	}
	if os.Getuid() != 0 || os.Geteuid() != 0 {
		return fail("%s is for the launcher of a wrapped program, which runs txexec as root", wrappedRunWord)
	}
	r, err := parseWrappedRun(args)
	if err != nil {
		return fail("%v", err)
	}
	envFile := os.NewFile(uintptr(r.envFD), "launcher-env")
	env, err := interpose.ReadEnv(envFile)
	envFile.Close() // not the program's
	if err != nil {
		return fail("%v", err)
	}
	// What the launcher checked, checked again: this is what runs.
	for _, p := range []string{r.conf} {
		if err := wrap.SecurePath(p, wrap.RegularFile); err != nil {
			return fail("configuration %v", err)
		}
	}
	c, err := wrap.ReadConfig(r.conf)
	if err != nil {
		return fail("%v", err)
	}
	if err := wrap.SecurePath(c.Original, wrap.RegularFile); err != nil {
		return fail("original %v", err)
	}
	o, err := parseRun(append(slices.Clone(c.Options), "--", c.Original))
	if err != nil {
		return fail("%s: %v", r.conf, err)
	}
	o.Argv = r.argv
	// A wrapped set-ID program runs without the fast path: txexec wrap
	// never records --fast-lookups, and the agent would be one more piece
	// of code mapped into a privileged process for every caller.
	o.FastLookups = false
	// Opened as root and executed through its descriptor with the
	// caller's ids: an original with file capabilities is in an entry
	// only root can search (docs/semantics.md §7).
	fd, err := unix.Open(c.Original, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open original: %v", err)
	}
	program := os.NewFile(uintptr(fd), c.Original)
	defer program.Close()
	return runAndReport(o, command{path: c.Original, env: env, cred: credFor(c, r), program: program})
}
