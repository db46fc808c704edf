package sandbox_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/sandbox"
)

// A plain command (orca's own: a hook, an extension handler, the
// apiKeyHelper) runs as a process group of its own with exactly the
// environment it is given, and what it leaves running in its group goes
// when it ends, is cancelled or is killed.
func TestPlainCommands(t *testing.T) {
	t.Setenv("ORCA_TEST_SECRET", "from orca's environment")
	dir := t.TempDir()
	r := &sandbox.Runner{Plain: true, Env: []string{"PATH=" + os.Getenv("PATH"), "GIVEN=yes"}}

	// Exactly the environment given: not orca's, not a session's (WithEnv).
	ctx := sandbox.WithEnv(context.Background(), []string{"SESSION=1"})
	cmd, err := r.Command(ctx, dir, "/bin/sh", "-c", `echo "given=$GIVEN secret=$ORCA_TEST_SECRET session=$SESSION pgid=$(ps -o pgid= $$ | tr -d ' ') pid=$$"; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Run(); err == nil {
		t.Error("exit 3 was no error")
	}
	if code, sig := cmd.Status(); code != 3 || sig != 0 || !cmd.Exited() {
		t.Errorf("status %d %v exited %v", code, sig, cmd.Exited())
	}
	var pgid, pid string
	for _, f := range strings.Fields(out.String()) {
		if v, ok := strings.CutPrefix(f, "pgid="); ok {
			pgid = v
		}
		if v, ok := strings.CutPrefix(f, "pid="); ok {
			pid = v
		}
	}
	if !strings.HasPrefix(out.String(), "given=yes secret= session= ") || pgid == "" || pgid != pid {
		t.Errorf("environment or group: %q (a group of its own: pgid = pid)", out.String())
	}

	// What it left running in its group goes with it.
	h := proctest.NewHolder(t, dir, "hold")
	cmd, err = r.Command(context.Background(), dir, "/bin/sh", "-c", `(nohup sleep 1000 3>hold &) ; `+h.Await())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	h.RequireGone()
	// Its members are gone once reaped (SIGKILL is delivered, and a
	// zombie reaped, asynchronously).
	for deadline := time.Now().Add(10 * time.Second); cmd.Alive(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the group is alive after its leader ended")
		}
	}

	// A cancel, and Kill, end the group.
	for _, how := range []string{"cancel", "kill"} {
		h = proctest.NewHolder(t, dir, "hold-"+how)
		ctx, cancel := context.WithCancel(context.Background())
		cmd, err = r.Command(ctx, dir, "/bin/sh", "-c", `sleep 1000 3>hold-`+how+` & sleep 1000`)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		h.Opened()
		if !cmd.Alive() {
			t.Errorf("%s: a running command is not alive", how)
		}
		if how == "cancel" {
			cancel()
		} else if err := cmd.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		cancel()
		if _, sig := cmd.Status(); sig != syscall.SIGKILL {
			t.Errorf("%s: ended by %v", how, sig)
		}
		h.RequireGone()
	}
}
