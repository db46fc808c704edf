//go:build unix

package sandbox

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByUser reports whether fi is the file of this process's user.
func ownedByUser(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
