package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/orca-agent/orca/protect"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/tool"
)

const (
	bashDefaultTimeout = 120 * time.Second
	bashMaxTimeout     = 600 * time.Second
	bashMaxOutput      = 30000 // bytes of output kept: half from the start, half from the end
	bashWaitDelay      = 2 * time.Second
)

// ShellProvider returns the provider of the Bash tool. Its Tools fails when
// the Env has no FileSystem, when the FileSystem is not a local folder (its
// Root is "") or when neither bash nor sh can be found.
//
// Bash runs its commands through the Env's sandbox.Runner (without one: the
// OS sandbox of sandbox.WorkspacePolicy over the workspace), in a
// scrubbed environment: a command cannot write outside the workspace and
// the temp folders, nor change orca's state, whatever its spelling. A
// command whose every simple command is one of the runner's Excluded runs
// without the sandbox (it still needs the policy's approval).
func ShellProvider() tool.Provider {
	return tool.NewProvider("shell", func(env tool.Env) ([]tool.Tool, error) {
		if env.FS == nil {
			return nil, errors.New("builtin shell: the runtime has no workspace file system")
		}
		root := env.FS.Root()
		if root == "" {
			return nil, errors.New("builtin shell: Bash needs a workspace that is a local folder, and this one has no root folder")
		}
		shell, err := exec.LookPath("bash")
		if err != nil {
			if shell, err = exec.LookPath("sh"); err != nil {
				return nil, fmt.Errorf("builtin shell: neither bash nor sh is on the PATH: %w", err)
			}
		}
		runner := env.Sandbox
		if runner == nil {
			runner = &sandbox.Runner{Policy: sandbox.WorkspacePolicy(root, env.ConfigDir)}
		}
		r := *runner
		r.Env = commandEnv(runner)
		return []tool.Tool{&bashTool{shell: shell, dir: root, waitDelay: bashWaitDelay, runner: &r}}, nil
	})
}

type bashTool struct {
	shell string // absolute path of bash (or sh)
	dir   string // working directory: the workspace root
	// waitDelay bounds how long Execute waits for the output pipe to close
	// once the shell has exited or been killed (a process that left the
	// process group may hold it open).
	waitDelay time.Duration
	// runner starts the commands: in the OS sandbox, unless disabled.
	runner *sandbox.Runner
}

// commandEnv is the environment of r's commands: r's (or the scrubbed
// default), with Go's build cache in the temp folder when the user's is
// not writable in the sandbox (go build and go test need to write it;
// the user's own cache stays out of reach, where nothing can poison it).
func commandEnv(r *sandbox.Runner) []string {
	env := r.Env
	if env == nil {
		env = sandbox.DefaultEnv()
	}
	env = setEnv(env, nonInteractive...)
	if r.Disabled {
		return env
	}
	cache := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOCACHE="); ok {
			cache = v
		}
	}
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "go-build")
		}
	}
	for _, w := range r.Policy.Writable {
		if cache != "" && protect.Within(w, cache) {
			return env
		}
	}
	return append(slices.Clone(env), "GOCACHE="+filepath.Join(os.TempDir(), fmt.Sprintf("orca-go-build-%d", os.Getuid())))
}

// nonInteractive are the variables every command of the model gets,
// whatever the user's environment says: no one is at a terminal to answer
// it, so nothing may wait for an editor, a pager or a password. Without
// them git commit without -m, git rebase --continue or git merge opens the
// user's $EDITOR (else vi) and waits until the command's timeout, as the
// field found (coder/xum#22, earendil-works/pi#298 and #9936,
// NousResearch/hermes-agent#112477); with them git takes the default
// message, or refuses an empty one at once, and a remote asking for
// credentials fails at once.
var nonInteractive = []string{
	"GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", "EDITOR=true", "VISUAL=true",
	"GIT_PAGER=cat", "PAGER=cat",
	"GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=Never",
}

// setEnv returns env with the variables kv (NAME=value) set: earlier
// entries of those names are dropped.
func setEnv(env []string, kv ...string) []string {
	out := make([]string, 0, len(env)+len(kv))
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(kv, func(s string) bool { return strings.HasPrefix(s, name+"=") }) {
			out = append(out, e)
		}
	}
	return append(out, kv...)
}

func (*bashTool) Name() string { return "Bash" }

