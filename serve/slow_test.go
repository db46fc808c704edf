package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
)

// A client that stops reading its stream is cut off once a write has
// waited WriteTimeout, and its place is free again; the rows stay for it
// to reconnect to.
func TestSlowClientIsCutOff(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{MaxStreams: 1, WriteTimeout: 200 * time.Millisecond})
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	rows := f.app.Store().(store.Observations)
	big := json.RawMessage(fmt.Sprintf(`{"name":"hook_message","message":%q}`, strings.Repeat("x", 16<<10)))
	batch := make([]store.Observation, 256)
	for i := range batch {
		batch[i] = store.Observation{Time: time.Now(), Name: "hook_message", Scope: scope.Scope{SessionID: "s"}, Data: big}
	}
	for range 8 { // 2,048 rows of 16 KiB: more than any socket holds
		if err := rows.AppendObservations(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/sessions/s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", strings.TrimPrefix(f.http.URL, "http://"), token)
	// Read the status line only, then stop reading.
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("the slow client's stream: %q, %v", status, err)
	}
	if code, _ := f.do("GET", "/v1/sessions/s/events?follow=false", ""); code != 503 {
		t.Fatalf("a second stream while the slow one holds the only place: %d", code)
	}
	deadline := time.Now().Add(time.Minute)
	for f.srv.Streams() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow client was never cut off")
		}
		time.Sleep(10 * time.Millisecond)
	}
	all, err := rows.Observations(t.Context(), store.ObservationFilter{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	after := all[len(all)-49].Seq
	evs := f.events(fmt.Sprintf("/v1/sessions/s/events?follow=false&after=%d", after), "", nil)
	if len(evs) != 48 || evs[0].id != all[len(all)-48].Seq {
		t.Errorf("after the slow client, from %d: %d events", after, len(evs))
	}
}
