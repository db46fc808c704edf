package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tui"
)

// modelNote is /model: the provider and model, and how to choose another.
func (c *chat) modelNote() string {
	return "Model: " + c.model + "\n" +
		"/model NAME uses another model of the provider for the next turns of this session (an alias such as sonnet, opus or haiku stands for\n" +
		"what the settings' \"modelAliases\" or the provider's table say). Another provider: --provider, --model, --base-url when you open the chat."
}

// switchModel is /model NAME: the session's next turns use the model.
func (c *chat) switchModel(ctx context.Context, name string) {
	if c.running > 0 || len(c.backlog) > 0 {
		c.con.note("A turn is running: /model once it has ended.")
		return
	}
	m := c.app.Model()
	if m.Provider == "" || m.Provider == app.ScriptProvider {
		c.con.note("The scripted model has no other model to switch to.")
		return
	}
	if strings.ContainsAny(name, " \t") {
		c.con.note(fmt.Sprintf("✗ %q is not a model name.", name))
		return
	}
	c.ls.SetModel(name)
	shown := name
	if real, ok := c.ls.Runtime().Definition().ModelAliases[name]; ok && real != name {
		shown = name + " (" + real + ")"
	}
	c.model = m.Provider + " " + shown
	c.con.note("Model: " + c.model + ", from the next turn of this session on.")
	c.showStatus(ctx)
}

