package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// everythingElicits is the settings of a user whose MCP servers include
// the reference everything server, with hooks.
func everythingElicits(t *testing.T, hooks string) options {
	t.Helper()
	server := referenceServer(t, "server-everything")
	o := options{configDir: t.TempDir()}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"everything": {"command": "node", "args": ["`+server+`", "stdio"]}}`+hooks+`}`)
	return o
}

// elicitationEvents returns the elicitation events of evs, in order.
func elicitationEvents(evs []jsonEvent) []jsonEvent {
	var out []jsonEvent
	for _, ev := range evs {
		if strings.HasPrefix(ev.str("name"), "elicitation_") {
			out = append(out, ev)
		}
	}
	return out
}

// The reference everything server's elicitation tool, answered by an
// Elicitation command hook (Claude Code's settings, unchanged): the hook
// reads Claude Code's fields on stdin, accepts with one field, and the
// server gets that field and every default of its form (SEP-1034) — the
// "Raw result" it echoes. An ElicitationResult hook that exits 2 turns
// the answer into a decline, and the server hears why. The events say who
// answered, and never hold the values.
func TestRunElicitationAnsweredByHook(t *testing.T) {
	stdin := filepath.Join(t.TempDir(), "stdin.json")
	o := everythingElicits(t, `, "hooks": {"Elicitation": [{"matcher": "everything", "hooks": [{"type": "command",
		"command": "cat > `+stdin+`; printf '{\"hookSpecificOutput\": {\"hookEventName\": \"Elicitation\", \"action\": \"accept\", \"content\": {\"name\": \"Ada Lovelace\"}}}'"}]}]}`)
	sc := writeScript(t, `{"tool_calls": [{"id": "el1", "name": "mcp__everything__trigger-elicitation-request", "input": {}}]}`, `{"text": "done"}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", t.TempDir(), "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	out := toolEventOf(t, evs, "el1").str("output")
	for _, want := range []string{"User provided the requested information", "Name: Ada Lovelace", `"firstLine": "It was a dark and stormy night."`,
		`"integer": 42`, `"untitledSingleSelectEnum": "Monica"`, `"titledMultipleSelectEnum": [`} {
		if !strings.Contains(out, want) {
			t.Errorf("the server's answer lacks %s:\n%s", want, out)
		}
	}
	var in map[string]any
	if b, err := os.ReadFile(stdin); err != nil || json.Unmarshal(b, &in) != nil {
		t.Fatalf("the hook's stdin: %s, %v", b, err)
	}
	schema, _ := in["requested_schema"].(map[string]any)
	if in["hook_event_name"] != "Elicitation" || in["mcp_server_name"] != "everything" || in["mode"] != "form" ||
		in["message"] != "Please provide inputs for the following fields:" || schema["properties"] == nil || in["tool_name"] != "mcp__everything__trigger-elicitation-request" {
		t.Errorf("the hook read %v", in)
	}
	els := elicitationEvents(evs)
	if len(els) != 2 || els[0].str("name") != "elicitation_requested" || els[1].str("action") != "accept" || !strings.HasPrefix(els[1].str("by"), "hook:") ||
		els[0].str("tool_use_id") != "el1" || els[0].str("server") != "everything" {
		t.Fatalf("elicitation events: %v", els)
	}
	for _, ev := range els {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "Ada Lovelace") || strings.Contains(string(b), "stormy") {
			t.Errorf("an elicitation event holds a value: %s", b)
		}
	}

	o = everythingElicits(t, `, "hooks": {
		"Elicitation": [{"hooks": [{"type": "command", "command": "printf '{\"hookSpecificOutput\": {\"action\": \"accept\", \"content\": {\"name\": \"Ada\"}}}'"}]}],
		"ElicitationResult": [{"matcher": "everything", "hooks": [{"type": "command", "command": "echo 'the audit log says no' >&2; exit 2"}]}]}`)
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", t.TempDir(), "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs = parseEvents(t, stdout)
	if out := toolEventOf(t, evs, "el1").str("output"); !strings.Contains(out, "User declined") || !strings.Contains(out, "the audit log says no") {
		t.Errorf("the server's answer:\n%s", out)
	}
	if els := elicitationEvents(evs); len(els) != 2 || els[1].str("action") != "decline" || els[1].str("reason") != "the audit log says no" {
		t.Errorf("elicitation events: %v", els)
	}
}

