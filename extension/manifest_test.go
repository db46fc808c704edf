package extension_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/extension"
	"github.com/orca-agent/orca/hook"
)

const file = ".orca/hooks/x/hook.yaml"

func TestParseManifest(t *testing.T) {
	m, err := extension.ParseManifest(file, []byte(`# the example of the docs
name: failure-metrics
events: [tool_exec_failed, PRE_TOOL_USE]
handler: bin/handler
priority: -5
capabilities: [events, hooks]
resource_keys: [METRICS_URL, api.token-2]
timeout: 1m30s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := extension.Manifest{
		Name: "failure-metrics", Events: []string{"tool_exec_failed", "PRE_TOOL_USE"}, Handler: "bin/handler",
		Priority: -5, Capabilities: []extension.Capability{extension.CapabilityEvents, extension.CapabilityHooks},
		ResourceKeys: []string{"METRICS_URL", "api.token-2"}, Timeout: 90 * time.Second,
	}
	if !equalManifest(*m, want) {
		t.Errorf("got %+v\nwant %+v", *m, want)
	}
	if got := m.RuntimeEvents(); !slices.Equal(got, []event.Name{event.ToolExecFailed}) {
		t.Errorf("RuntimeEvents = %v", got)
	}
	if got := m.Hooks(); !slices.Equal(got, []hook.Name{hook.PreToolUse}) {
		t.Errorf("Hooks = %v", got)
	}

	// The optional fields have their defaults.
	m, err = extension.ParseManifest(file, []byte("name: x\nevents: [turn_completed]\nhandler: ./h\ncapabilities: [events]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Timeout != extension.DefaultHandlerTimeout || m.Priority != 0 || m.ResourceKeys != nil {
		t.Errorf("defaults: %+v", m)
	}
}

func equalManifest(a, b extension.Manifest) bool {
	return a.Name == b.Name && slices.Equal(a.Events, b.Events) && a.Handler == b.Handler && a.Priority == b.Priority &&
		slices.Equal(a.Capabilities, b.Capabilities) && slices.Equal(a.ResourceKeys, b.ResourceKeys) && a.Timeout == b.Timeout
}

// Every error names the file and the field, and says what to write.
func TestParseManifestErrors(t *testing.T) {
	const ok = "name: x\nevents: [tool_exec_failed]\nhandler: handler\ncapabilities: [events]\n"
	for _, tc := range []struct {
		yaml, want string
	}{
		{"", file + `: the file is empty`},
		{"- a\n- b\n", file + `: want a mapping of the fields name, events, handler, priority, capabilities, resource_keys, timeout, got a list`},
		{"name: [x\n", file + `: line 1: did not find expected ',' or ']'`},
		{ok + "color: blue\n", file + `: color: unknown field (the fields are name, events, handler, priority, capabilities, resource_keys, timeout)`},
		{ok + "name: y\n", file + `: name: given twice`},
		{ok + "---\nname: y\n", file + `: line 5: a second YAML document: a manifest is one document`},
		{"events: [tool_exec_failed]\nhandler: h\ncapabilities: [events]\n", file + `: name: missing`},
		{strings.Replace(ok, "name: x", "name: X_Y", 1), file + `: name: "X_Y" is not a valid name`},
		{strings.Replace(ok, "name: x", "name: 123", 1), file + `: name: want a string, got the number 123 (quote it: "123")`},
		{strings.Replace(ok, "name: x", "name: &a x\nhandler2: *a", 1), file + `: handler2: unknown field`},
		{strings.Replace(ok, "handler: handler", "handler: *a", 1), file + `: unknown anchor 'a' referenced`},
		{strings.Replace(ok, "name: x\nevents: [tool_exec_failed]\nhandler: handler", "name: &n x\nevents: [tool_exec_failed]\nhandler: *n", 1), file + `: handler: want a string, got an alias (*n); aliases are not supported`},
		{strings.Replace(ok, "events: [tool_exec_failed]", "events: [tool_exec_failed, tool_exploded]", 1), file + `: events[1]: unknown event "tool_exploded" (the runtime events are session_started, turn_started,`},
		{strings.Replace(ok, "events: [tool_exec_failed]", "events: tool_exec_failed", 1), file + `: events: want a list, got the string "tool_exec_failed" (write [tool_exec_failed])`},
		{strings.Replace(ok, "events: [tool_exec_failed]", "events: []", 1), file + `: events: empty`},
		{strings.Replace(ok, "events: [tool_exec_failed]", "events: [tool_exec_failed, tool_exec_failed]", 1), file + `: events[1]: tool_exec_failed is listed twice`},
		{strings.Replace(ok, "events: [tool_exec_failed]", "events: [PRE_TOOL_USE]", 1), file + `: events[0]: PRE_TOOL_USE is a public hook: it needs hooks in capabilities`},
		{strings.Replace(ok, "capabilities: [events]", "capabilities: [events, hooks]", 1), file + `: capabilities[1]: hooks is asked for, but events names no public hook`},
		{strings.Replace(ok, "capabilities: [events]", "capabilities: [events, network]", 1), file + `: capabilities[1]: unknown capability "network"`},
		{strings.Replace(ok, "capabilities: [events]", "", 1), file + `: events[0]: tool_exec_failed is a runtime event: it needs events in capabilities`},
		{strings.Replace(ok, "handler: handler", "", 1), file + `: handler: missing`},
		{strings.Replace(ok, "handler: handler", "handler: ../../bin/sh", 1), file + `: handler: "../../bin/sh" leads out of the extension's folder (..)`},
		{strings.Replace(ok, "handler: handler", "handler: /bin/sh", 1), file + `: handler: "/bin/sh" is an absolute path`},
		{strings.Replace(ok, "handler: handler", "handler: ./", 1), file + `: handler: "./" is the folder itself`},
		{strings.Replace(ok, "handler: handler", "handler:", 1), file + `: handler: want a string, got nothing`},
		{ok + "priority: high\n", file + `: priority: want a whole number, got the string "high"`},
		{ok + "priority: 99999999999\n", file + `: priority: 99999999999 is not a whole number between -2147483648 and 2147483647`},
		{ok + "resource_keys: [OK, 9lives]\n", file + `: resource_keys[1]: "9lives" is not a valid resource key`},
		{ok + "resource_keys: [A, A]\n", file + `: resource_keys[1]: A is listed twice`},
		{ok + "resource_keys: [api.key, api_key]\n", file + `: resource_keys[1]: api.key and api_key would both be delivered as ORCA_RESOURCE_api_key`},
		{ok + "timeout: 10\n", file + `: timeout: want a duration such as 10s or 1m30s, got the number 10`},
		{ok + "timeout: 1h\n", file + `: timeout: "1h" is not a duration between 1ms and 10m0s`},
		{ok + "timeout: -1s\n", file + `: timeout: "-1s" is not a duration`},
		{ok + "resource_keys: !!binary aGVsbG8=\n", file + `: resource_keys: want a list, got a !!binary value`},
		{ok + "? [a]\n: b\n", file + `: field names must be strings, got a list`},
	} {
		_, err := extension.ParseManifest(file, []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s…", tc.yaml, err, tc.want)
		}
		var me *extension.ManifestError
		if err != nil && (!errors.As(err, &me) || me.File != file) {
			t.Errorf("%q: %T %+v is not a *ManifestError of the file", tc.yaml, err, me)
		}
	}
}

func TestManifestErrorFields(t *testing.T) {
	_, err := extension.ParseManifest(file, []byte("name: x\nevents:\n  - tool_exec_failed\n  - tool_exploded\nhandler: h\ncapabilities: [events]\n"))
	var me *extension.ManifestError
	if !errors.As(err, &me) || me.Field != "events[1]" || me.Line != 4 || !strings.HasPrefix(me.Msg, `unknown event "tool_exploded"`) {
		t.Errorf("%+v", me)
	}
	if _, err := extension.ParseManifest(file, []byte("name: x\n"+strings.Repeat("#", 70<<10))); err == nil || !strings.Contains(err.Error(), "a manifest is at most 65536") {
		t.Errorf("a huge manifest: %v", err)
	}
}
