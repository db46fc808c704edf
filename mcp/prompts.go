package mcp

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/tool"
)

// prompts are the servers' prompts as the user's commands, as Claude Code
// offers them: "/mcp__<server>__<prompt> arguments" as a turn's input is
// the prompt, got from the server (prompts/get), in its place. The
// arguments are given in the order the prompt declares them, separated
// by spaces ("double quotes" keep spaces in one); the last declared
// argument takes the rest of the line.
type prompts struct{ s *set }

// Commands implements tool.Expander: the prompts of every server, as last
// listed (a server's notifications/prompts/list_changed lists them again).
func (p prompts) Commands() []tool.Command {
	var out []tool.Command
	for _, c := range p.s.conns {
		c.mu.Lock()
		ps := c.prompts
		c.mu.Unlock()
		for _, pr := range ps {
			out = append(out, tool.Command{Name: ToolName(c.srv.Name, pr.Name), Description: cmp.Or(pr.Description, pr.Title), Args: usage(pr)})
		}
	}
	return out
}

// usage is "<required> [optional]" for a prompt's arguments.
func usage(pr *sdk.Prompt) string {
	var parts []string
	for _, a := range pr.Arguments {
		if a == nil {
			continue
		}
		if a.Required {
			parts = append(parts, "<"+a.Name+">")
		} else {
			parts = append(parts, "["+a.Name+"]")
		}
	}
	return strings.Join(parts, " ")
}

// Expand implements tool.Expander.
func (p prompts) Expand(ctx context.Context, input string) (*tool.Expansion, error) {
	name, args, ok := tool.SplitCommand(input)
	if !ok || !strings.HasPrefix(name, "mcp__") {
		return nil, nil
	}
	c, pr := p.find(name)
	if pr == nil {
		if c == nil {
			return nil, nil
		}
		if st := c.status(); st.State != StateUp {
			return nil, fmt.Errorf("the MCP server %s is not available (%s: %s), so its prompts are not known", c.srv.Name, st.State, st.Error)
		}
		return nil, nil
	}
	values, err := bind(pr, args)
	if err != nil {
		return nil, fmt.Errorf("%w; usage: /%s %s", err, name, usage(pr))
	}
	var res *sdk.GetPromptResult
	err = c.request(ctx, "prompts/get", func(ctx context.Context, session *sdk.ClientSession) error {
		var err error
		res, err = session.GetPrompt(ctx, &sdk.GetPromptParams{Name: pr.Name, Arguments: values})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &tool.Expansion{Text: render(res)}, nil
}

// find returns the prompt the command name names, and its server; for a
// name of a server's form whose prompt is not known, the server alone.
func (p prompts) find(name string) (*conn, *sdk.Prompt) {
	var server *conn
	for _, c := range p.s.conns {
		prefix := ToolName(c.srv.Name, "")
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		c.mu.Lock()
		ps := c.prompts
		c.mu.Unlock()
		for _, pr := range ps {
			if ToolName(c.srv.Name, pr.Name) == name {
				return c, pr
			}
		}
		if server == nil {
			server = c
		}
	}
	return server, nil
}

// bind gives the words of args to the prompt's arguments, in order.
func bind(pr *sdk.Prompt, args string) (map[string]string, error) {
	var declared []*sdk.PromptArgument
	for _, a := range pr.Arguments {
		if a != nil {
			declared = append(declared, a)
		}
	}
	words, err := splitWords(args)
	if err != nil {
		return nil, err
	}
	if len(declared) == 0 && len(words) > 0 {
		return nil, fmt.Errorf("the prompt takes no arguments, and was given %q", strings.TrimSpace(args))
	}
	values := map[string]string{}
	for i, a := range declared {
		switch {
		case i >= len(words):
			if a.Required {
				return nil, fmt.Errorf("the argument %q is required (%s)", a.Name, cmp.Or(a.Description, "no description"))
			}
		case i == len(declared)-1:
			values[a.Name] = strings.Join(words[i:], " ")
		default:
			values[a.Name] = words[i]
		}
	}
	return values, nil
}

// splitWords splits s at spaces, keeping what "double quotes" enclose in
// one word.
func splitWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		quoted bool
		in     bool
	)
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case !quoted && (r == ' ' || r == '\t' || r == '\n'):
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("a quote is not closed in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// render is the prompt's messages as one input: the text of a prompt of
// user messages only as it is; messages of other roles each under its
// role, so that the model reads the conversation the prompt sets up.
func render(res *sdk.GetPromptResult) string {
	allUser := true
	for _, m := range res.Messages {
		if m != nil && m.Role != "user" {
			allUser = false
		}
	}
	var b strings.Builder
	for _, m := range res.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if !allUser {
			fmt.Fprintf(&b, "[%s]\n", m.Role)
		}
		b.WriteString(contentText(m.Content))
	}
	if b.Len() == 0 {
		return cmp.Or(res.Description, "(the prompt is empty)")
	}
	return b.String()
}

var _ tool.Expander = prompts{}
