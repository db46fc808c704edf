package postgres

import "github.com/orca-agent/orca/store/internal/sqlstore"

// migrations are the schema versions, in order: migrations[i] brings the
// schema from version i to i+1. Never edit one that has shipped; add the
// next.
var migrations = []string{
	// 1: everything store/sqlite keeps, as its eighth version has it.
	`
CREATE TABLE sessions (
	id          TEXT PRIMARY KEY,
	runtime_id  TEXT NOT NULL,
	workspace   TEXT NOT NULL DEFAULT '',
	agent       TEXT NOT NULL DEFAULT '',
	created_at  BIGINT NOT NULL, -- Unix nanoseconds, UTC
	updated_at  BIGINT NOT NULL, -- moved by every append and finished turn
	turns       INTEGER NOT NULL DEFAULT 0,
	last_prompt TEXT NOT NULL DEFAULT '',
	last_seq    BIGINT NOT NULL DEFAULT 0 -- the Seq of the last record
);
-- Listings: newest first, across the store or within a runtime.
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id);
CREATE INDEX sessions_by_runtime ON sessions (runtime_id, updated_at DESC, id);
CREATE INDEX sessions_of_workspace ON sessions (workspace);

CREATE TABLE records (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        BIGINT NOT NULL, -- 1, 2, 3… per session
	turn_id    TEXT NOT NULL DEFAULT '',
	time       BIGINT NOT NULL,
	kind       TEXT NOT NULL CHECK (kind IN ('message', 'summary')),
	message    BYTEA NOT NULL, -- llm.Message as JSON, tool-use input verbatim
	compacted  BOOLEAN NOT NULL DEFAULT false,
	PRIMARY KEY (session_id, seq)
);
-- What the model sees of a long, compacted transcript, without the rest.
CREATE INDEX records_live ON records (session_id, seq) WHERE NOT compacted;

CREATE TABLE totals (
	session_id         TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	input_tokens       BIGINT NOT NULL DEFAULT 0,
	output_tokens      BIGINT NOT NULL DEFAULT 0,
	cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
	cache_write_tokens BIGINT NOT NULL DEFAULT 0,
	cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
	tool_calls         BIGINT NOT NULL DEFAULT 0,
	wall_time_ns       BIGINT NOT NULL DEFAULT 0,
	turns              BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE budgets (
	session_id   TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	tokens       BIGINT NOT NULL, -- 0: no limit
	cost_usd     DOUBLE PRECISION NOT NULL,
	tool_calls   BIGINT NOT NULL,
	wall_time_ns BIGINT NOT NULL
);

CREATE TABLE approvals (
	id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- the order they were added
	runtime_id TEXT NOT NULL,
	session_id TEXT REFERENCES sessions (id) ON DELETE CASCADE, -- NULL: agent reach
	rule       TEXT NOT NULL,
	created_at BIGINT NOT NULL
);
-- One approval per (runtime, reach, rule); also serves lookups by runtime.
CREATE UNIQUE INDEX approvals_unique ON approvals (runtime_id, COALESCE(session_id, ''), rule);
CREATE INDEX approvals_by_session ON approvals (session_id);

CREATE TABLE leases (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	owner      TEXT NOT NULL,
	expires_at BIGINT NOT NULL -- Unix nanoseconds
);

CREATE TABLE parked (
	id          TEXT PRIMARY KEY,
	session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	runtime_id  TEXT NOT NULL DEFAULT '',
	turn_id     TEXT NOT NULL DEFAULT '',
	tool_use_id TEXT NOT NULL,
	tool_name   TEXT NOT NULL,
	input       BYTEA NOT NULL, -- the arguments, byte for byte
	reason      TEXT NOT NULL DEFAULT '',
	rules       TEXT NOT NULL DEFAULT '[]', -- JSON list
	status      TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'started')),
	decided_by  TEXT NOT NULL DEFAULT '',
	note        TEXT NOT NULL DEFAULT '',
	created_at  BIGINT NOT NULL,
	decided_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX parked_by_session ON parked (session_id, created_at);

-- Observation rows, one per runtime event (no session needed). seq is
-- given under a table lock (see AppendObservations), not by a sequence.
CREATE TABLE observations (
	seq                 BIGINT PRIMARY KEY, -- write order across the store
	time                BIGINT NOT NULL,
	name                TEXT NOT NULL,
	runtime_id          TEXT NOT NULL DEFAULT '',
	root_runtime_id     TEXT NOT NULL DEFAULT '',
	session_id          TEXT NOT NULL DEFAULT '',
	turn_id             TEXT NOT NULL DEFAULT '',
	execution_id        TEXT NOT NULL DEFAULT '',
	parent_execution_id TEXT NOT NULL DEFAULT '',
	depth               INTEGER NOT NULL DEFAULT 0,
	data                BYTEA NOT NULL -- the event's flat JSON, byte for byte
);
CREATE INDEX observations_by_session ON observations (session_id, seq);
CREATE INDEX observations_by_turn ON observations (turn_id, seq);
`,
	// 2: a parked call keeps the traceparent of the turn that parked it,
	// so that the turn that resumes it, in any process, joins its trace.
	`
ALTER TABLE parked ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
`,
	// 3: the last turn a session counted, so that a turn counts once
	// however many attempts end it.
	`
ALTER TABLE sessions ADD COLUMN last_turn TEXT NOT NULL DEFAULT '';
`,
	// 4: the strings people and models write — a session's workspace,
	// agent and last prompt, an approval's rule, a parked call's reason,
	// decider and note — are kept byte for byte, as store/sqlite keeps
	// them: TEXT refuses NUL and bytes that are not UTF-8 (a prompt typed
	// in Latin-1), which failed a turn after it had run. Text already
	// kept is UTF-8, so its bytes are the same.
	`
ALTER TABLE sessions
	ALTER COLUMN workspace DROP DEFAULT, ALTER COLUMN workspace TYPE BYTEA USING convert_to(workspace, 'UTF8'), ALTER COLUMN workspace SET DEFAULT ''::bytea,
	ALTER COLUMN agent DROP DEFAULT, ALTER COLUMN agent TYPE BYTEA USING convert_to(agent, 'UTF8'), ALTER COLUMN agent SET DEFAULT ''::bytea,
	ALTER COLUMN last_prompt DROP DEFAULT, ALTER COLUMN last_prompt TYPE BYTEA USING convert_to(last_prompt, 'UTF8'), ALTER COLUMN last_prompt SET DEFAULT ''::bytea;
ALTER TABLE approvals ALTER COLUMN rule TYPE BYTEA USING convert_to(rule, 'UTF8');
ALTER TABLE parked
	ALTER COLUMN reason DROP DEFAULT, ALTER COLUMN reason TYPE BYTEA USING convert_to(reason, 'UTF8'), ALTER COLUMN reason SET DEFAULT ''::bytea,
	ALTER COLUMN decided_by DROP DEFAULT, ALTER COLUMN decided_by TYPE BYTEA USING convert_to(decided_by, 'UTF8'), ALTER COLUMN decided_by SET DEFAULT ''::bytea,
	ALTER COLUMN note DROP DEFAULT, ALTER COLUMN note TYPE BYTEA USING convert_to(note, 'UTF8'), ALTER COLUMN note SET DEFAULT ''::bytea;
`,
	// 5: the bytes of images and documents, once per store whatever the
	// records that show them (by digest; the records keep the rest), and
	// which sessions show them: deleting the last one deletes them.
	`
CREATE TABLE attachments (
	digest     TEXT PRIMARY KEY, -- sha256:<hex> of data
	media_type TEXT NOT NULL,
	size       BIGINT NOT NULL,
	data       BYTEA NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE TABLE attachment_refs (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	digest     TEXT NOT NULL,
	PRIMARY KEY (session_id, digest)
);
CREATE INDEX attachment_refs_by_digest ON attachment_refs (digest);
`,
	// 6: a session keeps its description of each attachment (type, name
	// — bytes, as the other strings people write —, dimensions:
	// Store.Attachment gives them back), and may keep attachments before
	// it is provisioned (a durable turn's client puts them first): no
	// foreign key, DeleteSession deletes them itself.
	`
ALTER TABLE attachment_refs DROP CONSTRAINT attachment_refs_session_id_fkey,
	ADD COLUMN media_type TEXT NOT NULL DEFAULT '',
	ADD COLUMN name BYTEA NOT NULL DEFAULT ''::bytea,
	ADD COLUMN width INTEGER NOT NULL DEFAULT 0,
	ADD COLUMN height INTEGER NOT NULL DEFAULT 0;
UPDATE attachment_refs r SET media_type = a.media_type FROM attachments a WHERE a.digest = r.digest;
`,
	// 7: the model that served each answer (bytes: a server names it);
	// the context windows each runtime learnt of its models
	// (Store.LearnWindow).
	`
ALTER TABLE records ADD COLUMN model BYTEA NOT NULL DEFAULT ''::bytea;
CREATE TABLE windows (
	runtime_id TEXT NOT NULL,
	model      BYTEA NOT NULL,
	tokens     BIGINT NOT NULL CHECK (tokens > 0),
	learnt_at  BIGINT NOT NULL,
	PRIMARY KEY (runtime_id, model)
);
`,
	// 8: scheduled runs (Store.AddSchedule) and each time one was due
	// (its fires: one row per schedule and time, which is what makes a
	// claim once only). A schedule's fires go with it. Its spec, time
	// zone and prompt, and a fire's error, are bytes, as the other
	// strings people write.
	`
CREATE TABLE schedules (
	runtime_id  TEXT NOT NULL,
	id          TEXT NOT NULL,
	spec        BYTEA NOT NULL,
	time_zone   BYTEA NOT NULL DEFAULT ''::bytea, -- '': UTC
	prompt      BYTEA NOT NULL,
	session_id  TEXT NOT NULL DEFAULT '', -- '': a session per fire
	budget_usd  DOUBLE PRECISION NOT NULL DEFAULT 0, -- 0: no cap
	cap_usd     DOUBLE PRECISION NOT NULL DEFAULT 0,
	spent_usd   DOUBLE PRECISION NOT NULL DEFAULT 0,
	overlap     TEXT NOT NULL DEFAULT '' CHECK (overlap IN ('', 'skip', 'allow')),
	catch_up_ns BIGINT NOT NULL DEFAULT 0,
	expires_at  BIGINT NOT NULL DEFAULT 0, -- 0: never
	paused      BOOLEAN NOT NULL DEFAULT false,
	created_at  BIGINT NOT NULL,
	PRIMARY KEY (runtime_id, id)
);
CREATE TABLE schedule_fires (
	runtime_id  TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	at          BIGINT NOT NULL, -- when it was due, Unix nanoseconds
	status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'skipped', 'missed')),
	owner       TEXT NOT NULL DEFAULT '',
	session_id  TEXT NOT NULL DEFAULT '',
	error       BYTEA NOT NULL DEFAULT ''::bytea,
	spent_usd   DOUBLE PRECISION NOT NULL DEFAULT 0,
	claimed_at  BIGINT NOT NULL,
	ended_at    BIGINT NOT NULL DEFAULT 0, -- 0: running
	PRIMARY KEY (runtime_id, schedule_id, at), -- also serves a schedule's fires, newest first
	FOREIGN KEY (runtime_id, schedule_id) REFERENCES schedules (runtime_id, id) ON DELETE CASCADE
);
`,
}

// schema applies the migrations one version per transaction, each under
// an advisory lock named after the schema, so that two processes opening
// the store at once apply each version once: the second waits, then finds
// it applied.
var schema = sqlstore.Schema{
	Migrations: migrations,
	Lock:       "SELECT pg_advisory_xact_lock(hashtext('orca schema_migrations ' || current_schema()))",
	Ledger: `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at BIGINT NOT NULL
)`,
	Stepwise: true,
}
