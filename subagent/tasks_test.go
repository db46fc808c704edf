package subagent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/orca-agent/orca/subagent"
)

// A task that writes (StartOutput) shows what it wrote while it runs and
// after, its end when it wrote too much; its owner alone reads it, Stop
// ends it, and its error fails it.
func TestStartOutputKeepsWhatTheTaskWrites(t *testing.T) {
	m := subagent.NewManager()
	defer m.Close()
	wrote := make(chan struct{})
	id, err := m.StartOutput("me", "Bash", "serve", func(ctx context.Context, out io.Writer) error {
		io.WriteString(out, "listening\n")
		close(wrote)
		<-ctx.Done()
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-wrote
	if info, ok := m.Get("me", id); !ok || info.Status != subagent.Running || info.Output != "listening\n" || !info.Streams {
		t.Errorf("running: %+v %v", info, ok)
	}
	if _, ok := m.Get("you", id); ok {
		t.Error("another owner read the task")
	}
	if !m.Stop("me", id) {
		t.Fatal("Stop stopped nothing")
	}
	if info, _ := m.Get("me", id); info.Status != subagent.Stopped || info.Output != "listening\n" {
		t.Errorf("stopped: %+v", info)
	}

	long, err := m.StartOutput("me", "Bash", "build", func(ctx context.Context, out io.Writer) error {
		for i := range 10000 {
			fmt.Fprintf(out, "line %05d\n", i) // 11 bytes a line
		}
		return errors.New("exit code: 2")
	})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := m.Wait(t.Context(), "me", long)
	if info.Status != subagent.Failed || info.Error != "exit code: 2" {
		t.Errorf("failed: %+v", info)
	}
	if !strings.HasPrefix(info.Output, "[… the first 80000 bytes are not kept]\n") || !strings.HasSuffix(info.Output, "line 09999\n") || len(info.Output) > subagent.OutputMax+64 {
		t.Errorf("a long output kept %d bytes: %.80q … %q", len(info.Output), info.Output, info.Output[len(info.Output)-20:])
	}
}
