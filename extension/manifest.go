package extension

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
)

// Where filesystem extensions live, relative to the workspace, and the name
// of their manifests.
const (
	ExtensionsDir = ".orca/hooks"
	ManifestFile  = "hook.yaml"
)

// Limits of a manifest.
const (
	// DefaultHandlerTimeout bounds one request to a handler whose
	// manifest gives no timeout.
	DefaultHandlerTimeout = 30 * time.Second
	// MaxHandlerTimeout is the longest timeout a manifest may ask for.
	MaxHandlerTimeout = 10 * time.Minute
	// maxManifest bounds the size of a manifest file: it is read before
	// anything is trusted, so it must stay cheap to read.
	maxManifest = 64 << 10
)

// Capability is a port an extension asks for in its manifest and that the
// trust policy may grant (config.Port).
type Capability = config.Port

// The ports. Resources are asked for separately (Manifest.ResourceKeys).
const (
	// CapabilityEvents delivers the runtime events the manifest names
	// (event.Names) to the handler: it observes, it cannot change a run.
	CapabilityEvents = config.PortEvents
	// CapabilityHooks lets the handler answer the public hooks the
	// manifest names (hook.Names) with decisions.
	CapabilityHooks = config.PortHooks
)

// Capabilities lists the ports in the order they are documented.
var Capabilities = config.Ports

// Manifest is an extension's hook.yaml, checked:
//
//	name: failure-metrics          # = the folder's name; [a-z0-9][a-z0-9-]{0,63}
//	events: [tool_exec_failed]     # runtime events and/or public hooks
//	handler: handler               # an executable file in the folder
//	priority: 50                   # optional, default 0; lower runs first
//	capabilities: [events]         # the ports asked for: events, hooks
//	resource_keys: [METRICS_URL]   # optional: named resources asked for
//	timeout: 10s                   # optional per-request timeout (30s)
//
// An entry of events is either a runtime event name (event.Names, such as
// tool_exec_failed), which needs the events capability, or a public hook
// name (hook.Names, such as PRE_TOOL_USE), which needs the hooks
// capability; a capability no entry needs is an error too, so that a
// manifest asks for exactly what it uses.
type Manifest struct {
	Name         string
	Events       []string
	Handler      string
	Priority     int
	Capabilities []Capability
	ResourceKeys []string
	// Timeout bounds one request (DefaultHandlerTimeout if the file
	// gives none).
	Timeout time.Duration
}

// RuntimeEvents returns the runtime events among m.Events.
func (m *Manifest) RuntimeEvents() []event.Name {
	var out []event.Name
	for _, e := range m.Events {
		if slices.Contains(event.Names, event.Name(e)) {
			out = append(out, event.Name(e))
		}
	}
	return out
}

// Hooks returns the public hooks among m.Events.
func (m *Manifest) Hooks() []hook.Name {
	var out []hook.Name
	for _, e := range m.Events {
		if slices.Contains(hook.Names, hook.Name(e)) {
			out = append(out, hook.Name(e))
		}
	}
	return out
}

// Asks reports whether m asks for the port c.
func (m *Manifest) Asks(c Capability) bool { return slices.Contains(m.Capabilities, c) }

// ManifestError is a manifest that cannot be used (or a folder of
// .orca/hooks that has none); its message names the file and the field:
//
//	.orca/hooks/x/hook.yaml: events[1]: unknown event "tool_exploded"
type ManifestError struct {
	// File is the manifest, relative to the workspace, with slashes.
	File string
	// Field is the field at fault ("events[1]"), or empty when the file
	// as a whole is.
	Field string
	// Line is the line of the file at fault, or 0 when unknown.
	Line int
	// Msg says what is wrong.
	Msg string
}

