// Command layers checks the package map of ARCHITECTURE.md against the
// code: every import of an orca package points down the layers (to a
// lower one), the core — everything but the adapters and the roots —
// links no provider SDK and no database driver, and only tui and cmd/orca
// link the terminal libraries. CI runs it:
//
//	go run ./.ci/layers
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const module = "github.com/orca-agent/orca"

// layers lists the packages from the bottom up; a package may import the
// packages of lower layers only. Keep it as ARCHITECTURE.md draws it.
var layers = [][]string{
	{"protect"},
	{"intercept", "llm", "catalog", "scope", "frontmatter", "workspace", "sandbox", "internal/proctest", "internal/tailbuf", "internal/names", "internal/httpguard", "llm/internal/reqbody", "mcp/mcptest", "media/pdf", "media/pdf/pdftest", "web", "rewind"},
	{"cmd/orca-mcp-faults", "memory", "media", "elicit", "event", "queue", "budget", "tool", "hook", "workspace/workspacetest", "llm/llmtest", "llm/script", "llm/anthropic", "llm/openai/internal/apierr", "llm/gemini", "llm/bedrock", "store/internal/clock", "store/internal/wire"},
	{"tool/builtin", "tool/tooltest", "middleware", "policy", "hook/command", "store", "subagent", "llm/openai", "llm/openai/responses", "mcp", "lsp"},
	{"config", "skill", "schedule", "store/storetest", "store/internal/sqlstore", "tui", "llm/provider", "subagent/remote"},
	{"toolset", "store/sqlite", "store/postgres", "store/postgres/pgtest"},
	{"agent"},
	{"session", "observe", "telemetry"},
	{"extension", "mcp/mcpserve"},
	{"app"},
	{"orcatest", "serve", "chat", "acp", "eval"},
	{"cmd/orca"},
}

// adapters and roots may link the heavy dependencies; the core may not.
var heavyOK = map[string]bool{"llm/anthropic": true, "llm/openai": true, "llm/gemini": true, "llm/bedrock": true, "llm/openai/responses": true, "llm/openai/internal/apierr": true, "llm/provider": true, "store/sqlite": true, "store/postgres": true, "store/postgres/pgtest": true, "mcp": true, "app": true, "serve": true, "chat": true, "cmd/orca": true,
	"mcp/mcptest": true, "cmd/orca-mcp-faults": true, "mcp/mcpserve": true, "telemetry": true, "acp": true, "eval": true, "subagent/remote": true}

var heavy = []string{"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go", "modernc.org/sqlite", "github.com/modelcontextprotocol/go-sdk",
	"go.opentelemetry.io/otel", "github.com/jackc/pgx", "google.golang.org/genai", "github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/coder/acp-go-sdk", "github.com/a2aproject/a2a-go"}

// The terminal libraries (the Charm stack) are for the terminal UI alone:
// tui, the chat and the CLI on top of them, not even app.
var termOK = map[string]bool{"tui": true, "chat": true, "cmd/orca": true}

// The sandbox's server starts in package sandbox's init, which Go runs
// only after every package it depends on: those must be few and light
// (a dependency on mvdan.cc/sh once put chroma's and the Charm stack's
// inits, 27 ms, before every sandbox server's start).
var sandboxDeps = map[string][]string{
	"sandbox": {"github.com/landlock-lsm/", "github.com/elastic/go-seccomp-bpf", "golang.org/x/sys/", "golang.org/x/net/bpf", "kernel.org/pub/linux/libs/security/libcap/psx"},
	"protect": {},
}

// The loop reads no settings and knows no concrete tool: app assembles
// what agent.New takes (app/assemble.go: the folders, the guarded policy,
// the commands' sandbox, the subagents, the tools), and the layers above
// the loop that are not assemblers need none of it either.
var unassembled = map[string][]string{
	"agent":     {"config", "toolset", "tool/builtin", "skill", "hook/command"},
	"session":   {"config", "toolset", "tool/builtin", "skill", "hook/command"},
	"observe":   {"config", "toolset", "tool/builtin", "skill", "hook/command"},
	"telemetry": {"config", "toolset", "tool/builtin", "skill", "hook/command"},
}

