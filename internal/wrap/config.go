package wrap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultDir is where originals are moved by default: a root-owned
// directory on no PATH.
const DefaultDir = "/usr/lib/txexec/wrapped"

// ConfName is the configuration's name in a wrapped program's entry.
const ConfName = "wrap.conf"

// Config is one wrapped program, as wrap.conf records it.
type Config struct {
	// Path is the wrapped path, where the launcher is.
	Path string
	// Original is the original's copy in the wrapped directory.
	Original string
	// Txexec is the txexec binary the launcher executes.
	Txexec string
	// Mode, UID and GID are the original's mode (permission and set-ID
	// bits, as in chmod), owner and group, which the run's credentials
	// come from and Unwrap restores.
	Mode     uint32
	UID, GID uint32
	// Capabilities says the original has file capabilities (the
	// security.capability extended attribute), which its copy keeps: its
	// entry is then searchable by root alone.
	Capabilities bool
	// Options are the run options txexec is given (--on-exit=..., each a
	// word of the command line).
	Options []string
}

// ConfPath is the configuration's own path: beside the original.
func (c *Config) ConfPath() string { return filepath.Join(filepath.Dir(c.Original), ConfName) }

const confHeader = "# Written by txexec wrap; read by the launcher at path= and by txexec. Do not edit.\n"

// Format is the text of wrap.conf: one key=value a line, option= repeated.
func (c *Config) Format() []byte {
	var b bytes.Buffer
	b.WriteString(confHeader)
	fmt.Fprintf(&b, "path=%s\noriginal=%s\ntxexec=%s\nmode=%04o\nuid=%d\ngid=%d\n",
		c.Path, c.Original, c.Txexec, c.Mode, c.UID, c.GID)
	if c.Capabilities {
		b.WriteString("capabilities=yes\n")
	}
	for _, o := range c.Options {
		fmt.Fprintf(&b, "option=%s\n", o)
	}
	return b.Bytes()
}

// ParseConfig parses wrap.conf.
func ParseConfig(b []byte) (*Config, error) {
	c := &Config{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("bad line %q", line)
		}
		if k != "option" && seen[k] {
			return nil, fmt.Errorf("%s= given twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "path":
			c.Path = v
		case "original":
			c.Original = v
		case "txexec":
			c.Txexec = v
		case "mode":
			c.Mode, err = parseUint(v, 8)
		case "uid":
			c.UID, err = parseUint(v, 10)
		case "gid":
			c.GID, err = parseUint(v, 10)
		case "capabilities":
			if v != "yes" {
				err = fmt.Errorf("not yes")
			}
			c.Capabilities = true
		case "option":
			c.Options = append(c.Options, v)
		default:
			return nil, fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	for _, k := range []string{"path", "original", "txexec", "mode", "uid", "gid"} {
		if !seen[k] {
			return nil, fmt.Errorf("no %s= line", k)
		}
	}
	for _, p := range []string{c.Path, c.Original, c.Txexec} {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return nil, fmt.Errorf("%q is not a clean absolute path", p)
		}
	}
	if c.Mode&^0o7777 != 0 || c.Mode&(modeSetuid|modeSetgid) == 0 && !c.Capabilities {
		return nil, fmt.Errorf("mode=%04o: not a set-ID mode, and no capabilities=yes", c.Mode)
	}
	return c, nil
}

func parseUint(s string, base int) (uint32, error) {
	n, err := strconv.ParseUint(s, base, 32)
	return uint32(n), err
}

// ReadConfig reads and parses the wrap.conf at path.
func ReadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.ConfPath() != path {
		return nil, fmt.Errorf("%s: original=%s is not beside it", path, c.Original)
	}
	return c, nil
}

// The set-ID bits of a mode as chmod writes them.
const (
	modeSetuid = 0o4000
	modeSetgid = 0o2000
)

// Setuid and Setgid say which set-ID bits the original had.
func (c *Config) Setuid() bool { return c.Mode&modeSetuid != 0 }

// Setgid says whether the original was set-group-ID.
func (c *Config) Setgid() bool { return c.Mode&modeSetgid != 0 }

// ID is the name of a wrapped path's entry in the wrapped directory: the
// path without its leading slash, "/" written "-", and every byte outside
// [A-Za-z0-9_.+] (so "-" and "%" too) as %XX, which makes it one-to-one.
func ID(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '/' && i == 0:
		case c == '/':
			b.WriteByte('-')
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.' && i > 1 && path[i-1] != '/', c == '+':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
