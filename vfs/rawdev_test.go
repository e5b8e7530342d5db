package vfs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// TestRawCharDevice: the character devices whose writes go below every
// file system are told from the ones a transaction writes every day. (The
// refusal itself is the block devices' path, which the escape suite
// covers; this machine's kernel opens neither /dev/mem nor a bsg node.)
func TestRawCharDevice(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rdev  uint64
		isRaw bool
	}{
		{"mem", unix.Mkdev(1, 1), true},
		{"kmem", unix.Mkdev(1, 2), true},
		{"port", unix.Mkdev(1, 4), true},
		{"null", unix.Mkdev(1, 3), false},
		{"zero", unix.Mkdev(1, 5), false},
		{"urandom", unix.Mkdev(1, 9), false},
		{"tty", unix.Mkdev(5, 0), false},
		{"pts", unix.Mkdev(136, 0), false},
	} {
		assert.Equal(t, tt.isRaw, rawCharDevice(tt.rdev) != "", tt.name)
	}
	for major, driver := range charDrivers() {
		switch driver {
		case "bsg", "sg", "nvme", "nvme-generic":
			assert.Equal(t, "the disk pass-through device", rawCharDevice(unix.Mkdev(major, 0)), driver)
		case "tty", "pts", "misc", "input":
			assert.Empty(t, rawCharDevice(unix.Mkdev(major, 0)), driver)
		}
	}
}
