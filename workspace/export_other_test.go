//go:build !linux

package workspace

// NoOpenat2 does nothing: OpenDir goes through os.Root alone here.
func NoOpenat2(*Local) {}
