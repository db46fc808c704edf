package store

// HoldRecords takes the lock of m's sessions and records, HoldObservations
// that of its observation rows, until release is called.
func HoldRecords(m *Memory) (release func()) {
	m.mu.Lock()
	return m.mu.Unlock
}

func HoldObservations(m *Memory) (release func()) {
	m.obsMu.Lock()
	return m.obsMu.Unlock
}
