package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/protect"
	"github.com/orca-agent/orca/sandbox"
)

// run runs script with sh -c in dir under r and returns its output and
// exit code.
func run(t *testing.T, r *sandbox.Runner, dir, script string) (string, int) {
	t.Helper()
	cmd, err := r.Command(context.Background(), dir, "/bin/sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run()
	code, sig := cmd.Status()
	if sig != 0 {
		code = 128 + int(sig)
	}
	return out.String(), code
}

// The walls, attacked the ways a model's shell would: every spelling of a
// write to protected state fails, and the files on disk are unchanged.
func TestSandboxWalls(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	ws, outside, cfg := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, ".orca", "settings.json"), "{}")
	write(filepath.Join(ws, ".git", "config"), "[core]\n")
	write(filepath.Join(cfg, "orca", "trust.json"), "{}")
	write(filepath.Join(outside, "victim"), "safe")
	write(filepath.Join(ws, "secret.txt"), "hunter2")
	p := sandbox.WorkspacePolicy(ws, cfg)
	p.Hidden = []string{filepath.Join(ws, "secret.txt")}
	p.Writable = []string{ws} // the test's other folders are in the temp folder
	r := &sandbox.Runner{Policy: p}

	out, code := run(t, r, ws, `echo in > inside.txt && mkdir -p src/a && mv src/a src/b && cat inside.txt`)
	if code != 0 || out != "in\n" {
		t.Errorf("a write in the workspace: exit %d, %q", code, out)
	}

	for _, attack := range []string{
		`echo x > ` + filepath.Join(outside, "victim"),
		`cd ` + outside + ` && echo x >> victim`,
		`python3 -c "open('.orca/settings.local.json','w').write('x')"`,
		`echo x > .orca/settings.json`,
		`X=.orca; echo '{"allow":["Bash(*)"]}' > ${X}/settings.local.json`,
		`for f in .orca/*; do echo x > "$f"; done`,
		`ln -s .orca/settings.local.json notes.json; echo x > notes.json`,
		`ln -s .orca docs; mkdir -p docs/hooks; echo x > docs/hooks/h`,
		`ln .orca/settings.json hard; echo x > hard`,
		`mv .orca .orca-old; mkdir .orca; echo x > .orca/settings.json`,
		`rm -rf .orca`,
		`mv .git .git-old; mkdir -p .git; printf '[core]\n\tfsmonitor = touch pwned\n' > .git/config`,
		`git config core.fsmonitor 'touch pwned'`,
		`mkdir -p .git/hooks && echo 'touch pwned' > .git/hooks/pre-commit`,
		`cd ` + cfg + ` && echo '{"workspaces":["/"]}' > orca/trust.json`,
		`cd .. && mv ` + filepath.Base(ws) + ` moved`,
		`find . -name settings.json -exec sh -c 'echo x > "$1"' _ {} \;`,
	} {
		out, _ := run(t, r, ws, attack)
		t.Logf("%s: %s", attack, out)
	}
	for path, want := range map[string]string{
		filepath.Join(outside, "victim"):            "safe",
		filepath.Join(ws, ".orca", "settings.json"): "{}",
		filepath.Join(ws, ".git", "config"):         "[core]\n",
		filepath.Join(cfg, "orca", "trust.json"):    "{}",
	} {
		if b, err := os.ReadFile(path); string(b) != want {
			t.Errorf("%s is %q (%v), want %q", path, b, err, want)
		}
	}
	for _, path := range []string{".orca/settings.local.json", ".orca/hooks", ".git/hooks/pre-commit", "pwned"} {
		if _, err := os.Lstat(filepath.Join(ws, path)); err == nil {
			t.Errorf("%s was made", path)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, ".git", "hooks")); err != nil || !fi.IsDir() {
		t.Errorf(".git/hooks, reserved, should be an (empty) folder: %v", err)
	}

	if out, _ := run(t, r, ws, `cat secret.txt`); strings.Contains(out, "hunter2") {
		t.Errorf("a hidden file was read: %q", out)
	}
}

// listen serves on network/address until the test ends, writing hello to
// each connection and closing it.
func listen(t *testing.T, network, address, hello string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(hello))
			c.Close()
		}
	}()
	return ln
}

