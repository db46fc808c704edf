package agent

// stepState counts the effects this execution has started (model calls,
// tool calls, groups of calls at once): a step (Request.Step) pauses
// before its second. paused: runTools stopped before a call for that;
// readsNext: that call starts a group of read-only calls
// (Progress.ReadsNext).
type stepState struct {
	effects   int
	paused    bool
	readsNext bool
}

// pause ends a step (Request.Step) whose effect has run, before the next
// one starts, and reports whether it did.
func (t *turn) pause() bool {
	if !t.stepping() || t.effects == 0 {
		return false
	}
	t.finish(StopPaused)
	return true
}

// stepping reports whether the execution is a step that pauses after its
// effect (Request.Step, not Rest).
func (t *turn) stepping() bool { return t.req.Step != nil && !t.req.Step.Rest }
