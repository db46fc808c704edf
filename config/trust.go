package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
)

// Dir returns the folder that holds the user's configuration:
// $XDG_CONFIG_HOME when it is an absolute path, else ~/.config (on Windows,
// os.UserConfigDir), on every platform — macOS included, where
// os.UserConfigDir would say ~/Library/Application Support. It is the one
// definition of that folder: settings, the trust store, user skills and
// subagents are read from it, and protection guards it. orca's files are
// in its orca subfolder.
func Dir() (string, error) {
	if runtime.GOOS == "windows" {
		return os.UserConfigDir()
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no configuration folder: %w", err)
	}
	return filepath.Join(home, ".config"), nil
}

// TrustFile is the trust store's file, relative to the configuration
// folder.
const TrustFile = "orca/trust.json"

// TrustStore records the workspaces whose project settings the user
// trusts, and the grants that let a workspace's filesystem extensions
// (.orca/hooks/<name>, see LoadExtensions) run. It lives in the user's
// configuration folder, never in a workspace, so that a cloned repository
// cannot trust itself; and orca's policy denies the agent's own tools any
// change to that folder.
//
// The file is JSON:
//
//	{"workspaces": ["/abs/path", …],
//	 "grants": {"/abs/path": ["hook:failure-metrics", "hook:failure-metrics:resource:METRICS_URL", …]}}
//
// with absolute paths, symlinks resolved, so that a workspace reached
// through a link is the workspace that was trusted. Trust is per folder: a
// trusted folder's subfolders are not trusted with it. Grants (see Grant)
// are per workspace too, because an extension is known by a name that any
// repository can claim: granting hook:lint in one repository must not run
// another repository's hook:lint. Trusting a workspace does not grant its
// extensions, nor the reverse. Writes replace the file atomically under a
// lock, so that concurrent orca processes do not lose each other's
// changes.
type TrustStore struct {
	path string
}

// NewTrustStore returns the trust store of the configuration folder
// configDir (see Dir).
func NewTrustStore(configDir string) *TrustStore {
	return &TrustStore{path: filepath.Join(configDir, filepath.FromSlash(TrustFile))}
}

// Path returns the store's file.
func (s *TrustStore) Path() string { return s.path }

type trustFile struct {
	Workspaces []string `json:"workspaces"`
	// Grants are the extension grants by workspace, each list sorted.
	Grants map[string][]string `json:"grants,omitempty"`
	// MCP are, by workspace, the digests of its .mcp.json servers as the
	// user trusted them, by server name (see ApproveMCP).
	MCP map[string]map[string]string `json:"mcp,omitempty"`
}

// Canonical returns dir as the trust store records it: absolute, cleaned,
// with symlinks resolved. The folder must exist.
func Canonical(dir string) (string, error) {
	return canonical(dir)
}

func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	return real, nil
}

// Trusted reports whether the folder dir is trusted. A store that cannot
// be read trusts nothing.
func (s *TrustStore) Trusted(dir string) bool {
	real, err := canonical(dir)
	if err != nil {
		return false
	}
	f, err := s.read()
	return err == nil && slices.Contains(f.Workspaces, real)
}

// List returns the trusted folders, sorted.
func (s *TrustStore) List() ([]string, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Workspaces, nil
}

// Trust records that the folder dir is trusted, with its .mcp.json as it
// is now (ApproveMCP), and returns it as recorded.
func (s *TrustStore) Trust(dir string) (string, error) {
	real, err := canonical(dir)
	if err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	// A .mcp.json orca cannot read approves nothing (loading it says why).
	digests, _ := MCPFileDigests(real)
	err = s.update(func(f *trustFile) bool {
		changed := approveMCP(f, real, digests)
		if slices.Contains(f.Workspaces, real) {
			return changed
		}
		f.Workspaces = append(f.Workspaces, real)
		slices.Sort(f.Workspaces)
		return true
	})
	return real, err
}

// ApproveMCP records the .mcp.json servers of the workspace folder dir
// that the user trusts, as digests by name (MCPFileDigests), in place of
// those recorded before. A .mcp.json server starts only while its entry
// is the one recorded (and a settings file approves it by name): one the
// agent — or a pull — added or changed since is not started until the
// user trusts it again. Trust records them too.
func (s *TrustStore) ApproveMCP(dir string, digests map[string]string) error {
	real, err := canonical(dir)
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	return s.update(func(f *trustFile) bool { return approveMCP(f, real, digests) })
}

func approveMCP(f *trustFile, real string, digests map[string]string) bool {
	if maps.Equal(f.MCP[real], digests) || len(digests) == 0 && len(f.MCP[real]) == 0 {
		return false
	}
	if len(digests) == 0 {
		delete(f.MCP, real)
		return true
	}
	if f.MCP == nil {
		f.MCP = map[string]map[string]string{}
	}
	f.MCP[real] = maps.Clone(digests)
	return true
}

// MCPDigests returns the digests of the .mcp.json servers the user trusted
// in the workspace folder dir, by name (see ApproveMCP). A store that
// cannot be read has none.
func (s *TrustStore) MCPDigests(dir string) map[string]string {
	real, err := canonical(dir)
	if err != nil {
		return nil
	}
	f, err := s.read()
	if err != nil {
		return nil
	}
	return f.MCP[real]
}

