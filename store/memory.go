package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store/internal/clock"
	"github.com/orca-agent/orca/store/internal/wire"
)

// Memory is the in-memory Store: for tests, and for runs that keep
// nothing. It is safe for concurrent use. Messages are kept in their stored
// form, so Memory and a persistent store give back exactly the same values,
// and nothing a caller does to a record after Append (or to one Records
// returned) changes what is stored.
type Memory struct {
	// closed is set once, by Close; read with or without a lock.
	closed atomic.Bool

	mu        sync.RWMutex // guards what follows, up to obsMu
	sessions  map[string]*memSession
	approvals []Approval
	clock     clock.Clock
	parked    []ParkedCall
	// attachments are the media each session keeps, by session id (a
	// session not provisioned yet may have some: PutAttachments) and
	// digest; their bytes are shared, never copied.
	attachments map[string]map[string]*llm.Media
	// windows are the learnt windows, by runtime id and model.
	windows map[[2]string]LearntWindow
	// schedules are the schedules with their fires, by runtime id and
	// schedule id (memory_schedule.go).
	schedules map[[2]string]*memSchedule

	// obsMu guards the observation rows (observation.go) alone: the
	// runtime writes them from the event bus's goroutine while a turn
	// appends its records, and neither waits for the other.
	obsMu        sync.RWMutex
	observations obsRows
}

type memSession struct {
	s      Session
	recs   records
	totals Totals
	limits *budget.Limits
	// lastTurn is the last turn FinishTurn counted.
	lastTurn string
	// The writer's lease.
	owner   string
	expires time.Time
}

type memRecord struct {
	rec Record // Message is the store's own deep copy
}

// records is a session's transcript in chunks that are allocated whole
// and never copied: a transcript grows without moving what it holds (the
// memory store is on every test's and benchmark's hot path). The first
// chunk holds firstChunk records and each next one twice as many as the
// one before, up to chunkSize, so that an idle session of a few records
// holds a few records' worth of memory (BenchmarkIdleSessionHeap: under
// 2 KB for a session of three records), and a transcript of n records
// holds at most about 2n, or n + chunkSize.
type records struct {
	chunks [][]memRecord
	n      int
}

const (
	firstChunk = 4
	chunkSize  = 128
	// grown is how many records the chunks that grow hold together
	// (4 + 8 + … + 128).
	grown = 2*chunkSize - firstChunk
)

func (rs *records) len() int { return rs.n }

func (rs *records) at(i int) *memRecord {
	if i < grown {
		k := bits.Len(uint(i/firstChunk+1)) - 1 // chunk k holds firstChunk<<k records
		return &rs.chunks[k][i-firstChunk*(1<<k-1)]
	}
	i -= grown
	return &rs.chunks[bits.Len(chunkSize/firstChunk)+i/chunkSize][i%chunkSize]
}

func (rs *records) add(r memRecord) {
	last := len(rs.chunks) - 1
	if last < 0 || len(rs.chunks[last]) == cap(rs.chunks[last]) {
		size := chunkSize
		if last < 0 {
			size = firstChunk
		} else if c := cap(rs.chunks[last]); c < chunkSize {
			size = 2 * c
		}
		rs.chunks = append(rs.chunks, make([]memRecord, 0, size))
		last++
	}
	rs.chunks[last] = append(rs.chunks[last], r)
	rs.n++
}

// copyMessage returns m with slices of its own: what the store keeps and
// hands out can never be changed through a caller's slices. (A deep copy,
// not an encoding: the memory store sits on every test's and benchmark's
// hot path.)
func copyMessage(m llm.Message) llm.Message {
	if m.Content == nil {
		return m
	}
	blocks := make([]llm.Block, len(m.Content))
	copy(blocks, m.Content)
	for i := range blocks {
		b := &blocks[i]
		if in := b.Input; in != nil {
			b.Input = append(make([]byte, 0, len(in)), in...)
		}
		if b.Media != nil {
			b.Media = copyMedia(b.Media)
		}
	}
	m.Content = blocks
	return m
}

// copyMedia returns a copy of m, its digest and size set, as every store
// gives media back; its bytes are shared (media bytes never change).
func copyMedia(m *llm.Media) *llm.Media {
	if m == nil {
		return nil
	}
	c := *m
	c.Digest = wire.Digest(m)
	c.Size = m.Len()
	return &c
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{sessions: make(map[string]*memSession)}
}

var _ Store = (*Memory)(nil)

// begin checks ctx and the closed flag.
func (m *Memory) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.closed.Load() {
		return ErrClosed
	}
	return nil
}