// Network off: not even orca's own loopback is reachable (the command
// has a loopback of its own); with Policy.Network it is.
func TestSandboxNetwork(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	ln := listen(t, "tcp", "127.0.0.1:0", "")
	port := ln.Addr().(*net.TCPAddr).Port
	dial := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo connected`, port)
	ws := t.TempDir()
	off := &sandbox.Runner{Policy: sandbox.Policy{Writable: []string{ws}}}
	if out, code := run(t, off, ws, "bash -c '"+dial+"'"); code == 0 || strings.Contains(out, "connected") {
		t.Errorf("network off, yet: exit %d %q", code, out)
	}
	// The command's own servers work on its own loopback.
	own := `python3 -c "
import socket,threading
s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1)
c=socket.create_connection(s.getsockname()); print('own loopback')"`
	if out, code := run(t, off, ws, own); code != 0 || !strings.Contains(out, "own loopback") {
		t.Errorf("the command's own loopback: exit %d %q", code, out)
	}
	on := &sandbox.Runner{Policy: sandbox.Policy{Writable: []string{ws}, Network: true}}
	if out, code := run(t, on, ws, "bash -c '"+dial+"'"); code != 0 || !strings.Contains(out, "connected") {
		t.Errorf("network on: exit %d %q", code, out)
	}
}

// Every process a command starts dies with it — setsid and double forks
// included — whether it ends by itself or is cancelled.
func TestSandboxProcessTree(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *sandbox.Runner
	}{
		{"sandboxed", &sandbox.Runner{}},
		{"disabled", &sandbox.Runner{Disabled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "sandboxed" && sandbox.Available() != nil {
				t.Skip(sandbox.Available())
			}
			dir := t.TempDir()
			tc.r.Policy.Writable = []string{dir}
			h := proctest.NewHolder(t, dir, "hold")
			script := `setsid sh -c 'sleep 1000 3>hold' & (nohup sleep 1000 3>hold &) ; ` + h.Await()
			out, code := run(t, tc.r, dir, script)
			if code != 0 {
				t.Fatalf("exit %d: %q", code, out)
			}
			h.RequireGone()

			h = proctest.NewHolder(t, dir, "hold2")
			ctx, cancel := context.WithCancel(context.Background())
			cmd, err := tc.r.Command(ctx, dir, "/bin/sh", "-c", `setsid sleep 1000 3>hold2 & sleep 1000`)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			h.Opened()
			cancel()
			cmd.Wait()
			h.RequireGone()
		})
	}
}

// Status is the command's own end, not the sandbox's; the environment is
// scrubbed of secrets.
func TestSandboxStatusAndEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("ORCA_TEST_PASS", "passed")
	for _, r := range []*sandbox.Runner{{Disabled: true}, {}} {
		if !r.Disabled && sandbox.Available() != nil {
			continue
		}
		dir := t.TempDir()
		r.Policy.Writable = []string{dir}
		// A signal ends the sandboxed command's shell as its init script
		// sees it: 128 plus the signal.
		killed := [2]int{128 + int(syscall.SIGTERM), 0}
		if r.Disabled && sandbox.Available() != nil {
			killed = [2]int{-1, int(syscall.SIGTERM)}
		}
		for script, want := range map[string][2]int{"exit 7": {7, 0}, "kill -TERM $$": killed, "true": {0, 0}} {
			cmd, err := r.Command(context.Background(), dir, "/bin/sh", "-c", script)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Run()
			if code, sig := cmd.Status(); code != want[0] || int(sig) != want[1] {
				t.Errorf("disabled=%v %q: status %d %v, want %v", r.Disabled, script, code, sig, want)
			}
		}
		r.Env = sandbox.DefaultEnv("ORCA_TEST_*")
		out, _ := run(t, r, dir, `echo "key=$ANTHROPIC_API_KEY pass=$ORCA_TEST_PASS"`)
		if out != "key= pass=passed\n" {
			t.Errorf("disabled=%v environment: %q", r.Disabled, out)
		}
	}
}

// A command reads its standard input, as given and as it comes: a
// long-lived one that answers line by line (an MCP server) gets each
// line when it is written, not /dev/null.
func TestSandboxStdin(t *testing.T) {
	for _, r := range []*sandbox.Runner{{Disabled: true}, {}} {
		if !r.Disabled && sandbox.Available() != nil {
			continue
		}
		dir := t.TempDir()
		r.Policy.Writable = []string{dir}
		cmd, err := r.Command(context.Background(), dir, "/bin/sh", "-c", "read line; echo got $line; read line; echo then $line")
		if err != nil {
			t.Fatal(err)
		}
		inW, outR := startPiped(t, cmd)
		lines := bufio.NewReader(outR)
		fmt.Fprintln(inW, "one")
		if l, err := lines.ReadString('\n'); l != "got one\n" {
			t.Errorf("disabled=%v: first answer %q, %v", r.Disabled, l, err)
		}
		fmt.Fprintln(inW, "two")
		if l, err := lines.ReadString('\n'); l != "then two\n" {
			t.Errorf("disabled=%v: second answer %q, %v", r.Disabled, l, err)
		}
		inW.Close()
		cmd.Wait()
		outR.Close()
	}
}

