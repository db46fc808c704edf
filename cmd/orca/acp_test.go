package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/sandbox"
)

// everything is the path of the reference MCP server "everything", which
// the editor names for its session.
func everything(t *testing.T) string {
	dir := os.Getenv("ORCA_MCP_SERVERS")
	if dir == "" {
		t.Skip("ORCA_MCP_SERVERS names no folder of the reference MCP servers")
	}
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// acpSDK is the folder of the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, which .ci/run installs from npm), or skips.
func acpSDK(t *testing.T) (sdk, node string) {
	t.Helper()
	sdk, node = os.Getenv("ORCA_ACP_SDK"), os.Getenv("ORCA_NODE22")
	if sdk == "" || node == "" {
		t.Skip("ORCA_ACP_SDK and ORCA_NODE22 name no ACP SDK and node to run it")
	}
	return sdk, node
}

// TestACPWithTheOfficialClient: the official ACP client (from npm) drives
// orca acp over the scripted model. A new session's turn reads a file,
// edits it (the client sees the diff), runs a command the client allows
// once and one it rejects, and answers, every update in order; the client
// leaving ends orca cleanly; a second orca loads the session, replaying
// it, and a cancel mid-turn ends the turn as cancelled and kills the
// command it ran. An unknown method and a prompt for an unknown session
// get the protocol's errors, and orca keeps serving.
func TestACPWithTheOfficialClient(t *testing.T) {
	sdk, node := acpSDK(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws, cfgDir := t.TempDir(), t.TempDir()
	writeFileAt(t, ws, "greeting.txt", "hello wrold\n")
	step := func(id, name string, input map[string]any) string {
		b, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": id, "name": name, "input": input}}})
		return string(b)
	}
	s1 := writeScript(t,
		step("read", "Read", map[string]any{"file_path": "greeting.txt"}),
		step("edit", "Edit", map[string]any{"file_path": "greeting.txt", "old_string": "wrold", "new_string": "world"}),
		step("echo", "mcp__everything__echo", map[string]any{"message": "from the editor's server"}),
		step("ok", "Bash", map[string]any{"command": "echo checked > checked.txt"}),
		step("no", "Bash", map[string]any{"command": "echo refused > refused.txt"}),
		step("todo", "TodoWrite", map[string]any{"todos": []map[string]string{{"content": "Fix the greeting", "status": "completed", "activeForm": "Fixing the greeting"}, {"content": "Check it", "status": "in_progress", "activeForm": "Checking it"}}}),
		`{"thinking": "The greeting reads right now.", "text": "Fixed the greeting."}`)
	s2 := writeScript(t, step("asking", "Bash", map[string]any{"command": "touch asked.txt"}),
		step("slow", "Bash", map[string]any{"command": "sleep 4; touch late.txt"}), `{"text": "never"}`)
	flags := []string{}
	if sandbox.Available() != nil {
		flags = append(flags, "--no-sandbox")
	}
	cmdJSON, _ := json.Marshal([]string{self})
	flagsJSON, _ := json.Marshal(flags)
	envJSON, _ := json.Marshal(map[string]string{asCLI: "1", "XDG_CONFIG_HOME": cfgDir})
	script, _ := filepath.Abs("testdata/acp-client.mjs")
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Env = append(os.Environ(), "ACP_SDK="+sdk, "ORCA_CMD="+string(cmdJSON), "ORCA_ENV="+string(envJSON), "WS="+ws, "S1="+s1, "S2="+s2,
		"ORCA_ACP_FLAGS="+string(flagsJSON), "MCP_EVERYTHING="+everything(t))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the client: %v\n%s\n%s", err, out, stderr.String())
	}
	var r struct {
		Init struct {
			ProtocolVersion   int `json:"protocolVersion"`
			AgentCapabilities struct {
				LoadSession        bool            `json:"loadSession"`
				PromptCapabilities map[string]bool `json:"promptCapabilities"`
			} `json:"agentCapabilities"`
		} `json:"init"`
		Session string `json:"session"`
		Modes   struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
		ConfigOptions []struct {
			ID, Category, CurrentValue string
			Options                    []struct{ Value string }
		} `json:"configOptions"`
		SetModel           string
		BadModel           rpcError
		Stop1, Stop2       string
		StopAsking         string
		UpdatesAsking      []update
		Updates1, Updates2 []update
		Replayed           []update
		Asked1, Asked2     []asked
		Exit1, Exit2       struct{ Code *int }
		UnknownMethod      rpcError
		UnknownSession     rpcError
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	if r.Init.ProtocolVersion != 1 || !r.Init.AgentCapabilities.LoadSession || !r.Init.AgentCapabilities.PromptCapabilities["image"] || !r.Init.AgentCapabilities.PromptCapabilities["embeddedContext"] {
		t.Errorf("initialize: %+v", r.Init)
	}
	if !strings.HasPrefix(r.Session, "session_") || r.Modes.CurrentModeID != "acceptEdits" || r.Stop1 != "end_turn" {
		t.Errorf("session %q, mode %q, stop %q", r.Session, r.Modes.CurrentModeID, r.Stop1)
	}
	// The updates, in order: each call announced, started and ended; the
	// edit as a diff; the answer's text last.
	got := describe(r.Updates1)
	want := []string{
		"tool_call read pending read Read greeting.txt",
		"tool_call_update read in_progress",
		"tool_call_update read completed",
		"tool_call edit pending edit Edit greeting.txt",
		"tool_call_update edit in_progress",
		"tool_call_update edit completed diff:greeting.txt:wrold→world",
		"tool_call echo pending other mcp__everything__echo",
		"tool_call_update echo in_progress",
		"tool_call_update echo completed Echo: from the editor's server",
		"tool_call ok pending execute Bash echo checked > checked.txt",
		"tool_call_update ok in_progress",
		"tool_call_update ok completed",
		"tool_call no pending execute Bash echo refused > refused.txt",
		"tool_call_update no failed The user rejected it in the editor.",
		"tool_call todo pending think TodoWrite",
		"tool_call_update todo in_progress",
		"tool_call_update todo completed",
		"plan Fix the greeting:completed|Check it:in_progress",
		"agent_message_chunk Fixed the greeting.",
		"agent_thought_chunk The greeting reads right now.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var ids []string
	for _, a := range r.Asked1 {
		ids = append(ids, a.ID)
	}
	// The echo tool says it only reads (the server's readOnlyHint): not asked.
	if strings.Join(ids, " ") != "ok no" || !strings.Contains(strings.Join(r.Asked1[0].Options, " "), "allow_once:allow_once") ||
		!strings.Contains(strings.Join(r.Asked1[0].Options, " "), "allow_always:allow_always") || !strings.Contains(strings.Join(r.Asked1[0].Options, " "), "reject_once:reject_once") {
		t.Errorf("asked: %+v", r.Asked1)
	}
	if len(r.ConfigOptions) != 1 || r.ConfigOptions[0].ID != "model" || r.ConfigOptions[0].Category != "model" || r.SetModel != r.ConfigOptions[0].CurrentValue ||
		r.BadModel.Code != -32602 || !strings.Contains(fmt.Sprint(r.BadModel.Data), "not a model of this session's provider") {
		t.Errorf("the model option: %+v, set %q, bad %+v", r.ConfigOptions, r.SetModel, r.BadModel)
	}
	for name, want := range map[string]string{"greeting.txt": "hello world\n", "checked.txt": "checked\n", "refused.txt": "(none)"} {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			b = []byte("(none)")
		}
		if string(b) != want {
			t.Errorf("%s: %q, want %q", name, b, want)
		}
	}
	if r.UnknownMethod.Code != -32601 || r.UnknownSession.Code != -32602 || !strings.Contains(fmt.Sprint(r.UnknownSession.Data), "no open session session_nope") {
		t.Errorf("errors: %+v %+v", r.UnknownMethod, r.UnknownSession)
	}
	if r.Exit1.Code == nil || *r.Exit1.Code != 0 || r.Exit2.Code == nil || *r.Exit2.Code != 0 {
		code := func(c *int) any {
			if c == nil {
				return "killed"
			}
			return *c
		}
		t.Errorf("exits: %v %v\n%s", code(r.Exit1.Code), code(r.Exit2.Code), stderr.String())
	}

	// The second orca replayed the session.
	replayed := strings.Join(describe(r.Replayed), "\n")
	for _, w := range []string{"user_message_chunk fix the greeting", "tool_call edit pending edit Edit greeting.txt", "tool_call_update no failed", "agent_thought_chunk The greeting reads right now.\nagent_message_chunk Fixed the greeting."} {
		if !strings.Contains(replayed, w) {
			t.Errorf("the replay has no %q:\n%s", w, replayed)
		}
	}
	// A cancel while a call is asked about: the turn ends cancelled, the
	// call refused, never run.
	if got := strings.Join(describe(r.UpdatesAsking), "\n"); r.StopAsking != "cancelled" || !strings.Contains(got, "tool_call_update asking failed The turn was cancelled.") {
		t.Errorf("cancelled while asking: %q\n%s", r.StopAsking, got)
	}
	if _, err := os.Stat(filepath.Join(ws, "asked.txt")); !os.IsNotExist(err) {
		t.Errorf("the call cancelled while asked about ran: %v", err)
	}
	// The cancel ended the turn and killed its command, which ran unasked
	// in bypassPermissions.
	if r.Stop2 != "cancelled" || len(r.Asked2) != 1 || r.Asked2[0].ID != "asking" {
		t.Errorf("cancel: %q, asked %+v, updates %v", r.Stop2, r.Asked2, describe(r.Updates2))
	}
	time.Sleep(5 * time.Second) // the command would have touched late.txt after 4 s
	if _, err := os.Stat(filepath.Join(ws, "late.txt")); !os.IsNotExist(err) {
		t.Errorf("the cancelled command went on: %v", err)
	}
}

type update struct {
	Kind      string   `json:"kind"`
	Text      string   `json:"text"`
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Title     string   `json:"title"`
	ToolKind  string   `json:"toolKind"`
	Locations []string `json:"locations"`
	Entries   []string `json:"entries"`
	Content   []struct {
		Type             string
		Path             string
		OldText, NewText *string
		Text             string
	} `json:"content"`
}

type asked struct {
	ID      string
	Title   string
	Options []string
}

type rpcError struct {
	Code    int
	Message string
	Data    any
}

// describe is the updates as lines: kind, call, status, kind and title
// (workspace paths relative), a diff's change; text chunks joined.
func describe(us []update) []string {
	var out []string
	for _, u := range us {
		var s string
		switch u.Kind {
		case "agent_message_chunk", "user_message_chunk", "agent_thought_chunk":
			if n := len(out); n > 0 && strings.HasPrefix(out[n-1], u.Kind+" ") {
				out[n-1] += u.Text
				continue
			}
			s = u.Kind + " " + u.Text
		case "tool_call":
			s = strings.Join([]string{u.Kind, u.ID, u.Status, u.ToolKind, u.Title}, " ")
		case "tool_call_update":
			s = strings.Join([]string{u.Kind, u.ID, u.Status}, " ")
			for _, c := range u.Content {
				if c.Type == "diff" && c.OldText != nil && c.NewText != nil {
					s += fmt.Sprintf(" diff:%s:%s→%s", filepath.Base(c.Path), *c.OldText, *c.NewText)
				}
				if c.Type == "content" && (u.Status == "failed" || strings.HasPrefix(u.ID, "echo")) {
					s += " " + c.Text
				}
			}
		case "plan":
			s = "plan " + strings.Join(u.Entries, "|")
		default:
			s = u.Kind
		}
		out = append(out, s)
	}
	return out
}

// TestACPBadInput: a line that is not JSON gets JSON-RPC's parse error
// (id null), and orca answers the next request.
func TestACPBadInput(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "acp", "-w", t.TempDir(), "--script", writeScript(t, `{"text": "hi"}`))
	cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+t.TempDir())
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(outPipe)
	fmt.Fprint(in, "{this is not json\n")
	fmt.Fprint(in, `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}`+"\n")
	var got []string
	for len(got) < 2 && lines.Scan() {
		got = append(got, lines.Text())
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("orca acp: %v", err)
	}
	if len(got) != 2 || !strings.Contains(got[0], `"id":null`) || !strings.Contains(got[0], `"code":-32700`) || !strings.Contains(got[1], `"id":1`) || !strings.Contains(got[1], `"protocolVersion":1`) {
		t.Errorf("lines: %q", got)
	}
}
