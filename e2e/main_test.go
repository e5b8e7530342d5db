package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// txexecBin is the txexec binary under test: $TXEXEC_BIN, or built by
// TestMain from ./cmd/txexec.
var txexecBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if p := os.Getenv("TXEXEC_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: TXEXEC_BIN=%s: %v\n", p, err)
			return 2
		}
		txexecBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "txexec-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 2
	}
	defer os.RemoveAll(dir)
	txexecBin = filepath.Join(dir, "txexec")
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot build txexec (set TXEXEC_BIN to use a built one): %v\n", err)
		return 2
	}
	build := exec.Command(gobin, "build", "-o", txexecBin, "./cmd/txexec")
	build.Dir = ".." // the module root; go test runs in the package directory
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/txexec: %v\n", err)
		return 2
	}
	return m.Run()
}
