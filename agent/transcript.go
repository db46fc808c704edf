package agent

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/orca-agent/orca/llm"
)

// transcripts keeps, for hooks, each conversation as a file in Claude
// Code's transcript shape (hook.Common.TranscriptPath): one JSON object
// per line, a user or assistant message each, with the fields its hook
// scripts read (type, message.role, message.content with its content
// blocks, uuid, parentUuid, sessionId, cwd, timestamp). A session's file
// is <dir>/<session>.jsonl; a fork's,
// <dir>/<session>/subagents/agent-<runtime>.jsonl, as Claude Code lays
// them out.
//
// The files follow the conversations: before a hook runs, the messages
// added since the last write are appended. A file is written anew the
// first time a process writes it (so a resumed session's file holds its
// whole history once) and, after a compaction shrank the conversation,
// goes on with a compact_boundary line and the compacted conversation.
// A file that cannot be written leaves the hook without a transcript
// path; the run goes on.
type transcripts struct {
	dir string
	mu  sync.Mutex
	// files are the files this process wrote, by path.
	files map[string]*transcriptFile
}

type transcriptFile struct {
	mu      sync.Mutex
	written int    // messages of the conversation in the file
	last    string // uuid of the last line
}

func newTranscripts(dir string) *transcripts {
	if dir == "" {
		return nil
	}
	return &transcripts{dir: dir, files: map[string]*transcriptFile{}}
}

// sessionPath is the file of the user's conversation of session.
func (ts *transcripts) sessionPath(session string) string {
	return filepath.Join(ts.dir, safeName(session)+".jsonl")
}

// lastPath is the file of session's conversation as its last turn left
// it, or "" if there is none yet.
func (ts *transcripts) lastPath(session string) string {
	if p := ts.sessionPath(session); fileExists(p) {
		return p
	}
	return ""
}

// forkPath is the file of the fork run by runtime in session.
func (ts *transcripts) forkPath(session, runtime string) string {
	return filepath.Join(ts.dir, safeName(session), "subagents", "agent-"+safeName(runtime)+".jsonl")
}

// replyLog is what the provider said of the turn's answers.
type replyLog struct {
	// replies are what the provider said of this turn's assistant
	// messages, by index in msgs (for the transcripts hooks read; nil
	// when the runtime keeps none).
	replies map[int]replyMeta
}

// replyMeta is what the provider said of one assistant message: the
// model that wrote it and its usage.
type replyMeta struct {
	model string
	usage llm.Usage
}

// sync brings the file at path up to msgs and returns path, or "" if it
// could not be written. meta gives what is known of the assistant
// message at an index of msgs (ok false: nothing).
func (ts *transcripts) sync(path, session, cwd string, msgs []llm.Message, meta func(i int) (replyMeta, bool)) (string, error) {
	ts.mu.Lock()
	f := ts.files[path]
	fresh := f == nil
	if fresh {
		f = &transcriptFile{}
		ts.files[path] = f
	}
	ts.mu.Unlock()

	f.mu.Lock()
	defer f.mu.Unlock()
	if !fresh && f.written == len(msgs) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("transcript for hooks: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if fresh {
		flags |= os.O_TRUNC
	}
	file, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return "", fmt.Errorf("transcript for hooks: %w", err)
	}
	w := bufio.NewWriter(file)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	line := func(v transcriptLine) error {
		v.SessionID, v.Cwd, v.Timestamp, v.Version, v.UserType = session, cwd, now, "orca", "external"
		v.UUID = uuid()
		if f.last != "" {
			v.ParentUUID = &f.last
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
		f.last = v.UUID
		return nil
	}
	start := f.written
	if len(msgs) < f.written {
		// Compacted: the conversation goes on from what is left of it.
		if err := line(transcriptLine{Type: "system", Subtype: "compact_boundary", Content: "Conversation compacted"}); err != nil {
			file.Close()
			return "", fmt.Errorf("transcript for hooks: %w", err)
		}
		start = 0
	}
	for i, m := range msgs[start:] {
		v := transcriptLine{Type: string(m.Role), Message: &transcriptMessage{Role: string(m.Role), Content: m.Content}}
		if m.Role == llm.RoleAssistant {
			v.Message.Type = "message"
			if rm, ok := meta(start + i); ok {
				v.Message.Model = rm.model
				v.Message.Usage = &transcriptUsage{InputTokens: rm.usage.InputTokens, OutputTokens: rm.usage.OutputTokens,
					CacheReadInputTokens: rm.usage.CacheReadTokens, CacheCreationInputTokens: rm.usage.CacheWriteTokens}
			}
		}
		if err := line(v); err != nil {
			file.Close()
			return "", fmt.Errorf("transcript for hooks: %w", err)
		}
	}
	err = w.Flush()
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("transcript for hooks: %w", err)
	}
	f.written = len(msgs)
	return path, nil
}

// transcriptLine is one line of a transcript file.
type transcriptLine struct {
	ParentUUID  *string            `json:"parentUuid"`
	IsSidechain bool               `json:"isSidechain"`
	UserType    string             `json:"userType"`
	Cwd         string             `json:"cwd"`
	SessionID   string             `json:"sessionId"`
	Version     string             `json:"version"`
	Type        string             `json:"type"`
	Subtype     string             `json:"subtype,omitempty"`
	Content     string             `json:"content,omitempty"`
	Message     *transcriptMessage `json:"message,omitempty"`
	UUID        string             `json:"uuid"`
	Timestamp   string             `json:"timestamp"`
}

type transcriptMessage struct {
	Type    string           `json:"type,omitempty"`
	Role    string           `json:"role"`
	Model   string           `json:"model,omitempty"`
	Content []llm.Block      `json:"content"`
	Usage   *transcriptUsage `json:"usage,omitempty"`
}

// transcriptUsage is a reply's usage with the Messages API's names.
type transcriptUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// uuid returns a random (version 4) UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
