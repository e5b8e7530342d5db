package determ

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomOf returns n bytes of tid's stream in e.
func randomOf(e *Env, tid, n int) []byte {
	b := make([]byte, n)
	e.Random(tid, b)
	return b
}

// TestPlacesAndStreams: places are fork indexes from the command, not
// pids; a stream depends on the seed and the place only.
func TestPlacesAndStreams(t *testing.T) {
	a, b := New(7), New(7)
	a.Root(1000)
	b.Root(5)
	a.Clone(1000, 1001)
	a.Clone(1000, 1002)
	a.Clone(1002, 1003)
	b.Clone(5, 9)
	b.Clone(5, 7) // the same forks, other pids
	b.Clone(7, 8)
	assert.Equal(t, "0", a.Place(1000))
	assert.Equal(t, "0.1", a.Place(1002))
	assert.Equal(t, "0.1.0", a.Place(1003))
	assert.Equal(t, "0.1.0", b.Place(8))
	assert.Equal(t, randomOf(a, 1003, 32), randomOf(b, 8, 32), "same seed, same place")
	assert.Equal(t, randomOf(a, 1003, 32), randomOf(b, 8, 32), "and the streams go on alike")
	assert.NotEqual(t, randomOf(a, 1001, 32), randomOf(a, 1002, 32), "another place")
	c := New(8)
	c.Root(1)
	assert.NotEqual(t, randomOf(rootOfSeed7(), 1, 32), randomOf(c, 1, 32), "another seed")

	a.Execed(1003, 1004) // a thread other than the leader executed
	assert.Equal(t, "", a.Place(1004))
	a.Clone(1003, 1005)
	assert.Equal(t, "0.1.0.0", a.Place(1005))
	a.Exited(1005)
	assert.Equal(t, "", a.Place(1005))
}

func rootOfSeed7() *Env {
	e := New(7)
	e.Root(1)
	return e
}

// TestClock: every read moves the clock by Step; sleeps move it by what
// they ask, an absolute one never backwards.
func TestClock(t *testing.T) {
	e := New(0)
	assert.Equal(t, time.Duration(0), e.Now())
	assert.Equal(t, Step, e.Now())
	assert.Equal(t, 2*Step+time.Second, e.Sleep(time.Second))
	e.SleepUntil(time.Millisecond) // in the past: no change
	assert.Equal(t, 2*Step+time.Second, e.Now())
	e.SleepUntil(time.Hour)
	assert.Equal(t, time.Hour, e.Now())
	assert.Equal(t, "2000-01-01T01:00:00Z", Wall(time.Hour).Format(time.RFC3339))
}

func TestParseSeed(t *testing.T) {
	n, err := ParseSeed("18446744073709551615")
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<64-1), n)
	for _, bad := range []string{"", "-1", "0x10", "seed", "18446744073709551616"} {
		_, err := ParseSeed(bad)
		assert.Error(t, err, bad)
	}
}