// Revoke removes the folder dir from the store and returns it as it was
// recorded, with whether it was there. A folder that no longer exists can
// be revoked by its recorded path.
func (s *TrustStore) Revoke(dir string) (string, bool, error) {
	real, err := canonical(dir)
	if err != nil {
		if real, err = filepath.Abs(dir); err != nil {
			return "", false, fmt.Errorf("trust: %w", err)
		}
	}
	removed := false
	err = s.update(func(f *trustFile) bool {
		n := len(f.Workspaces)
		f.Workspaces = slices.DeleteFunc(f.Workspaces, func(w string) bool { return w == real })
		removed = len(f.Workspaces) < n
		_, approved := f.MCP[real]
		delete(f.MCP, real)
		return removed || approved
	})
	return real, removed, err
}

// Grant records grant (written as Grant documents, such as
// "hook:failure-metrics") for the workspace folder dir, and returns the
// folder as recorded.
func (s *TrustStore) Grant(dir, grant string) (string, error) {
	g, err := ParseGrant(grant)
	if err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	real, err := canonical(dir)
	if err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	err = s.update(func(f *trustFile) bool {
		list := f.Grants[real]
		if slices.Contains(list, g.String()) {
			return false
		}
		if f.Grants == nil {
			f.Grants = map[string][]string{}
		}
		list = append(slices.Clone(list), g.String())
		slices.Sort(list)
		f.Grants[real] = list
		return true
	})
	return real, err
}

// Granted reports whether grant is recorded for the workspace folder dir.
// A store that cannot be read grants nothing.
func (s *TrustStore) Granted(dir, grant string) bool {
	list, err := s.Grants(dir)
	return err == nil && slices.Contains(list, grant)
}

// Grants returns the grants recorded for the workspace folder dir,
// sorted.
func (s *TrustStore) Grants(dir string) ([]string, error) {
	real, err := canonical(dir)
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Grants[real], nil
}

// AllGrants returns the grants of every workspace, by recorded folder.
func (s *TrustStore) AllGrants() (map[string][]string, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	if f.Grants == nil {
		return map[string][]string{}, nil
	}
	return f.Grants, nil
}

// RevokeGrant removes grant from the workspace folder dir and returns the
// folder as recorded with the grants removed (none if it was not there).
// Revoking an extension's grant, hook:<name>, removes its port and
// resource grants with it, so that the extension no longer runs at all; a
// port or resource grant is removed alone. A folder that no longer exists
// can be named by its recorded path.
func (s *TrustStore) RevokeGrant(dir, grant string) (string, []string, error) {
	g, err := ParseGrant(grant)
	if err != nil {
		return "", nil, fmt.Errorf("trust: %w", err)
	}
	real, err := canonical(dir)
	if err != nil {
		if real, err = filepath.Abs(dir); err != nil {
			return "", nil, fmt.Errorf("trust: %w", err)
		}
	}
	var removed []string
	err = s.update(func(f *trustFile) bool {
		removed = nil
		keep := slices.DeleteFunc(slices.Clone(f.Grants[real]), func(x string) bool {
			drop := x == g.String() || (g == ExtensionGrant(g.Extension) && strings.HasPrefix(x, g.String()+":"))
			if drop {
				removed = append(removed, x)
			}
			return drop
		})
		if len(removed) == 0 {
			return false
		}
		if len(keep) == 0 {
			delete(f.Grants, real)
		} else {
			f.Grants[real] = keep
		}
		return true
	})
	return real, removed, err
}

// read reads the store; a store that does not exist is empty.
func (s *TrustStore) read() (*trustFile, error) { return readJSON[trustFile](s.path, "trust store") }

// readJSON reads the JSON file at path, strictly; a file that does not
// exist is the zero value. what names the file in errors.
func readJSON[T any](path, what string) (*T, error) {
	var f T
	data, err := readConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := strictJSON(data, &f); err != nil {
		return nil, fmt.Errorf("%s %s: %v", what, path, syntaxError(data, err))
	}
	return &f, nil
}

// update applies change to the store under its lock and writes the result
// if change reports a change.
func (s *TrustStore) update(change func(*trustFile) bool) error {
	return lockedUpdate(s.path, "trust store", s.read, func(f *trustFile) bool {
		if !change(f) {
			return false
		}
		if f.Workspaces == nil {
			f.Workspaces = []string{}
		}
		return true
	})
}

// lockedUpdate applies change to the JSON file at path under the file's
// lock (path.lock, so that concurrent orca processes do not lose each
// other's changes) and, if change reports a change, replaces the file
// atomically. what names the file in errors.
func lockedUpdate[T any](path, what string, read func() (*T, error), change func(*T) bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("%s: locking %s: %w", what, lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	f, err := read()
	if err != nil {
		return err
	}
	if !change(f) {
		return nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// writeAtomic replaces the file at path with data, of mode perm, through
// a temporary file of its folder renamed over it: a reader sees the old
// file or the new one, never a part, and two writers never share the
// temporary file. A path that is a symbolic link (a settings file kept in
// a dotfiles repository) is written where it leads, and stays a link.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), ".json")+"-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing left to remove
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
