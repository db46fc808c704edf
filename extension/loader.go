// Package extension runs filesystem extensions: folders
// .orca/hooks/<name> of a workspace, each with a hook.yaml manifest and a
// handler executable that receives runtime events and answers public hooks
// over JSON lines, with only the ports (config.Port) the manifest asks for
// and the user's trust policy grants (config.TrustStore). LoadExtensions
// reads and checks them without running anything; RegisterExtensions puts
// the trusted ones on a runtime's services.
package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/config"
)

// ExtensionOptions say which extensions LoadExtensions reads and what the
// user allows them.
type ExtensionOptions struct {
	// Workspace is the workspace whose .orca/hooks folder is read; empty:
	// none.
	Workspace string
	// Trust holds the user's grants (nil: nothing is granted, and every
	// extension is returned untrusted).
	Trust *config.TrustStore
	// Resources are the values of the named resources extensions may be
	// granted, by key: the user's, never the workspace's (UserResources
	// reads them from the user's settings file).
	Resources map[string]string
}

// Extension is a filesystem extension: a folder .orca/hooks/<name> of the
// workspace, with its manifest (hook.yaml, see Manifest) and an
// executable handler, and what the user's trust policy grants it.
//
// # Trust
//
// The manifest is read without running anything. The handler runs only if
// the manifest is valid and the trust policy (config.TrustStore, in the user's
// configuration folder, outside any workspace) grants it for this
// workspace: hook:<name> grants every port the manifest asks for;
// hook:<name>:events or hook:<name>:hooks grant one of them; the
// handler gets only the ports that the manifest asks for and the policy
// grants. A resource KEY listed in resource_keys is delivered only with
// the grant hook:<name>:resource:KEY and a value the user configured
// (ExtensionOptions.Resources, see UserResources).
//
// # Protocol
//
// The handler is started on the first request (not at registration),
// without arguments, in a process group of its own, in the extension's
// folder as working directory, with a scrubbed environment:
// PATH, HOME and LANG from orca's; ORCA_EXTENSION_NAME, the extension's
// name; ORCA_EXTENSION_PORTS, the granted ports separated by commas
// ("events,hooks"); and, for each delivered resource, its value in
// ORCA_RESOURCE_<KEY> (see ResourceEnv: . and - in KEY become _).
//
// orca writes one request per line on the handler's stdin and reads one
// answer per line from its stdout; one request is in flight at a time, so
// a handler may answer each line as it reads it. Requests:
//
//	{"id": 7, "kind": "event", "event": {"name": "tool_exec_failed", "time": …, "runtime_id": …, "tool_name": …, …}}
//	{"id": 8, "kind": "hook", "hook": "PRE_TOOL_USE", "payload": {"hook": "PRE_TOOL_USE", "version": 1, "tool_name": "Bash", "arguments": {…}, …}}
//
// where event is the event's flat JSON form (event.Event.MarshalJSON) and
// payload the hook's documented payload (hook/schema). Answers carry the
// request's id:
//
//	{"id": 7}
//	{"id": 8, "decision": {"action": "block", "reason": "…", "updates": {…}, "context": "…", "instruction": "…"}}
//	{"id": 9, "error": "what went wrong"}
//
// A decision (hooks only; every field optional, action one of hook's
// actions) is held to the hook's contract like any hook's. The handler's
// stderr is not read as answers: its last lines are quoted when the
// handler fails.
//
// A request fails — an event listener error, counted by the bus, or a hook
// failure, reported as hook_failed — when the handler reports an error,
// takes longer than the manifest's timeout, answers with something that is
// not an answer to that request, or exits. Except for a reported error,
// the handler's process group is then killed, and the next request starts
// it again. A failure never stops the run.
type Extension struct {
	// Manifest is the extension's manifest, checked.
	Manifest Manifest
	// File is the manifest's path relative to the workspace, with slashes
	// (".orca/hooks/<name>/hook.yaml"), as errors name it.
	File string
	// Dir is the extension's folder, absolute, with symlinks resolved.
	Dir string
	// Handler is the handler's executable file, absolute, with symlinks
	// resolved (inside Dir).
	Handler string

	// Trusted says the trust policy lets the handler run, with Ports.
	Trusted bool
	// Reason says why an untrusted extension is not run, and which grant
	// would run it.
	Reason string
	// Ports are the ports the handler gets: those the manifest asks for
	// and the policy grants.
	Ports []Capability
	// Resources are the resource keys the handler gets (granted, and with
	// a value).
	Resources []string
	// Withheld are the grants that would give the extension what its
	// manifest asks for and the policy does not grant.
	Withheld []string
	// Notes say what was granted but cannot be delivered (a granted
	// resource without a value).
	Notes []string

	// values holds the delivered resources' values behind a pointer, so
	// that printing an Extension (%+v) does not print them.
	values *secrets
}

