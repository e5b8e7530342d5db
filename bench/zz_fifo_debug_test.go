package bench

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/proc"
	"txexec/store"
	"txexec/syscalls"
	"txexec/txn"
	"txexec/vfs"
)

func TestZZFifoDebug(t *testing.T) {
	dir := t.TempDir()
	unix.Mkfifo(dir+"/fifo", 0o644)
	os.Mkdir(dir+"/dir1", 0o755)
	host, _ := vfs.NewHost()
	table, _ := syscalls.NewTable(syscalls.Entries())
	k := &syscalls.Kernel{Table: table, Procs: proc.NewTable(), View: host, Logf: t.Logf}
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &txn.Manager{Store: st, Host: host}
	tx, err := m.Begin([]string{"x"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	k.View = tx.View
	cwd, _ := k.View.OpenDir(dir)
	root, _ := k.View.OpenDir("/")
	sh, _ := exec.LookPath("sh")
	argv := []string{sh, "/work/main/e2e/conformance/cases/28-fifo.sh"}
	s, err := interpose.Start(interpose.Config{
		Path: sh, Argv: argv, Env: os.Environ(), Dir: dir,
		Files:   [3]*os.File{os.Stdin, os.Stdout, os.Stderr},
		Rules:   k.Table.Rules(),
		Handler: k,
		Events:  &rootRegistrar{Kernel: k, fs: proc.NewFS(cwd, root, 0o22)},
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := s.Wait()
	t.Logf("status %v", ws)
}
