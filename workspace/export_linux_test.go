package workspace

// NoOpenat2 makes OpenDir of l go through os.Root alone, as on a kernel
// without openat2(2) or under a seccomp filter that forbids it.
func NoOpenat2(l *Local) { l.held.noAt2.Store(true) }
