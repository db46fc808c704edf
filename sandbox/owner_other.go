//go:build !unix

package sandbox

import "io/fs"

// ownedByUser: no owner to ask for here; the temp folder's cache is not
// shared.
func ownedByUser(fs.FileInfo) bool { return false }