// A command gets its own standard streams and nothing of another's:
// one started while another runs does not hold that one's pipes open (it
// would keep the first's reader from ever seeing the end of its output).
// Its open descriptors are those of a command started alone.
func TestSandboxCommandsShareNoFiles(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	r := &sandbox.Runner{}
	r.Policy.Writable = []string{dir}
	const list = "ls -l /proc/self/fd | sed -n 's/.* \\([0-9]*\\) -> \\(.*\\)/\\1 \\2/p' | grep -v '^[0-9]* /proc/' | sed 's/[[0-9]*]//' | sort"
	alone, code := run(t, r, dir, list)
	if code != 0 || alone == "" {
		t.Fatalf("alone: exit %d: %q", code, alone)
	}
	// A first command waits on its input, its pipes open.
	first, err := r.Command(context.Background(), dir, "/bin/sh", "-c", "read line; echo $line")
	if err != nil {
		t.Fatal(err)
	}
	inW, outR := startPiped(t, first)
	beside, code := run(t, r, dir, list)
	if code != 0 || beside != alone {
		t.Errorf("a command started beside another has open\n%s\nwant, as alone,\n%s", beside, alone)
	}
	// The second is gone; the first's end of output comes when it ends.
	fmt.Fprintln(inW, "bye")
	inW.Close()
	out, err := io.ReadAll(outR)
	if string(out) != "bye\n" || err != nil {
		t.Errorf("the first's output %q, %v", out, err)
	}
	first.Wait()
	outR.Close()
}

// startPiped starts cmd with pipes for its input and output and returns
// their other ends.
func startPiped(t *testing.T, cmd *sandbox.Cmd) (stdin, stdout *os.File) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	return inW, outR
}

