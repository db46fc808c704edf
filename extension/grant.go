package extension

import (
	"fmt"
	"strings"
)

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
	Port Capability
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
	if !nameRE.MatchString(name) {
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
	switch c := Capability(port); c {
	case CapabilityEvents, CapabilityHooks:
		g.Port = c
		return g, nil
	}
	return Grant{}, fmt.Errorf("grant %q: %q is not a port (events, hooks) or resource:<KEY>", s, port)
}
