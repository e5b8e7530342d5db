package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
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
	release, err := holdSystemPaths()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 2
	}
	defer release()
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

// systemPathsLock serializes e2e runs on one machine. Some tests must use
// real system paths (dpkg's database and lock, /usr/share):
// two runs at once, say a developer's make test beside a CI-like run,
// would take each other's dpkg lock or see each other's test packages,
// and fail for reasons that are not the code's.
const systemPathsLock = "/tmp/txexec-e2e-system-paths.lock"

// holdSystemPaths takes systemPathsLock, saying so when another run holds
// it, and returns its release.
func holdSystemPaths() (func(), error) {
	fd, err := unix.Open(systemPathsLock, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", systemPathsLock, err)
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		fmt.Fprintf(os.Stderr, "e2e: waiting for another e2e run on this machine (it holds %s)\n", systemPathsLock)
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("lock %s: %w", systemPathsLock, err)
		}
	}
	return func() { unix.Close(fd) }, nil
}
