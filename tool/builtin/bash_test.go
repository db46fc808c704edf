package builtin

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/tool"
)

func TestBashRunsInTheWorkspace(t *testing.T) {
	f := newFixture(t)
	f.write("here.txt", "x")
	got := f.ok(f.call("Bash", map[string]any{"command": "pwd; ls; echo err >&2; cat", "description": "Show where we are"}))
	if got != f.dir+"\nhere.txt\nerr\n" {
		t.Fatalf("Bash =\n%q", got)
	}
	if got := f.ok(f.call("Bash", map[string]any{"command": "true"})); got != "(no output)" {
		t.Fatalf("Bash true = %q", got)
	}
	f.ok(f.call("Bash", map[string]any{"command": "echo made > made.txt"}))
	if s := f.read("made.txt"); s != "made\n" {
		t.Fatalf("made.txt = %q", s)
	}
}

func TestBashExitCode(t *testing.T) {
	f := newFixture(t)
	r := f.call("Bash", map[string]any{"command": "echo out; exit 3"})
	f.fails(r, "out\n", "exit code: 3")
	r = f.call("Bash", map[string]any{"command": "kill -TERM $$"})
	f.fails(r, "signal 15")
}

func TestBashCapsOutput(t *testing.T) {
	f := newFixture(t)
	got := f.ok(f.call("Bash", map[string]any{"command": "echo START; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"}))
	if len(got) > bashMaxOutput+200 {
		t.Fatalf("output is %d bytes, over the cap", len(got))
	}
	if !strings.HasPrefix(got, "START\naaa") || !strings.HasSuffix(got, "aaa\nEND\n") {
		t.Fatalf("output lost its head or tail:\n%.100s … %s", got, got[len(got)-100:])
	}
	contains(t, got, "bytes of output cut")
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := &capture{max: 10}
	for _, s := range []string{"01234", "56", "789", "abcdefghijklmnop", "q", "r"} {
		c.Write([]byte(s))
	}
	// 28 bytes: the first 5, the last 5, 18 cut.
	if got, want := c.String(), "01234\n\n[… 18 bytes of output cut; showing the first 5 and the last 5 bytes …]\n\nnopqr"; got != want {
		t.Fatalf("capture = %q, want %q", got, want)
	}
	c = &capture{max: 10}
	c.Write([]byte("0123456789"))
	if got := c.String(); got != "0123456789" {
		t.Fatalf("capture of exactly max = %q", got)
	}
	c = &capture{max: 6}
	c.Write([]byte("ééééé")) // 10 bytes; cut only between characters
	if got := c.String(); !utf8.ValidString(got) || !strings.HasPrefix(got, "é\n") || !strings.HasSuffix(got, "\né") {
		t.Fatalf("capture cut a character: %q", got)
	}
}

func TestBashTimeoutKillsTheProcessGroup(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	hold := proctest.NewHolder(t, f.dir, "hold.fifo")
	r := f.call("Bash", map[string]any{"command": "sleep 1000 3>hold.fifo & " + hold.Await() + "; sleep 1000", "timeout": 2000})
	f.fails(r, "timed out after 2s", "killed")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the call took %v", d)
	}
	hold.RequireGone()
}

func TestBashCancellationKillsTheProcessGroup(t *testing.T) {
	f := newFixture(t)
	hold := proctest.NewHolder(t, f.dir, "hold.fifo")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan tool.Result)
	go func() {
		done <- f.callCtx(ctx, "s1", "Bash", map[string]any{"command": "sleep 1000 3>hold.fifo & sleep 1000 & wait"})
	}()
	hold.Opened() // the command is running
	cancel()
	r := <-done
	f.fails(r, "cancelled")
	hold.RequireGone()
}

func TestBashBackgroundJobsDoNotOutliveTheCall(t *testing.T) {
	f := newFixture(t)
	// The background sleep does not hold the output open, so the command
	// returns at once; its job is killed with it.
	hold := proctest.NewHolder(t, f.dir, "hold.fifo")
	f.ok(f.call("Bash", map[string]any{"command": "sleep 1000 3>hold.fifo >/dev/null 2>&1 & " + hold.Await()}))
	hold.RequireGone()
}

// A process that leaves the command's process group (setsid, a double
// fork, nohup) still dies with the call: it is in the call's PID
// namespace, which ends with the command. So it cannot hold the output
// open either.
func TestBashEscapedProcessDiesWithTheCall(t *testing.T) {
	f := newFixture(t)
	bt, _ := f.reg.Lookup("Bash")
	bt.(*bashTool).waitDelay = 5 * time.Second
	hold := proctest.NewHolder(t, f.dir, "hold.fifo")
	start := time.Now()
	r := f.call("Bash", map[string]any{"command": "setsid sleep 1000 3>hold.fifo & (nohup sleep 1000 &) ; " + hold.Await() + "; echo started"})
	got := f.ok(r)
	hold.RequireGone()
	if strings.Contains(got, "kept its output open") || time.Since(start) > 4*time.Second {
		t.Errorf("the escaped process held the output open (%v): %s", time.Since(start), got)
	}
}

func TestBashTimeoutIsCapped(t *testing.T) {
	f := newFixture(t)
	// A timeout over the 600000ms maximum is capped, not refused.
	if got := f.ok(f.call("Bash", map[string]any{"command": "echo hi", "timeout": 9_000_000})); got != "hi\n" {
		t.Fatalf("Bash = %q", got)
	}
}
