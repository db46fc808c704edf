// Package orcatest proves that agents built on orca work, tier by tier.
//
// A Node is the real runtime — the real factory, the real default tool
// providers, a real local workspace under t.TempDir() — around a
// ScriptedClient, the only double. Tests drive turns with Node.Run and
// assert the round trip to its end: the file on disk, the observation in
// the next prompt (ScriptedClient records every call), the events.
//
// The conformance suite of llm.Client implementations is llm/llmtest.
package orcatest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// ScriptedClient is a script.Client that fails the test on every call the
// script does not cover (an unrouted call or a used-up route), naming the
// route. Use AllowFallback to answer such calls instead.
type ScriptedClient struct {
	*script.Client
}

// NewScriptedClient returns a scripted client bound to t.
func NewScriptedClient(t testing.TB) *ScriptedClient {
	c := script.New()
	c.OnMiss(func(route string, err error) {
		t.Errorf("orcatest: unscripted model call on route %q: %v", route, err)
	})
	return &ScriptedClient{Client: c}
}

// AllowFallback makes calls the script does not cover answer with resp
// instead of failing the test. They are still counted as unrouted when
// their route has no script.
func (c *ScriptedClient) AllowFallback(resp script.Response) {
	c.OnMiss(nil)
	c.SetFallback(resp)
}

// Option configures a Node.
type Option func(*nodeConfig)

type nodeConfig struct {
	def       agent.Definition
	client    *ScriptedClient
	root      string
	services  *agent.Services
	store     store.Store
	policy    *policy.Policy
	approver  policy.Approver
	configDir string
}

// WithConfigDir makes dir the user configuration folder the runtime reads
// (user skills); by default a node has none, so that the machine's own
// configuration never leaks into a test.
func WithConfigDir(dir string) Option {
	return func(c *nodeConfig) { c.configDir = dir }
}

// WithServices makes the node use shared services (hook and middleware
// registries, bus, queues) instead of its own.
func WithServices(s *agent.Services) Option {
	return func(c *nodeConfig) { c.services = s }
}

// WithStore makes the node keep its sessions in st (its own in-memory store
// otherwise). The node does not close a store it was given.
func WithStore(st store.Store) Option {
	return func(c *nodeConfig) { c.store = st }
}

// WithPolicy sets the runtime's permission policy and approver (nil
// approver: policy.Headless).
func WithPolicy(p *policy.Policy, a policy.Approver) Option {
	return func(c *nodeConfig) { c.policy, c.approver = p, a }
}

// WithDefinition sets the agent definition (Name defaults to "orcatest";
// nil ToolProviders means the default providers, as in production).
func WithDefinition(def agent.Definition) Option {
	return func(c *nodeConfig) { c.def = def }
}

// WithClient makes the node use c instead of a client of its own (to share
// one scripted model between nodes).
func WithClient(c *ScriptedClient) Option {
	return func(cfg *nodeConfig) { cfg.client = c }
}

// WithRoot makes the node's workspace the folder dir instead of a new
// temporary one.
func WithRoot(dir string) Option {
	return func(c *nodeConfig) { c.root = dir }
}

// Node is one assembled runtime with its own workspace, executor and
// transcripts. Everything it creates is closed by t.Cleanup, the runtime
// before the workspace it was given.
type Node struct {
	t        testing.TB
	Runtime  *agent.Runtime
	Executor *agent.Executor
	LLM      *ScriptedClient
	FS       *workspace.Local
	// Root is the workspace folder.
	Root string
	// Services are the node's process-wide services (its own unless
	// WithServices gave shared ones).
	Services *agent.Services
	// Store is the node's record store: the witness of session state.
	Store store.Store
	// Router opens the node's live sessions.
	Router *session.Router

	mu          sync.Mutex
	transcripts map[string][]llm.Message
	events      []event.Event
}