// get returns the session for a read (ErrNotFound) or a write
// (ErrNotProvisioned).
func (m *Memory) get(ctx context.Context, id string, write bool) (*memSession, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	s, ok := m.sessions[id]
	if !ok {
		if write {
			return nil, ErrNotProvisioned
		}
		return nil, ErrNotFound
	}
	return s, nil
}

// Provision implements Store.
func (m *Memory) Provision(ctx context.Context, s Session) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return Session{}, opErr("provision", s.ID, err)
	}
	if err := s.Validate(); err != nil {
		return Session{}, opErr("provision", s.ID, err)
	}
	if old, ok := m.sessions[s.ID]; ok {
		if old.s.RuntimeID != s.RuntimeID {
			return Session{}, opErr("provision", s.ID, fmt.Errorf("%w (%q, not %q)", ErrWrongRuntime, old.s.RuntimeID, s.RuntimeID))
		}
		return old.s, nil
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = m.clock.Now()
	}
	s.CreatedAt = s.CreatedAt.UTC()
	m.clock.Observe(s.CreatedAt)
	s.UpdatedAt, s.Turns, s.LastPrompt = s.CreatedAt, 0, ""
	m.sessions[s.ID] = &memSession{s: s}
	return s, nil
}

// Session implements Store.
func (m *Memory) Session(ctx context.Context, id string) (Session, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, err := m.get(ctx, id, false)
	if err != nil {
		return Session{}, opErr("read", id, err)
	}
	return s.s, nil
}

// DeleteSession implements Store.
func (m *Memory) DeleteSession(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, id, false)
	if errors.Is(err, ErrNotFound) {
		delete(m.attachments, id) // put for a session never provisioned
	}
	if err != nil {
		return opErr("delete", id, err)
	}
	if s.owner != "" && time.Now().Before(s.expires) {
		return opErr("delete", id, &LeaseError{SessionID: id, Owner: s.owner, Expires: s.expires})
	}
	delete(m.sessions, id)
	delete(m.attachments, id)
	m.approvals = slices.DeleteFunc(m.approvals, func(a Approval) bool { return a.SessionID == id })
	m.parked = slices.DeleteFunc(m.parked, func(p ParkedCall) bool { return p.SessionID == id })
	return nil
}

// Sessions implements Store.
func (m *Memory) Sessions(ctx context.Context, f Filter) ([]Session, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []Session
	for _, s := range m.sessions {
		if (f.RuntimeID == "" || s.s.RuntimeID == f.RuntimeID) && (f.Workspace == "" || s.s.Workspace == f.Workspace) {
			out = append(out, s.s)
		}
	}
	slices.SortFunc(out, func(a, b Session) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.ID, b.ID))
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// Append implements Store.
func (m *Memory) Append(ctx context.Context, sessionID string, recs ...Record) ([]Record, error) {
	if err := ValidateAppend(sessionID, recs); err != nil {
		return nil, opErr("append to", sessionID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return nil, opErr("append to", sessionID, err)
	}
	return m.append(s, sessionID, recs, time.Now()), nil
}

// append appends checked records to s at wall, the system clock's time
// now; m.mu is held.
func (m *Memory) append(s *memSession, sessionID string, recs []Record, wall time.Time) []Record {
	if len(recs) == 0 {
		return nil
	}
	now := m.clock.From(wall)
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Seq = int64(s.recs.len()+i) + 1
		r.SessionID = sessionID
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Time = r.Time.UTC()
		out[i] = r // the caller's message, as given: equal to what is stored
	}
	for i, r := range out {
		r.Message = copyMessage(r.Message)
		if r.Message.HasMedia() {
			m.keepMedia(sessionID, r.Message)
		}
		s.recs.add(memRecord{rec: r})
		if r.Message.HasMedia() {
			// Given back with their digests set, as stored.
			out[i].Message = copyMessage(r.Message)
		}
	}
	s.s.UpdatedAt = now
	return out
}

// keepMedia keeps the bytes of msg's media, the store's own copy, as
// session sessionID's, and gives those it shows by digest alone the bytes
// the session keeps; m.mu is held.
func (m *Memory) keepMedia(sessionID string, msg llm.Message) {
	for _, md := range msg.Media() {
		if len(md.Data) > 0 {
			m.keep(sessionID, md)
		} else if kept := m.attachments[sessionID][md.Digest]; kept != nil {
			md.Data = kept.Data
		}
	}
}

