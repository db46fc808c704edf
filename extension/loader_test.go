package extension_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/extension"
)

// manifest returns a hook.yaml for extension name.
func manifest(name, events, caps string, extra ...string) string {
	return "name: " + name + "\nevents: [" + events + "]\nhandler: handler\ncapabilities: [" + caps + "]\n" + strings.Join(extra, "\n") + "\n"
}

// addExtension writes .orca/hooks/<name>/hook.yaml and, unless handler is
// empty, an executable handler script.
func addExtension(t *testing.T, ws, name, yaml, handler string) string {
	t.Helper()
	dir := filepath.Join(ws, ".orca", "hooks", name)
	writeFile(t, dir, "hook.yaml", yaml)
	if handler != "" {
		writeScript(t, dir, "handler", handler)
	}
	return dir
}

func TestLoadExtensions(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	trust := config.NewTrustStore(cfgDir)
	addExtension(t, ws, "metrics", manifest("metrics", "tool_exec_failed", "events", "resource_keys: [URL, TOKEN]"), "cat")
	addExtension(t, ws, "guard", manifest("guard", "PRE_TOOL_USE, turn_completed", "hooks, events"), "cat")
	addExtension(t, ws, "idle", manifest("idle", "STOP", "hooks"), "cat")
	// Not extensions: a loose command-hook script, a hidden folder and an
	// empty folder.
	writeScript(t, ws, ".orca/hooks/guard.sh", "exit 0")
	writeScript(t, ws, ".orca/hooks/.cache/x", "exit 0")
	os.MkdirAll(filepath.Join(ws, ".orca/hooks/empty"), 0o755)
	writeFile(t, ws, ".orca/hooks/kept/.gitkeep", "")

	for _, g := range []string{"hook:metrics", "hook:metrics:resource:URL", "hook:metrics:resource:TOKEN", "hook:guard:events"} {
		if _, err := trust.Grant(ws, g); err != nil {
			t.Fatal(err)
		}
	}
	exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: ws, Trust: trust, Resources: map[string]string{"URL": "https://m.example"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range exts {
		names = append(names, x.Manifest.Name)
	}
	if !slices.Equal(names, []string{"guard", "idle", "metrics"}) {
		t.Fatalf("extensions %q", names)
	}
	guard, idle, metrics := exts[0], exts[1], exts[2]
	if guard.File != ".orca/hooks/guard/hook.yaml" || guard.Dir != filepath.Join(realPath(t, ws), ".orca/hooks/guard") || guard.Handler != filepath.Join(guard.Dir, "handler") {
		t.Errorf("guard: %s %s %s", guard.File, guard.Dir, guard.Handler)
	}
	// A port grant narrows: guard answers no hook.
	if !guard.Trusted || !slices.Equal(guard.Ports, []extension.Capability{extension.CapabilityEvents}) || !slices.Equal(guard.Withheld, []string{"hook:guard:hooks"}) {
		t.Errorf("guard: %+v", guard)
	}
	if idle.Trusted || idle.Ports != nil || !strings.Contains(idle.Reason, "the grant hook:idle is not in the trust policy (it asks for hooks)") {
		t.Errorf("idle: %+v", idle)
	}
	// TOKEN is granted but has no value.
	if !metrics.Trusted || !slices.Equal(metrics.Resources, []string{"URL"}) || len(metrics.Notes) != 1 || !strings.Contains(metrics.Notes[0], "TOKEN is granted but has no value") {
		t.Errorf("metrics: %+v", metrics)
	}

	// Without a trust store, nothing runs.
	exts, err = extension.LoadExtensions(extension.ExtensionOptions{Workspace: ws})
	if err != nil || len(exts) != 3 || exts[0].Trusted || exts[2].Trusted {
		t.Errorf("no trust store: %v", err)
	}
	// A workspace without .orca/hooks has none.
	if exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: t.TempDir(), Trust: trust}); err != nil || exts != nil {
		t.Errorf("no extensions: %v %v", exts, err)
	}
}

