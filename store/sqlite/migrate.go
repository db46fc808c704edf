package sqlite

import "github.com/orca-agent/orca/store/internal/sqlstore"

// migrations are the schema versions, in order: migrations[i] brings the
// file from version i to i+1. Never edit one that has shipped; add the
// next.
var migrations = []string{
	// 1: sessions, transcript records, totals, budget overrides, approvals.
	`
CREATE TABLE sessions (
	id          TEXT PRIMARY KEY,
	runtime_id  TEXT NOT NULL,
	workspace   TEXT NOT NULL DEFAULT '',
	agent       TEXT NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL, -- Unix nanoseconds, UTC
	updated_at  INTEGER NOT NULL, -- moved by every append and finished turn
	turns       INTEGER NOT NULL DEFAULT 0,
	last_prompt TEXT NOT NULL DEFAULT ''
) STRICT;
-- Listings: newest first, across the store or within a runtime or workspace.
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id);
CREATE INDEX sessions_by_runtime ON sessions (runtime_id, updated_at DESC, id);
CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at DESC, id);

CREATE TABLE records (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL, -- 1, 2, 3… per session
	turn_id    TEXT NOT NULL DEFAULT '',
	time       INTEGER NOT NULL,
	kind       TEXT NOT NULL CHECK (kind IN ('message', 'summary')),
	message    TEXT NOT NULL, -- llm.Message as JSON, tool-use input verbatim
	compacted  INTEGER NOT NULL DEFAULT 0 CHECK (compacted IN (0, 1)),
	PRIMARY KEY (session_id, seq) -- also serves transcript reads and MAX(seq)
) STRICT;

CREATE TABLE totals (
	session_id         TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	input_tokens       INTEGER NOT NULL DEFAULT 0,
	output_tokens      INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	cost_usd           REAL NOT NULL DEFAULT 0,
	tool_calls         INTEGER NOT NULL DEFAULT 0,
	wall_time_ns       INTEGER NOT NULL DEFAULT 0,
	turns              INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE budgets (
	session_id   TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	tokens       INTEGER NOT NULL, -- 0: no limit
	cost_usd     REAL NOT NULL,
	tool_calls   INTEGER NOT NULL,
	wall_time_ns INTEGER NOT NULL
) STRICT;

CREATE TABLE approvals (
	id         INTEGER PRIMARY KEY, -- the order they were added
	runtime_id TEXT NOT NULL,
	session_id TEXT REFERENCES sessions (id) ON DELETE CASCADE, -- NULL: agent reach
	rule       TEXT NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
-- One approval per (runtime, reach, rule); also serves lookups by runtime.
CREATE UNIQUE INDEX approvals_unique ON approvals (runtime_id, ifnull(session_id, ''), rule);
CREATE INDEX approvals_by_session ON approvals (session_id);
`,
	// 2: observation rows, one per runtime event (no session needed).
	`
CREATE TABLE observations (
	seq          INTEGER PRIMARY KEY, -- write order across the store
	time         INTEGER NOT NULL,
	name         TEXT NOT NULL,
	runtime_id   TEXT NOT NULL DEFAULT '',
	session_id   TEXT NOT NULL DEFAULT '',
	turn_id      TEXT NOT NULL DEFAULT '',
	execution_id TEXT NOT NULL DEFAULT '',
	depth        INTEGER NOT NULL DEFAULT 0,
	data         TEXT NOT NULL -- the event's flat JSON
) STRICT;
CREATE INDEX observations_by_session ON observations (session_id, seq);
CREATE INDEX observations_by_turn ON observations (turn_id, seq);
`,
	// 3: the whole scope of an observation row (forks: the root runtime
	// and the parent execution).
	`
ALTER TABLE observations ADD COLUMN root_runtime_id TEXT NOT NULL DEFAULT '';
ALTER TABLE observations ADD COLUMN parent_execution_id TEXT NOT NULL DEFAULT '';
`,
	// 4: the lease of a session's one writer.
	`
CREATE TABLE leases (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	owner      TEXT NOT NULL,
	expires_at INTEGER NOT NULL -- Unix nanoseconds
) STRICT;
`,
	// 5: a snapshot of each long transcript's live records, so that a
	// resume reads one blob and the records after it.
	`
CREATE TABLE snapshots (
	session_id  TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	through_seq INTEGER NOT NULL, -- the live records up to it are in data
	data        BLOB NOT NULL     -- wire.EncodeSnapshot
) STRICT;
`,
	// 6: tool calls parked for a person to decide.
	`
CREATE TABLE parked (
	id          TEXT PRIMARY KEY,
	session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	runtime_id  TEXT NOT NULL DEFAULT '',
	turn_id     TEXT NOT NULL DEFAULT '',
	tool_use_id TEXT NOT NULL,
	tool_name   TEXT NOT NULL,
	input       BLOB NOT NULL, -- the arguments, byte for byte
	reason      TEXT NOT NULL DEFAULT '',
	rules       TEXT NOT NULL DEFAULT '[]', -- JSON list
	status      TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'started')),
	decided_by  TEXT NOT NULL DEFAULT '',
	note        TEXT NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	decided_at  INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX parked_by_session ON parked (session_id, created_at);
`,
	// 7: every append moves its session's updated_at, and each index
	// holding it is work for every append. Keep the one that finds a
	// runtime's latest session; a listing of every session, or of a
	// workspace's, sorts instead (BenchmarkSessions).
	`
DROP INDEX sessions_by_update;
DROP INDEX sessions_by_workspace;
CREATE INDEX sessions_of_workspace ON sessions (workspace);
`,
	// 8: the snapshot in chunks. Each holds the live records after the
	// chunk before it, so that keeping a long transcript's snapshot up
	// to date encodes its new records only, not all of them again.
	`
CREATE TABLE snapshot_chunks (
	session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	through_seq INTEGER NOT NULL, -- the live records after the previous chunk, up to it, are in data
	data        BLOB NOT NULL,    -- wire.EncodeSnapshot
	PRIMARY KEY (session_id, through_seq)
) STRICT;
INSERT INTO snapshot_chunks (session_id, through_seq, data) SELECT session_id, through_seq, data FROM snapshots;
DROP TABLE snapshots;
`,
	// 9: a parked call keeps the traceparent of the turn that parked it,
	// so that the turn that resumes it, in any process, joins its trace.
	`
ALTER TABLE parked ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
`,
	// 10: the last turn a session counted, so that a turn counts once
	// however many attempts end it.
	`
ALTER TABLE sessions ADD COLUMN last_turn TEXT NOT NULL DEFAULT '';
`,
	// 11: the bytes of images and documents, once per store whatever
	// the records that show them (by digest; the records keep the rest),
	// and which sessions show them: deleting the last one deletes them.
	`
CREATE TABLE attachments (
	digest     TEXT PRIMARY KEY, -- sha256:<hex> of data
	media_type TEXT NOT NULL,
	size       INTEGER NOT NULL,
	data       BLOB NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE attachment_refs (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	digest     TEXT NOT NULL,
	PRIMARY KEY (session_id, digest)
) STRICT;
CREATE INDEX attachment_refs_by_digest ON attachment_refs (digest);
`,
	// 12: a session keeps its description of each attachment (type,
	// name, dimensions: Store.Attachment gives them back), and may keep
	// attachments before it is provisioned (a durable turn's client puts
	// them first): no foreign key, DeleteSession deletes them itself.
	`
CREATE TABLE attachment_refs_12 (
	session_id TEXT NOT NULL,
	digest     TEXT NOT NULL,
	media_type TEXT NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	width      INTEGER NOT NULL DEFAULT 0,
	height     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (session_id, digest)
) STRICT;
INSERT INTO attachment_refs_12 (session_id, digest, media_type)
	SELECT r.session_id, r.digest, a.media_type FROM attachment_refs r JOIN attachments a ON a.digest = r.digest;
DROP TABLE attachment_refs;
ALTER TABLE attachment_refs_12 RENAME TO attachment_refs;
CREATE INDEX attachment_refs_by_digest ON attachment_refs (digest);
`,
	// 13: the model that served each answer; the context windows each
	// runtime learnt of its models (Store.LearnWindow).
	`
ALTER TABLE records ADD COLUMN model TEXT NOT NULL DEFAULT '';
CREATE TABLE windows (
	runtime_id TEXT NOT NULL,
	model      TEXT NOT NULL,
	tokens     INTEGER NOT NULL CHECK (tokens > 0),
	learnt_at  INTEGER NOT NULL,
	PRIMARY KEY (runtime_id, model)
) STRICT;
`,
	// 14: scheduled runs (Store.AddSchedule) and each time one was due
	// (its fires: one row per schedule and time, which is what makes a
	// claim once only). A schedule's fires go with it.
	`
CREATE TABLE schedules (
	runtime_id  TEXT NOT NULL,
	id          TEXT NOT NULL,
	spec        TEXT NOT NULL,
	time_zone   TEXT NOT NULL DEFAULT '', -- '': UTC
	prompt      TEXT NOT NULL,
	session_id  TEXT NOT NULL DEFAULT '', -- '': a session per fire
	budget_usd  REAL NOT NULL DEFAULT 0,  -- 0: no cap
	cap_usd     REAL NOT NULL DEFAULT 0,
	spent_usd   REAL NOT NULL DEFAULT 0,
	overlap     TEXT NOT NULL DEFAULT '' CHECK (overlap IN ('', 'skip', 'allow')),
	catch_up_ns INTEGER NOT NULL DEFAULT 0,
	expires_at  INTEGER NOT NULL DEFAULT 0, -- 0: never
	paused      INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (runtime_id, id)
) STRICT;
CREATE TABLE schedule_fires (
	runtime_id  TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	at          INTEGER NOT NULL, -- when it was due, Unix nanoseconds
	status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'skipped', 'missed')),
	owner       TEXT NOT NULL DEFAULT '',
	session_id  TEXT NOT NULL DEFAULT '',
	error       TEXT NOT NULL DEFAULT '',
	spent_usd   REAL NOT NULL DEFAULT 0,
	claimed_at  INTEGER NOT NULL,
	ended_at    INTEGER NOT NULL DEFAULT 0, -- 0: running
	PRIMARY KEY (runtime_id, schedule_id, at), -- also serves a schedule's fires, newest first
	FOREIGN KEY (runtime_id, schedule_id) REFERENCES schedules (runtime_id, id) ON DELETE CASCADE
) STRICT;
`,
}

// schema applies the migrations in one transaction when the store opens:
// a file is at one version or the next, never half-way.
var schema = sqlstore.Schema{
	Migrations: migrations,
	Ledger: `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
) STRICT`,
}