func (t *bashTool) Description() string {
	return `Executes a given bash command and returns its output (stdout and stderr combined).

The command runs with ` + "`bash -c`" + ` in the workspace root folder, with empty standard input. Each call starts a new shell: shell state (cd, variables) does not carry over between calls.
` + t.sandboxNote() + `

Usage notes:
- The command argument is required.
- You can give an optional timeout in milliseconds (up to 600000ms / 10 minutes). If not given, commands time out after 120000ms (2 minutes). A command that times out is killed, together with every process it started.
- Write a clear, concise description of what this command does in 5-10 words.
- Output longer than 30000 characters is cut in the middle: the start and the end are kept, and the output says how much was cut.
- A non-zero exit status is reported as "exit code: N".
- Processes a command starts with & are stopped when the command returns. For a command that keeps running (a server, a watcher), set run_in_background: this call returns a task id at once, and the command goes on until it ends, TaskStop stops it, or orca exits; AgentOutput reads its output so far (block false to read it at once). A timeout, if given, bounds it.
- Avoid using this tool to run find, grep, cat, head, tail, sed, awk or echo, unless explicitly instructed. Instead use the dedicated tools:
  - File search: use Glob (NOT find or ls)
  - Content search: use Grep (NOT grep or rg)
  - Read files: use Read (NOT cat/head/tail)
  - Edit files: use Edit (NOT sed/awk)
  - Write files: use Write (NOT echo >/cat <<EOF)
- Always quote file paths that contain spaces with double quotes.
- When issuing multiple commands, use ';' or '&&' to separate them, not newlines.`
}

// sandboxNote tells the model what the sandbox lets its commands do, so
// that it does not try what the OS will refuse.
func (t *bashTool) sandboxNote() string {
	if t.runner.Disabled {
		return ""
	}
	net := "They have no network access (only their own loopback)."
	if t.runner.Policy.Network {
		net = "They may use the network."
	}
	return "\nCommands run in an OS sandbox: they may write only inside the workspace and the temp folders (never in .orca, .git/config or .git/hooks), and see a reduced environment (no API keys). " +
		net + " A write or connection the sandbox refuses fails with the usual error (\"Read-only file system\", \"Permission denied\"); do not try to get around it, ask the user instead.\n"
}

