package agent

import (
	"slices"
	"strconv"

	"github.com/orca-agent/orca/llm"
)

// callIDSet are the ids of the conversation's tool calls (made when the
// first answer with calls comes; see unique).
type callIDSet struct {
	ids map[string]struct{}
}

// unique gives each tool call of msg, the model's newest answer (not yet
// in msgs, the conversation), an id that no other call of the conversation has
// and that every provider takes (letters, digits, '_' and '-'). Servers
// do send none (orca's OpenAI client then numbers them from call_0 in
// every response), the same one for every call
// (xorbitsai/inference#4237), or one per position repeated in every
// response ("functions.Read:0"); sent back, such conversations are
// refused ("tool_use ids must be unique"), and orca would mix up what it
// keys by id: results, approvals, saved outputs, recovery. A call keeps
// its id when it is fine; otherwise it gets the id made of its safe
// characters (call when none), with _2, _3, … until it is new. msg's
// content is copied before a change: the client may still hold it.
func (s *callIDSet) unique(msgs []llm.Message, msg *llm.Message) {
	copied := false
	for i := range msg.Content {
		b := &msg.Content[i]
		if b.Type != llm.BlockToolUse {
			continue
		}
		if s.ids == nil {
			s.ids = make(map[string]struct{}, 8)
			for _, m := range msgs {
				for _, c := range m.Content {
					if c.Type == llm.BlockToolUse {
						s.ids[c.ID] = struct{}{}
					}
				}
			}
		}
		id := b.ID
		if _, used := s.ids[id]; used || !safeCallID(id) {
			id = s.fresh(id)
			if !copied {
				msg.Content = slices.Clone(msg.Content)
				b = &msg.Content[i]
				copied = true
			}
			b.ID = id
		}
		s.ids[id] = struct{}{}
	}
}

// fresh is the first unused id made of id's safe characters (call when
// it has none): that id itself, else it with _2, _3, ….
func (s *callIDSet) fresh(id string) string {
	base := []byte(id)
	for i, c := range base {
		if !safeCallIDByte(c) {
			base[i] = '_'
		}
	}
	name := string(base)
	if name == "" {
		name = "call"
	}
	fresh := name
	for n := 2; ; n++ {
		if _, used := s.ids[fresh]; !used {
			return fresh
		}
		fresh = name + "_" + strconv.Itoa(n)
	}
}

func safeCallID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !safeCallIDByte(id[i]) {
			return false
		}
	}
	return true
}

func safeCallIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}