// keep keeps md as session sessionID's, unless it keeps its digest
// already; m.mu is held.
func (m *Memory) keep(sessionID string, md *llm.Media) {
	digest := wire.Digest(md)
	if m.attachments[sessionID][digest] != nil {
		return
	}
	if m.attachments == nil {
		m.attachments = map[string]map[string]*llm.Media{}
	}
	if m.attachments[sessionID] == nil {
		m.attachments[sessionID] = map[string]*llm.Media{}
	}
	m.attachments[sessionID][digest] = copyMedia(md)
}

// PutAttachments implements Store.
func (m *Memory) PutAttachments(ctx context.Context, sessionID string, ms []*llm.Media) error {
	if err := ValidateAttachments(sessionID, ms); err != nil {
		return opErr("put attachments of", sessionID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return opErr("put attachments of", sessionID, err)
	}
	for _, md := range ms {
		m.keep(sessionID, md)
	}
	return nil
}

// Attachment implements Store.
func (m *Memory) Attachment(ctx context.Context, sessionID, digest string) (*llm.Media, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, attachmentErr(sessionID, digest, err)
	}
	md := m.attachments[sessionID][digest]
	if md == nil {
		return nil, attachmentErr(sessionID, digest, ErrNotFound)
	}
	return copyMedia(md), nil
}

// attachmentErr names the attachment and its session in err.
func attachmentErr(sessionID, digest string, err error) error {
	return fmt.Errorf("read attachment %s of session %q: %w", digest, sessionID, err)
}

// AppendStep implements Store.
func (m *Memory) AppendStep(ctx context.Context, sessionID string, step Step) ([]Record, Totals, error) {
	if err := ValidateAppend(sessionID, step.Records); err != nil {
		return nil, Totals{}, opErr("append a step to", sessionID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return nil, Totals{}, opErr("append a step to", sessionID, err)
	}
	wall := time.Now()
	if step.Owner != "" && (s.owner != step.Owner || !wall.Before(s.expires)) {
		return nil, Totals{}, opErr("append a step to", sessionID, m.leaseErr(s, sessionID))
	}
	out := m.append(s, sessionID, step.Records, wall)
	s.totals = s.totals.Add(step.Totals)
	if f := step.Finish; f != nil {
		m.finish(s, f.TurnID, f.Prompt)
	}
	return out, s.totals, nil
}

// leaseErr is the error of a write whose writer does not hold the lease.
func (m *Memory) leaseErr(s *memSession, sessionID string) error {
	if s.owner == "" || !time.Now().Before(s.expires) {
		return fmt.Errorf("%w: the writer's lease expired and no one holds it", ErrLeased)
	}
	return &LeaseError{SessionID: sessionID, Owner: s.owner, Expires: s.expires}
}

// AcquireLease implements Store.
func (m *Memory) AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) (time.Time, error) {
	if err := ValidateLease(owner, ttl); err != nil {
		return time.Time{}, opErr("lease", sessionID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return time.Time{}, opErr("lease", sessionID, err)
	}
	now := time.Now()
	if s.owner != "" && s.owner != owner && now.Before(s.expires) {
		return time.Time{}, opErr("lease", sessionID, &LeaseError{SessionID: sessionID, Owner: s.owner, Expires: s.expires})
	}
	s.owner, s.expires = owner, now.Add(ttl).UTC()
	return s.expires, nil
}

// ReleaseLease implements Store.
func (m *Memory) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return opErr("release the lease of", sessionID, err)
	}
	if s.owner == owner {
		s.owner, s.expires = "", time.Time{}
	}
	return nil
}

// Records implements Store.
func (m *Memory) Records(ctx context.Context, sessionID string, f RecordFilter) ([]Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, err := m.get(ctx, sessionID, false)
	if err != nil {
		return nil, opErr("read records of", sessionID, err)
	}
	var out []Record
	for i := int(min(max(f.AfterSeq, 0), int64(s.recs.len()))); i < s.recs.len(); i++ {
		r := s.recs.at(i)
		if r.rec.Compacted && !f.IncludeCompacted {
			continue
		}
		rec := r.rec
		rec.Message = copyMessage(rec.Message)
		out = append(out, rec)
	}
	return out, nil
}

// MarkCompacted implements Store.
func (m *Memory) MarkCompacted(ctx context.Context, sessionID string, throughSeq int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return opErr("mark compacted in", sessionID, err)
	}
	if err := ValidateMark(throughSeq, int64(s.recs.len())); err != nil {
		return opErr("mark compacted in", sessionID, err)
	}
	for i := range int(throughSeq) {
		s.recs.at(i).rec.Compacted = true
	}
	return nil
}