// secrets are resource values by key.
type secrets struct{ m map[string]string }

// value returns the value of the delivered resource key.
func (x *Extension) value(key string) string {
	if x.values == nil {
		return ""
	}
	return x.values.m[key]
}

// config.Grant returns the grant that lets x run: hook:<name>.
func (x *Extension) Grant() config.Grant { return config.ExtensionGrant(x.Manifest.Name) }

// Has reports whether x's handler gets the port c.
func (x *Extension) Has(c Capability) bool { return slices.Contains(x.Ports, c) }

// LoadExtensions reads and checks every extension of the workspace — each
// folder of .orca/hooks — and what the trust policy grants each one,
// without running anything. Loose files in .orca/hooks (scripts of
// settings command hooks), hidden entries and folders without anything
// but hidden entries are not extensions.
//
// Loading is all or nothing: a folder with files but no hook.yaml, an
// invalid manifest, a name that is not the folder's, a handler that is not
// an executable regular file inside the folder, or a folder that is a
// symlink fails the load, and the error (a join of *ManifestError, one per
// folder at fault) names each file and field. Untrusted extensions are not
// errors: they are returned with Trusted false and a Reason, so that the
// caller can say which grants are missing. RegisterExtensions runs the
// trusted ones.
func LoadExtensions(opts ExtensionOptions) ([]*Extension, error) {
	if opts.Workspace == "" {
		return nil, nil
	}
	ws, err := config.Canonical(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("extensions: workspace %s: %w", opts.Workspace, err)
	}
	root := filepath.Join(ws, filepath.FromSlash(ExtensionsDir))
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("extensions: %w", err)
	}
	var exts []*Extension
	var errs []error
	for _, de := range entries {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		rel := ExtensionsDir + "/" + name
		dir := filepath.Join(root, name)
		if de.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				errs = append(errs, &ManifestError{File: rel + "/" + ManifestFile,
					Msg: fmt.Sprintf("%s is a symlink to a folder: an extension must be a real folder of %s", rel, ExtensionsDir)})
			}
			continue
		}
		if !de.IsDir() {
			continue
		}
		x, err := loadFolder(dir, rel, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if x != nil {
			exts = append(exts, x)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var grants []string
	var trustErr error
	if opts.Trust != nil && len(exts) > 0 {
		grants, trustErr = opts.Trust.Grants(ws)
	}
	for _, x := range exts {
		x.applyTrust(opts.Trust, grants, trustErr, opts.Resources)
	}
	return exts, nil
}

// loadFolder reads and checks the extension in dir; nil if the folder is
// empty.
func loadFolder(dir, rel, folder string) (*Extension, error) {
	file := rel + "/" + ManifestFile
	path := filepath.Join(dir, ManifestFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, &ManifestError{File: file, Msg: err.Error()}
		}
		if !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return !strings.HasPrefix(e.Name(), ".") }) {
			return nil, nil // empty, or a .gitkeep
		}
		return nil, &ManifestError{File: file, Msg: fmt.Sprintf("missing: %s has files but no manifest, and orca runs nothing without one (scripts of settings command hooks go directly in %s)", rel, ExtensionsDir)}
	}
	if err != nil {
		return nil, &ManifestError{File: file, Msg: err.Error()}
	}
	if !fi.Mode().IsRegular() {
		return nil, &ManifestError{File: file, Msg: "not a regular file (a manifest cannot be a symlink)"}
	}
	if fi.Size() > maxManifest {
		return nil, &ManifestError{File: file, Msg: fmt.Sprintf("the file is %d bytes; a manifest is at most %d", fi.Size(), maxManifest)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ManifestError{File: file, Msg: err.Error()}
	}
	m, err := ParseManifest(file, data)
	if err != nil {
		return nil, err
	}
	if m.Name != folder {
		msg := fmt.Sprintf("%q is not the folder's name: an extension's name is its folder's (%q)", m.Name, folder)
		if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), m.Name)); err == nil {
			msg = fmt.Sprintf("%q is claimed by %s/%s too: an extension's name is its folder's (%q)", m.Name, ExtensionsDir, m.Name, folder)
		}
		return nil, &ManifestError{File: file, Field: "name", Msg: msg}
	}
	handler, err := checkHandler(dir, m.Handler)
	if err != nil {
		return nil, &ManifestError{File: file, Field: "handler", Msg: err.Error()}
	}
	return &Extension{Manifest: *m, File: file, Dir: dir, Handler: handler}, nil
}

