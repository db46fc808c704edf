package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tui"
)

// bashCall is a script response that runs command with Bash as tool use id.
func bashCall(id, command string) string {
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": id, "name": "Bash", "input": map[string]string{"command": command}}}})
	return string(b)
}

// toolEvent returns the completed or failed event of tool use id.
func toolEventOf(t *testing.T, evs []jsonEvent, id string) jsonEvent {
	t.Helper()
	for _, ev := range toolEvents(evs) {
		if ev.str("tool_use_id") == id {
			return ev
		}
	}
	t.Fatalf("no tool event of %s", id)
	return nil
}

func named(evs []jsonEvent, name string) []jsonEvent {
	var out []jsonEvent
	for _, ev := range evs {
		if ev.str("name") == name {
			out = append(out, ev)
		}
	}
	return out
}

func TestRunDenyFlag(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, bashCall("b", "touch ran.txt"), `{"text": "It was denied."}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json",
		"--permission-mode", "bypass", "--deny", "Bash(touch:*)", "touch a file")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	ev := toolEventOf(t, evs, "b")
	if ev["is_error"] != true || !strings.Contains(ev.str("output"), "denied by the permission rule Bash(touch:*)") {
		t.Errorf("observation: %v", ev)
	}
	if fileExists(filepath.Join(ws, "ran.txt")) {
		t.Error("the denied command ran")
	}
	if b := named(evs, "tool_blocked"); len(b) != 1 || b[0].str("by") != "policy" {
		t.Errorf("tool_blocked: %v", b)
	}
}

// With no one to ask, a call the policy asks about is refused, and the
// model is told which flag would allow it.
func TestRunHeadlessAskNamesTheFlag(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, bashCall("b", "touch ran.txt"), `{"text": "I may not."}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "touch a file")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	ev := toolEventOf(t, evs, "b")
	if ev["is_error"] != true || !strings.Contains(ev.str("output"), `--allow "Bash(touch:*)"`) {
		t.Errorf("observation: %v", ev)
	}
	if fileExists(filepath.Join(ws, "ran.txt")) {
		t.Error("the refused command ran")
	}
	if len(named(evs, "approval_requested")) != 1 || len(named(evs, "approval_resolved")) != 1 || named(evs, "approval_resolved")[0]["allowed"] != false {
		t.Errorf("approval events: %v %v", named(evs, "approval_requested"), named(evs, "approval_resolved"))
	}

	// The flag it names allows it.
	stdout, _, _ = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "--allow", "Bash(touch:*)", "touch a file")
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != false || !fileExists(filepath.Join(ws, "ran.txt")) {
		t.Errorf("with --allow: %v", ev)
	}
}

func TestRunPlanModeRefusesWrite(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"tool_calls": [{"id": "w", "name": "Write", "input": {"file_path": "plan.txt", "content": "x"}}, {"id": "r", "name": "Glob", "input": {"pattern": "*"}}]}`,
		`{"text": "Here is the plan."}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "plan", "plan it")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	if ev := toolEventOf(t, evs, "w"); ev["is_error"] != true || !strings.Contains(ev.str("output"), "permission mode plan is read-only") {
		t.Errorf("Write: %v", ev)
	}
	if ev := toolEventOf(t, evs, "r"); ev["is_error"] != false {
		t.Errorf("Glob: %v", ev)
	}
	if fileExists(filepath.Join(ws, "plan.txt")) {
		t.Error("plan mode wrote a file")
	}
}

// The settings' permissions and mode apply; flags come after them.
func TestRunSettingsPermissions(t *testing.T) {
	t.Parallel()
	cfgDir, ws := t.TempDir(), t.TempDir()
	writeFileAt(t, cfgDir, "orca/settings.json", `{"permissions": {"allow": ["Bash(touch:*)"], "defaultMode": "plan"}}`)
	sc := writeScript(t, bashCall("b", "touch ran.txt"), `{"text": "ok"}`)
	o := options{configDir: cfgDir}

	// plan from the settings: no Bash.
	stdout, _, _ := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "go")
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != true || !strings.Contains(ev.str("output"), "plan") {
		t.Errorf("settings' plan mode: %v", ev)
	}
	// --permission-mode beats defaultMode, and the settings' allow rule applies.
	stdout, _, _ = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "default", "go")
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != false || !fileExists(filepath.Join(ws, "ran.txt")) {
		t.Errorf("settings' allow rule: %v", ev)
	}
	// A --deny flag beats the settings' allow rule.
	os.Remove(filepath.Join(ws, "ran.txt"))
	stdout, _, _ = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "default", "--deny", "Bash", "go")
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != true || fileExists(filepath.Join(ws, "ran.txt")) {
		t.Errorf("--deny over settings: %v", ev)
	}
}

