// Package mcptest is an MCP server that fails on purpose, for testing MCP
// clients — orca's and anyone's — and the setups around them. It is built
// on the official Go SDK (github.com/modelcontextprotocol/go-sdk) and
// imports nothing of orca's runtime; the command orca-mcp-faults
// (cmd/orca-mcp-faults, `go install
// github.com/orca-agent/orca/cmd/orca-mcp-faults@latest`) serves it over
// stdio or HTTP with the faults its flags name.
//
// # What it offers
//
// Tools, each with an input schema and annotations, chosen so that every
// effect can be checked and every trait mapping tested:
//
//	tool         effect                                          readOnly  destructive  idempotent
//	echo         returns its text                                true      -            true
//	add          returns {"sum": a+b} as structured content      true      -            true
//	counter      returns {"call": n}, the number of this call    true      -            false
//	sleep        waits; reports progress; logs a cancellation    true      -            true
//	log          sends log messages (notifications/message)      true      -            false
//	write_note   appends a line to a note file; returns {"lines"} false     false        false
//	delete_note  deletes a note file; returns {"deleted"}        false     true         true
//	reverse      returns its text reversed (only after the tool list changed, see ChangeToolsOnCall)
//
// sleep ({"seconds", "steps"}) is the slow call: it waits, sending
// notifications/progress steps times when the client gave a
// progressToken; cancelled, it ends at once and logs "mcptest: sleep cut
// short". log ({"level", "text", "count"}) sends count log messages, as
// the client's logging level (logging/setLevel, or the request's
// _meta in the sessionless protocol) lets through. Every
// notifications/cancelled the server receives is logged too ("mcptest:
// notifications/cancelled received"), so that a test can tell a client
// that cancels from one that only hangs up.
//
// write_note and delete_note work in Options.Dir, confined to it with
// os.Root, and are offered only when it is set. write_note is the one to
// catch a client replaying a call: each call adds a line on disk.
// openWorldHint is false for all of them.
//
// Resources: mcptest://faults (the server's Faults, as JSON) and, with a
// folder, the template mcptest://notes/{name} (a note's text). Prompt:
// greet, with the required argument name ("Say hello to NAME.").
//
// # What goes wrong
//
// Faults lists the faults, when each fires and what it does: a slow start
// (StartDelay), slow calls (SlowCall), a tool list that fails the first N
// times it is asked for (FailListTools), and on the N-th tools/call a crash
// (CrashOnCall), a dropped HTTP session (DropSessionOnCall), a call never
// answered (HangOnCall), a server that stops answering anything, pings
// included (StallOnCall), an error result (ErrorOnCall), or a changed tool
// list with notifications/tools/list_changed (ChangeToolsOnCall). Options.Logger
// hears each fault as it fires, and each cancellation the server receives.
//
// # Serving it
//
//   - NewServer returns the SDK's *mcp.Server with the tools and faults;
//     Serve serves it over any transport (mcp.NewInMemoryTransports in a
//     test) so that a crash can close the connection.
//   - ServeStdio serves a new one over standard input and output.
//   - NewStreamableHandler and NewSSEHandler return a Handler, an
//     http.Handler for httptest or a listener of your own, that can also
//     cut requests and forget sessions; Close it when done.
//
// # What a client sees (SDK v1.8.0's client)
//
// The SDK's client speaks the sessionless protocol 2026-07-28 over stdio
// and in memory (server/discover, no initialize; list_changed arrives on a
// subscriptions/listen stream it opens when it has a
// ToolListChangedHandler), and falls back to 2025-11-25 with initialize
// against a Handler, whose sessions are stateful. Then:
//
//   - A crash over stdio: the call fails with io.EOF and the session is
//     over (ClientSession.Wait returns; later calls fail with
//     mcp.ErrConnectionClosed).
//   - A crash under a Handler: the call fails with an error wrapping
//     io.EOF (its POST's answer broke off); the session looks alive until
//     its next request, which fails with mcp.ErrSessionMissing. A client must
//     connect again (initialize a new session).
//   - A dropped session: the call fails with an error wrapping
//     mcp.ErrSessionMissing and did not reach the tool; the session is
//     over (later calls: mcp.ErrConnectionClosed); Wait returns the
//     ErrSessionMissing error.
//   - Over SSE, a crash or a dropped session ends the GET stream: the call
//     fails with io.EOF and the session is over.
//   - A hung call ends on the client's side when its context does; the
//     client sends notifications/cancelled and the server's handler ends.
//   - list_changed reaches an HTTP client on its standalone SSE stream
//     (the GET it opens after initialize), some 10ms after the change;
//     sent while that stream is not connected, it is lost (the handler
//     keeps no event store), so a client that reconnects must list the
//     tools again rather than wait for it.
package mcptest
