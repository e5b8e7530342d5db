package store

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// FaultEnv is the environment variable that arms a fault point for crash
// tests: "NAME" kills the process the first time it reaches Fault(NAME),
// "NAME@N" the N-th time.
const FaultEnv = "TXEXEC_FAULT"

var (
	faultMu sync.Mutex
	// faultHits counts, per point, how often it was reached. Guarded by
	// faultMu.
	faultHits = map[string]int{}
)

// Fault marks a named point of the commit path ("store.before-commit",
// "store.after-commit", …). When FaultEnv arms this point, the process
// SIGKILLs itself there, as a crash would stop it; otherwise Fault does
// nothing.
func Fault(name string) {
	v := os.Getenv(FaultEnv)
	if v == "" {
		return
	}
	point, nth := v, 1
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		n, err := strconv.Atoi(v[i+1:])
		if err != nil || n < 1 {
			panic(FaultEnv + "=" + v + ": the count after @ must be a positive number")
		}
		point, nth = v[:i], n
	}
	if point != name {
		return
	}
	faultMu.Lock()
	faultHits[name]++
	hit := faultHits[name] == nth
	faultMu.Unlock()
	if !hit {
		return
	}
	unix.Kill(os.Getpid(), unix.SIGKILL)
	for {
		// SIGKILL is delivered before this thread returns to user space;
		// never go on past the point in any case.
		time.Sleep(time.Hour)
	}
}