func (*bashTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "description": "The command to execute"
    },
    "timeout": {
      "type": "number",
      "minimum": 0,
      "description": "Optional timeout in milliseconds (max 600000)"
    },
    "run_in_background": {
      "type": "boolean",
      "description": "Run the command in the background and return its task id at once (read its output with AgentOutput, stop it with TaskStop)"
    },
    "description": {
      "type": "string",
      "description": "Clear, concise description of what this command does in 5-10 words, in active voice. Examples:\nInput: ls\nOutput: List files in current directory\n\nInput: git status\nOutput: Show working tree status\n\nInput: npm install\nOutput: Install package dependencies\n\nInput: mkdir foo\nOutput: Create directory 'foo'"
    }
  },
  "required": ["command"],
  "additionalProperties": false
}`)
}

type bashInput struct {
	Command         string `json:"command"`
	Timeout         count  `json:"timeout"`
	Description     string `json:"description"`
	RunInBackground bool   `json:"run_in_background"`
}

func (t *bashTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in bashInput
	if err := decode("Bash", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return tool.Errorf("Bash: command is empty")
	}
	if in.Timeout < 0 {
		return tool.Errorf("Bash: timeout must not be negative (got %d)", in.Timeout)
	}
	timeout := bashDefaultTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Millisecond, bashMaxTimeout)
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("Bash: command not run: %v", err)
	}
	runner := t.runner
	if !runner.Disabled && excluded(runner.Excluded, in.Command) {
		unsandboxed := *runner
		unsandboxed.Disabled = true
		runner = &unsandboxed
	}
	if in.RunInBackground {
		return t.background(ctx, call, in, runner)
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &capture{max: bashMaxOutput}
	// The command and everything it starts end with the call: it runs in
	// a PID namespace of its own (a process group where there is none).
	cmd, err := t.start(runCtx, runner, in.Command, out)
	if err != nil {
		return tool.Errorf("Bash: %v", err)
	}
	waitErr := cmd.Wait()

	var b strings.Builder
	b.WriteString(out.String())
	if ctx.Err() != nil {
		note(&b, fmt.Sprintf("Command was cancelled (%v) and killed, with the processes it started.", ctx.Err()))
		return tool.Result{Content: b.String(), IsError: true}
	}
	if msg, exitCode := ending(cmd, waitErr, errors.Is(runCtx.Err(), context.DeadlineExceeded), timeout); msg != "" {
		note(&b, msg)
		if exitCode && !runner.Disabled {
			if s := refusals(out.String()); s != "" {
				note(&b, s)
			}
		}
		return tool.Result{Content: b.String(), IsError: true}
	}
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		note(&b, fmt.Sprintf("[a process the command started kept its output open; stopped waiting for it %v after the command ended]", t.waitDelay))
	}
	resp := &bashResponse{Stdout: out.String()}
	if b.Len() == 0 {
		return tool.Result{Content: "(no output)", Response: resp}
	}
	return tool.Result{Content: b.String(), Response: resp}
}

// background starts the command as a background task of the call's owner
// (tool.Background): it returns once the command has started, and the
// command goes on until it ends, TaskStop or the runtime's Close stops it
// (with every process it started), or the call's timeout, if one was
// given, runs out.
func (t *bashTool) background(ctx context.Context, call *tool.Call, in bashInput, runner *sandbox.Runner) tool.Result {
	b := tool.BackgroundFrom(ctx)
	if b == nil {
		return tool.Errorf("Bash: run_in_background needs the background tasks of an agent runtime, and this call has none: run the command without it")
	}
	desc := strings.TrimSpace(in.Description)
	if desc == "" {
		desc = t.Display(call.Input).Summary
	}
	started := make(chan error, 1)
	id, err := b.Start(call, "Bash", desc, func(ctx context.Context, out io.Writer) error {
		var timeout time.Duration
		if in.Timeout > 0 {
			timeout = min(time.Duration(in.Timeout)*time.Millisecond, bashMaxTimeout)
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		cmd, err := t.start(ctx, runner, in.Command, out)
		started <- err
		if err != nil {
			return err
		}
		waitErr := cmd.Wait()
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err() // stopped: the task says so
		}
		if msg, _ := ending(cmd, waitErr, errors.Is(ctx.Err(), context.DeadlineExceeded), timeout); msg != "" {
			return errors.New(msg)
		}
		return nil
	})
	if err != nil {
		return tool.Errorf("Bash: cannot start the command in the background: %v", err)
	}
	if err := <-started; err != nil {
		return tool.Errorf("Bash: %v", err)
	}
	return tool.Text(fmt.Sprintf("Started in the background as %s: the command goes on after this call. Read its output with AgentOutput (task_id %q; block false reads it at once), stop it with TaskStop.", id, id))
}

// start starts command under runner, its output (standard output and
// error, one pipe, so that the order of writes is kept) going to out; ctx
// kills it with every process it started. The error is said for the model.
func (t *bashTool) start(ctx context.Context, runner *sandbox.Runner, command string, out io.Writer) (*sandbox.Cmd, error) {
	cmd, err := runner.Command(ctx, t.dir, t.shell, "-c", command)
	if err != nil {
		return nil, fmt.Errorf("not run: %v. To run commands without orca's OS sandbox, the user can pass --no-sandbox or set \"sandbox\": {\"enabled\": false} in a settings file", err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = t.waitDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %v", t.shell, err)
	}
	return cmd, nil
}

// ending says how a command that has been waited for ended, when it did
// not end well ("" when it exited 0): it timed out (after timeout), it
// failed, a signal killed it, or it exited with a code — exitCode then.
func ending(cmd *sandbox.Cmd, waitErr error, timedOut bool, timeout time.Duration) (msg string, exitCode bool) {
	code, sig := cmd.Status()
	switch {
	case timedOut:
		return fmt.Sprintf("Command timed out after %v and was killed, with the processes it started.", timeout), false
	case !cmd.Exited():
		return fmt.Sprintf("Command failed: %v", waitErr), false
	case sig != 0:
		return fmt.Sprintf("Command was killed by signal %d (%v).", int(sig), sig), false
	case code == 0:
		return "", false
	case code > 128 && code <= 128+64:
		// In the sandbox the command runs under a shell of orca's, which
		// reports a signal as the shell's $? does.
		return fmt.Sprintf("exit code: %d (the command was ended by signal %d, %v)", code, code-128, syscall.Signal(code-128)), true
	}
	return fmt.Sprintf("exit code: %d", code), true
}

// note appends a line to the output, on a line of its own.
func note(b *strings.Builder, s string) {
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(s)
}

// capture keeps the first and the last max/2 bytes written to it and
// counts the rest.
type capture struct {
	mu    sync.Mutex
	max   int
	head  []byte
	tail  []byte // holds at least the last max/2 bytes, at most max
	total int
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	written := len(p)
	c.total += written
	half := c.max / 2
	if room := half - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) >= half {
		c.tail = append(c.tail[:0], p[len(p)-half:]...)
	} else {
		c.tail = append(c.tail, p...)
		if len(c.tail) > c.max {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-half:]...)
		}
	}
	return written, nil
}

// String returns what was kept, saying how much was cut from the middle.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	half := c.max / 2
	tail := c.tail
	if len(tail) > half && len(c.head)+len(tail) > c.max {
		tail = tail[len(tail)-half:]
	}
	cut := c.total - len(c.head) - len(tail)
	if cut <= 0 {
		return string(c.head) + string(tail)
	}
	// Cut whole characters only.
	head := c.head
	for i := 1; i <= min(utf8.UTFMax, len(head)); i++ {
		if utf8.RuneStart(head[len(head)-i]) {
			if !utf8.FullRune(head[len(head)-i:]) {
				head = head[:len(head)-i]
			}
			break
		}
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n\n[… %d bytes of output cut; showing the first %d and the last %d bytes …]\n\n%s", head, c.total-len(head)-len(tail), len(head), len(tail), tail)
}
