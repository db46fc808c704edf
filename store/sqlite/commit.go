package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/orca-agent/orca/store"
	"modernc.org/sqlite"
)

// maxBatch caps how many writes one transaction of the committer holds,
// and so how long the first of them waits behind the others.
const maxBatch = 128

// checkpointPages is how many pages the write-ahead log grows by before
// the committer's commit copies them into the database (PRAGMA
// wal_autocheckpoint; SQLite's default is 1,000). The pages the appends of
// many sessions rewrite at every commit (each session's last index page,
// the sessions' rows) are copied once per checkpoint, whatever the number
// of their versions in the log: fewer checkpoints copy less, and sync
// less. BenchmarkAppendConcurrent, 4 rounds alternated: Append 25.1k →
// 29.5k/s, AppendStep 21.5k → 24.5k/s (8,000 pages: 30.0k and 25.3k,
// within the noise, for twice the log). The log grows to about 16 MB
// between checkpoints (4 KB pages), where it grew to 4 MB.
const checkpointPages = 4000

// maxTurns caps how many turns of the scheduler the committer yields,
// while the queue grows, before it takes a batch.
const maxTurns = 8

// A write's state: a write waiting in the queue may still be withdrawn
// by its caller; once the committer has taken it, its outcome is the
// answer.
const (
	queued int32 = iota
	taken
	withdrawn
)

// request is one write waiting for the committer.
type request struct {
	// fn is the write's work; it runs in a transaction with the
	// committer's context (see committer).
	fn    func(ctx context.Context, tx *writeTx) error
	state atomic.Int32
	// err is the outcome, set before done is closed.
	err  error
	done chan struct{}
}

// take moves a queued request to the committer: false if its caller has
// withdrawn it.
func (r *request) take() bool { return r.state.CompareAndSwap(queued, taken) }

func (r *request) finish(err error) {
	r.err = err
	close(r.done)
}

// committer is the one goroutine that runs a Store's write transactions
// (group commit).
//
// A write queues a request and waits. The committer takes every request
// queued (up to maxBatch), runs them in arrival order in one transaction,
// and commits once: one sync of the write-ahead log for the whole batch.
// A request that fails is undone alone while the others go on: the batch
// runs first without savepoints (optimistic), and if a request fails it
// is rolled back and run again with each request inside a savepoint of
// its own (guarded). Only after the commit does it answer the requests,
// so an acknowledged write is a committed one. If the batch itself cannot
// be completed (a savepoint or the commit fails), it is rolled back and
// every request in it is run again in a transaction of its own, each then
// answered with its own outcome. While one batch
// commits, the next one queues: batches grow with the load, and a lone
// write commits at once, without waiting for company.
//
// The requests run with the committer's context, never their caller's:
// SQLite answers an interrupted statement by rolling back the whole
// transaction, which would undo the other writes of the batch. A caller's
// context is honoured while its request waits in the queue (the request is
// withdrawn, and nothing of it is written); once the committer has taken
// it, the caller waits for its outcome, which takes no longer than one
// batch.
type committer struct {
	db *sql.DB
	// conn is the committer's own connection, taken from db at the first
	// write: SQLite drops a connection's page cache whenever another
	// connection has committed, so the writer keeps its pages warm only
	// on a connection no one else writes through.
	conn  *sql.Conn
	stmts *stmts
	// seqs is what the committer knows of sessions' last Seqs.
	seqs seqCache
	// guard watches conn while a batch runs without savepoints; hooked
	// says its hooks are installed on conn.
	guard  batchGuard
	hooked bool
	// ctx is the context of every statement the committer runs; it is
	// never canceled: Close drains the queue instead.
	ctx context.Context

	mu       sync.Mutex
	wake     sync.Cond // signalled when the queue grows or stopping is set
	queue    []*request
	stopping bool
	exited   chan struct{}

	// batches and batched count the batches taken and the requests in
	// them, guardedRuns the batches run again with savepoints (the tests
	// read them to see group commit at work).
	batches, batched, guardedRuns atomic.Int64
}

func startCommitter(db *sql.DB, st *stmts) *committer {
	c := &committer{db: db, stmts: st, ctx: context.Background(), exited: make(chan struct{}),
		seqs: seqCache{version: -1, last: make(map[string]int64), totals: make(map[string]store.Totals)}}
	c.wake.L = &c.mu
	go c.loop()
	return c
}

