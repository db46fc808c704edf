// Command startup measures how soon orca reaches its first model request
// and what a Bash call costs, against the floor of the same machine,
// measured in the same run: the exec of /bin/true, and of `bash -c true`
// (the command line of a Bash call of `true`).
//
//	go run ./.ci/startup            # builds ./cmd/orca first
//	go run ./.ci/startup -orca /tmp/orca -n 21
//	go run ./.ci/startup -orca /tmp/before,/tmp/after  # in turn, round by round
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
//     and for a Read, beside `bash -c true`'s exec-to-exit.
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
	orcas := flag.String("orca", "", "the orca binaries, comma-separated, run in turn in each round (default: go build ./cmd/orca)")
	n := flag.Int("n", 15, "rounds: runs of each kind per binary")
	flag.Parse()
	log.SetFlags(0)
	tmp, err := os.MkdirTemp("", "orca-startup-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if *orcas == "" {
		*orcas = filepath.Join(tmp, "orca")
		build := exec.Command("go", "build", "-o", *orcas, "./cmd/orca")
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
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "CLAUDE_CONFIG_DIR="+filepath.Join(tmp, "claude"),
		"ORCA_PROVIDER=", "ORCA_MODEL=", "OPENAI_API_KEY=")
	// run runs orca in the workspace ws, with the script kind.
	run := func(orca, ws, kind string) (start time.Duration, steps []time.Duration) {
		m.reset(scripts[kind])
		cmd := exec.Command(orca, "run", "--json", "--provider", "openai", "--base-url", "http://"+ln.Addr().String()+"/v1",
			"--model", "gpt-4.1", "-w", ws, "--permission-mode", "bypass", kind)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			log.Fatalf("%s run %s: %v\n%s", orca, kind, err, stderr.String())
		}
		arrived, written := m.times()
		if len(arrived) != len(scripts[kind]) {
			log.Fatalf("%s run %s: %d model requests, want %d\n%s", orca, kind, len(arrived), len(scripts[kind]), stderr.String())
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
	shell, err := exec.LookPath("bash") // as the Bash tool's
	if err != nil {
		shell = "/bin/sh"
	}
	type figures struct {
		orca, ws                                              string
		trueExec, shTrue, startup, bash1, bash2, read1, read2 []time.Duration
	}
	var all []*figures
	for i, orca := range strings.Split(*orcas, ",") {
		f := &figures{orca: orca, ws: filepath.Join(tmp, fmt.Sprint("ws", i))}
		os.MkdirAll(f.ws, 0o755)
		os.WriteFile(filepath.Join(f.ws, "note.txt"), []byte("a note\n"), 0o644)
		run(orca, f.ws, "startup") // the workspace's store made, the binary in the page cache
		all = append(all, f)
	}
	for range *n {
		for _, f := range all {
			f.trueExec = append(f.trueExec, floor("/bin/true"))
			s, _ := run(f.orca, f.ws, "startup")
			f.startup = append(f.startup, s)
			f.shTrue = append(f.shTrue, floor(shell, "-c", "true"))
			_, st := run(f.orca, f.ws, "bash")
			f.bash1, f.bash2 = append(f.bash1, st[0]), append(f.bash2, st[1])
			_, st = run(f.orca, f.ws, "read")
			f.read1, f.read2 = append(f.read1, st[0]), append(f.read2, st[1])
		}
	}
	row := func(what string, d []time.Duration, note string) {
		q := quartiles(d)
		fmt.Printf("%-44s %8s  (%s – %s)  %s\n", what, ms(q[1]), ms(q[0]), ms(q[2]), note)
	}
	for _, f := range all {
		fmt.Printf("%s, %d runs each, in turn with the others; median (quartiles)\n", f.orca, *n)
		t, o := median(f.trueExec), median(f.startup)
		row("/bin/true, exec to exit", f.trueExec, "")
		row("orca run --json, exec to first request", f.startup, fmt.Sprintf("%.1f× /bin/true", float64(o)/float64(t)))
		s := median(f.shTrue)
		row(filepath.Base(shell)+" -c true, exec to exit", f.shTrue, "")
		row("step: Read", f.read1, "")
		row("step: Read, second", f.read2, "")
		row("step: Bash true, first (starts the sandbox)", f.bash1, "")
		row("step: Bash true, second", f.bash2, fmt.Sprintf("%s over a Read step; that less %s -c true: %s",
			ms(median(f.bash2)-median(f.read2)), filepath.Base(shell), ms(median(f.bash2)-median(f.read2)-s)))
	}
}

func median(d []time.Duration) time.Duration { return quartiles(d)[1] }

func quartiles(d []time.Duration) [3]time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(f float64) time.Duration { return s[int(f*float64(len(s)-1)+0.5)] }
	return [3]time.Duration{at(0.25), at(0.5), at(0.75)}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