// Every folder is checked before anything is returned; errors name the
// file and the field.
func TestLoadExtensionsErrors(t *testing.T) {
	outside := writeScript(t, t.TempDir(), "evil", "exit 0")
	for _, tc := range []struct {
		name  string
		setup func(ws string)
		want  string
	}{
		{"missing manifest", func(ws string) {
			writeScript(t, ws, ".orca/hooks/lint/handler", "exit 0")
		}, `.orca/hooks/lint/hook.yaml: missing: .orca/hooks/lint has files but no manifest`},
		{"not executable", func(ws string) {
			dir := addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed", "events"), "")
			writeFile(t, dir, "handler", "#!/bin/sh\n")
		}, `.orca/hooks/lint/hook.yaml: handler: handler is not executable (chmod +x it)`},
		{"no handler", func(ws string) {
			addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed", "events"), "")
		}, `.orca/hooks/lint/hook.yaml: handler: handler does not exist in the extension's folder`},
		{"handler is a folder", func(ws string) {
			dir := addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed", "events"), "")
			os.MkdirAll(filepath.Join(dir, "handler"), 0o755)
		}, `.orca/hooks/lint/hook.yaml: handler: handler is not a regular file`},
		{"symlink out", func(ws string) {
			dir := addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed", "events"), "")
			os.Symlink(outside, filepath.Join(dir, "handler"))
		}, `.orca/hooks/lint/hook.yaml: handler: handler leads out of the extension's folder (to `},
		{"symlinked folder", func(ws string) {
			dir := addExtension(t, t.TempDir(), "lint", manifest("lint", "tool_exec_failed", "events"), "exit 0")
			os.MkdirAll(filepath.Join(ws, ".orca/hooks"), 0o755)
			os.Symlink(dir, filepath.Join(ws, ".orca/hooks/lint"))
		}, `.orca/hooks/lint/hook.yaml: .orca/hooks/lint is a symlink to a folder`},
		{"symlinked manifest", func(ws string) {
			dir := filepath.Join(ws, ".orca/hooks/lint")
			writeScript(t, dir, "handler", "exit 0")
			os.Symlink(writeFile(t, t.TempDir(), "hook.yaml", manifest("lint", "tool_exec_failed", "events")), filepath.Join(dir, "hook.yaml"))
		}, `.orca/hooks/lint/hook.yaml: not a regular file (a manifest cannot be a symlink)`},
		{"unknown field", func(ws string) {
			addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed", "events", "colour: blue"), "exit 0")
		}, `.orca/hooks/lint/hook.yaml: colour: unknown field`},
		{"unknown event", func(ws string) {
			addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed, tool_exploded", "events"), "exit 0")
		}, `.orca/hooks/lint/hook.yaml: events[1]: unknown event "tool_exploded"`},
		{"name is not the folder's", func(ws string) {
			addExtension(t, ws, "lint", manifest("format", "tool_exec_failed", "events"), "exit 0")
		}, `.orca/hooks/lint/hook.yaml: name: "format" is not the folder's name`},
		{"collision", func(ws string) {
			addExtension(t, ws, "lint", manifest("lint", "tool_exec_failed", "events"), "exit 0")
			addExtension(t, ws, "lint2", manifest("lint", "tool_exec_failed", "events"), "exit 0")
		}, `.orca/hooks/lint2/hook.yaml: name: "lint" is claimed by .orca/hooks/lint too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			// A valid extension beside the faulty one is not returned
			// either: loading is all or nothing.
			addExtension(t, ws, "aaa", manifest("aaa", "tool_exec_failed", "events"), "touch ran")
			tc.setup(ws)
			exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: ws, Trust: config.NewTrustStore(t.TempDir())})
			if err == nil || !strings.Contains(err.Error(), tc.want) || exts != nil {
				t.Errorf("got %v, %v\nwant %s", exts, err, tc.want)
			}
			var me *extension.ManifestError
			if !errors.As(err, &me) {
				t.Errorf("%T is not a *ManifestError", err)
			}
		})
	}

	// Two faulty folders: both are reported.
	ws := t.TempDir()
	addExtension(t, ws, "a", manifest("a", "nope", "events"), "exit 0")
	addExtension(t, ws, "b", manifest("b", "tool_exec_failed", "events", "x: 1"), "exit 0")
	_, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: ws})
	if err == nil || !strings.Contains(err.Error(), ".orca/hooks/a/hook.yaml: events[0]") || !strings.Contains(err.Error(), ".orca/hooks/b/hook.yaml: x: unknown field") {
		t.Errorf("two faulty folders: %v", err)
	}
}
