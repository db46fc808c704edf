package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// countingStore counts the reads of one session's rows (its events
// streams' reads, not its turns').
type countingStore struct {
	*sqlite.Store
	session string
	reads   atomic.Int64
}

func (c *countingStore) Observations(ctx context.Context, f store.ObservationFilter) ([]store.Observation, error) {
	if f.SessionID == c.session && f.TurnID == "" {
		c.reads.Add(1)
	}
	return c.Store.Observations(ctx, f)
}

// A stream that follows session a reads the store again for a's rows,
// not for the rows of other sessions' turns: ten turns of b, then one of
// a, and a's stream has read a few times (once, and once per batch of a's
// rows), not once per batch of b's.
func TestStreamNotWokenByOtherSessions(t *testing.T) {
	ws := t.TempDir()
	st, err := sqlite.Open(sqlite.DefaultPath(ws))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the app's
	counted := &countingStore{Store: st, session: "a"}
	f := newFixture(t, app.Config{Workspace: ws, Store: counted}, serve.Options{Heartbeat: time.Hour, Poll: time.Hour})
	f.model.Script("a", script.Text("a done"))
	f.model.ScriptAny(script.Text("b done"))
	f.json("POST", "/v1/sessions", `{"id": "a"}`, 201)
	f.json("POST", "/v1/sessions", `{"id": "b"}`, 201)
	events := make(chan []sse, 1)
	opened := make(chan struct{})
	go func() {
		events <- f.events("/v1/sessions/a/events", "", func(e sse) bool {
			if e.name == "session_started" {
				close(opened)
			}
			return completed(e)
		})
	}()
	<-opened
	for range 10 {
		turn := f.json("POST", "/v1/sessions/b/messages", `{"text": "go"}`, 202)["turn_id"].(string)
		f.events("/v1/sessions/b/turns/"+turn+"/events", "", completed)
	}
	f.json("POST", "/v1/sessions/a/messages", `{"text": "go"}`, 202)
	got := <-events
	if n := counted.reads.Load(); n > 5 {
		t.Errorf("a's stream read the store %d times for ten turns of b and one of its own (%d events)", n, len(got))
	}
}

// Rows another process writes (another store on the same file) reach a
// stream that follows their session: the server's poll finds them.
func TestStreamSeesOtherProcessesRows(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	other, err := sqlite.Open(sqlite.DefaultPath(f.ws))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	done := make(chan []sse, 1)
	go func() {
		done <- f.events("/v1/sessions/s/events", "", func(e sse) bool { return e.name == "note_from_elsewhere" })
	}()
	// Written once the stream waits, and again until it is seen: the
	// stream may open after the first.
	data, _ := json.Marshal(map[string]string{"name": "note_from_elsewhere"})
	row := []store.Observation{{Time: time.Now(), Name: "note_from_elsewhere", Scope: scope.Scope{SessionID: "s"}, Data: data}}
	if err := other.AppendObservations(t.Context(), row); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if len(got) == 0 || !strings.Contains(got[len(got)-1].name, "elsewhere") {
		t.Fatalf("the stream brought %v", got)
	}
}
