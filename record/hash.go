package record

import (
	"crypto/sha256"
	"encoding/hex"
)

// Hash is the blob name of data.
func Hash(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// ValidHash reports whether h is a sha256 in lowercase hex, so that it
// names no other file.
func ValidHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