// NewNode builds a node through the real factory.
func NewNode(t testing.TB, opts ...Option) *Node {
	t.Helper()
	var cfg nodeConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.def.Name == "" {
		cfg.def.Name = "orcatest"
	}
	if cfg.client == nil {
		cfg.client = NewScriptedClient(t)
	}
	if cfg.root == "" {
		cfg.root = t.TempDir()
	}
	fs, err := workspace.OpenLocal(cfg.root)
	if err != nil {
		t.Fatalf("orcatest: open workspace: %v", err)
	}
	t.Cleanup(func() { fs.Close() })
	if cfg.services == nil {
		cfg.services = agent.NewServices(nil)
		svc := cfg.services
		t.Cleanup(func() { svc.Close() })
	}
	// A test's middleware is held to the cache guard's strict check: an
	// edit in place of a block the transcript shares is caught too.
	cfg.services.Middleware.SetStrictCacheGuard(true)
	if cfg.store == nil {
		cfg.store = store.NewMemory()
		st := cfg.store
		t.Cleanup(func() { st.Close() })
	}
	// As app assembles a runtime: the default tool set, the subagents of
	// the agents folders, the configuration folder protected.
	folders := tool.Folders{ConfigDir: cfg.configDir, Claude: true}
	if cfg.def.ToolProviders == nil {
		cfg.def.ToolProviders = toolset.Default()
	}
	if cfg.def.Subagents == nil {
		var problems []error
		cfg.def.Subagents, problems = subagent.Discover(fs, folders)
		for _, p := range problems {
			t.Logf("orcatest: subagent definition skipped: %v", p)
		}
	}
	if cfg.policy != nil && cfg.configDir != "" {
		if cfg.policy, err = cfg.policy.WithOptions(policy.WithUserConfigDir(cfg.configDir)); err != nil {
			t.Fatalf("orcatest: policy: %v", err)
		}
	}
	rt, err := agent.New(cfg.def, agent.Collaborators{
		Client: cfg.client, FS: fs, Services: cfg.services,
		Policy: cfg.policy, Approver: cfg.approver, Approvals: session.Approvals(cfg.store),
		Folders: folders, Sandbox: &sandbox.Runner{Policy: sandbox.WorkspacePolicy(fs.Root(), cfg.configDir)},
	})
	if err != nil {
		t.Fatalf("orcatest: build runtime: %v", err)
	}
	// Cleanups run last-in first-out: the runtime closes before its
	// workspace.
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("orcatest: close runtime: %v", err)
		}
	})
	exec := agent.NewExecutor()
	return &Node{
		t:           t,
		Runtime:     rt,
		Executor:    exec,
		LLM:         cfg.client,
		FS:          fs,
		Root:        fs.Root(),
		Services:    cfg.services,
		Store:       cfg.store,
		Router:      session.NewRouter(rt, cfg.store, exec),
		transcripts: make(map[string][]llm.Message),
	}
}

// Open opens a live session on the node's runtime and store, recording its
// events with the node's; the session is closed (firing SESSION_END)
// before the runtime when the test ends.
func (n *Node) Open(sessionID string) *session.LiveSession {
	n.t.Helper()
	s, err := n.Router.Open(context.Background(), sessionID, session.OpenOptions{OnEvent: func(e event.Event) {
		n.mu.Lock()
		n.events = append(n.events, e)
		n.mu.Unlock()
	}})
	if err != nil {
		n.t.Fatalf("orcatest: open session %q: %v", sessionID, err)
	}
	n.t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// Script appends responses to the script of session sessionID.
func (n *Node) Script(sessionID string, responses ...script.Response) {
	n.LLM.Script(sessionID, responses...)
}

// Run runs one turn of sessionID with input, continuing the session's
// transcript, and returns the result. The turn's events are recorded.
func (n *Node) Run(ctx context.Context, sessionID, input string) *agent.Result {
	n.t.Helper()
	n.mu.Lock()
	history := n.transcripts[sessionID]
	n.mu.Unlock()
	res, _ := n.Executor.Execute(ctx, n.Runtime, agent.Request{
		SessionID: sessionID,
		Input:     input,
		History:   history,
		OnEvent: func(e event.Event) {
			n.mu.Lock()
			n.events = append(n.events, e)
			n.mu.Unlock()
		},
	})
	if res == nil {
		n.t.Fatalf("orcatest: Execute returned no result for session %q", sessionID)
	}
	n.mu.Lock()
	n.transcripts[sessionID] = slices.Clone(res.Transcript)
	n.mu.Unlock()
	return res
}

// Transcript returns the messages of sessionID so far.
func (n *Node) Transcript(sessionID string) []llm.Message {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]llm.Message(nil), n.transcripts[sessionID]...)
}

// Events returns the events of every turn run so far; with names, only
// those.
func (n *Node) Events(names ...event.Name) []event.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(names) == 0 {
		return append([]event.Event(nil), n.events...)
	}
	var out []event.Event
	for _, e := range n.events {
		for _, name := range names {
			if e.Name == name {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// Path returns the OS path of rel inside the workspace.
func (n *Node) Path(rel string) string {
	return filepath.Join(n.Root, filepath.FromSlash(rel))
}

// ReadFile returns the contents of rel, failing the test if it cannot be
// read.
func (n *Node) ReadFile(rel string) string {
	n.t.Helper()
	b, err := os.ReadFile(n.Path(rel))
	if err != nil {
		n.t.Fatalf("orcatest: %v", err)
	}
	return string(b)
}

// ReadFileOr returns the contents of rel, or def if it cannot be read.
func (n *Node) ReadFileOr(rel, def string) string {
	b, err := os.ReadFile(n.Path(rel))
	if err != nil {
		return def
	}
	return string(b)
}

// WriteFile writes content to rel (creating folders), failing the test on
// error.
func (n *Node) WriteFile(rel, content string) {
	n.t.Helper()
	p := n.Path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		n.t.Fatalf("orcatest: %v", err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		n.t.Fatalf("orcatest: %v", err)
	}
}

// Observation returns the tool result that answered toolUseID in
// sessionID's transcript, failing the test if there is none.
func (n *Node) Observation(sessionID, toolUseID string) llm.Block {
	n.t.Helper()
	for _, m := range n.Transcript(sessionID) {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult && b.ToolUseID == toolUseID {
				return b
			}
		}
	}
	n.t.Fatalf("orcatest: session %q has no result for tool use %q", sessionID, toolUseID)
	return llm.Block{}
}

// String describes the node for failure messages.
func (n *Node) String() string {
	return fmt.Sprintf("node %s at %s", n.Runtime.ID(), n.Root)
}
