package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/tool/builtin"
)

func fetchCall(id, url string) string {
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": id, "name": "WebFetch", "input": map[string]string{"url": url}}}})
	return string(b)
}

// WebFetch cannot be turned on the user's own network through the CLI:
// not by bypass mode, not by a redirect from a host a rule allows, not by
// a rule a workspace writes of itself; only the user's rule for the host
// lets it through. The secret never reaches the model, the events or the
// output.
func TestWebFetchAttacks(t *testing.T) {
	const secret = "AKIA-metadata-secret"
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(secret))
	}))
	t.Cleanup(metadata.Close)
	inner := strings.Replace(metadata.URL, "127.0.0.1", "localhost", 1) + "/latest/meta-data/"
	hop := httptest.NewServer(http.RedirectHandler(inner, http.StatusFound))
	t.Cleanup(hop.Close)

	run := func(t *testing.T, ws string, args ...string) (string, []jsonEvent) {
		t.Helper()
		sc := writeScript(t, fetchCall("direct", metadata.URL+"/latest/meta-data/"), fetchCall("hop", hop.URL+"/docs"), `{"text": "done"}`)
		o := options{configDir: t.TempDir(), getenv: noEnv}
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", append([]string{"run", "--json", "--script", sc, "-w", ws, "--no-sandbox", "go"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		return stdout + stderr, parseEvents(t, stdout)
	}

	t.Run("bypass mode", func(t *testing.T) {
		out, evs := run(t, t.TempDir(), "--permission-mode", "bypass")
		if got := toolEventOf(t, evs, "direct").str("output"); !strings.Contains(got, "127.0.0.1 is an address in your own network (loopback): a permission rule must allow it, as WebFetch(domain:127.0.0.1)") {
			t.Errorf("direct: %q", got)
		}
		if strings.Contains(out, secret) {
			t.Error("the secret was fetched")
		}
	})
	t.Run("redirect from an allowed host", func(t *testing.T) {
		out, evs := run(t, t.TempDir(), "--permission-mode", "bypass", "--allow", "WebFetch(domain:127.0.0.1)")
		if got := toolEventOf(t, evs, "hop").str("output"); !strings.Contains(got, "redirects to another host: "+inner+". It was not followed: no permission rule allows WebFetch(domain:localhost)") {
			t.Errorf("hop: %q", got)
		}
		// The rule for 127.0.0.1 is the user's: the direct call goes through.
		if got := toolEventOf(t, evs, "direct").str("output"); !strings.Contains(got, secret) {
			t.Errorf("direct, allowed: %q", got)
		}
		if strings.Count(out, secret) != strings.Count(out, "AKIA") || strings.Contains(toolEventOf(t, evs, "hop").str("output"), secret) {
			t.Error("the redirect reached the secret")
		}
	})
	t.Run("a workspace's own rule", func(t *testing.T) {
		ws := t.TempDir()
		writeFileAt(t, ws, ".claude/settings.json", `{"permissions": {"allow": ["WebFetch(domain:127.0.0.1)", "WebFetch(domain:localhost)"], "defaultMode": "bypassPermissions"}}`)
		out, evs := run(t, ws, "--permission-mode", "bypass")
		for _, id := range []string{"direct", "hop"} {
			if got := toolEventOf(t, evs, id).str("output"); !strings.Contains(got, "a permission rule must allow it") && !strings.Contains(got, "It was not followed") {
				t.Errorf("%s: %q", id, got)
			}
		}
		if strings.Contains(out, secret) {
			t.Error("an untrusted workspace's rule let WebFetch reach the secret")
		}
	})
	t.Run("default mode asks, and no one is there", func(t *testing.T) {
		_, evs := run(t, t.TempDir())
		if got := toolEventOf(t, evs, "direct").str("output"); !strings.Contains(got, "needs the user's approval") || !strings.Contains(got, "WebFetch(domain:127.0.0.1)") {
			t.Errorf("default: %q", got)
		}
	})
}

