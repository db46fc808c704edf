package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/store"
)

// FromOptions say which session becomes a case, and where its files are.
type FromOptions struct {
	// Session is the session's id. Required.
	Session string
	// Turn is the turn to take (from 1); 0 takes them all.
	Turn int
	// Workspace is the session's workspace: the files its calls named are
	// read there, as they were before the turn (Checkpoints, where they
	// changed since).
	Workspace string
	// Checkpoints are the workspace's (orca run keeps them): what the
	// turns changed, so that the files are put in the case as they were.
	Checkpoints *rewind.Store
	// Name names the case (the session's id and turn if empty).
	Name string
}

// maxFile is the largest file a case takes; maxFiles all of them.
const (
	maxFile  = 256 << 10
	maxFiles = 4 << 20
)

// FromSession makes a case of a session's turns, as the store keeps
// them: each turn's prompt, the model's responses (to replay), the
// files its calls named as they were before (in the case's files), and
// as expected what happened — the tool calls in order with their
// arguments, their results, how the turn ended, its answer. Run on
// replay, the case passes as long as the agent does what it did; it
// fails when a tool's result no longer comes out the same.
func FromSession(ctx context.Context, st store.Store, o FromOptions) (*Case, []string, error) {
	recs, err := st.Records(ctx, o.Session, store.RecordFilter{})
	if err != nil {
		return nil, nil, err
	}
	var order []string
	byTurn := map[string][]store.Record{}
	for _, r := range recs {
		if r.Kind != store.KindMessage {
			continue
		}
		if _, ok := byTurn[r.TurnID]; !ok {
			order = append(order, r.TurnID)
		}
		byTurn[r.TurnID] = append(byTurn[r.TurnID], r)
	}
	if len(order) == 0 {
		return nil, nil, fmt.Errorf("session %s has no turns", o.Session)
	}
	picked := order
	if o.Turn != 0 {
		if o.Turn < 0 || o.Turn > len(order) {
			return nil, nil, fmt.Errorf("session %s has %d turns: --turn %d is none of them", o.Session, len(order), o.Turn)
		}
		picked = order[o.Turn-1 : o.Turn]
	}
	ended := turnEnds(ctx, st, o.Session)
	c := &Case{Name: o.Name, Files: map[string]string{}}
	if c.Name == "" {
		c.Name = o.Session
		if o.Turn != 0 {
			c.Name = fmt.Sprintf("%s turn %d", o.Session, o.Turn)
		}
	}
	var notes []string
	named := map[string]bool{}
	for _, id := range picked {
		t, paths, err := turnOf(byTurn[id], ended[id])
		if err != nil {
			return nil, nil, fmt.Errorf("turn %s: %w", id, err)
		}
		c.Turns = append(c.Turns, t)
		for _, p := range paths {
			named[p] = true
		}
	}
	// The files, as they were before the first turn taken.
	paths := make([]string, 0, len(named))
	for p := range named {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	total := 0
	for _, p := range paths {
		rel, b, exists, err := before(o, order, picked[0], p)
		if _, dup := c.Files[rel]; dup {
			continue
		}
		switch {
		case err != nil:
			notes = append(notes, fmt.Sprintf("%s: not taken: %v", p, err))
		case !exists:
		case len(b) > maxFile || total+len(b) > maxFiles:
			notes = append(notes, fmt.Sprintf("%s: not taken: %d bytes, over what a case keeps", p, len(b)))
		case !utf8.Valid(b):
			notes = append(notes, fmt.Sprintf("%s: not taken: not text (put it in the case's workspace folder)", p))
		default:
			c.Files[rel] = string(b)
			total += len(b)
		}
	}
	if len(c.Files) == 0 {
		c.Files = nil
	}
	// The workspace's own path, wherever it is in the case, stands for
	// the case's workspace when it runs.
	if root := o.Workspace; root != "" {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, nil, err
		}
		quoted, _ := json.Marshal(root)
		b = bytes.ReplaceAll(b, quoted[1:len(quoted)-1], []byte(WorkspaceVar))
		c = &Case{}
		if err := json.Unmarshal(b, c); err != nil {
			return nil, nil, err
		}
	}
	return c, notes, nil
}

// WorkspaceVar, anywhere in a case, is the case's workspace when it runs
// (FromSession writes it where the session's workspace was named).
const WorkspaceVar = "${WORKSPACE}"

// expand is c with WorkspaceVar made ws.
func expand(c *Case, ws string) (*Case, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, []byte(WorkspaceVar)) {
		return c, nil
	}
	quoted, _ := json.Marshal(ws)
	b = bytes.ReplaceAll(b, []byte(WorkspaceVar), quoted[1:len(quoted)-1])
	out := &Case{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	out.Extra = c.Extra // scorers, not data
	return out, nil
}