func writeFileAt(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// hookWorkspace returns a workspace whose own settings have a PreToolUse
// hook that blocks every Bash call, and the script of a turn that runs one.
func hookWorkspace(t *testing.T) (ws, sc string) {
	ws = t.TempDir()
	writeFileAt(t, ws, ".orca/settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./.orca/hooks/no-bash.sh"}]}]}}`)
	writeFileAt(t, ws, ".orca/hooks/no-bash.sh", "#!/bin/sh\ncat > /dev/null\necho 'Bash is off in this repository: use the file tools.' >&2\nexit 2\n")
	sc = writeScript(t, bashCall("b", "touch ran.txt"), `{"text": "ok"}`)
	return ws, sc
}

func TestRunProjectHookRunsOnlyWithTrust(t *testing.T) {
	t.Parallel()
	ws, sc := hookWorkspace(t)
	cfgDir := t.TempDir()
	o := options{configDir: cfgDir}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != false || !fileExists(filepath.Join(ws, "ran.txt")) {
		t.Errorf("untrusted: the hook blocked: %v", ev)
	}
	real, _ := filepath.EvalSymlinks(ws)
	for _, want := range []string{"1 command hook not applied", "not trusted", "orca trust " + real, "--trust"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Count(stderr, "orca trust") != 1 {
		t.Errorf("the warning is not printed once:\n%s", stderr)
	}

	os.Remove(filepath.Join(ws, "ran.txt"))
	stdout, stderr, _ = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "--trust", "go")
	ev := toolEventOf(t, parseEvents(t, stdout), "b")
	if ev["is_error"] != true || !strings.Contains(ev.str("output"), "Bash is off in this repository: use the file tools.") {
		t.Errorf("--trust: observation %v", ev)
	}
	if fileExists(filepath.Join(ws, "ran.txt")) {
		t.Error("--trust: the blocked command ran")
	}
	if stderr != "" {
		t.Errorf("--trust: stderr %s", stderr)
	}
	// --trust was for one run.
	if _, err := os.Stat(filepath.Join(cfgDir, "orca", "trust.json")); err == nil {
		t.Error("--trust recorded trust")
	}
}

func TestTrustThenRun(t *testing.T) {
	t.Parallel()
	ws, sc := hookWorkspace(t)
	o := options{configDir: t.TempDir()}
	real, _ := filepath.EvalSymlinks(ws)

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "trust", ws)
	if code != 0 || !strings.Contains(stdout, real+" is trusted") || !strings.Contains(stdout, "PreToolUse (Bash): ./.orca/hooks/no-bash.sh") {
		t.Fatalf("trust: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout, _, _ := orcaWith(t, t.Context(), o, "", "trust", "--list"); stdout != real+"\n" {
		t.Errorf("--list: %q", stdout)
	}
	stdout, stderr, _ = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != true || !strings.Contains(ev.str("output"), "Bash is off") || stderr != "" {
		t.Errorf("trusted run: %v\n%s", ev, stderr)
	}
	if fileExists(filepath.Join(ws, "ran.txt")) {
		t.Error("the blocked command ran")
	}

	stdout, _, code = orcaWith(t, t.Context(), o, "", "trust", "--revoke", ws)
	if code != 0 || !strings.Contains(stdout, "no longer trusted") {
		t.Errorf("--revoke: %d %s", code, stdout)
	}
	if stdout, stderr, _ := orcaWith(t, t.Context(), o, "", "trust", "--list"); stdout != "" || !strings.Contains(stderr, "no workspace is trusted") {
		t.Errorf("--list after --revoke: %q %q", stdout, stderr)
	}
	_, stderr, _ = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if !fileExists(filepath.Join(ws, "ran.txt")) || !strings.Contains(stderr, "not trusted") {
		t.Errorf("after --revoke the hook still runs: %s", stderr)
	}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "trust", filepath.Join(ws, "nowhere")); code != exitUsage || !strings.Contains(stderr, "does not exist") {
		t.Errorf("trust of a missing folder: %d %s", code, stderr)
	}
}

func TestRunSettingsAndFlagErrors(t *testing.T) {
	t.Parallel()
	sc := writeScript(t, `{"text": "hi"}`)
	ws := t.TempDir()
	path := writeFileAt(t, ws, ".orca/settings.json", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": "5"}]}]}}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad settings", []string{"-w", ws}, path + `: hooks.PreToolUse[0].hooks[0].timeout: want a number of seconds`},
		{"bad rule", []string{"-w", t.TempDir(), "--allow", "Bash(ls"}, `--allow: invalid permission rule "Bash(ls"`},
		{"bad mode", []string{"-w", t.TempDir(), "--permission-mode", "yolo"}, `--permission-mode: unknown permission mode "yolo"`},
	} {
		stdout, stderr, code := orca(t, t.Context(), "", append(append([]string{"run", "--script", sc, "--json"}, tc.args...), "hi")...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stdout %q\nstderr %s\nwant %s", tc.name, code, stdout, stderr, tc.want)
		}
	}
}

func TestDemoPermissionFlags(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stdout, stderr, code := orca(t, t.Context(), "", "demo", "--json", "--deny", "Bash")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, ev := range toolEvents(parseEvents(t, stdout)) {
		bash := ev.str("tool_name") == "Bash"
		if bash != (ev["is_error"] == true) || bash && !strings.Contains(ev.str("output"), "denied by the permission rule Bash") {
			t.Errorf("%s: %v", ev.str("tool_name"), ev)
		}
	}
	assertFixed(t, demoDir(t, tmp)) // the Edit ran: bypass
}

func approvalRequest(tool, input string, suggest ...string) policy.ApprovalRequest {
	v := policy.Verdict{Decision: policy.Ask, Reason: tool + " needs the user's approval: permission mode default asks.", Rule: "mode:default"}
	if len(suggest) > 0 {
		v.Suggest, v.Suggestions = suggest[0], suggest
	}
	// As the runtime asks: with how the tool shows the call.
	display := app.ToolDisplays(os.TempDir())(tool, json.RawMessage(input))
	return policy.ApprovalRequest{Scope: scope.Scope{SessionID: "s"}, ToolName: tool, ToolUseID: "u", Input: json.RawMessage(input), Display: display, Verdict: v}
}

// newPromptApprover is the approver orca run asks with at a terminal.
func newPromptApprover(in io.Reader, out io.Writer) *tui.Approver {
	return &tui.Approver{Read: tui.LineReader(in), Out: out}
}

func TestPromptApproverAnswers(t *testing.T) {
	t.Parallel()
	bash := approvalRequest("Bash", `{"command": "go test ./..."}`, "Bash(go test:*)")
	for _, tc := range []struct {
		name, input string
		req         policy.ApprovalRequest
		want        policy.Approval
		reason      string // in the approval's reason
		prompts     int
	}{
		{"y", "y\n", bash, policy.Approval{Allow: true, Scope: policy.ScopeOnce}, "", 1},
		{"yes", " YES \n", bash, policy.Approval{Allow: true, Scope: policy.ScopeOnce}, "", 1},
		{"a", "a\n", bash, policy.Approval{Allow: true, Scope: policy.ScopeSession}, "", 1},
		{"n", "n\n", bash, policy.Approval{Scope: policy.ScopeOnce}, `The user denied Bash go test ./...`, 1},
		{"unclear, then y", "maybe\n\ny\n", bash, policy.Approval{Allow: true, Scope: policy.ScopeOnce}, "", 3},
		{"a without a rule to allow", "a\nn\n", approvalRequest("Write", `{"file_path": "a.txt"}`), policy.Approval{Scope: policy.ScopeOnce}, "The user denied Write a.txt", 2},
		{"end of input", "", bash, policy.Approval{Scope: policy.ScopeOnce}, "no answer came from the user (end of input)", 1},
		{"last line without newline", "y", bash, policy.Approval{Allow: true, Scope: policy.ScopeOnce}, "", 1},
	} {
		var out bytes.Buffer
		a := newPromptApprover(strings.NewReader(tc.input), &out)
		got, err := a.Approve(t.Context(), tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		reason := got.Reason
		got.Reason = ""
		if got != tc.want || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %+v %q, want %+v %q", tc.name, got, reason, tc.want, tc.reason)
		}
		prompt := out.String()
		if n := strings.Count(prompt, "›"); n != tc.prompts {
			t.Errorf("%s: %d prompts:\n%s", tc.name, n, prompt)
		}
		if !strings.Contains(prompt, "? Allow "+tc.req.ToolName) || !strings.Contains(prompt, "needs the user's approval") {
			t.Errorf("%s: the prompt does not show the call and the reason:\n%s", tc.name, prompt)
		}
	}
	var out bytes.Buffer
	newPromptApprover(strings.NewReader("y\n"), &out).Approve(t.Context(), bash)
	for _, want := range []string{"? Allow Bash go test ./...?", "[y] yes, once", "[a] yes, and allow Bash(go test:*) for this session", "[n] no"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the prompt lacks %q:\n%s", want, out.String())
		}
	}
}

// A question nobody answers ends with the turn's context.
func TestPromptApproverCancelled(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close() // ends the background read
	a := newPromptApprover(r, io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := a.Approve(ctx, approvalRequest("Bash", `{"command": "ls"}`)); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Approve = %v after %v", err, time.Since(start))
	}
}

// fakeTTY is a standard input that passes for a terminal.
type fakeTTY struct{ io.Reader }

func (fakeTTY) Terminal() (int, bool) { return 0, true }

// On a terminal, orca asks; "a" allows the rest of the session's matching
// calls, "n" refuses with the user's denial as the observation.
func TestRunInteractiveApproval(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		bashCall("one", "touch one.txt"),
		bashCall("two", "touch two.txt"),
		bashCall("rm", "rm one.txt"),
		`{"text": "done"}`)
	out := &fakeTerminal{}
	var errOut bytes.Buffer
	code := execute(t.Context(), []string{"run", "--script", sc, "-w", ws, "go"}, fakeTTY{strings.NewReader("a\nn\n")}, out, &errOut, options{configDir: t.TempDir()})
	stdout := out.String()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errOut.String())
	}
	if n := strings.Count(stdout, "? Allow"); n != 2 {
		t.Errorf("%d questions, want 2 (touch:* was allowed for the session):\n%s", n, stdout)
	}
	for _, want := range []string{"? Allow Bash touch one.txt?", "allow Bash(touch:*) for this session", "? Allow Bash rm one.txt?", "The user denied Bash rm one.txt"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !fileExists(filepath.Join(ws, "one.txt")) || !fileExists(filepath.Join(ws, "two.txt")) {
		t.Error("the allowed commands did not run")
	}
	// Each question comes after its call's line, never inside a spinner's.
	if i, j := strings.Index(stdout, "● Bash touch one.txt"), strings.Index(stdout, "? Allow Bash touch one.txt"); i < 0 || j < i {
		t.Errorf("the question is not under its call:\n%q", stdout)
	}

	// With --json, the question goes to stderr and stdout stays events.
	out, errOut = &fakeTerminal{}, bytes.Buffer{}
	os.Remove(filepath.Join(ws, "one.txt"))
	code = execute(t.Context(), []string{"run", "--script", sc, "-w", ws, "--json", "go"}, fakeTTY{strings.NewReader("y\ny\nn\n")}, out, &errOut, options{configDir: t.TempDir()})
	if code != 0 || strings.Count(errOut.String(), "? Allow") != 3 {
		t.Errorf("--json: exit %d, stderr:\n%s", code, errOut.String())
	}
	evs := parseEvents(t, out.String())
	if ev := toolEventOf(t, evs, "rm"); ev["is_error"] != true || !strings.Contains(ev.str("output"), "The user denied") {
		t.Errorf("--json: rm: %v", ev)
	}
	if r := named(evs, "approval_resolved"); len(r) != 3 || r[0]["allowed"] != true || r[0].str("scope") != "once" || r[2]["allowed"] != false {
		t.Errorf("--json: approval_resolved: %v", r)
	}
}
