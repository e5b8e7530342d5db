package wrap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Wrapper wraps programs into one wrapped directory.
type Wrapper struct {
	// Dir is the wrapped directory (DefaultDir); made if missing.
	Dir string
	// Txexec is the txexec binary the launchers execute: a canonical path
	// that SecurePath accepts.
	Txexec string
	// Template is the launcher template's image.
	Template []byte
	// Options are the run options recorded for the programs it wraps.
	Options []string
}

// ErrAlreadyWrapped: the path already holds a launcher.
var ErrAlreadyWrapped = errors.New("already wrapped (txexec unwrap it first to change how)")

// elfMagic starts every ELF file.
var elfMagic = []byte("\x7fELF")

// capabilityXattr holds a file's capabilities.
const capabilityXattr = "security.capability"

// Canonical is path, absolute, with the symlinks of its directories
// resolved (its last component is left as it is).
func Canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// Wrap wraps the set-ID program at path (canonical) and returns its
// configuration.
func (w *Wrapper) Wrap(path string) (*Config, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, err
	}
	mode := st.Mode & 0o7777
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil, errors.New("a symlink: wrap the file it leads to")
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, errors.New("not a regular file")
	case mode&0o022 != 0:
		return nil, errors.New("writable by others than its owner: fix its mode first")
	case st.Nlink > 1:
		return nil, fmt.Errorf("has %d hard links: the other names would stay unprotected", st.Nlink)
	}
	caps, err := capabilities(path)
	if err != nil {
		return nil, err
	}
	if mode&(modeSetuid|modeSetgid) == 0 && caps == nil {
		return nil, errors.New("neither set-user-ID nor set-group-ID, and no file capabilities: nothing to protect")
	}
	image, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if IsLauncher(image) {
		return nil, ErrAlreadyWrapped
	}
	if !bytes.HasPrefix(image, elfMagic) {
		// Linux honours set-ID bits on ELF programs only (a script's are
		// ignored, binfmt_misc's depend on the handler): wrapped, it would
		// gain privilege it does not have natively.
		return nil, errors.New("not an ELF program: Linux ignores its set-ID bits, so there is nothing to protect")
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return nil, err
	}
	// The launcher trusts no symlink on its paths.
	dir, err := filepath.EvalSymlinks(w.Dir)
	if err != nil {
		return nil, err
	}
	if err := SecurePath(dir, Directory); err != nil {
		return nil, fmt.Errorf("wrapped directory %w", err)
	}
	if err := searchable(dir); err != nil {
		return nil, fmt.Errorf("wrapped directory %w", err)
	}
	if err := SecurePath(w.Txexec, RegularFile); err != nil {
		return nil, fmt.Errorf("txexec binary %w", err)
	}
	entry := filepath.Join(dir, ID(path))
	c := &Config{
		Path: path, Original: filepath.Join(entry, filepath.Base(path)), Txexec: w.Txexec,
		Mode: mode, UID: st.Uid, GID: st.Gid, Capabilities: caps != nil, Options: w.Options,
	}
	launcher, err := Configure(w.Template, c.ConfPath())
	if err != nil {
		return nil, err
	}
	// An original that keeps its file capabilities must be reachable by
	// root alone: anyone who could execute it would get them outside
	// txexec. txexec opens it as root and executes it through that
	// descriptor with the caller's ids (interpose.Config.Program).
	entryMode := uint32(0o755)
	if caps != nil {
		entryMode = 0o700
	}
	if err := os.Mkdir(entry, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s exists: an earlier wrap of it (see txexec wrap --check)", entry)
		}
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(entry)
		}
	}()
	if err := unix.Chmod(entry, entryMode); err != nil { // whatever the umask
		return nil, err
	}
	// The original, set-ID bits removed, owned by root, in its group (whose
	// members may be the only ones allowed to run it), with its file
	// capabilities.
	times := []unix.Timespec{st.Atim, st.Mtim}
	if err := writeFile(c.Original, image, 0, st.Gid, mode&0o777, caps, times); err != nil {
		return nil, err
	}
	if err := writeFile(c.ConfPath(), c.Format(), 0, 0, 0o644, nil, nil); err != nil {
		return nil, err
	}
	if err := syncDir(entry); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	// The launcher: root's, set-user-ID, with the original's permission
	// bits and group (the kernel's check of who may execute the program
	// happens on it), never set-group-ID.
	if err := replaceFile(path, launcher, 0, st.Gid, mode&0o777|modeSetuid, nil, times); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// Launched is the configuration of the launcher at path, or an error if
// path is not a configured launcher.
func Launched(path string) (*Config, error) {
	image, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	conf, err := ConfPathOf(image)
	if err != nil {
		return nil, fmt.Errorf("not wrapped: %w", err)
	}
	if conf == "" {
		return nil, errors.New("not wrapped: the launcher template itself")
	}
	c, err := ReadConfig(conf)
	if err != nil {
		return nil, err
	}
	if c.Path != path {
		return nil, fmt.Errorf("its configuration %s is that of %s", conf, c.Path)
	}
	return c, nil
}

// Unwrap puts the original of the launcher at path (canonical) back, with
// its bytes, owner, group, mode and times, and removes its entry.
func Unwrap(path string) (*Config, error) {
	c, err := Launched(path)
	if err != nil {
		return nil, err
	}
	image, err := os.ReadFile(c.Original)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(c.Original, &st); err != nil {
		return nil, err
	}
	caps, err := capabilities(c.Original)
	if err != nil {
		return nil, err
	}
	if c.Capabilities != (caps != nil) {
		return nil, fmt.Errorf("%s: its file capabilities are not those recorded in %s", c.Original, c.ConfPath())
	}
	if err := replaceFile(path, image, c.UID, c.GID, c.Mode, caps, []unix.Timespec{st.Atim, st.Mtim}); err != nil {
		return nil, err
	}
	return c, removeEntry(c)
}

