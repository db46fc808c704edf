package sqlite_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// crashEnv carries the database path (and durability) to the child
// process of TestCrashKeepsAcknowledgedAppends.
const crashEnv = "ORCA_STORE_SQLITE_CRASH_CHILD"

// TestCrashChild is not a test: it is the child process that
// TestCrashKeepsAcknowledgedAppends kills. It appends records one by one
// and reports each acknowledged append on stdout, until it is killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("the child process of TestCrashKeepsAcknowledgedAppends")
	}
	d := sqlite.Full
	if os.Getenv(crashEnv+"_NORMAL") != "" {
		d = sqlite.Normal
	}
	s, err := sqlite.Open(path, sqlite.WithDurability(d))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Should the parent never kill it, stop on its own.
	deadline := time.Now().Add(time.Minute)
	for i := 1; time.Now().Before(deadline); i++ {
		if _, err := s.Append(ctx, "s1", crashRecord(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("ack %d\n", i) // os.Stdout is not buffered
	}
	os.Exit(3)
}

func crashRecord(i int) store.Record {
	return store.Record{Kind: store.KindMessage, TurnID: fmt.Sprint("turn-", i), Message: llm.Message{
		Role:    llm.RoleAssistant,
		Content: []llm.Block{llm.TextBlock(fmt.Sprint("record ", i)), llm.ToolUseBlock(fmt.Sprint("t", i), "Read", []byte(fmt.Sprintf(`{"path": "file%d.go"}`, i)))},
	}}
}

// A process killed with SIGKILL right after acknowledging N appends loses
// none of them: the file reopens with all N (and at most the one in flight
// more), Seqs without gaps, nothing torn.
func TestCrashKeepsAcknowledgedAppends(t *testing.T) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		t.Run(mode, func(t *testing.T) {
			const n = 150
			path := filepath.Join(t.TempDir(), "orca.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnv+"="+path)
			if mode == "NORMAL" {
				cmd.Env = append(cmd.Env, crashEnv+"_NORMAL=1")
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			acked := 0
			lines := bufio.NewScanner(stdout)
			for acked < n && lines.Scan() {
				var i int
				if _, err := fmt.Sscanf(lines.Text(), "ack %d", &i); err == nil {
					if i != acked+1 {
						t.Fatalf("child acknowledged append %d after %d", i, acked)
					}
					acked = i
				}
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred code, no Close
				t.Fatal(err)
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Exited() {
				t.Fatalf("child was not killed: %v (stderr: %s)", err, stderr.String())
			}
			if acked < n {
				t.Fatalf("child acknowledged %d appends, want %d (stderr: %s)", acked, n, stderr.String())
			}

			s := open(t, path)
			defer s.Close()
			recs, err := s.Records(ctx, "s1", store.RecordFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) < acked {
				t.Fatalf("%d records after the crash, but %d were acknowledged", len(recs), acked)
			}
			for i, r := range recs {
				want := crashRecord(i + 1)
				if r.Seq != int64(i+1) || r.TurnID != want.TurnID || r.Message.Text() != want.Message.Text() || string(r.Message.Content[1].Input) != string(want.Message.Content[1].Input) {
					t.Fatalf("record %d after the crash: %+v, want Seq %d %+v", i, r, i+1, want)
				}
			}
			t.Logf("%d appends acknowledged, %d records on disk after SIGKILL", acked, len(recs))
		})
	}
}
