package extension_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/extension"
)

// FuzzManifest feeds the manifest parser anything: it must never panic
// (nor recover a panic of the YAML library), must return a manifest or a
// short *ManifestError of the file, and a manifest it returns must be
// valid.
// The seed corpus is in testdata/fuzz/FuzzManifest.
func FuzzManifest(f *testing.F) {
	f.Add([]byte("name: failure-metrics\nevents: [tool_exec_failed]\nhandler: handler\npriority: 50\ncapabilities: [events]\nresource_keys: []\n"))
	name := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	key := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := extension.ParseManifest(file, data)
		if err != nil {
			var me *extension.ManifestError
			if m != nil || !errors.As(err, &me) || me.File != file || !strings.HasPrefix(err.Error(), file+": ") {
				t.Fatalf("%q: %v (%T), manifest %v", data, err, err, m)
			}
			if len(err.Error()) > 2048 {
				t.Fatalf("%q: a message of %d bytes: %.200s…", data, len(err.Error()), err)
			}
			if strings.Contains(err.Error(), "the YAML parser failed") {
				t.Fatalf("%q: the YAML library panicked: %v", data, err)
			}
			return
		}
		if !name.MatchString(m.Name) || len(m.Events) == 0 || m.Handler == "" || m.Timeout <= 0 || m.Timeout > extension.MaxHandlerTimeout {
			t.Fatalf("%q: invalid manifest accepted: %+v", data, m)
		}
		if strings.HasPrefix(m.Handler, "/") || slices.Contains(strings.Split(m.Handler, "/"), "..") {
			t.Fatalf("%q: handler %q leaves the folder", data, m.Handler)
		}
		if len(m.RuntimeEvents())+len(m.Hooks()) != len(m.Events) {
			t.Fatalf("%q: events %q are not all known", data, m.Events)
		}
		if len(m.RuntimeEvents()) > 0 != m.Asks(extension.CapabilityEvents) || len(m.Hooks()) > 0 != m.Asks(extension.CapabilityHooks) {
			t.Fatalf("%q: events %q do not match capabilities %q", data, m.Events, m.Capabilities)
		}
		for _, k := range m.ResourceKeys {
			if !key.MatchString(k) {
				t.Fatalf("%q: resource key %q", data, k)
			}
		}
	})
}
