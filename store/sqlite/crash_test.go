package sqlite_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// crashWriters is how many goroutines of the concurrent child append at
// once, each to a session of its own, so that group commit puts their
// appends in shared transactions.
const crashWriters = 24

// TestCrashChildConcurrent is not a test: it is the child process that
// TestCrashKeepsAcknowledgedConcurrentAppends kills. crashWriters
// goroutines append batches of one to three records, each to its own
// session, carrying on from what the file already holds, and each
// acknowledged batch is reported on stdout as "ack <session> <first>
// <last>", until the process is killed.
func TestCrashChildConcurrent(t *testing.T) {
	path := os.Getenv(crashEnv + "_CONCURRENT")
	if path == "" {
		t.Skip("the child process of TestCrashKeepsAcknowledgedConcurrentAppends")
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
	deadline := time.Now().Add(time.Minute) // should the parent never kill it
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() {
			id := fmt.Sprint("s", w)
			if _, err := s.Provision(ctx, store.Session{ID: id, RuntimeID: "r1"}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			have, err := s.Records(ctx, id, store.RecordFilter{})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			next := len(have) + 1
			for i := 0; time.Now().Before(deadline); i++ {
				batch := make([]store.Record, 1+(w+i)%3)
				for j := range batch {
					batch[j] = concurrentCrashRecord(id, next+j, next, next+len(batch)-1)
				}
				got, err := s.Append(ctx, id, batch...)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				if got[0].Seq != int64(next) {
					fmt.Fprintf(os.Stderr, "%s: Append gave Seq %d, want %d\n", id, got[0].Seq, next)
					os.Exit(2)
				}
				fmt.Printf("ack %s %d %d\n", id, next, next+len(batch)-1) // one write: lines do not interleave
				if w == 0 {
					batches, writes := sqlite.Batches(s)
					fmt.Printf("batches %d %d\n", batches, writes)
				}
				next += len(batch)
			}
		})
	}
	wg.Wait()
	os.Exit(3)
}

// concurrentCrashRecord is record seq of session id, in the batch of
// Seqs first..last: its text says all of that, so that a torn batch or a
// record out of place shows.
func concurrentCrashRecord(id string, seq, first, last int) store.Record {
	return store.Record{Kind: store.KindMessage, TurnID: id, Message: llm.Message{
		Role:    llm.RoleUser,
		Content: []llm.Block{llm.TextBlock(fmt.Sprintf("%s %d of %d-%d", id, seq, first, last))},
	}}
}

// A process that appends from many goroutines at once (group commit: many
// appends per transaction), killed with SIGKILL, several times over on
// the same file, loses no acknowledged append: after each kill every
// session holds every batch acknowledged to it, whole, with Seqs 1, 2, 3…
// and no gaps (at most the batches in flight more, whole too).
func TestCrashKeepsAcknowledgedConcurrentAppends(t *testing.T) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		t.Run(mode, func(t *testing.T) {
			const rounds, acksPerRound = 3, 600
			path := filepath.Join(t.TempDir(), "orca.db")
			acked := map[string]int{} // session: last acknowledged Seq
			for round := range rounds {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChildConcurrent$", "-test.count=1")
				cmd.Env = append(os.Environ(), crashEnv+"_CONCURRENT="+path)
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
				n := 0
				var batches, writes int64
				lines := bufio.NewScanner(stdout)
				for n < acksPerRound && lines.Scan() {
					var id string
					var first, last int
					if _, err := fmt.Sscanf(lines.Text(), "batches %d %d", &batches, &writes); err == nil {
						continue
					}
					if _, err := fmt.Sscanf(lines.Text(), "ack %s %d %d", &id, &first, &last); err != nil {
						continue
					}
					if first != acked[id]+1 {
						t.Fatalf("round %d: %s acknowledged Seqs %d-%d after %d", round, id, first, last, acked[id])
					}
					acked[id] = last
					n++
				}
				if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred code, no Close
					t.Fatal(err)
				}
				err = cmd.Wait()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.Exited() {
					t.Fatalf("round %d: child was not killed: %v (stderr: %s)", round, err, stderr.String())
				}
				if n < acksPerRound {
					t.Fatalf("round %d: child acknowledged %d appends, want %d (stderr: %s)", round, n, acksPerRound, stderr.String())
				}
				if batches == 0 || writes < 2*batches {
					t.Errorf("round %d: the child's committer took %d writes in %d batches: group commit was not exercised", round, writes, batches)
				}

				s := open(t, path)
				total, extra := 0, 0
				for w := range crashWriters {
					id := fmt.Sprint("s", w)
					recs, err := s.Records(ctx, id, store.RecordFilter{})
					if err != nil {
						t.Fatal(err)
					}
					if len(recs) < acked[id] {
						t.Fatalf("round %d: %s holds %d records after the kill, but %d were acknowledged", round, id, len(recs), acked[id])
					}
					for i := 0; i < len(recs); {
						var first, last int
						if _, err := fmt.Sscanf(strings.TrimPrefix(recs[i].Message.Text(), id+" "), "%d of %d-%d", new(int), &first, &last); err != nil || first != i+1 {
							t.Fatalf("round %d: %s record %d (Seq %d) is %q, want the start of a batch at Seq %d", round, id, i, recs[i].Seq, recs[i].Message.Text(), i+1)
						}
						for seq := first; seq <= last; seq++ {
							if i >= len(recs) {
								t.Fatalf("round %d: %s batch %d-%d is torn: the file ends at %d", round, id, first, last, len(recs))
							}
							want := concurrentCrashRecord(id, seq, first, last)
							if r := recs[i]; r.Seq != int64(seq) || r.Message.Text() != want.Message.Text() || r.TurnID != id {
								t.Fatalf("round %d: %s record %d: Seq %d %q, want Seq %d %q", round, id, i, r.Seq, r.Message.Text(), seq, want.Message.Text())
							}
							i++
						}
					}
					// The batches in flight at the kill may have committed
					// unacknowledged: the next round carries on after them.
					extra += len(recs) - acked[id]
					acked[id] = len(recs)
					total += len(recs)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				t.Logf("round %d: %d appends acknowledged (%.1f writes per transaction); %d records on disk in %d sessions, %d of them committed but not seen acknowledged", round, n, float64(writes)/float64(batches), total, crashWriters, extra)
			}
		})
	}
}
