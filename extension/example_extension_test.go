package extension_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/extension"
)

func ExampleLoadExtensions() {
	cfgDir, _ := os.MkdirTemp("", "config")
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(cfgDir)
	defer os.RemoveAll(ws)
	dir := filepath.Join(ws, ".orca", "hooks", "failure-metrics")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "hook.yaml"), []byte(`name: failure-metrics
events: [tool_exec_failed]
handler: handler
priority: 50
capabilities: [events]
timeout: 10s
`), 0o644)
	// The handler answers each request line with its id, and counts.
	os.WriteFile(filepath.Join(dir, "handler"), []byte(`#!/bin/sh
while IFS= read -r line; do
  id=${line#'{"id":'}; id=${id%%,*}
  echo failed >> failures.log
  printf '{"id":%s}\n' "$id"
done
`), 0o755)

	// Nothing is granted yet: the extension is read, not run.
	trust := config.NewTrustStore(cfgDir)
	exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: ws, Trust: trust})
	if err != nil {
		panic(err)
	}
	fmt.Println(exts[0].Manifest.Name, exts[0].Trusted, exts[0].Reason)

	// The user grants it (as `orca trust hook:failure-metrics` does).
	trust.Grant(ws, "hook:failure-metrics")
	exts, _ = extension.LoadExtensions(extension.ExtensionOptions{Workspace: ws, Trust: trust})
	svc := agent.NewServices(slog.New(slog.DiscardHandler))
	defer svc.Close()
	loaded, err := extension.RegisterExtensions(svc, exts)
	if err != nil {
		panic(err)
	}
	svc.Bus.Publish(event.Event{Name: event.ToolExecFailed})
	svc.Bus.Flush(context.Background())
	loaded.Close() // unregisters and stops the handler
	log, _ := os.ReadFile(filepath.Join(dir, "failures.log"))
	fmt.Print(exts[0].Trusted, " ", exts[0].Ports, " ", string(log))
	// Output:
	// failure-metrics false not run: the grant hook:failure-metrics is not in the trust policy (it asks for events)
	// true [events] failed
}