func (e *ManifestError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

// fields are the manifest's fields in the documented order.
var fields = []string{"name", "events", "handler", "priority", "capabilities", "resource_keys", "timeout"}

// errParser marks a failure of the YAML library itself (a recovered
// panic), which the fuzz test treats as a finding.
var errParser = errors.New("the YAML parser failed")

// ParseManifest parses and checks the manifest file (named file in errors)
// from its contents, without looking at the file system: strict YAML
// (unknown and repeated fields, aliases, tags and a second document are
// errors), the field types and values described at Manifest. Whether the
// name is the folder's and the handler an executable file inside it is
// checked by LoadExtensions. Errors are *ManifestError.
func ParseManifest(file string, data []byte) (m *Manifest, err error) {
	fail := func(field string, n *yaml.Node, format string, args ...any) error {
		e := &ManifestError{File: file, Field: field, Msg: fmt.Sprintf(format, args...)}
		if n != nil {
			e.Line = n.Line
		}
		return e
	}
	if len(data) > maxManifest {
		return nil, fail("", nil, "the file is %d bytes; a manifest is at most %d", len(data), maxManifest)
	}
	root, err := parseYAML(data)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, fail("", nil, "%s", msg)
	}
	if root.Kind != yaml.MappingNode {
		return nil, fail("", root, "want a mapping of the fields %s, got %s", strings.Join(fields, ", "), describe(root))
	}
	m = &Manifest{}
	seen := map[string]bool{}
	values := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, fail("", k, "field names must be strings, got %s", describe(k))
		}
		if !slices.Contains(fields, k.Value) {
			return nil, fail(k.Value, k, "unknown field (the fields are %s)", strings.Join(fields, ", "))
		}
		if seen[k.Value] {
			return nil, fail(k.Value, k, "given twice")
		}
		seen[k.Value] = true
		values[k.Value] = v
	}

	// Fields in the documented order, so that the first error reported
	// is the same whatever order the file uses.
	var errs error
	if v, ok := values["name"]; !ok {
		errs = fail("name", nil, "missing")
	} else if s, err := str(v); err != nil {
		errs = fail("name", v, "%v", err)
	} else if !config.ValidExtensionName(s) {
		errs = fail("name", v, "%q is not a valid name: lower-case letters, digits and dashes, starting with a letter or digit, at most 64", short(s))
	} else {
		m.Name = s
	}
	if errs != nil {
		return nil, errs
	}

	if v, ok := values["capabilities"]; ok {
		items, err := list(v)
		if err != nil {
			return nil, fail("capabilities", v, "%v", err)
		}
		for i, it := range items {
			key := fmt.Sprintf("capabilities[%d]", i)
			s, err := str(it)
			if err != nil {
				return nil, fail(key, it, "%v", err)
			}
			c := Capability(s)
			if !slices.Contains(Capabilities, c) {
				return nil, fail(key, it, "unknown capability %q (the capabilities are events and hooks; resources are asked for with resource_keys)", short(s))
			}
			if m.Asks(c) {
				return nil, fail(key, it, "%s is listed twice", short(s))
			}
			m.Capabilities = append(m.Capabilities, c)
		}
	}

	v, ok := values["events"]
	if !ok {
		return nil, fail("events", nil, "missing: name the runtime events (such as tool_exec_failed) or public hooks (such as PRE_TOOL_USE) the handler receives")
	}
	items, err := list(v)
	if err != nil {
		return nil, fail("events", v, "%v", err)
	}
	if len(items) == 0 {
		return nil, fail("events", v, "empty: name at least one runtime event or public hook")
	}
	used := map[Capability]bool{}
	for i, it := range items {
		key := fmt.Sprintf("events[%d]", i)
		s, err := str(it)
		if err != nil {
			return nil, fail(key, it, "%v", err)
		}
		var need Capability
		switch {
		case slices.Contains(event.Names, event.Name(s)):
			need = CapabilityEvents
		case slices.Contains(hook.Names, hook.Name(s)):
			need = CapabilityHooks
		default:
			return nil, fail(key, it, "unknown event %q (the runtime events are %s; the public hooks are %s)", short(s), joinEvents(), joinHooks())
		}
		if slices.Contains(m.Events, s) {
			return nil, fail(key, it, "%s is listed twice", short(s))
		}
		if !m.Asks(need) {
			what := "a runtime event"
			if need == CapabilityHooks {
				what = "a public hook"
			}
			return nil, fail(key, it, "%s is %s: it needs %s in capabilities", s, what, need)
		}
		used[need] = true
		m.Events = append(m.Events, s)
	}
	for i, c := range m.Capabilities {
		if !used[c] {
			what := "runtime event"
			if c == CapabilityHooks {
				what = "public hook"
			}
			return nil, fail(fmt.Sprintf("capabilities[%d]", i), values["capabilities"].Content[i], "%s is asked for, but events names no %s", c, what)
		}
	}

	if v, ok := values["handler"]; !ok {
		return nil, fail("handler", nil, "missing: name the executable file, in this folder, that handles the events")
	} else if s, err := str(v); err != nil {
		return nil, fail("handler", v, "%v", err)
	} else if err := checkHandlerPath(s); err != nil {
		return nil, fail("handler", v, "%v", err)
	} else {
		m.Handler = s
	}

	if v, ok := values["priority"]; ok {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
			return nil, fail("priority", v, "want a whole number, got %s", describe(v))
		}
		var n int32
		if err := v.Decode(&n); err != nil {
			return nil, fail("priority", v, "%s is not a whole number between %d and %d", short(v.Value), math.MinInt32, math.MaxInt32)
		}
		m.Priority = int(n)
	}

	if v, ok := values["resource_keys"]; ok {
		items, err := list(v)
		if err != nil {
			return nil, fail("resource_keys", v, "%v", err)
		}
		for i, it := range items {
			key := fmt.Sprintf("resource_keys[%d]", i)
			s, err := str(it)
			if err != nil {
				return nil, fail(key, it, "%v", err)
			}
			if !config.ValidResourceKey(s) {
				return nil, fail(key, it, "%q is not a valid resource key: letters, digits, _ . and -, not starting with a digit, . or -", short(s))
			}
			if slices.Contains(m.ResourceKeys, s) {
				return nil, fail(key, it, "%s is listed twice", short(s))
			}
			for _, k := range m.ResourceKeys {
				if ResourceEnv(k) == ResourceEnv(s) {
					return nil, fail(key, it, "%s and %s would both be delivered as %s", short(k), short(s), short(ResourceEnv(s)))
				}
			}
			m.ResourceKeys = append(m.ResourceKeys, s)
		}
	}

	m.Timeout = DefaultHandlerTimeout
	if v, ok := values["timeout"]; ok {
		s, err := str(v)
		if err != nil {
			return nil, fail("timeout", v, "want a duration such as 10s or 1m30s, got %s", describe(v))
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > MaxHandlerTimeout {
			return nil, fail("timeout", v, "%q is not a duration between 1ms and %v (such as 10s or 1m30s)", short(s), MaxHandlerTimeout)
		}
		m.Timeout = d
	}
	return m, nil
}

