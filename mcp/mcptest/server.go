package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the implementation name the server gives in its initialize
// answer.
const Name = "orca-mcp-faults"

// Options are what a server needs besides its faults. The zero value is
// a server without the note tools, logging nothing.
type Options struct {
	// Dir is the folder write_note and delete_note work in, and the notes
	// resources read from. Without it those two tools and the notes
	// resources are not offered.
	Dir string

	// Logger, if set, is told each fault as it fires (and when a hung call
	// ends). The command logs to standard error.
	Logger *slog.Logger

	// OnCrash, if set, is called on the crashing call (CrashOnCall) before
	// the connection is cut; the command sets it to exit the process. If it
	// returns, the crash goes on as Faults.CrashOnCall describes.
	OnCrash func()
}

// The tools' inputs and outputs.
type (
	echoIn struct {
		Text string `json:"text" jsonschema:"the text to return"`
	}
	addIn struct {
		A float64 `json:"a" jsonschema:"the first addend"`
		B float64 `json:"b" jsonschema:"the second addend"`
	}
	addOut struct {
		Sum float64 `json:"sum" jsonschema:"a + b"`
	}
	counterOut struct {
		Call int `json:"call" jsonschema:"the number of this call: how many tools/call the server has received, this one included"`
	}
	noteIn struct {
		Name string `json:"name" jsonschema:"the note's file name in the server's notes folder: a plain name, no slash"`
		Text string `json:"text" jsonschema:"the line to append"`
	}
	noteOut struct {
		Lines int `json:"lines" jsonschema:"how many lines the note has now"`
	}
	deleteIn struct {
		Name string `json:"name" jsonschema:"the note's file name in the server's notes folder: a plain name, no slash"`
	}
	deleteOut struct {
		Deleted bool `json:"deleted" jsonschema:"whether there was a note to delete"`
	}
	sleepIn struct {
		Seconds float64 `json:"seconds" jsonschema:"how long to wait, in seconds"`
		Steps   int     `json:"steps,omitempty" jsonschema:"how many progress notifications to send while waiting, one at the end of each equal part of the wait (default 1)"`
	}
	logIn struct {
		Level string `json:"level" jsonschema:"the level: debug, info, notice, warning, error, critical, alert or emergency"`
		Text  string `json:"text" jsonschema:"the message"`
		Count int    `json:"count,omitempty" jsonschema:"how many times to send it, numbered from 1 when more than once (default 1)"`
	}
)

func ptr[T any](v T) *T { return &v }

// NewServer returns the SDK's server with the test tools, resources and
// prompt of this package (see the package doc) and the faults f.
//
// Served by Serve, ServeStdio or a Handler, every fault happens as Faults
// says. Served otherwise (Server.Run or Connect on a transport of your
// own), this package cannot reach the connection: CrashOnCall hangs the
// call instead, and DropSessionOnCall is ignored.
func NewServer(f Faults, o Options) *mcp.Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: "v1"}, &mcp.ServerOptions{
		Instructions: "A test server of orca's: its tools have clear effects, and it fails on purpose as its flags say.",
	})
	ft := &faults{f: f, onCrash: o.OnCrash, log: log}
	ft.change = func() {
		s.RemoveTools("add")
		mcp.AddTool(s, &mcp.Tool{
			Name:        "reverse",
			Description: "Returns its text reversed. Appears when the tool list changes (ChangeToolsOnCall).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			r := []rune(in.Text)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return text(string(r)), nil, nil
		})
	}
	s.AddReceivingMiddleware(ft.middleware)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Returns its text unchanged.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add",
		Description: "Adds two numbers; the sum is in the structured content.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "counter",
		Description: "Returns the number of this call: how many tools/call the server has received, this one included. Changes nothing.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, counterOut, error) {
		return nil, counterOut{Call: callNumber(ctx)}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name: "sleep",
		Description: "Waits the seconds given, then returns how long it slept. With a progressToken it reports its progress, steps times. " +
			"A call cancelled while it waits ends at once, and the server logs it.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		return sleep(ctx, req, in, log)
	})
	mcp.AddTool(s, &mcp.Tool{
		Name: "log",
		Description: "Sends the client a log message (notifications/message) at the level given, count times, " +
			"as the client's logging level lets it; returns how many it sent.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in logIn) (*mcp.CallToolResult, any, error) {
		n := max(in.Count, 1)
		for i := 1; i <= n; i++ {
			msg := in.Text
			if n > 1 {
				msg = fmt.Sprintf("%s %d", in.Text, i)
			}
			//lint:ignore SA1019 logging is deprecated in protocol 2026-07-28 (SEP-2577), and servers use it meanwhile: the tool is there to test clients with it
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(in.Level), Logger: Name, Data: msg}); err != nil {
				return nil, nil, fmt.Errorf("log: message %d: %w", i, err)
			}
		}
		return text(fmt.Sprintf("sent %d", n)), nil, nil
	})
	if o.Dir != "" {
		addNotes(s, o.Dir)
	}

	s.AddResource(&mcp.Resource{
		URI:         "mcptest://faults",
		Name:        "faults",
		Description: "The faults this server was started with, as JSON.",
		MIMEType:    "application/json",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		b, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Asks the model to greet someone.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name := req.Params.Arguments["name"]
		if name == "" {
			return nil, errors.New(`greet: the argument "name" is required`)
		}
		return &mcp.GetPromptResult{
			Description: "A greeting for " + name,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + name + "."}}},
		}, nil
	})
	return s
}