// Every process orca starts goes through sandbox.Runner — model commands
// in the OS sandbox, MCP servers, and orca's own processes (command hooks,
// extension handlers, the apiKeyHelper: Runner.Plain) — which alone
// starts, kills and reaps them. The one exception is the Temporal engine,
// which the CLI hands the terminal to (orca worker, run --engine temporal)
// and interrupts as a person would.
var processStarts = []string{"exec.Command(", "exec.CommandContext(", "os.StartProcess(", "syscall.ForkExec(", "syscall.StartProcess(", "unix.ForkExec(", "Setpgid"}

var startsOK = map[string]bool{"sandbox": true, "cmd/orca/engine.go": true}

// starts returns the places outside startsOK where a process starts.
func starts() ([]string, error) {
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		return nil, err
	}
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, name := range f[1:] {
			path := f[0] + "/" + name
			rel := strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
			if startsOK[rel] || startsOK[filepath.Dir(rel)] {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			for i, l := range strings.Split(string(b), "\n") {
				for _, s := range processStarts {
					if strings.Contains(l, s) && !strings.HasPrefix(strings.TrimSpace(l), "//") {
						found = append(found, fmt.Sprintf("%s:%d: %s", rel, i+1, s))
					}
				}
			}
		}
	}
	return found, nil
}

var term = []string{"charm.land/", "github.com/charmbracelet/", "github.com/muesli/termenv", "github.com/alecthomas/chroma", "github.com/yuin/goldmark"}

func main() {
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \",\"}} {{join .Deps \",\"}}", module+"/...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers: go list:", err)
		os.Exit(2)
	}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for len(f) < 3 {
			f = append(f, "")
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		r, ok := rank[pkg]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is in no layer: add it to .ci/layers and ARCHITECTURE.md", pkg))
			continue
		}
		for _, imp := range strings.Split(f[1], ",") {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if rank[dep] >= r {
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s (layer %d): imports point down the layers", pkg, r, dep, rank[dep]))
			}
		}
		if allowed, ok := sandboxDeps[pkg]; ok {
			for _, dep := range strings.Split(f[2], ",") {
				if dep == "" || !strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") || strings.HasPrefix(dep, module+"/") {
					continue // the standard library, orca's own
				}
				ok := false
				for _, a := range allowed {
					ok = ok || strings.HasPrefix(dep, a)
				}
				if !ok {
					problems = append(problems, fmt.Sprintf("%s links %s: the sandbox's server starts in its init, after every package it depends on", pkg, dep))
				}
			}
		}
		for _, dep := range strings.Split(f[2], ",") {
			if d, ok := strings.CutPrefix(dep, module+"/"); ok && slices.Contains(unassembled[pkg], d) {
				problems = append(problems, fmt.Sprintf("%s depends on %s: the loop reads no settings and knows no concrete tool (app assembles what agent.New takes)", pkg, d))
			}
		}
		if !termOK[pkg] {
			for _, dep := range strings.Split(f[2], ",") {
				for _, h := range term {
					if strings.HasPrefix(dep, h) {
						problems = append(problems, fmt.Sprintf("%s links %s: only tui and cmd/orca link the terminal libraries", pkg, dep))
					}
				}
			}
		}
		if heavyOK[pkg] {
			continue
		}
		for _, dep := range strings.Split(f[2], ",") {
			for _, h := range heavy {
				if strings.HasPrefix(dep, h) {
					problems = append(problems, fmt.Sprintf("%s links %s: the core imports no provider SDK or driver", pkg, dep))
				}
			}
		}
	}
	found, err := starts()
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers: looking for process starts:", err)
		os.Exit(2)
	}
	for _, f := range found {
		problems = append(problems, f+" starts a process: every process goes through sandbox.Runner (Plain for orca's own), which kills and reaps it")
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "layers:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("layers: %d layers hold, the core links no SDK or driver, only tui, chat and cmd/orca the terminal libraries, the loop no settings or concrete tools, and every process starts in sandbox.Runner\n", len(layers))
}
