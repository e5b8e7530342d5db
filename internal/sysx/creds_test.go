package sysx_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/internal/testenv"
)

// threadCreds is what /proc/thread-self/status says of the calling thread:
// fsuid, fsgid, supplementary groups and effective capabilities.
type threadCreds struct {
	fsuid, fsgid string
	groups       string
	capEff       uint64
}

func readThreadCreds(t *testing.T) threadCreds {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	require.NoError(t, err)
	var c threadCreds
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch k {
		case "Uid":
			c.fsuid = f[3]
		case "Gid":
			c.fsgid = f[3]
		case "Groups":
			c.groups = strings.Join(f, " ")
		case "CapEff":
			c.capEff, err = strconv.ParseUint(f[0], 16, 64)
			require.NoError(t, err)
		}
	}
	return c
}

// onLockedThread runs fn on an OS thread of its own that is thrown away
// afterwards, so that whatever fn leaves in the thread's credentials
// reaches no other test.
func onLockedThread(t *testing.T, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		fn()
	}()
	<-done
}

// TestAsCallerSwitchesAndRestores: the kernel decides as it would for the
// caller inside fn, and the thread is the supervisor's again after it,
// whichever parts of the identity differ.
func TestAsCallerSwitchesAndRestores(t *testing.T) {
	testenv.NeedRoot(t, "switches credentials")
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o600))
	locked := filepath.Join(dir, "locked")
	require.NoError(t, os.WriteFile(locked, []byte("x"), 0))

	allCaps := func(s *sysx.Self) uint64 { eff, _ := s.Caps(); return eff }
	cases := []struct {
		name string
		cred func(s *sysx.Self) sysx.Cred
		file string
	}{
		{"another user", func(*sysx.Self) sysx.Cred {
			return sysx.Cred{FSUID: 65534, FSGID: 65534, Groups: []uint32{65534}}
		}, secret},
		{"another user with the supervisor's groups", func(s *sysx.Self) sysx.Cred {
			_, gid, groups := s.IDs()
			return sysx.Cred{FSUID: 65534, FSGID: gid, Groups: groups}
		}, secret},
		{"root without DAC_OVERRIDE", func(s *sysx.Self) sysx.Cred {
			_, gid, groups := s.IDs()
			return sysx.Cred{FSUID: 0, FSGID: gid, Groups: groups,
				CapEff: allCaps(s) &^ (1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH)}
		}, locked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			onLockedThread(t, func() {
				s, err := sysx.ReadSelf()
				require.NoError(t, err)
				before := readThreadCreds(t)
				c := tc.cred(s)
				require.False(t, s.Same(&c))
				var inside threadCreds
				err = s.AsCaller(&c, func() error {
					inside = readThreadCreds(t)
					fd, err := unix.Open(tc.file, unix.O_RDONLY, 0)
					if err == nil {
						unix.Close(fd)
					}
					return err
				})
				assert.ErrorIs(t, err, unix.EACCES, "the caller may not open %s", tc.file)
				assert.Equal(t, strconv.Itoa(int(c.FSUID)), inside.fsuid)
				assert.Equal(t, strconv.Itoa(int(c.FSGID)), inside.fsgid)
				_, perm := s.Caps()
				assert.Equal(t, c.CapEff&perm, inside.capEff)
				assert.Equal(t, before, readThreadCreds(t), "the supervisor's credentials are back")

				fd, err := unix.Open(tc.file, unix.O_RDONLY, 0)
				require.NoError(t, err, "the supervisor itself still may")
				unix.Close(fd)
			})
		})
	}
}

// TestAsCallerKeepsSupervisorCapsOut: changing fsuid back to 0 raises
// every permitted file-system capability; a supervisor that did not have
// one in effect must not come back with it.
func TestAsCallerKeepsSupervisorCapsOut(t *testing.T) {
	testenv.NeedRoot(t, "switches credentials")
	onLockedThread(t, func() {
		full, err := sysx.ReadSelf()
		require.NoError(t, err)
		fullEff, _ := full.Caps()
		require.NoError(t, full.SetEffective(fullEff&^(1<<unix.CAP_DAC_OVERRIDE)))
		s, err := sysx.ReadSelf()
		require.NoError(t, err)
		eff, _ := s.Caps()
		require.Zero(t, eff&(1<<unix.CAP_DAC_OVERRIDE))
		before := readThreadCreds(t)

		c := sysx.Cred{FSUID: 65534, FSGID: 65534}
		require.NoError(t, s.AsCaller(&c, func() error { return nil }))
		after := readThreadCreds(t)
		assert.Equal(t, before, after)
		assert.Zero(t, after.capEff&(1<<unix.CAP_DAC_OVERRIDE), "DAC_OVERRIDE stays out of the effective set")
	})
}

// TestAsCallerSameMakesNoSwitch: a caller with the supervisor's identity
// runs fn as it is.
func TestAsCallerSameMakesNoSwitch(t *testing.T) {
	s, err := sysx.ReadSelf()
	require.NoError(t, err)
	uid, gid, groups := s.IDs()
	eff, _ := s.Caps()
	c := sysx.Cred{FSUID: uid, FSGID: gid, Groups: groups, CapEff: eff}
	require.True(t, s.Same(&c))
	ran := false
	require.NoError(t, s.AsCaller(&c, func() error { ran = true; return nil }))
	assert.True(t, ran)
}
