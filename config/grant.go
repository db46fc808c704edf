package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/orca-agent/orca/internal/names"
)

// Port is a port of a filesystem extension: what its handler may do, as
// its manifest asks for it and the trust policy grants it.
type Port string

// The ports. Resources are asked for separately.
const (
	// PortEvents delivers the runtime events the manifest names
	// (event.Names) to the handler: it observes, it cannot change a run.
	PortEvents Port = "events"
	// PortHooks lets the handler answer the public hooks the manifest
	// names (hook.Names) with decisions.
	PortHooks Port = "hooks"
)

// Ports lists the ports in the order they are documented.
var Ports = []Port{PortEvents, PortHooks}

var resourceRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ValidExtensionName reports whether s can name an extension: lower-case
// letters, digits and dashes, at most 64.
func ValidExtensionName(s string) bool { return names.Slug(s) }

// ValidResourceKey reports whether s can be a resource key.
func ValidResourceKey(s string) bool { return resourceRE.MatchString(s) }

// GrantPrefix begins every grant of the extension trust policy.
const GrantPrefix = "hook:"

// Grant is one entry of the extension trust policy (see TrustStore.Grant),
// written as a string:
//
//	hook:<name>                  run extension <name> with every port its manifest asks for
//	hook:<name>:events           run it with the events port only
//	hook:<name>:hooks            run it with the hooks port only
//	hook:<name>:resource:<KEY>   give it the resource KEY, if its manifest asks for it
//
// A resource grant alone does not let an extension run: it adds to a grant
// of the extension or of a port.
type Grant struct {
	// Extension is the extension's name.
	Extension string
	// Port is the port of a port grant; empty otherwise.
	Port Port
	// Resource is the key of a resource grant; empty otherwise.
	Resource string
}

// ExtensionGrant returns the grant that lets extension name run with the
// ports its manifest asks for: "hook:<name>".
func ExtensionGrant(name string) Grant { return Grant{Extension: name} }

// String returns the grant as it is written.
func (g Grant) String() string {
	switch {
	case g.Port != "":
		return GrantPrefix + g.Extension + ":" + string(g.Port)
	case g.Resource != "":
		return GrantPrefix + g.Extension + ":resource:" + g.Resource
	}
	return GrantPrefix + g.Extension
}

// ParseGrant parses and checks a grant written as Grant documents.
func ParseGrant(s string) (Grant, error) {
	rest, ok := strings.CutPrefix(s, GrantPrefix)
	if !ok {
		return Grant{}, fmt.Errorf("grant %q: want hook:<name>, hook:<name>:events, hook:<name>:hooks or hook:<name>:resource:<KEY>", s)
	}
	name, port, hasPort := strings.Cut(rest, ":")
	if !names.Slug(name) {
		return Grant{}, fmt.Errorf("grant %q: %q is not an extension name (lower-case letters, digits and dashes)", s, name)
	}
	g := Grant{Extension: name}
	if !hasPort {
		return g, nil
	}
	if key, ok := strings.CutPrefix(port, "resource:"); ok {
		if !resourceRE.MatchString(key) {
			return Grant{}, fmt.Errorf("grant %q: %q is not a resource key", s, key)
		}
		g.Resource = key
		return g, nil
	}
	switch c := Port(port); c {
	case PortEvents, PortHooks:
		g.Port = c
		return g, nil
	}
	return Grant{}, fmt.Errorf("grant %q: %q is not a port (events, hooks) or resource:<KEY>", s, port)
}
