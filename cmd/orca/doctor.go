package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
)

func newDoctorCmd(o options) *cobra.Command {
	var f agentFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say what orca would use in a workspace, and what it would leave out",
		Long: `Say what 'orca run' and 'orca chat' would use in the workspace, without
running anything, opening the session store or starting a server: whether
the workspace is trusted, the settings files and memory files read, the
model and whether its credentials are there, whether commands can run in
the OS sandbox, the MCP servers that would start, the warnings a run would
print, and the settings keys of Claude Code's that orca does not read
(listed here once, rather than on every run: a settings file is shared
with Claude Code). Takes the flags of 'orca run' that choose these.`,
		Example: `  orca doctor
  orca doctor -w ./project --provider openai
  orca doctor --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.check(cmd, o)
			if err != nil {
				return err
			}
			d, err := app.Diagnose(cfg)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			if asJSON {
				return writeDiagnosisJSON(cmd.OutOrStdout(), d)
			}
			writeDiagnosis(cmd.OutOrStdout(), d)
			return nil
		},
	}
	addAgentFlags(cmd, &f)
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the diagnosis as one JSON object")
	return cmd
}

// writeDiagnosis writes d for people: a label, then what it is, one line
// each (more lines indented under it).
func writeDiagnosis(w io.Writer, d *app.Diagnosis) {
	line := func(label string, lines ...string) {
		for i, l := range lines {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(w, "%-10s %s\n", label, l)
		}
	}
	trust := "trusted: its settings apply in full"
	if !d.Trusted {
		trust = "not trusted: its hooks, allow rules, MCP servers and other grants wait for 'orca trust " + d.Workspace + "'"
	}
	line("workspace", d.Workspace, trust)
	if len(d.Settings) == 0 {
		line("settings", "none")
	} else {
		line("settings", d.Settings...)
	}
	if len(d.Memory) > 0 {
		line("memory", d.Memory...)
	}
	if d.ModelProblem != "" {
		line("model", "none usable: "+d.ModelProblem)
	} else {
		line("model", strings.TrimSpace(d.Provider+" "+d.Model))
	}
	switch {
	case d.NoSandbox:
		line("sandbox", "off (--no-sandbox or the settings' \"sandbox\": {\"enabled\": false}): commands run as you")
	case d.Sandbox != "":
		line("sandbox", "not available, so commands are refused: "+d.Sandbox)
	default:
		line("sandbox", "available: commands run in it")
	}
	if len(d.MCPServers) > 0 {
		line("mcp", strings.Join(d.MCPServers, ", ")+" (orca mcp list starts them)")
	}
	if len(d.LanguageServers) > 0 {
		var ls []string
		for _, s := range d.LanguageServers {
			ls = append(ls, fmt.Sprintf("%s: %s (%s)", s.Name, strings.Join(append([]string{s.Command}, s.Args...), " "), strings.Join(slices.Sorted(maps.Keys(s.Languages)), " ")))
		}
		ls = append(ls, "(each starts when a file of its language is changed or asked about; --no-lsp: none)")
		line("lsp", ls...)
	}
	if len(d.Warnings) > 0 {
		var ls []string
		for _, w := range d.Warnings {
			ls = append(ls, w.String())
		}
		line("warnings", ls...)
	}
	if len(d.Ignored) > 0 {
		var ls []string
		for _, ig := range d.Ignored {
			ls = append(ls, ig.File+": "+strings.Join(ig.Keys, ", "))
		}
		ls = append(ls, "(Claude Code's settings, which orca does not read)")
		line("ignored", ls...)
	}
}

func writeDiagnosisJSON(w io.Writer, d *app.Diagnosis) error {
	type warning struct {
		File    string `json:"file,omitempty"`
		Message string `json:"message"`
	}
	type ignored struct {
		File string   `json:"file"`
		Keys []string `json:"keys"`
	}
	type lspView struct {
		Name       string   `json:"name"`
		Command    string   `json:"command"`
		Args       []string `json:"args"`
		Extensions []string `json:"extensions"`
	}
	out := struct {
		Workspace    string    `json:"workspace"`
		Trusted      bool      `json:"trusted"`
		Settings     []string  `json:"settings"`
		Memory       []string  `json:"memory"`
		Provider     string    `json:"provider,omitempty"`
		Model        string    `json:"model,omitempty"`
		ModelProblem string    `json:"model_problem,omitempty"`
		Sandbox      string    `json:"sandbox"`
		SandboxError string    `json:"sandbox_error,omitempty"`
		MCPServers   []string  `json:"mcp_servers"`
		LSPServers   []lspView `json:"language_servers"`
		Warnings     []warning `json:"warnings"`
		Ignored      []ignored `json:"ignored"`
	}{Workspace: d.Workspace, Trusted: d.Trusted, Settings: nonNil(d.Settings), Memory: nonNil(d.Memory), Provider: d.Provider, Model: d.Model,
		ModelProblem: d.ModelProblem, MCPServers: nonNil(d.MCPServers), LSPServers: []lspView{}, Warnings: []warning{}, Ignored: []ignored{}}
	for _, s := range d.LanguageServers {
		out.LSPServers = append(out.LSPServers, lspView{Name: s.Name, Command: s.Command, Args: nonNil(s.Args), Extensions: slices.Sorted(maps.Keys(s.Languages))})
	}
	switch {
	case d.NoSandbox:
		out.Sandbox = "off"
	case d.Sandbox != "":
		out.Sandbox, out.SandboxError = "unavailable", d.Sandbox
	default:
		out.Sandbox = "available"
	}
	for _, x := range d.Warnings {
		out.Warnings = append(out.Warnings, warning{File: x.File, Message: x.Message})
	}
	for _, x := range d.Ignored {
		out.Ignored = append(out.Ignored, ignored{File: x.File, Keys: x.Keys})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