// permissionsNote is /permissions: the mode, the rules in force and the
// grants of [a] answers, numbered for /permissions revoke.
func (c *chat) permissionsNote(ctx context.Context) string {
	cfg := c.app.Config()
	rules, err := c.app.Settings().Rules()
	if err != nil {
		return "✗ the settings' rules: " + err.Error()
	}
	extra, err := policy.ParseRules(cfg.Allow, cfg.Deny, cfg.Ask)
	if err != nil {
		return "✗ the flags' rules: " + err.Error()
	}
	mode := cfg.Mode
	if mode == "" {
		mode = c.app.Settings().Mode()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Permission mode: %s (--permission-mode, or the settings' defaultMode)\n", mode)
	for _, l := range []struct {
		name       string
		from, flag []policy.Rule
	}{{"deny", rules.Deny, extra.Deny}, {"ask", rules.Ask, extra.Ask}, {"allow", rules.Allow, extra.Allow}} {
		var names []string
		for _, r := range l.from {
			names = append(names, r.String())
		}
		for _, r := range l.flag {
			names = append(names, r.String()+" (--"+l.name+")")
		}
		if len(names) == 0 {
			names = []string{"none"}
		}
		fmt.Fprintf(&b, "  %-6s %s\n", l.name, strings.Join(names, ", "))
	}
	agentRules, sessionRules, err := c.grants(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "✗ the grants: %v\n", err)
	case len(agentRules)+len(sessionRules) == 0:
		b.WriteString("  granted none (an [a] answer grants an allow rule for the rest of this session)\n")
	default:
		b.WriteString("  granted (by [a] answers; /permissions revoke N takes one back):\n")
		n := 0
		for _, l := range []struct {
			rules []string
			scope string
		}{{sessionRules, "this session"}, {agentRules, "every session of this agent here"}} {
			for _, r := range l.rules {
				n++
				fmt.Fprintf(&b, "    %d. %s (%s)\n", n, r, l.scope)
			}
		}
	}
	b.WriteString("Deny beats ask beats allow.")
	return b.String()
}

// grants returns what was granted for every session of the chat's agent
// and for its session.
func (c *chat) grants(ctx context.Context) (agentRules, sessionRules []string, err error) {
	g := c.app.Grants()
	if g == nil {
		return nil, nil, nil
	}
	return g.Granted(ctx, c.app.Runtime().ID(), c.ls.ID())
}

// revokeGrant is /permissions revoke N (or RULE): the grant taken back.
func (c *chat) revokeGrant(ctx context.Context, arg string) string {
	what, ok := strings.CutPrefix(arg, "revoke")
	what = strings.TrimSpace(what)
	if !ok || what == "" {
		return "Usage: /permissions revoke N (a grant's number in /permissions), or /permissions revoke RULE"
	}
	agentRules, sessionRules, err := c.grants(ctx)
	if err != nil {
		return "✗ the grants: " + err.Error()
	}
	all := append(slices.Clone(sessionRules), agentRules...)
	rule := what
	if n, err := strconv.Atoi(what); err == nil {
		if n < 1 || n > len(all) {
			return fmt.Sprintf("✗ no grant %d: /permissions lists %d", n, len(all))
		}
		rule = all[n-1]
	}
	removed, err := c.app.Grants().Revoke(ctx, c.app.Runtime().ID(), c.ls.ID(), rule)
	switch {
	case err != nil:
		return "✗ revoking " + rule + ": " + err.Error()
	case !removed:
		return fmt.Sprintf("✗ %s is not granted here: /permissions lists the grants", rule)
	}
	return "Revoked " + rule + ": the calls it allowed are asked about again."
}

// resumeNote is /resume: the workspace's other sessions, most recently
// active first, and the command that opens one.
func (c *chat) resumeNote(ctx context.Context) string {
	ss, err := c.app.Store().Sessions(ctx, store.Filter{})
	if err != nil {
		return "✗ listing the sessions: " + err.Error()
	}
	var b strings.Builder
	n := 0
	for _, s := range ss {
		if s.ID == c.ls.ID() {
			continue
		}
		if n == 10 {
			fmt.Fprintf(&b, "  … and %d more: 'orca sessions' lists them all\n", len(ss)-1-n)
			break
		}
		if n == 0 {
			b.WriteString("The workspace's other sessions, most recently active first:\n")
		}
		n++
		fmt.Fprintf(&b, "  %s  %s  %s  %s\n", s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"), tui.Plural(int(s.Turns), "turn"), tui.OneLine(s.LastPrompt, 50))
	}
	if n == 0 {
		return "No other session in this workspace."
	}
	b.WriteString("Go on in one with /resume ID")
	if cmd := c.opts.ResumeCommand; cmd != nil {
		b.WriteString(" (or, later: " + cmd("ID") + ")")
	}
	return b.String()
}

// resume is /resume ID: the chat goes on in session id, which must exist;
// the session it leaves is kept, and the earlier exchange of id is shown.
func (c *chat) resume(ctx context.Context, id string) {
	if c.running > 0 || len(c.backlog) > 0 {
		c.con.note("A turn is running: /resume once it has ended.")
		return
	}
	if id == c.ls.ID() {
		c.con.note("This is session " + id + " already.")
		return
	}
	if _, err := c.app.Store().Session(ctx, id); err != nil {
		c.con.note(fmt.Sprintf("✗ no session %s in this workspace: /resume lists them.", id))
		return
	}
	ls, err := c.app.Session(ctx, app.SessionOptions{ID: id, OnEvent: c.onEvent})
	if err != nil {
		c.con.note("✗ " + err.Error())
		return
	}
	old := c.goOnIn(ctx, ls)
	msg := fmt.Sprintf("Session %s is kept%s. Going on in session %s", old.ID(), c.resumeHint(old.ID()), ls.ID())
	if t, err := ls.Totals(ctx); err == nil {
		msg += fmt.Sprintf(" (%s so far)", tui.Plural(int(t.Turns), "turn"))
	}
	c.con.note(msg + ".")
	if r := recap(ls.Transcript()); r != "" {
		c.con.note(r)
	}
	c.showStatus(ctx)
}

// clear is /clear: the session ends (as Claude Code's /clear ends it,
// reason "clear"), and the chat goes on in a new one, whose SESSION_START
// has the source "clear".
func (c *chat) clear(ctx context.Context) {
	if c.running > 0 || len(c.backlog) > 0 {
		c.con.note("A turn is running: /clear once it has ended.")
		return
	}
	old := c.ls
	ls, err := c.app.Session(ctx, app.SessionOptions{OnEvent: c.onEvent, Cleared: true})
	if err != nil {
		c.con.note("✗ a new session: " + err.Error())
		return
	}
	old.End(context.WithoutCancel(ctx), session.EndClear)
	c.stopTasks(old)
	c.ls = ls
	c.con.note(fmt.Sprintf("Session %s is kept%s. A new session: %s.", old.ID(), c.resumeHint(old.ID()), ls.ID()))
	c.showStatus(ctx)
}

// resumeHint is " (the command that opens session id again)", or "" when
// the program gave none.
func (c *chat) resumeHint(id string) string {
	if c.opts.ResumeCommand == nil {
		return ""
	}
	return " (" + c.opts.ResumeCommand(id) + ")"
}

// goOnIn makes ls the chat's session, and returns the one it leaves:
// ended (the store keeps it), its background tasks stopped.
func (c *chat) goOnIn(ctx context.Context, ls *session.LiveSession) *session.LiveSession {
	old := c.ls
	old.End(context.WithoutCancel(ctx), session.EndOther)
	c.stopTasks(old)
	c.ls = ls
	return old
}

// stopTasks stops the background tasks of session ls, which the chat
// leaves, and says which: nothing could read or stop them afterwards.
func (c *chat) stopTasks(ls *session.LiveSession) {
	if stopped := ls.StopTasks(); len(stopped) > 0 {
		c.con.note(fmt.Sprintf("Stopped what session %s left running in the background: %s.", ls.ID(), tui.Tasks(stopped)))
	}
}

// rewindUsage says how /rewind is used.
const rewindUsage = "Usage: /rewind (the turns), /rewind N (put the workspace back as it was before turn N), /rewind N force (files changed since too); " +
	"add conversation (/rewind N conversation) to go on from before turn N too, in a new session"

// rewindTo is /rewind [N [force] [conversation]]: the session's turns that
// changed the workspace, or the workspace put back as it was before turn
// N (as orca rewind does). With conversation, the conversation too: the
// chat goes on in a branch of the session as it was before turn N (see
// app.Rewind), the session being kept as it is.
func (c *chat) rewindTo(ctx context.Context, arg string) {
	if c.running > 0 || len(c.backlog) > 0 {
		c.con.note("A turn is running: /rewind once it has ended.")
		return
	}
	st := c.app.Checkpoints()
	if st == nil {
		c.con.note("This chat keeps no checkpoints (--no-checkpoints): there is nothing to rewind.")
		return
	}
	id := c.ls.ID()
	f := strings.Fields(arg)
	var b strings.Builder
	if len(f) == 0 {
		cps, err := st.Checkpoints(id)
		if err != nil {
			c.con.note("✗ " + err.Error())
			return
		}
		tui.WriteCheckpoints(&b, id, cps, "/rewind N")
		c.con.note(strings.TrimRight(b.String(), "\n"))
		return
	}
	var opts app.RewindOptions
	for _, w := range f[1:] {
		switch {
		case w == "force" && !opts.Force:
			opts.Force = true
		case w == "conversation" && !opts.Conversation:
			opts.Conversation = true
		default:
			c.con.note(rewindUsage)
			return
		}
	}
	r, err := app.Rewind(ctx, st, c.app.Store(), id, f[0], opts)
	switch {
	case errors.Is(err, app.ErrNoCheckpoint):
		c.con.note("✗ " + err.Error() + ": /rewind lists them")
		return
	case errors.Is(err, app.ErrNoTurn):
		c.con.note("✗ " + err.Error() + ": the conversation cannot be rewound (/rewind " + f[0] + " puts the files back alone)")
		return
	case err != nil:
		c.con.note("✗ " + err.Error())
		return
	case r.Stopped:
		again := "/rewind " + f[0] + " force"
		if opts.Conversation {
			again += " conversation"
		}
		c.con.note("✗ " + tui.RewindStopped(r.Restored, again))
		return
	}
	tui.WriteRewound(&b, r.Restored, r.Undone[0].ID)
	if !opts.Conversation {
		b.WriteString("The conversation is as it was: tell the model what you undid.")
		c.con.note(b.String())
		return
	}
	ls, err := c.app.Session(ctx, app.SessionOptions{ID: r.Branch.ID, OnEvent: c.onEvent})
	if err != nil {
		fmt.Fprintf(&b, "The conversation as it was before turn %s is session %s, but the chat cannot go on in it (%v): /resume %s goes on in it%s.",
			r.Undone[0].ID, r.Branch.ID, err, r.Branch.ID, c.resumeHint(r.Branch.ID))
		c.con.note(b.String())
		return
	}
	old := c.goOnIn(ctx, ls)
	fmt.Fprintf(&b, "The conversation is as it was before turn %s: going on in session %s, a branch of session %s, which is kept as it was%s.",
		r.Undone[0].ID, ls.ID(), old.ID(), c.resumeHint(old.ID()))
	c.con.note(b.String())
	if r := recap(ls.Transcript()); r != "" {
		c.con.note(r)
	}
	c.showStatus(ctx)
}
