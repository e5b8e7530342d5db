package interpose

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCredEncoding(t *testing.T) {
	for _, c := range []*Cred{
		{Uid: 1000, Euid: 0, Suid: 0, Gid: 100, Egid: 42, Sgid: 42, Groups: []uint32{100, 27, 4294967294}},
		{Uid: 5, Euid: 5, Suid: 5},
	} {
		got, err := decodeCred(c.encode())
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	for _, bad := range []string{"", "1,2,3:4,5,6", "1,2:4,5,6:", "1,2,3:4,5,x:", "1,2,3:4,5,6:7,"} {
		_, err := decodeCred(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestEnvMemfd(t *testing.T) {
	env := []string{"A=1", "EMPTY=", "MULTI=line\nbreak", "EQ=a=b"}
	f, err := envMemfd(env)
	require.NoError(t, err)
	defer f.Close()
	got, err := ReadEnv(f)
	require.NoError(t, err)
	assert.Equal(t, env, got)
	_, err = f.Write([]byte("X=1\x00"))
	assert.Error(t, err, "sealed")

	empty, err := envMemfd(nil)
	require.NoError(t, err)
	defer empty.Close()
	got, err = ReadEnv(empty)
	require.NoError(t, err)
	assert.Empty(t, got)
}
