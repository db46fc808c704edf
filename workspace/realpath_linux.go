package workspace

import (
	"fmt"
	"os"
)

// realPath returns where the open folder dir really is: the kernel's name
// for its descriptor, which no rename or link swapped after it was opened
// changes.
func realPath(dir *os.Root, _ string) (string, error) {
	f, err := dir.Open(".")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
}