// WebSearch through the CLI: on the backend the environment (or the
// user's settings' env block) names, asked about like WebFetch; off,
// saying how to turn it on, when nothing is configured; a backend named
// without its key stops orca with the variables named. A workspace's own
// settings cannot choose where the searches go.
func TestWebSearchThroughTheCLI(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	searches := func() int { mu.Lock(); defer mu.Unlock(); return len(asked) }
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Query().Get("q"))
		mu.Unlock()
		w.Write([]byte(`{"results": [{"title": "orca", "url": "https://github.com/orca-agent/orca", "content": "An agent runtime for Go."}]}`))
	}))
	t.Cleanup(searx.Close)
	call, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": "q", "name": "WebSearch", "input": map[string]string{"query": "orca agent runtime"}}}})
	run := func(t *testing.T, o options, ws string, args ...string) (string, int, []jsonEvent) {
		t.Helper()
		sc := writeScript(t, string(call), `{"text": "done"}`)
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", append([]string{"run", "--json", "--script", sc, "-w", ws, "--no-sandbox", "go"}, args...)...)
		if code != 0 {
			return stderr, code, nil
		}
		return stderr, code, parseEvents(t, stdout)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	o := options{configDir: t.TempDir(), getenv: env(map[string]string{"SEARXNG_URL": searx.URL})}
	_, _, evs := run(t, o, t.TempDir(), "--allow", "WebSearch")
	if got := toolEventOf(t, evs, "q").str("output"); !strings.Contains(got, `Web search for "orca agent runtime" (SearXNG): 1 result.`) || !strings.Contains(got, "1. orca\n   https://github.com/orca-agent/orca") {
		t.Errorf("configured: %q", got)
	}
	_, _, evs = run(t, o, t.TempDir())
	if got := toolEventOf(t, evs, "q").str("output"); !strings.Contains(got, "needs the user's approval") || searches() != 1 {
		t.Errorf("default mode: %q, %d searches", got, searches())
	}

	// The user's settings' env block configures it too.
	o = options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"env": {"SEARXNG_URL": "`+searx.URL+`"}}`)
	if _, _, evs = run(t, o, t.TempDir(), "--allow", "WebSearch"); !strings.Contains(toolEventOf(t, evs, "q").str("output"), "(SearXNG): 1 result") {
		t.Errorf("from the settings: %q", toolEventOf(t, evs, "q").str("output"))
	}

	// A workspace's own settings do not.
	o = options{configDir: t.TempDir(), getenv: noEnv}
	ws := t.TempDir()
	writeFileAt(t, ws, ".claude/settings.json", `{"env": {"SEARXNG_URL": "`+searx.URL+`"}}`)
	before := searches()
	if _, _, evs = run(t, o, ws, "--allow", "WebSearch"); toolEventOf(t, evs, "q").str("output") != builtin.WebSearchOff || searches() != before {
		t.Errorf("an untrusted workspace chose the backend: %q", toolEventOf(t, evs, "q").str("output"))
	}

	o = options{configDir: t.TempDir(), getenv: env(map[string]string{"ORCA_WEB_SEARCH": "brave"})}
	if stderr, code, _ := run(t, o, t.TempDir()); code == 0 || !strings.Contains(stderr, "WebSearch: ORCA_WEB_SEARCH=brave, but BRAVE_API_KEY is not set") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// The issue's own check of WebFetch through the CLI, the rule for
// 127.0.0.1 in the user's settings: a page comes back as Markdown; a name
// that resolves to loopback (localhost) is refused without its own rule;
// a 50 MB page is cut at the cap, saying so.
func TestWebFetchThroughTheCLI(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			chunk := []byte(strings.Repeat("x", 1<<20))
			for range 50 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<html><head><title>Docs</title><script>steal()</script></head><body><h2>Install</h2><p>Run <code>go install</code>; see <a href="/more">more</a>.</p></body></html>`))
	}))
	t.Cleanup(site.Close)
	calls, _ := json.Marshal(map[string]any{"tool_calls": []any{
		map[string]any{"id": "page", "name": "WebFetch", "input": map[string]string{"url": site.URL + "/docs"}},
		map[string]any{"id": "name", "name": "WebFetch", "input": map[string]string{"url": strings.Replace(site.URL, "127.0.0.1", "localhost", 1) + "/docs"}},
		map[string]any{"id": "big", "name": "WebFetch", "input": map[string]string{"url": site.URL + "/big"}},
	}})
	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"permissions": {"allow": ["WebFetch(domain:127.0.0.1)", "WebFetch(domain:localhost)"], "deny": ["WebFetch(domain:localhost)"]}}`)
	sc := writeScript(t, string(calls), `{"text": "done"}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--json", "--script", sc, "-w", t.TempDir(), "--no-sandbox", "read the docs")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	page := toolEventOf(t, evs, "page").str("output")
	if !strings.Contains(page, `(200 OK, text/html, `) || !strings.Contains(page, `: "Docs"`) || !strings.Contains(page, "## Install\n\nRun `go install`; see [more]("+site.URL+"/more).") || strings.Contains(page, "steal") {
		t.Errorf("page: %q", page)
	}
	if got := toolEventOf(t, evs, "name").str("output"); !strings.Contains(got, "denied by the permission rule WebFetch(domain:localhost)") {
		t.Errorf("localhost, denied: %q", got)
	}
	if got := toolEventOf(t, evs, "big").str("output"); !strings.Contains(got, "10.0 MB, cut there: the page is longer") || !strings.Contains(got, "the first 100000 are here") || len(got) > 150_000 {
		t.Errorf("50 MB: %d bytes: %.300q", len(got), got)
	}

	// Without a rule of its own, localhost is refused even in bypass mode.
	o = options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}`)
	stdout, _, _ = orcaWith(t, t.Context(), o, "", "run", "--json", "--script", writeScript(t, string(calls), `{"text": "done"}`), "-w", t.TempDir(), "--no-sandbox", "--permission-mode", "bypass", "read the docs")
	if got := toolEventOf(t, parseEvents(t, stdout), "name").str("output"); !strings.Contains(got, "localhost (127.0.0.1) is an address in your own network (loopback): a permission rule must allow it, as WebFetch(domain:localhost)") {
		t.Errorf("localhost, no rule: %q", got)
	}
}
