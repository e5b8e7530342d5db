package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// txexecBin is the txexec binary under test: $TXEXEC_BIN, or built by
// TestMain from ./cmd/txexec. launcherBin is the set-ID launcher's
// template beside it (make build puts bin/txexec-launcher there; TestMain
// builds it with the Makefile's own rule).
var txexecBin, launcherBin string

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
		launcherBin = filepath.Join(filepath.Dir(abs), "txexec-launcher")
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
	launcherBin = filepath.Join(dir, "txexec-launcher")
	if err := buildLauncher(launcherBin); err != nil {
		// Only the wrap tests need it: they fail, saying why.
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
	}
	return m.Run()
}

// buildLauncher builds the launcher template at out with the Makefile's
// rule (its hardening flags are the Makefile's alone).
func buildLauncher(out string) error {
	build := exec.Command("make", "-s", "LAUNCHER="+out, out)
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("make %s: %w", out, err)
	}
	return nil
}
