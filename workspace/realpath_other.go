//go:build !linux

package workspace

import (
	"os"
	"path/filepath"
)

// realPath returns where the open folder dir is, by its name (byName, with
// its links resolved): on this system the check is not pinned to the open
// folder, so a link swapped in between can still mislead it.
func realPath(_ *os.Root, byName string) (string, error) {
	return filepath.EvalSymlinks(byName)
}
