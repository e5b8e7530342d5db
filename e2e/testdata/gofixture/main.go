// Command gofixture is a Go program run natively and under txexec by the e2e
// tests: the Go runtime starts many threads, preempts goroutines with SIGURG,
// and makes system calls from several threads at once. It prints only
// deterministic results.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gofixture:", err)
		os.Exit(1)
	}
}

func run() error {
	// Tight loops without calls have no cooperative preemption points:
	// runtime.GC's stop-the-world must preempt them asynchronously (SIGURG).
	var stop atomic.Bool
	var spun atomic.Uint64
	var spinners sync.WaitGroup
	for i := 0; i < 2*runtime.GOMAXPROCS(0); i++ {
		spinners.Add(1)
		go func() {
			defer spinners.Done()
			n := uint64(0)
			for !stop.Load() {
				n++
			}
			spun.Add(n)
		}()
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
	}

	// Files written and read from many goroutines at once: intercepted
	// calls block their threads, so the runtime starts more.
	dir := "gofixture-out"
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := filepath.Join(dir, fmt.Sprintf("f%02d", i))
			if err := os.WriteFile(name, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
				errs <- err
				return
			}
			for j := 0; j < 20; j++ {
				if _, err := os.Stat(name); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	h := sha256.New()
	var names []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		h.Write(b)
		names = append(names, e.Name())
	}
	sort.Strings(names)
	fmt.Printf("files %d first %s last %s sha256 %x\n", len(names), names[0], names[len(names)-1], h.Sum(nil))

	// A child process, with its output through a pipe.
	out, err := exec.Command("sh", "-c", "echo child says hi; exit 0").Output()
	if err != nil {
		return err
	}
	fmt.Printf("child: %s", out)
	err = exec.Command("sh", "-c", "exit 9").Run()
	fmt.Printf("child exit: %v\n", err)

	stop.Store(true)
	spinners.Wait()
	fmt.Println("spinners stopped:", spun.Load() > 0)
	return nil
}
