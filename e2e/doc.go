// Package e2e holds txexec's end-to-end tests: real programs (bash, python3,
// gcc, git, tar, C fixtures with threads that fork and race, a Go binary) run
// natively first and then under bin/txexec, with --passthrough and as a
// transaction, and their stdout, stderr, exit status and resulting file tree
// compared (docs/architecture.md §8). The in-program API's tests
// (txapi_test.go) compile testdata/txapi.c against include/txexec.h, run
// testdata/txapi.py with python/txexec.py, and build examples/maildir.
// The undo tests (undo_test.go, and TestDpkgInstallUndone) run a script,
// useradd or dpkg -i, then txexec undo, and compare the tree with what it
// was before, also after txexec undo is killed at every fault point.
//
// TestMain builds txexec once from ./cmd/txexec into a temporary directory
// (or uses $TXEXEC_BIN). Fixtures under testdata/ are compiled at test time
// into each test's temporary directory. Every run of txexec gets its own
// TXEXEC_STATE_DIR; tests touch nothing outside their temporary directories.
//
// Tools a test needs (gcc, git, python3, setpriv, ...) are looked up on PATH;
// a missing one skips the test with the reason, and fails it when CI=true.
//
// The package has no non-test code and imports nothing of txexec but the
// test helpers internal/testenv and internal/crashfs (the FUSE file system
// of the power-loss tests): it sees txexec exactly as a user does, through
// the binary.
package e2e