// do runs fn in a write transaction (see committer) and returns its
// outcome: fn's error, the database's, ctx's if the request was withdrawn
// before it ran, or errClosed if the committer is stopping.
func (c *committer) do(ctx context.Context, fn func(ctx context.Context, tx *writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{fn: fn, done: make(chan struct{})}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return errClosed
	}
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	c.wake.Signal()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(queued, withdrawn) {
			return ctx.Err()
		}
		<-r.done // taken: it is being written; its outcome is the answer
		return r.err
	}
}

// stop refuses new requests, waits until every queued one is answered,
// and ends the committer.
func (c *committer) stop() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.wake.Signal()
	<-c.exited
}

func (c *committer) loop() {
	defer close(c.exited)
	defer func() {
		if c.conn != nil {
			c.conn.Close()
		}
	}()
	var batch []*request
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.stopping {
			c.wake.Wait()
		}
		if len(c.queue) == 0 { // stopping, and nothing left
			c.mu.Unlock()
			return
		}
		// Let the writers just answered (and any other runnable one)
		// queue their next write first, yielding while the queue grows:
		// the batch grows at the cost of a few turns of the scheduler,
		// and costs one turn when no one else runs.
		for queued, turns := -1, 0; queued != len(c.queue) && len(c.queue) < maxBatch && turns < maxTurns; turns++ {
			queued = len(c.queue)
			c.mu.Unlock()
			runtime.Gosched()
			c.mu.Lock()
		}
		n := min(len(c.queue), maxBatch)
		batch = append(batch[:0], c.queue[:n]...)
		rest := copy(c.queue, c.queue[n:])
		clear(c.queue[rest:])
		c.queue = c.queue[:rest]
		c.mu.Unlock()
		c.batches.Add(1)
		c.batched.Add(int64(n))

		c.commit(batch)
		clear(batch)
	}
}

// commit runs batch in one transaction and answers each request. A
// request alone runs as it is; in a batch of several, each runs inside a
// savepoint (guarded).
func (c *committer) commit(batch []*request) {
	if len(batch) > 1 {
		if !c.optimistic(batch) {
			c.guarded(batch)
		}
		return
	}
	r := batch[0]
	tx, err := c.begin()
	if err != nil {
		c.answer(batch, err)
		return
	}
	if !r.take() {
		tx.Rollback()
		return
	}
	r.finish(run(c.ctx, tx, r.fn))
}

// optimistic runs batch in one transaction without savepoints, which
// cost two statements a request, and answers each request if all of them
// succeeded and the batch committed. Otherwise it rolls the batch back,
// answering none, and returns false: guarded runs it again (a request's
// work is run again as oneByOne runs it, in a new transaction, and one
// that failed here fails there, undone alone).
//
// Without savepoints nothing would notice a request that ended the
// transaction and said nothing (an error SQLite answers by rolling back,
// swallowed): the requests after it would run outside any transaction,
// each committed at once, and be run again by guarded. The connection's
// commit and rollback hooks (batchGuard) see that happen: while the batch
// runs, a commit other than its own is refused, so nothing of it reaches
// the file, and an ended transaction sends the batch to guarded.
func (c *committer) optimistic(batch []*request) bool {
	if !c.hooked {
		return false
	}
	tx, err := c.begin()
	if err != nil {
		return false
	}
	c.guard.start()
	for _, r := range batch {
		if r.state.Load() != taken && !r.take() {
			continue
		}
		if err := r.fn(c.ctx, tx); err != nil || c.guard.ended.Load() {
			c.guard.stop()
			tx.Rollback()
			return false
		}
	}
	if c.guard.stop() {
		tx.Rollback()
		return false
	}
	if err := tx.commit(); err != nil {
		return false
	}
	for _, r := range batch {
		if r.state.Load() == taken {
			r.finish(nil)
		}
	}
	return true
}

// guarded runs batch in one transaction, each request inside a savepoint
// of its own, so that a request that fails is undone alone, and answers
// each request.
func (c *committer) guarded(batch []*request) {
	c.guardedRuns.Add(1)
	tx, err := c.begin()
	if err != nil {
		c.answer(batch, err)
		return
	}
	broken := false
	for _, r := range batch {
		if r.state.Load() != taken && !r.take() {
			continue
		}
		if _, err := tx.stmt(stmtSavepoint).ExecContext(c.ctx); err != nil {
			broken = true
			break
		}
		r.err = r.fn(c.ctx, tx)
		if r.err != nil {
			if _, err := tx.stmt(stmtRollbackTo).ExecContext(c.ctx); err != nil {
				broken = true // e.g. SQLite rolled the whole transaction back
				break
			}
		}
		if _, err := tx.stmt(stmtRelease).ExecContext(c.ctx); err != nil {
			broken = true
			break
		}
	}
	if broken {
		tx.Rollback()
		c.oneByOne(batch)
		return
	}
	if err := tx.commit(); err != nil {
		c.oneByOne(batch)
		return
	}
	for _, r := range batch {
		if r.state.Load() == taken {
			r.finish(r.err)
		}
	}
}

