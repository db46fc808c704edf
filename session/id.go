package session

import (
	"crypto/rand"
	"encoding/hex"
)

func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewID returns a fresh session id.
func NewID() string { return "session_" + randomID() }

// NewTurnID returns a new turn id (WithTurnID).
func NewTurnID() string { return "turn_" + randomID() }
