package wrap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LauncherName is the launcher template's file name: beside the txexec
// binary (make build's bin/), or in ../lib/txexec/ from it (make install).
const LauncherName = "txexec-launcher"

// confMark is the marker in the launcher (launcher.c, CONF_MARK) after
// which a configured copy holds its configuration's path, NUL-terminated,
// within confBlockSize bytes from the marker's start.
var confMark = []byte("TXEXEC-LAUNCHER-CONFIG-PATH:")

const confBlockSize = 4096

// FindTemplate finds the launcher template for the txexec binary at
// txexec.
func FindTemplate(txexec string) (string, error) {
	dir := filepath.Dir(txexec)
	for _, p := range []string{
		filepath.Join(dir, LauncherName),
		filepath.Join(dir, "..", "lib", "txexec", LauncherName),
	} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return filepath.Clean(p), nil
		}
	}
	return "", fmt.Errorf("no launcher (%s) beside %s or in %s: build it with make build",
		LauncherName, txexec, filepath.Join(dir, "..", "lib", "txexec"))
}

// markAt is where the marker is in a launcher image, or an error unless
// there is exactly one whole block.
func markAt(image []byte) (int, error) {
	i := bytes.Index(image, confMark)
	if i < 0 {
		return 0, errors.New("no configuration block (not a txexec launcher)")
	}
	if bytes.Contains(image[i+1:], confMark) {
		return 0, errors.New("two configuration blocks")
	}
	if len(image)-i < confBlockSize {
		return 0, errors.New("truncated configuration block")
	}
	return i, nil
}

// IsLauncher says whether image is a txexec launcher (configured or not).
func IsLauncher(image []byte) bool {
	_, err := markAt(image)
	return err == nil
}

// Configure returns a copy of the template image that reads its
// configuration from confPath.
func Configure(template []byte, confPath string) ([]byte, error) {
	i, err := markAt(template)
	if err != nil {
		return nil, err
	}
	start := i + len(confMark)
	if template[start] != 0 {
		return nil, errors.New("the launcher template is already configured")
	}
	if len(confMark)+len(confPath)+1 > confBlockSize {
		return nil, fmt.Errorf("configuration path %s too long for the launcher", confPath)
	}
	out := bytes.Clone(template)
	copy(out[start:], confPath)
	return out, nil
}

// ConfPathOf is the configuration path a configured launcher image reads,
// or "" for the template.
func ConfPathOf(image []byte) (string, error) {
	i, err := markAt(image)
	if err != nil {
		return "", err
	}
	block := image[i+len(confMark) : i+confBlockSize]
	end := bytes.IndexByte(block, 0)
	if end < 0 {
		return "", errors.New("unterminated configuration path")
	}
	return string(block[:end]), nil
}