// oneByOne runs each request of a batch that could not be committed whole
// in a transaction of its own, and answers it.
func (c *committer) oneByOne(batch []*request) {
	for _, r := range batch {
		if r.state.Load() == taken || r.take() {
			r.finish(c.transact(r.fn))
		}
	}
}

// batchGuard watches the committer's connection while optimistic runs a
// batch (see there), through its commit and rollback hooks. The hooks run
// on the committer's goroutine, inside its statements; the atomics keep
// the race detector's view simple.
type batchGuard struct {
	open  atomic.Bool // a batch runs: no commit but its own may happen
	ended atomic.Bool // its transaction ended under it
}

func (g *batchGuard) start() { g.ended.Store(false); g.open.Store(true) }

// stop ends the watch, before the batch's own commit or rollback, and
// reports whether the transaction ended under the batch.
func (g *batchGuard) stop() bool {
	g.open.Store(false)
	return g.ended.Load()
}

// commit is the commit hook: non-zero turns a commit into a rollback.
func (g *batchGuard) commit() int32 {
	if g.open.Load() {
		g.ended.Store(true)
		return 1
	}
	return 0
}

func (g *batchGuard) rollback() {
	if g.open.Load() {
		g.ended.Store(true)
	}
}

// hook installs the guard's hooks on the committer's connection; false if
// its driver has none (then every batch is guarded).
func (c *committer) hook() bool {
	err := c.conn.Raw(func(dc any) error {
		h, ok := dc.(sqlite.HookRegisterer)
		if !ok {
			return errors.New("no hooks")
		}
		h.RegisterCommitHook(c.guard.commit)
		h.RegisterRollbackHook(c.guard.rollback)
		return nil
	})
	return err == nil
}

// answer gives err as the outcome of every request of batch that has not
// been withdrawn.
func (c *committer) answer(batch []*request, err error) {
	for _, r := range batch {
		if r.state.Load() == taken || r.take() {
			r.finish(err)
		}
	}
}

// begin starts a write transaction on the committer's connection, with
// BEGIN IMMEDIATE (_txlock). A connection database/sql has given up on is
// replaced once.
//
// In the transaction, holding the write lock, it checks whether another
// connection has written to the file since (PRAGMA data_version, which
// counts per connection): if one has, or if it cannot tell, the last Seqs
// it knows are forgotten.
func (c *committer) begin() (*writeTx, error) {
	for retry := 0; ; retry++ {
		if c.conn == nil {
			conn, err := c.db.Conn(c.ctx)
			if err != nil {
				return nil, err
			}
			if _, err := conn.ExecContext(c.ctx, fmt.Sprintf("PRAGMA wal_autocheckpoint=%d", checkpointPages)); err != nil {
				conn.Close()
				return nil, err
			}
			c.conn, c.seqs.version = conn, -1
			c.hooked = c.hook()
		}
		tx, err := begin(c.ctx, c.conn, c.stmts)
		if retry == 0 && (errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
			c.conn.Close()
			c.conn = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		var version int64
		if err := tx.stmt(stmtDataVersion).QueryRowContext(c.ctx).Scan(&version); err != nil {
			version = -1
		}
		if version == -1 || version != c.seqs.version {
			c.seqs.forgetAll()
			c.seqs.version = version
		}
		tx.seqs = &c.seqs
		return tx, nil
	}
}

// transact runs fn in a write transaction of its own on the committer's
// connection.
func (c *committer) transact(fn func(ctx context.Context, tx *writeTx) error) error {
	tx, err := c.begin()
	if err != nil {
		return err
	}
	return run(c.ctx, tx, fn)
}

// beginner is a database or a connection.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

func begin(ctx context.Context, db beginner, st *stmts) (*writeTx, error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return nil, err
	}
	return &writeTx{Tx: tx, ctx: ctx, stmts: st}, nil
}

// transact runs fn in a write transaction of its own. st may be nil for a
// transaction that uses no prepared statement: the migrations, which run
// before the tables the statements name exist.
func transact(ctx context.Context, db beginner, st *stmts, fn func(ctx context.Context, tx *writeTx) error) error {
	tx, err := begin(ctx, db, st)
	if err != nil {
		return err
	}
	return run(ctx, tx, fn)
}

// run runs fn in tx and commits, or rolls back if fn fails.
func run(ctx context.Context, tx *writeTx, fn func(ctx context.Context, tx *writeTx) error) error {
	if err := fn(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.commit()
}
