package syscalls

import (
	"fmt"
	"io"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/interpose"
)

// Tracer writes one strace-like line per intercepted call (--trace).
type Tracer struct {
	mu sync.Mutex
	// w is guarded by mu.
	w io.Writer
	// pending maps a notification id to its formatted call, until the
	// reply completes the line.
	pending sync.Map
}

// NewTracer traces to w.
func NewTracer(w io.Writer) *Tracer { return &Tracer{w: w} }

func (t *Tracer) before(e *Entry, c *interpose.Call) {
	// Display-only reads: a Memory without the read hook, so that tracing
	// never changes whether a call may be answered with CONTINUE.
	mem := interpose.Memory{Tid: c.Tid}
	pathOf := func(addr uintptr) string {
		s, err := mem.ReadPath(addr)
		if err != nil {
			return fmt.Sprintf("%#x", addr)
		}
		return fmt.Sprintf("%q", s)
	}
	t.pending.Store(c.ID, FormatCall(e, c, pathOf))
}

// Replied completes the line of c; it is the session's OnReply hook.
func (t *Tracer) Replied(c *interpose.Call, r interpose.Reply, val int64, err error) {
	text, ok := t.pending.LoadAndDelete(c.ID)
	if !ok {
		return
	}
	v, errno, cont := r.Result()
	if r.IsFD() {
		v = val // the descriptor number the caller received
	}
	res := FormatResult(v, errno, cont)
	if err != nil {
		res = "= ? (caller gone: " + err.Error() + ")"
		if err == unix.ENOENT {
			res = "= ? (interrupted by a fatal signal)"
		}
	}
	t.line(c.Tid, text.(string)+" "+res)
}

func (t *Tracer) line(tid int, s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "[pid %d] %s\n", tid, s)
}