// removeEntry removes a wrapped program's entry.
func removeEntry(c *Config) error {
	entry := filepath.Dir(c.Original)
	if err := os.RemoveAll(entry); err != nil {
		return err
	}
	return syncDir(filepath.Dir(entry))
}

// List is the configurations of the wrapped directory dir, by path; bad
// lists the entries that could not be read.
func List(dir string) (cs []*Config, bad []error, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		c, err := ReadConfig(filepath.Join(dir, e.Name(), ConfName))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *Config) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return cs, bad, nil
}

// State is what is at a wrapped path now.
type State int

const (
	// InPlace: the launcher of this configuration.
	InPlace State = iota
	// Replaced: another set-ID program (a package upgrade installed it).
	Replaced
	// NoLongerSetID: a file that is no set-ID program.
	NoLongerSetID
	// Gone: nothing (the package was removed).
	Gone
	// Foreign: anything else (another launcher, a symlink, a directory).
	Foreign
)

// StateOf says what is at c.Path.
func StateOf(c *Config) State {
	var st unix.Stat_t
	if err := unix.Lstat(c.Path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return Gone
		}
		return Foreign
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Foreign
	}
	image, err := os.ReadFile(c.Path)
	if err != nil {
		return Foreign
	}
	if IsLauncher(image) {
		if conf, _ := ConfPathOf(image); conf == c.ConfPath() {
			return InPlace
		}
		return Foreign
	}
	if st.Mode&(modeSetuid|modeSetgid) == 0 {
		if caps, err := capabilities(c.Path); err != nil || caps == nil {
			return NoLongerSetID
		}
	}
	return Replaced
}

// capabilities is the security.capability attribute of the file at path,
// or nil if it has none.
func capabilities(path string) ([]byte, error) {
	buf := make([]byte, 64)
	for {
		n, err := unix.Lgetxattr(path, capabilityXattr, buf)
		switch {
		case errors.Is(err, unix.ENODATA):
			return nil, nil
		case errors.Is(err, unix.ERANGE):
			buf = make([]byte, 2*len(buf))
			continue
		case err != nil:
			return nil, fmt.Errorf("read file capabilities: %w", err)
		}
		return buf[:n], nil
	}
}

// searchable is nil if every user may search dir and the directories
// above it: a launcher started without euid 0 (no_new_privs, a nosuid
// mount) reads its configuration and executes a set-ID program's copy
// with its caller's credentials, as the kernel would have executed the
// original. (txexec itself executes the copy through a descriptor it
// opened as root.)
func searchable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return err
		}
		if st.Mode&0o001 == 0 {
			return fmt.Errorf("%s: %s is not searchable by every user (mode %04o)", dir, d, st.Mode&0o7777)
		}
		if d == "/" {
			return nil
		}
	}
}

// Refresh replaces the launcher of c, in place (State InPlace), by image,
// a newer launcher configured for it (Configure), keeping its owner, group
// and mode; it says whether anything changed.
func Refresh(c *Config, image []byte) (bool, error) {
	current, err := os.ReadFile(c.Path)
	if err != nil {
		return false, err
	}
	if bytes.Equal(current, image) {
		return false, nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(c.Path, &st); err != nil {
		return false, err
	}
	return true, replaceFile(c.Path, image, st.Uid, st.Gid, st.Mode&0o7777, nil, []unix.Timespec{st.Atim, st.Mtim})
}

// Rewrap wraps again the new set-ID program at c.Path (State Replaced),
// with c's options: the old original is dropped.
func (w *Wrapper) Rewrap(c *Config) (*Config, error) {
	if err := removeEntry(c); err != nil {
		return nil, err
	}
	w2 := *w
	w2.Options = c.Options
	return w2.Wrap(c.Path)
}

// Drop removes the entry of a program that is gone or no longer set-ID.
func Drop(c *Config) error { return removeEntry(c) }

// writeFile creates path (which must not exist) with data, owner, group,
// mode, file capabilities (caps, if not nil) and times, and syncs it.
func writeFile(path string, data []byte, uid, gid, mode uint32, caps []byte, times []unix.Timespec) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = fillFile(f, data, uid, gid, mode, caps, times)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func fillFile(f *os.File, data []byte, uid, gid, mode uint32, caps []byte, times []unix.Timespec) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	// chown clears set-ID bits: the mode comes after it.
	if err := unix.Fchown(int(f.Fd()), int(uid), int(gid)); err != nil {
		return fmt.Errorf("chown %s: %w", f.Name(), err)
	}
	if err := unix.Fchmod(int(f.Fd()), mode); err != nil {
		return fmt.Errorf("chmod %s: %w", f.Name(), err)
	}
	// chown removes file capabilities too: they come last.
	if caps != nil {
		if err := unix.Fsetxattr(int(f.Fd()), capabilityXattr, caps, 0); err != nil {
			return fmt.Errorf("set file capabilities of %s: %w", f.Name(), err)
		}
	}
	if times != nil {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), times, 0); err != nil {
			return fmt.Errorf("set times of %s: %w", f.Name(), err)
		}
	}
	return f.Sync()
}

// replaceFile replaces path with a new file (writeFile's), by rename.
func replaceFile(path string, data []byte, uid, gid, mode uint32, caps []byte, times []unix.Timespec) error {
	tmp := filepath.Join(filepath.Dir(path), ".txexec-wrap."+filepath.Base(path)+".new")
	os.Remove(tmp) // left by an interrupted wrap
	if err := writeFile(tmp, data, uid, gid, mode, caps, times); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