// turnOf is one turn of the session as a case's turn, and the workspace
// paths its calls named.
func turnOf(recs []store.Record, end turnEnd) (Turn, []string, error) {
	var t Turn
	var calls []CallSpec
	var results []ResultMatch
	var paths []string
	count := map[string]int{}
	answer := ""
	for i, r := range recs {
		m := r.Message
		switch {
		case i == 0:
			if m.Role != llm.RoleUser || len(m.Content) == 0 || m.Content[0].Type != llm.BlockText {
				return t, nil, errors.New("it does not start with the user's words")
			}
			t.Prompt = m.Content[0].Text
		case m.Role == llm.RoleAssistant:
			resp := script.Response{Text: strings.TrimSpace(m.Text())}
			for _, u := range m.ToolUses() {
				resp.ToolCalls = append(resp.ToolCalls, script.ToolCall{ID: u.ID, Name: u.Name, Input: u.Input})
				var args map[string]json.RawMessage
				_ = json.Unmarshal(u.Input, &args)
				calls = append(calls, CallSpec{Tool: u.Name, Args: args})
				for _, key := range []string{"file_path", "notebook_path", "path"} {
					var p string
					if json.Unmarshal(args[key], &p) == nil && p != "" {
						paths = append(paths, p)
					}
				}
			}
			if len(resp.ToolCalls) == 0 {
				answer = resp.Text
			}
			t.Responses = append(t.Responses, resp)
		case m.Role == llm.RoleUser:
			for _, b := range m.Content {
				if b.Type != llm.BlockToolResult {
					continue
				}
				name := toolOf(recs[:i], b.ToolUseID)
				isErr := b.IsError
				text := b.Content
				results = append(results, ResultMatch{Tool: name, Index: count[name], Text: Text{Equals: &text}, IsError: &isErr})
				count[name]++
			}
		}
	}
	t.Expect.Trajectory = &Trajectory{Match: "exact", Calls: calls}
	if len(calls) == 0 {
		t.Expect.Trajectory.Calls = []CallSpec{}
	}
	t.Expect.Results = results
	if end.stop != "" {
		t.Expect.StopReason = end.stop
	} else if answer != "" {
		t.Expect.StopReason = "answered"
	}
	if t.Expect.StopReason == "answered" {
		a := answer
		if end.answer != "" {
			a = end.answer
		}
		t.Expect.Answer = &Text{Equals: &a}
	}
	return t, paths, nil
}

// toolOf is the tool of the call id among recs.
func toolOf(recs []store.Record, id string) string {
	for i := len(recs) - 1; i >= 0; i-- {
		for _, u := range recs[i].Message.ToolUses() {
			if u.ID == id {
				return u.Name
			}
		}
	}
	return ""
}

type turnEnd struct{ stop, answer string }

// turnEnds are how the session's turns ended, from its observation rows
// (none if the store keeps none).
func turnEnds(ctx context.Context, st store.Store, session string) map[string]turnEnd {
	out := map[string]turnEnd{}
	rows, ok := st.(store.Observations)
	if !ok {
		return out
	}
	obs, err := rows.Observations(ctx, store.ObservationFilter{SessionID: session})
	if err != nil {
		return out
	}
	for _, o := range obs {
		if o.Name != "turn_completed" || o.Depth != 0 {
			continue
		}
		var d struct {
			StopReason string `json:"stop_reason"`
			Answer     string `json:"answer"`
		}
		if json.Unmarshal(o.Data, &d) == nil {
			out[o.TurnID] = turnEnd{d.StopReason, d.Answer}
		}
	}
	return out
}

// before is file p of the workspace as it was before turn first: as it is
// now, or as the checkpoints of first and the turns after it say it was.
func before(o FromOptions, order []string, first, p string) (string, []byte, bool, error) {
	rel := p
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(o.Workspace, p)
		if err != nil || !filepath.IsLocal(r) {
			return p, nil, false, errors.New("outside the workspace")
		}
		rel = r
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	b, exists, err := beforeRel(o, order, first, rel)
	return rel, b, exists, err
}

func beforeRel(o FromOptions, order []string, first, rel string) ([]byte, bool, error) {
	if rs := o.Checkpoints; rs != nil {
		cps, err := rs.Checkpoints(o.Session)
		if err == nil {
			from := slices.Index(order, first)
			// The earliest change of p by first or a later turn says what
			// it was before first.
			for _, id := range order[from:] {
				for _, cp := range cps {
					if cp.ID != id {
						continue
					}
					for _, ch := range cp.Changes {
						if ch.Path != rel {
							continue
						}
						if ch.Before == nil {
							return nil, false, nil
						}
						if !ch.Before.Mode.IsRegular() {
							return nil, false, errors.New("not a file")
						}
						if !ch.Kept() {
							return nil, false, errors.New("its content then was not kept")
						}
						b, err := rs.Content(ch.Before.Digest)
						return b, err == nil, err
					}
				}
			}
		}
	}
	info, err := os.Stat(filepath.Join(o.Workspace, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) || err == nil && info.IsDir() {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b, err := os.ReadFile(filepath.Join(o.Workspace, filepath.FromSlash(rel)))
	return b, err == nil, err
}
