package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

func serverOf(t *testing.T, s spec) *server {
	t.Helper()
	srv, err := getServer(s)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// One server runs many commands at once, each with its own streams and
// status.
func TestServerConcurrentCommands(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	r := &Runner{Policy: Policy{Writable: []string{t.TempDir()}}}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			c, err := r.Command(context.Background(), "/", "/bin/sh", "-c", fmt.Sprintf("echo %d; exit %d", i, i%7))
			if err != nil {
				t.Error(err)
				return
			}
			var out bytes.Buffer
			c.Stdout = &out
			c.Run()
			if code, _ := c.Status(); out.String() != fmt.Sprintf("%d\n", i) || code != i%7 {
				t.Errorf("command %d: %q, exit %d", i, out.String(), code)
			}
		})
	}
	wg.Wait()
}

// A server that died is replaced: the next command runs in a new one.
func TestServerReplacedAfterDeath(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	r := &Runner{Policy: Policy{Writable: []string{dir}}}
	run := func() {
		t.Helper()
		c, err := r.Command(context.Background(), dir, "/bin/sh", "-c", "echo ok")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		c.Stdout = &out
		if err := c.Run(); err != nil || out.String() != "ok\n" {
			t.Fatalf("%q, %v", out.String(), err)
		}
	}
	run()
	p := r.Policy.Merge(Policy{})
	srv := serverOf(t, spec{Writable: p.Writable})
	srv.proc.Signal(syscall.SIGKILL)
	run()
	if again := serverOf(t, spec{Writable: p.Writable}); again == srv {
		t.Error("the dead server is still in use")
	}
}

// A stopped server ends once idle, and is reaped.
func TestStoppedServerEnds(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	srv := serverOf(t, spec{Writable: []string{t.TempDir()}})
	pool.Lock()
	srv.stop()
	delete(pool.servers, srv.key)
	pool.Unlock()
	for deadline := time.Now().Add(5 * time.Second); ; {
		pool.Lock()
		reapStopped()
		gone := true
		for _, p := range pool.stopped {
			gone = gone && p != srv.proc
		}
		pool.Unlock()
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stopped server did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", srv.proc.Pid)); err == nil {
		t.Error("the stopped server's process is still there")
	}
}

// Runner.Available starts the server of the runner's policy, and that
// server runs the runner's commands: asking costs no process of its own.
func TestRunnerAvailableStartsTheCommandsServer(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	r := &Runner{Policy: Policy{Writable: []string{dir}}}
	key, _ := json.Marshal(r.spec())
	running := func() *server {
		pool.Lock()
		defer pool.Unlock()
		return pool.servers[string(key)]
	}
	if running() != nil {
		t.Fatal("a server of a new policy is running already")
	}
	if err := r.Available(); err != nil {
		t.Fatal(err)
	}
	srv := running()
	if srv == nil {
		t.Fatal("Available started no server for the runner's policy")
	}
	c, err := r.Command(context.Background(), dir, "/bin/sh", "-c", "exit 0")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if running() != srv {
		t.Error("the command ran on another server than the one Available started")
	}
}