// checkHandler returns the handler's real path if it is an executable
// regular file inside dir.
func checkHandler(dir, handler string) (string, error) {
	p := filepath.Join(dir, filepath.FromSlash(handler))
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist in the extension's folder", handler)
	}
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(dir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s leads out of the extension's folder (to %s)", handler, real)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", handler)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable (chmod +x it)", handler)
	}
	return real, nil
}

// applyTrust sets what the policy grants x.
func (x *Extension) applyTrust(store *config.TrustStore, grants []string, trustErr error, values map[string]string) {
	m := &x.Manifest
	has := func(g config.Grant) bool { return slices.Contains(grants, g.String()) }
	whole := has(x.Grant())
	for _, c := range m.Capabilities {
		if whole || has(config.Grant{Extension: m.Name, Port: c}) {
			x.Ports = append(x.Ports, c)
		} else {
			x.Withheld = append(x.Withheld, config.Grant{Extension: m.Name, Port: c}.String())
		}
	}
	for _, k := range m.ResourceKeys {
		g := config.Grant{Extension: m.Name, Resource: k}
		if !has(g) {
			x.Withheld = append(x.Withheld, g.String())
			continue
		}
		v, ok := values[k]
		if !ok {
			x.Notes = append(x.Notes, fmt.Sprintf("the resource %s is granted but has no value (set extensions.resources.%s in the user's %s)", k, k, config.UserFile))
			continue
		}
		if x.values == nil {
			x.values = &secrets{m: map[string]string{}}
		}
		x.values.m[k] = v
		x.Resources = append(x.Resources, k)
	}
	if len(x.Ports) > 0 {
		x.Trusted = true
		return
	}
	x.Resources, x.values, x.Notes = nil, nil, nil
	switch {
	case store == nil:
		x.Reason = "not run: no trust policy was given"
	case trustErr != nil:
		x.Reason = fmt.Sprintf("not run: the trust policy cannot be read: %v", trustErr)
	default:
		x.Reason = fmt.Sprintf("not run: the grant %s is not in the trust policy (it asks for %s)", x.Grant(), x.asks())
	}
}

// asks lists what x's manifest asks for, for messages.
func (x *Extension) asks() string {
	var what []string
	for _, c := range x.Manifest.Capabilities {
		what = append(what, string(c))
	}
	for _, k := range x.Manifest.ResourceKeys {
		what = append(what, "resource "+k)
	}
	if len(what) > 1 {
		return strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
	}
	return strings.Join(what, "")
}

// Describe says what the extension asks for, for people (orca trust
// hook:NAME shows it): its handler, the events and hooks it receives, its
// capabilities, resources and timeout, a line each.
func (x *Extension) Describe() string {
	m := &x.Manifest
	var b strings.Builder
	fmt.Fprintf(&b, "extension %s (%s)\n", m.Name, x.File)
	fmt.Fprintf(&b, "  handler       %s\n", m.Handler)
	if evs := m.RuntimeEvents(); len(evs) > 0 {
		fmt.Fprintf(&b, "  events        %s (observes them)\n", joined(evs))
	}
	if hs := m.Hooks(); len(hs) > 0 {
		fmt.Fprintf(&b, "  hooks         %s (answers them: it may block or change calls)\n", joined(hs))
	}
	fmt.Fprintf(&b, "  capabilities  %s\n", joined(m.Capabilities))
	if len(m.ResourceKeys) > 0 {
		fmt.Fprintf(&b, "  resources     %s\n", strings.Join(m.ResourceKeys, ", "))
	}
	fmt.Fprintf(&b, "  timeout       %s per request\n", m.Timeout)
	return b.String()
}

// joined lists names, comma-separated.
func joined[S ~string](names []S) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Standing says, for people, what the extension gets of what it asks for:
// the ports and resources it runs with, or why it does not run; what was
// not granted; the notes of its loading. A line each.
func (x *Extension) Standing() string {
	var b strings.Builder
	if x.Trusted {
		fmt.Fprintf(&b, "It runs with: %s", joined(x.Ports))
		if len(x.Resources) > 0 {
			fmt.Fprintf(&b, "; resources %s", strings.Join(x.Resources, ", "))
		}
		b.WriteString(".\n")
	} else {
		fmt.Fprintf(&b, "It does not run yet: %s.\n", x.Reason)
	}
	if len(x.Withheld) > 0 {
		fmt.Fprintf(&b, "Not granted: %s.\n", strings.Join(x.Withheld, ", "))
	}
	for _, n := range x.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	return b.String()
}