// sleep is the sleep tool: it waits in.Seconds, in in.Steps parts, each
// ended by a progress notification when the client asked for progress.
// Cancelled (notifications/cancelled, or the connection gone), it ends at
// once and says so in the log.
func sleep(ctx context.Context, req *mcp.CallToolRequest, in sleepIn, log *slog.Logger) (*mcp.CallToolResult, any, error) {
	if in.Seconds < 0 || in.Seconds > 24*3600 {
		return nil, nil, fmt.Errorf("sleep: seconds %v: want 0 to a day", in.Seconds)
	}
	steps := max(in.Steps, 1)
	part := time.Duration(in.Seconds * float64(time.Second) / float64(steps))
	token := req.Params.GetProgressToken()
	for i := 1; i <= steps; i++ {
		if err := wait(ctx, part); err != nil {
			log.Info("mcptest: sleep cut short", "call", callNumber(ctx), "step", i, "why", err)
			return nil, nil, fmt.Errorf("mcptest: sleep cut short: %w", err)
		}
		if token != nil {
			p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(steps), Message: fmt.Sprintf("step %d of %d", i, steps)}
			if err := req.Session.NotifyProgress(ctx, p); err != nil {
				return nil, nil, fmt.Errorf("sleep: progress %d: %w", i, err)
			}
		}
	}
	return text(fmt.Sprintf("slept %vs", in.Seconds)), nil, nil
}

// addNotes adds write_note, delete_note and the notes resources, confined
// to dir with os.Root.
func addNotes(s *mcp.Server, dir string) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_note",
		Description: "Appends a line to a note, a file in the server's notes folder, creating it if need be. Calling it twice appends twice.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, noteOut, error) {
		if err := plainName(in.Name); err != nil {
			return nil, noteOut{}, err
		}
		if strings.Contains(in.Text, "\n") {
			return nil, noteOut{}, errors.New("write_note: text must be one line")
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, noteOut{}, err
		}
		defer root.Close()
		f, err := root.OpenFile(in.Name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, noteOut{}, err
		}
		_, err = f.WriteString(in.Text + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, noteOut{}, err
		}
		b, err := root.ReadFile(in.Name)
		if err != nil {
			return nil, noteOut{}, err
		}
		return nil, noteOut{Lines: strings.Count(string(b), "\n")}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Description: "Deletes a note from the server's notes folder; deleting a note that is not there does nothing.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, deleteOut, error) {
		if err := plainName(in.Name); err != nil {
			return nil, deleteOut{}, err
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, deleteOut{}, err
		}
		defer root.Close()
		err = root.Remove(in.Name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, deleteOut{Deleted: false}, nil
		}
		if err != nil {
			return nil, deleteOut{}, err
		}
		return nil, deleteOut{Deleted: true}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "mcptest://notes/{name}",
		Name:        "note",
		Description: "A note write_note wrote.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		name := strings.TrimPrefix(uri, "mcptest://notes/")
		if plainName(name) != nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		b, err := root.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: string(b)}}}, nil
	})
}

// plainName accepts a file name of the notes folder itself: no folders.
func plainName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("note name %q: want a plain file name", name)
	}
	return nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