// ResourceEnv returns the environment variable that delivers the resource
// key to a handler: ORCA_RESOURCE_ and the key with . and - written as _
// (ORCA_RESOURCE_api_token for api.token), so that a shell can read it.
func ResourceEnv(key string) string {
	return "ORCA_RESOURCE_" + strings.Map(func(r rune) rune {
		if r == '.' || r == '-' {
			return '_'
		}
		return r
	}, key)
}

// parseYAML returns the root node of the single YAML document in data.
func parseYAML(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The file is untrusted input: a bug of the parser must be a
		// rejected manifest, never a crash of orca.
		if v := recover(); v != nil {
			root, err = nil, fmt.Errorf("%w: %v", errParser, v)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty: want a mapping of the fields " + strings.Join(fields, ", "))
		}
		return nil, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: a second YAML document: a manifest is one document", more.Line)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("want a mapping of the fields " + strings.Join(fields, ", "))
	}
	return doc.Content[0], nil
}

// str returns the string a scalar node holds.
func str(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		if n.Kind == yaml.ScalarNode && n.Style&yaml.TaggedStyle == 0 && slices.Contains([]string{"!!int", "!!float", "!!bool"}, n.ShortTag()) {
			return "", fmt.Errorf("want a string, got %s (quote it: %q)", describe(n), short(n.Value))
		}
		return "", fmt.Errorf("want a string, got %s", describe(n))
	}
	if n.Value == "" {
		return "", errors.New("empty")
	}
	return n.Value, nil
}

// list returns the items of a sequence node.
func list(n *yaml.Node) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			return nil, fmt.Errorf("want a list, got the string %q (write [%s])", short(n.Value), short(n.Value))
		}
		return nil, fmt.Errorf("want a list, got %s", describe(n))
	}
	return n.Content, nil
}

// describe names what a node is, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias (*" + short(n.Value) + "); aliases are not supported"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!bool":
			return "the boolean " + short(n.Value)
		case "!!int", "!!float":
			return "the number " + short(n.Value)
		case "!!str":
			return fmt.Sprintf("the string %q", short(n.Value))
		}
		return fmt.Sprintf("a %s value", short(n.ShortTag()))
	}
	return "nothing"
}

// checkHandlerPath checks the handler as written: a relative path that
// stays in the extension's folder.
func checkHandlerPath(s string) error {
	switch {
	case strings.ContainsRune(s, 0):
		return errors.New("the path contains a NUL byte")
	case strings.Contains(s, `\`):
		return fmt.Errorf("%q: write paths with forward slashes", short(s))
	case strings.HasPrefix(s, "/"):
		return fmt.Errorf("%q is an absolute path: the handler must be a file in the extension's folder", short(s))
	}
	for _, el := range strings.Split(s, "/") {
		if el == ".." {
			return fmt.Errorf("%q leads out of the extension's folder (..)", short(s))
		}
	}
	if path.Clean(s) == "." {
		return fmt.Errorf("%q is the folder itself: name the executable file", short(s))
	}
	return nil
}

// short shortens a value of the file for an error message.
func short(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}

func joinEvents() string {
	s := make([]string, len(event.Names))
	for i, n := range event.Names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

func joinHooks() string {
	s := make([]string, len(hook.Names))
	for i, n := range hook.Names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}
