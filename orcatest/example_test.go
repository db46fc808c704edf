package orcatest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
)

// An L1 test of an agent: the real runtime around a scripted model, one
// tool's round trip followed to its end — the file on disk, the
// observation in the next prompt. (A test needs its *testing.T, so this
// example is compiled, not run; TestL1_* in this package run the same.)
func ExampleNewNode() {
	var t *testing.T // the test's

	n := orcatest.NewNode(t) // the default tools over t.TempDir(), its own store and services
	n.Script("s",
		script.Call("Write", map[string]string{"file_path": "hello.txt", "content": "hello\n"}),
		script.Text("I wrote hello.txt."))
	res := n.Run(context.Background(), "s", "Create hello.txt")
	if res.StopReason != agent.StopAnswered {
		t.Fatalf("the turn ended %s: %v", res.StopReason, res.Err)
	}
	if got := n.ReadFile("hello.txt"); got != "hello\n" {
		t.Errorf("hello.txt = %q", got)
	}
	obs := n.LLM.CallsTo("s")[1].Observations()
	if len(obs) != 1 || !strings.Contains(obs[0].Content, "Created hello.txt") {
		t.Errorf("the model saw %+v", obs)
	}
	if n.LLM.Unrouted() != 0 {
		t.Errorf("%d model calls nobody scripted", n.LLM.Unrouted())
	}
}
