package procfs

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Fields is one parsed /proc key-value file: each line "Key:<space>value",
// keyed by Key, its value with surrounding blanks removed. Lines without a
// colon are ignored; a repeated key keeps its first value.
type Fields map[string]string

// Parse parses the contents of a key-value file. With keys, only those
// are kept: a caller that wants a few of /proc/TID/status's fifty-odd
// lines does not pay for a map of them all.
func Parse(b []byte, keys ...string) Fields {
	f := make(Fields, len(keys))
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !wanted(keys, k) {
			continue
		}
		key := string(k)
		if _, seen := f[key]; !seen {
			f[key] = string(bytes.TrimSpace(v))
		}
	}
	return f
}

// wanted reports whether Parse keeps key k: any, without keys.
func wanted(keys []string, k []byte) bool {
	if keys == nil {
		return true
	}
	for _, key := range keys {
		if string(k) == key { // no allocation: a comparison
			return true
		}
	}
	return false
}

// Read reads and parses the key-value file at path (only keys, if any
// are given: Parse). The error is an *os.PathError whose Err is the
// errno, so callers can tell a missing entry (a gone thread, a closed
// descriptor) with errors.Is(err, fs.ErrNotExist).
func Read(path string, keys ...string) (Fields, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, keys...), nil
}

// readFile reads the whole file at path with plain system calls: os.ReadFile
// also stats the file for its size (which /proc files do not have) and
// registers the descriptor with the runtime's poller, which costs the
// supervisor, which reads /proc/TID/status at every exec, as much as
// the kernel's formatting of the file.
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 4096) // a status file is about 1.5 kB
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, len(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// Status reads /proc/TID/status (only keys, if any are given).
func Status(tid int, keys ...string) (Fields, error) {
	return Read("/proc/"+strconv.Itoa(tid)+"/status", keys...)
}

// FDInfo reads /proc/PID/fdinfo/FD.
func FDInfo(pid, fd int) (Fields, error) {
	return Read("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
}

// Has reports whether key is present.
func (f Fields) Has(key string) bool {
	_, ok := f[key]
	return ok
}

// Words returns the blank-separated words of key's value (nil if absent).
func (f Fields) Words(key string) []string {
	return strings.Fields(f[key])
}

// Uint parses key's value as one unsigned number in base (8 for fdinfo
// flags and Umask, 16 for capability masks, 10 else).
func (f Fields) Uint(key string, base int) (uint64, error) {
	v, ok := f[key]
	if !ok {
		return 0, fmt.Errorf("no %s field", key)
	}
	n, err := strconv.ParseUint(v, base, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s %q: %w", key, v, err)
	}
	return n, nil
}

// Int parses key's value as one signed decimal number (a pid may be -1).
func (f Fields) Int(key string) (int, error) {
	v, ok := f[key]
	if !ok {
		return 0, fmt.Errorf("no %s field", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("parse %s %q: %w", key, v, err)
	}
	return n, nil
}

// LastInt parses the last word of key's value: the innermost pid
// namespace's id in NStgid, NSpid, NSpgid and NSsid.
func (f Fields) LastInt(key string) (int, error) {
	w := f.Words(key)
	if len(w) == 0 {
		return 0, fmt.Errorf("no %s field", key)
	}
	n, err := strconv.Atoi(w[len(w)-1])
	if err != nil {
		return 0, fmt.Errorf("parse %s %q: %w", key, f[key], err)
	}
	return n, nil
}

// IDs parses the four ids of a Uid or Gid line: real, effective, saved
// and file-system.
func (f Fields) IDs(key string) ([4]uint32, error) {
	var ids [4]uint32
	w := f.Words(key)
	if len(w) != 4 {
		return ids, fmt.Errorf("parse %s %q: want 4 ids", key, f[key])
	}
	for i, s := range w {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return ids, fmt.Errorf("parse %s %q: %w", key, f[key], err)
		}
		ids[i] = uint32(n)
	}
	return ids, nil
}

// Uint32s parses every word of key's value as a decimal uint32 (Groups).
func (f Fields) Uint32s(key string) ([]uint32, error) {
	var out []uint32
	for _, s := range f.Words(key) {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: %w", key, f[key], err)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// Bytes parses a size line such as "VmHWM:	  12345 kB" into bytes.
func (f Fields) Bytes(key string) (int64, error) {
	v, ok := f[key]
	if !ok {
		return 0, fmt.Errorf("no %s field", key)
	}
	num, unit, _ := strings.Cut(v, " ")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s %q: %w", key, v, err)
	}
	switch strings.TrimSpace(unit) {
	case "kB":
		n *= 1024
	case "":
	default:
		return 0, fmt.Errorf("parse %s %q: unknown unit", key, v)
	}
	return n, nil
}