// Without a terminal (--json, a pipe) and without a hook, the question is
// declined, and the server hears why in the result's _meta; the events
// and stderr say so too.
func TestRunElicitationDeclinedHeadless(t *testing.T) {
	o := everythingElicits(t, "")
	sc := writeScript(t, `{"tool_calls": [{"id": "el1", "name": "mcp__everything__trigger-elicitation-request", "input": {}}]}`, `{"text": "done"}`)
	ws := t.TempDir()
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	out := toolEventOf(t, evs, "el1").str("output")
	if !strings.Contains(out, "User declined") || !strings.Contains(out, `"orca-agent.dev/reason": "Declined by orca: no one can answer the MCP server everything's question in this run`) {
		t.Errorf("the server's answer:\n%s", out)
	}
	els := elicitationEvents(evs)
	if len(els) != 2 || els[1].str("action") != "decline" || els[1].str("by") != "none" || !strings.Contains(els[1].str("reason"), "An Elicitation hook can answer it") {
		t.Errorf("elicitation events: %v", els)
	}
	// As text, the question and its decline are shown.
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--permission-mode", "bypass", "go")
	if code != 0 || !strings.Contains(stdout, "? MCP server everything asked: Please provide inputs for the following fields:") ||
		!strings.Contains(stdout, "✗ declined: Declined by orca: no one can answer") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// At a terminal — orca chat, and orca run — the person fills the reference
// everything server's form in, a field at a time: a required field left
// empty and a date that is none are said and asked again, Enter keeps each
// default, and the server gets the answer with the defaults (SEP-1034).
func TestTerminalElicitation(t *testing.T) {
	server := referenceServer(t, "server-everything")
	fill := func(t *testing.T, p *ptyProc, start string) string {
		t.Helper()
		p.typ(start)
		p.waitFor("[y] answer (13 fields) · [d] decline · [c] cancel", 1)
		p.typ("y\r")
		p.waitFor("String — Your full, legal name (required)", 1)
		p.typ("\r")
		p.waitFor("✗ name is required.", 1)
		// Typed once the field is asked again: typed ahead, a line-at-a-
		// time terminal echoes it before the question (orca run).
		p.waitFor("String — Your full, legal name (required)", 2)
		p.typ("Ada Lovelace\r")
		p.waitFor("Your date of birth (date)", 1)
		p.typ("tomorrow\r")
		p.waitFor(`✗ "tomorrow" is not a date (YYYY-MM-DD)`, 1)
		p.waitFor("Your date of birth (date)", 2)
		p.typ("1815-12-10\r")
		// The other eleven fields: Enter keeps the default, or leaves the
		// field out.
		for _, prompt := range []string{"Agree to the terms and conditions (y/n)", "(email)", "[It was a dark and stormy night.]", "(uri)",
			"[42]", "[Cats]", "[3.14]", "[Tuna]", "[Superman]", "[Guitar]", "[Monica]"} {
			p.waitFor(prompt, 1)
			p.typ("\r")
		}
		p.waitFor("[y] send · [e] edit · [d] decline · [c] cancel", 1)
		p.typ("y\r")
		return p.waitFor("✓ answered", 1)
	}
	check := func(t *testing.T, sc string) {
		t.Helper()
		for _, want := range []string{"Send name = Ada Lovelace, birthdate = 1815-12-10, firstLine = It was a dark and stormy night.,",
			"User provided the requested information", "Name: Ada Lovelace", "Birthdate: 1815-12-10"} {
			if !strings.Contains(sc, want) {
				t.Errorf("the screen lacks %q:\n%s", want, sc)
			}
		}
	}
	run := func(t *testing.T, args ...string) *ptyProc {
		ws, cfg := t.TempDir(), t.TempDir()
		writeFileAt(t, cfg, "orca/settings.json", `{"mcpServers": {"everything": {"command": "node", "args": ["`+server+`", "stdio"]}}}`)
		sc := writeScript(t, `{"tool_calls": [{"id": "el1", "name": "mcp__everything__trigger-elicitation-request", "input": {}}]}`, `{"text": "Done."}`, `{"text": "never"}`)
		return startPTY(t, cfg, nil, append(args, "--script", sc, "-w", ws, "--permission-mode", "bypass")...)
	}
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		p := run(t, "chat")
		p.waitFor("session", 1)
		check(t, fill(t, p, "go\r"))
		// The question leaves the editor's place once answered.
		p.waitUntil("the question gone from under the conversation", func(s string) bool {
			return !strings.Contains(lastLines(s, 4), "[y] send") && strings.Contains(lastLines(s, 4), "Type a message")
		})
		p.typ("\x04")
		p.wait()
	})
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		p := run(t, "run", "go")
		check(t, fill(t, p, ""))
		if code := p.wait(); code != 0 {
			t.Errorf("exit %d:\n%s", code, p.screen())
		}
	})
}
