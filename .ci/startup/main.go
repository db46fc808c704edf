// Command startup measures how soon orca reaches its first model request
// and what a Bash call costs, against the floor of the same machine,
// measured in the same run: the exec of /bin/true, and of `sh -c true`.
//
//	go run ./.ci/startup            # builds ./cmd/orca first
//	go run ./.ci/startup -orca /tmp/orca -n 21
//
// It serves OpenAI's Chat Completions on 127.0.0.1 (a scripted model, no
// key) and runs `orca run --json --provider openai --base-url …` in a
// workspace of its own, one run at a time:
//
//   - start-up: from the exec of orca to the arrival of its first model
//     request, beside /bin/true's exec-to-exit;
//   - a step: from the end of the answer that asked for a tool call to the
//     arrival of the request that carries its result, for Bash `true`
//     (its first call in the run, which starts the sandbox, and its second)
//     and for a Read, beside `sh -c true`'s exec-to-exit.
//
// It prints medians (and the quartiles). It is loopback-only, bounded by
// -n, and asserts nothing: the figures are for the notes of a change.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// script is what the model answers to the requests of one run, in order:
// a tool call (name and JSON input), or the end of the turn ("").
type script [][2]string

var scripts = map[string]script{
	"startup": {{"", ""}},
	"bash":    {{"Bash", `{"command":"true"}`}, {"Bash", `{"command":"true"}`}, {"", ""}},
	"read":    {{"Read", `{"file_path":"note.txt"}`}, {"Read", `{"file_path":"note.txt"}`}, {"", ""}},
}

// model is the fake API: it notes when each request arrives and when
// each answer was written.
type model struct {
	mu      sync.Mutex
	script  script
	arrived []time.Time
	written []time.Time
}

func (m *model) reset(s script) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script, m.arrived, m.written = s, nil, nil
}

func (m *model) times() (arrived, written []time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.arrived), slices.Clone(m.written)
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	n := len(m.arrived)
	m.arrived = append(m.arrived, now)
	step := [2]string{}
	if n < len(m.script) {
		step = m.script[n]
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if step[0] != "" {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": step[0], "arguments": step[1]}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		chunk(map[string]any{"content": "done"}, nil)
		chunk(map[string]any{}, "stop")
	}
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	w.(http.Flusher).Flush()
	m.mu.Lock()
	m.written = append(m.written, time.Now())
	m.mu.Unlock()
}

func main() {
	orca := flag.String("orca", "", "the orca binary (default: go build ./cmd/orca)")
	n := flag.Int("n", 15, "runs of each kind")
	flag.Parse()
	log.SetFlags(0)
	tmp, err := os.MkdirTemp("", "orca-startup-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if *orca == "" {
		*orca = filepath.Join(tmp, "orca")
		build := exec.Command("go", "build", "-o", *orca, "./cmd/orca")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			log.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	m := &model{}
	go http.Serve(ln, m)
	ws := filepath.Join(tmp, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "note.txt"), []byte("a note\n"), 0o644)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "CLAUDE_CONFIG_DIR="+filepath.Join(tmp, "claude"),
		"ORCA_PROVIDER=", "ORCA_MODEL=", "OPENAI_API_KEY=")
	run := func(kind string) (start time.Duration, steps []time.Duration) {
		m.reset(scripts[kind])
		cmd := exec.Command(*orca, "run", "--json", "--provider", "openai", "--base-url", "http://"+ln.Addr().String()+"/v1",
			"--model", "gpt-4.1", "-w", ws, "--permission-mode", "bypass", kind)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			log.Fatalf("orca run %s: %v\n%s", kind, err, stderr.String())
		}
		arrived, written := m.times()
		if len(arrived) != len(scripts[kind]) {
			log.Fatalf("orca run %s: %d model requests, want %d\n%s", kind, len(arrived), len(scripts[kind]), stderr.String())
		}
		for i := 1; i < len(arrived); i++ {
			steps = append(steps, arrived[i].Sub(written[i-1]))
		}
		return arrived[0].Sub(t0), steps
	}
	floor := func(argv ...string) time.Duration {
		t0 := time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			log.Fatal(err)
		}
		return time.Since(t0)
	}
	run("startup") // the workspace's store made, the binary in the page cache
	var trueExec, shTrue, startup, bash1, bash2, read1, read2 []time.Duration
	for range *n {
		trueExec = append(trueExec, floor("/bin/true"))
		s, _ := run("startup")
		startup = append(startup, s)
		shTrue = append(shTrue, floor("/bin/sh", "-c", "true"))
		_, st := run("bash")
		bash1, bash2 = append(bash1, st[0]), append(bash2, st[1])
		_, st = run("read")
		read1, read2 = append(read1, st[0]), append(read2, st[1])
	}
	fmt.Printf("orca %s, %d runs each; median (quartiles)\n", *orca, *n)
	t, o := median(trueExec), median(startup)
	row := func(what string, d []time.Duration, note string) {
		q := quartiles(d)
		fmt.Printf("%-44s %8s  (%s – %s)  %s\n", what, ms(q[1]), ms(q[0]), ms(q[2]), note)
	}
	row("/bin/true, exec to exit", trueExec, "")
	row("orca run --json, exec to first request", startup, fmt.Sprintf("%.1f× /bin/true", float64(o)/float64(t)))
	s := median(shTrue)
	row("sh -c true, exec to exit", shTrue, "")
	row("step: Read", read1, "")
	row("step: Read, second", read2, "")
	row("step: Bash true, first (starts the sandbox)", bash1, "")
	row("step: Bash true, second", bash2, fmt.Sprintf("%s over a Read step, %s over sh -c true",
		ms(median(bash2)-median(read2)), ms(median(bash2)-median(read2)-s)))
}

func median(d []time.Duration) time.Duration { return quartiles(d)[1] }

func quartiles(d []time.Duration) [3]time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(f float64) time.Duration { return s[int(f*float64(len(s)-1)+0.5)] }
	return [3]time.Duration{at(0.25), at(0.5), at(0.75)}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