// The cost the sandbox adds to one command: a sandboxed `exit 0` against
// a plain one.
func BenchmarkCommand(b *testing.B) {
	ws := b.TempDir()
	b.Run("exec", func(b *testing.B) { // no runner at all: the baseline
		for b.Loop() {
			if err := exec.Command("/bin/sh", "-c", "exit 0").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		r    *sandbox.Runner
	}{
		{"disabled", &sandbox.Runner{Disabled: true}}, // the process tree only
		{"sandboxed", &sandbox.Runner{Policy: sandbox.Policy{Writable: []string{ws}, ReadOnly: []string{filepath.Join(ws, ".orca")}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			if tc.name == "sandboxed" && sandbox.Available() != nil {
				b.Skip(sandbox.Available())
			}
			for b.Loop() {
				cmd, err := tc.r.Command(context.Background(), ws, "/bin/sh", "-c", "exit 0")
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The host's Unix sockets (the Docker daemon's, D-Bus) are out of reach:
// a command cannot make one; socketpair still works; Policy.UnixSockets
// opens them.
func TestSandboxUnixSockets(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "daemon.sock")
	listen(t, "unix", path, "hello from the daemon")
	connect := `python3 -c "
import socket
a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode())
s = socket.socket(socket.AF_UNIX); s.connect('` + path + `'); print(s.recv(64).decode())"`
	off := &sandbox.Runner{Policy: sandbox.Policy{Writable: []string{dir}, Network: true}}
	out, code := run(t, off, dir, connect)
	if code == 0 || strings.Contains(out, "hello from the daemon") || !strings.Contains(out, "pair\n") || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("Unix sockets closed: exit %d %q", code, out)
	}
	on := &sandbox.Runner{Policy: sandbox.Policy{Writable: []string{dir}, UnixSockets: true}}
	if out, code := run(t, on, dir, connect); code != 0 || !strings.Contains(out, "hello from the daemon") {
		t.Errorf("Unix sockets open: exit %d %q", code, out)
	}
}

// A sandboxed command holds no capability, even in its own namespaces
// (it could otherwise undo the walls), and cannot gain one through a
// set-user-ID program.
func TestSandboxNoCapabilities(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	out, code := run(t, &sandbox.Runner{Policy: sandbox.Policy{Writable: []string{dir}}}, dir, `grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs)' /proc/self/status; unshare -r true && echo unshared; mount -t tmpfs none `+dir+` && echo mounted; cat /proc/1/environ && echo read-the-server`)
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the command's status lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if strings.Contains(out, "mounted") || strings.Contains(out, "read-the-server") {
		t.Errorf("the command could mount, or look into the sandbox server:\n%s", out)
	}
}

// Targets — where links in protected state lead — are read-only. A
// command is refused (ErrRefused, naming the link) while a link on the
// way to protected state lies where a command could replace it, or while
// a target it could create does not exist; links that commands cannot
// change (in a protected folder, outside the writable ones) are followed.
func TestTargetsAndLinks(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(to, at string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(at), 0o755)
		if err := os.Symlink(to, at); err != nil {
			t.Fatal(err)
		}
	}
	policy := func(ws string, targets ...protect.Target) *sandbox.Runner {
		p := sandbox.WorkspacePolicy(ws, "")
		p.Writable = []string{ws}
		p.Targets = targets
		return &sandbox.Runner{Policy: p}
	}

	ws := t.TempDir()
	write(filepath.Join(ws, "notes.json"), "{}")
	link("../notes.json", filepath.Join(ws, ".claude", "settings.local.json"))
	r := policy(ws, protect.Target{Path: filepath.Join(ws, "notes.json"), By: "the link .claude/settings.local.json"})
	for _, attack := range []string{`echo x > notes.json`, `rm notes.json; echo x > notes.json`, `mv notes.json n; echo x > notes.json`, `echo x > .claude/settings.local.json`} {
		run(t, r, ws, attack)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.json")); string(b) != "{}" {
		t.Errorf("the target is now %q", b)
	}
	if out, code := run(t, r, ws, `echo ok > other.txt && cat other.txt`); code != 0 || out != "ok\n" {
		t.Errorf("the rest of the workspace: exit %d, %q", code, out)
	}

	for _, tc := range []struct {
		name  string
		setup func(ws string) []protect.Target
		says  string
	}{
		{"a folder link", func(ws string) []protect.Target {
			os.MkdirAll(filepath.Join(ws, "cfg"), 0o755)
			link("cfg", filepath.Join(ws, ".claude"))
			return nil
		}, ".claude, which commands may not change, is a symbolic link (to cfg)"},
		{"a link on the way to a target", func(ws string) []protect.Target {
			write(filepath.Join(ws, "real", "x.json"), "{}")
			link("real", filepath.Join(ws, "cfgdir"))
			link("../cfgdir/x.json", filepath.Join(ws, ".claude", "settings.json"))
			return []protect.Target{{Path: filepath.Join(ws, "cfgdir", "x.json"), By: "the link .claude/settings.json"}}
		}, "cfgdir is a symbolic link (to real) on the way to"},
		{"a target that does not exist", func(ws string) []protect.Target {
			link("../notes.json", filepath.Join(ws, ".claude", "settings.json"))
			return []protect.Target{{Path: filepath.Join(ws, "notes.json"), By: "the link .claude/settings.json"}}
		}, "the link .claude/settings.json leads to " + "WS/notes.json, which does not exist"},
		{"git's configuration", func(ws string) []protect.Target {
			os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
			write(filepath.Join(ws, "gitconfig"), "[core]\n")
			link("../gitconfig", filepath.Join(ws, ".git", "config"))
			return nil
		}, ".git/config, which commands may not change, is a symbolic link (to ../gitconfig)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			r := policy(ws, tc.setup(ws)...)
			cmd, err := r.Command(context.Background(), ws, "/bin/sh", "-c", "touch ran")
			if err == nil {
				err = cmd.Run()
			}
			says := strings.ReplaceAll(tc.says, "WS", ws)
			if !errors.Is(err, sandbox.ErrRefused) || !strings.Contains(err.Error(), says) {
				t.Errorf("got %v, want ErrRefused saying %q", err, says)
			}
			if _, err := os.Lstat(filepath.Join(ws, "ran")); err == nil {
				t.Error("the command ran")
			}
		})
	}

	// Held links: in a protected folder, and outside the writable folders.
	ws = t.TempDir()
	elsewhere := t.TempDir()
	write(filepath.Join(elsewhere, "settings.json"), "{}")
	link(filepath.Join(elsewhere, "settings.json"), filepath.Join(ws, ".claude", "settings.json"))
	r = policy(ws, protect.Target{Path: filepath.Join(elsewhere, "settings.json"), By: "the link"})
	if out, code := run(t, r, ws, `echo ok`); code != 0 || out != "ok\n" {
		t.Errorf("with a held link: exit %d, %q", code, out)
	}
}