// AddTotals implements Store.
func (m *Memory) AddTotals(ctx context.Context, sessionID string, delta Totals) (Totals, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return Totals{}, opErr("add totals to", sessionID, err)
	}
	s.totals = s.totals.Add(delta)
	return s.totals, nil
}

// Totals implements Store.
func (m *Memory) Totals(ctx context.Context, sessionID string) (Totals, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, err := m.get(ctx, sessionID, false)
	if err != nil {
		return Totals{}, opErr("read totals of", sessionID, err)
	}
	return s.totals, nil
}

// SetBudget implements Store.
func (m *Memory) SetBudget(ctx context.Context, sessionID string, b *budget.Limits) error {
	if b != nil {
		if err := ValidateBudget(*b); err != nil {
			return opErr("set budget of", sessionID, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return opErr("set budget of", sessionID, err)
	}
	if b == nil {
		s.limits = nil
		return nil
	}
	c := *b
	s.limits = &c
	return nil
}

// Budget implements Store.
func (m *Memory) Budget(ctx context.Context, sessionID string) (*budget.Limits, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, err := m.get(ctx, sessionID, false)
	if err != nil {
		return nil, opErr("read budget of", sessionID, err)
	}
	if s.limits == nil {
		return nil, nil
	}
	c := *s.limits
	return &c, nil
}

// FinishTurn implements Store.
func (m *Memory) FinishTurn(ctx context.Context, sessionID, turnID, prompt string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(ctx, sessionID, true)
	if err != nil {
		return opErr("finish turn of", sessionID, err)
	}
	m.finish(s, turnID, prompt)
	return nil
}

// finish is FinishTurn's work, m.mu held.
func (m *Memory) finish(s *memSession, turnID, prompt string) {
	if turnID == "" || turnID != s.lastTurn {
		s.s.Turns++
		s.totals.Turns++
		s.lastTurn = turnID
	}
	s.s.LastPrompt = prompt
	s.s.UpdatedAt = m.clock.Now()
}

// AddApproval implements Store.
func (m *Memory) AddApproval(ctx context.Context, a Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return approvalErr("add", a.RuntimeID, a.SessionID, err)
	}
	if err := a.Validate(); err != nil {
		return approvalErr("add", a.RuntimeID, a.SessionID, err)
	}
	if a.SessionID != "" {
		s, err := m.get(ctx, a.SessionID, true)
		if err != nil {
			return approvalErr("add", a.RuntimeID, a.SessionID, err)
		}
		if s.s.RuntimeID != a.RuntimeID {
			return approvalErr("add", a.RuntimeID, a.SessionID, fmt.Errorf("%w (%q)", ErrWrongRuntime, s.s.RuntimeID))
		}
	}
	for _, old := range m.approvals {
		if old.RuntimeID == a.RuntimeID && old.SessionID == a.SessionID && old.Rule == a.Rule {
			return nil
		}
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = m.clock.Now()
	}
	a.CreatedAt = a.CreatedAt.UTC()
	m.approvals = append(m.approvals, a)
	return nil
}

// Approvals implements Store.
func (m *Memory) Approvals(ctx context.Context, runtimeID, sessionID string) ([]Approval, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, approvalErr("read", runtimeID, sessionID, err)
	}
	if runtimeID == "" {
		return nil, approvalErr("read", runtimeID, sessionID, fmt.Errorf("%w: runtime ID is empty", ErrInvalid))
	}
	if sessionID != "" {
		s, err := m.get(ctx, sessionID, false)
		if err != nil {
			return nil, approvalErr("read", runtimeID, sessionID, err)
		}
		if s.s.RuntimeID != runtimeID {
			return nil, approvalErr("read", runtimeID, sessionID, fmt.Errorf("%w (%q)", ErrWrongRuntime, s.s.RuntimeID))
		}
	}
	var out []Approval
	for _, a := range m.approvals {
		if a.RuntimeID == runtimeID && (a.SessionID == "" || a.SessionID == sessionID) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Close implements Store. The data is gone once the Memory is garbage.
func (m *Memory) Close() error {
	m.closed.Store(true)
	return nil
}

// approvalErr names the operation, the runtime and the session (if any) in
// err.
func approvalErr(op, runtimeID, sessionID string, err error) error {
	if sessionID == "" {
		return fmt.Errorf("%s approvals of runtime %q: %w", op, runtimeID, err)
	}
	return fmt.Errorf("%s approvals of runtime %q session %q: %w", op, runtimeID, sessionID, err)
}

// opErr names the operation and the session in err.
func opErr(op, sessionID string, err error) error {
	return fmt.Errorf("%s session %q: %w", op, sessionID, err)
}

// RebindRuntime implements Store.
func (m *Memory) RebindRuntime(ctx context.Context, from, to string) (int, error) {
	if from == "" || to == "" {
		return 0, fmt.Errorf("rebind runtime %q to %q: %w: a runtime id is empty", from, to, ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range m.sessions {
		if s.s.RuntimeID == from {
			s.s.RuntimeID = to
			n++
		}
	}
	type key struct{ session, rule string }
	has := map[key]bool{}
	for _, a := range m.approvals {
		if a.RuntimeID == to {
			has[key{a.SessionID, a.Rule}] = true
		}
	}
	kept := m.approvals[:0]
	for _, a := range m.approvals {
		if a.RuntimeID == from {
			if has[key{a.SessionID, a.Rule}] {
				continue
			}
			a.RuntimeID = to
			has[key{a.SessionID, a.Rule}] = true
		}
		kept = append(kept, a)
	}
	m.approvals = kept
	return n, nil
}

// Park implements Store.
func (m *Memory) Park(ctx context.Context, p ParkedCall) error {
	if err := p.Validate(); err != nil {
		return opErr("park a call of", p.SessionID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.get(ctx, p.SessionID, true); err != nil {
		return opErr("park a call of", p.SessionID, err)
	}
	for _, q := range m.parked {
		if q.ID == p.ID {
			return opErr("park a call of", p.SessionID, fmt.Errorf("%w: parked call %s exists already", ErrInvalid, p.ID))
		}
	}
	p.Status = ParkPending
	if p.CreatedAt.IsZero() {
		p.CreatedAt = m.clock.Now()
	}
	p.CreatedAt = p.CreatedAt.UTC()
	p.Input = slices.Clone(p.Input)
	p.Rules = slices.Clone(p.Rules)
	m.parked = append(m.parked, p)
	return nil
}

// ParkedCalls implements Store.
func (m *Memory) ParkedCalls(ctx context.Context, f ParkFilter) ([]ParkedCall, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	var out []ParkedCall
	for _, p := range m.parked {
		if (f.SessionID == "" || p.SessionID == f.SessionID) && (f.Status == "" || p.Status == f.Status) {
			p.Input, p.Rules = slices.Clone(p.Input), slices.Clone(p.Rules)
			out = append(out, p)
		}
	}
	return out, nil
}

// SetParkStatus implements Store.
func (m *Memory) SetParkStatus(ctx context.Context, id, status, by, note string) (ParkedCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return ParkedCall{}, err
	}
	for i := range m.parked {
		p := &m.parked[i]
		if p.ID != id {
			continue
		}
		if err := ValidateTransition(id, p.Status, status); err != nil {
			return ParkedCall{}, err
		}
		p.Status = status
		if status == ParkApproved || status == ParkDenied {
			p.DecidedBy, p.Note, p.DecidedAt = by, note, m.clock.Now()
		}
		out := *p
		out.Input, out.Rules = slices.Clone(p.Input), slices.Clone(p.Rules)
		return out, nil
	}
	return ParkedCall{}, fmt.Errorf("parked call %s: %w", id, ErrNotFound)
}

// LearnWindow implements Store.
func (m *Memory) LearnWindow(ctx context.Context, w LearntWindow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return windowErr("learn", w.RuntimeID, err)
	}
	if err := w.Validate(); err != nil {
		return windowErr("learn", w.RuntimeID, err)
	}
	if w.LearntAt.IsZero() {
		w.LearntAt = m.clock.Now()
	}
	w.LearntAt = w.LearntAt.UTC()
	if m.windows == nil {
		m.windows = map[[2]string]LearntWindow{}
	}
	m.windows[[2]string{w.RuntimeID, w.Model}] = w
	return nil
}

// LearntWindows implements Store.
func (m *Memory) LearntWindows(ctx context.Context, runtimeID string) ([]LearntWindow, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, windowErr("read", runtimeID, err)
	}
	var out []LearntWindow
	for k, w := range m.windows {
		if k[0] == runtimeID {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b LearntWindow) int { return strings.Compare(a.Model, b.Model) })
	return out, nil
}

func windowErr(op, runtimeID string, err error) error {
	return fmt.Errorf("%s the learnt windows of runtime %q: %w", op, runtimeID, err)
}
