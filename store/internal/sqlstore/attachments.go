package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

// PutAttachments keeps, in the write transaction tx, the bytes of the
// media of recs, the session's, that the store does not have yet: once
// per digest, however many records show them (the records keep their
// digests, wire.Encode); and that the session shows them, so that
// deleting the last session that does deletes them (DeleteSession).
func PutAttachments(ctx context.Context, tx Querier, sessionID string, now int64, recs []store.Record) error {
	var seen map[string]bool
	for _, r := range recs {
		for _, m := range r.Message.Media() {
			if len(m.Data) == 0 {
				continue
			}
			digest := wire.Digest(m)
			if seen[digest] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[digest] = true
			if _, err := tx.Exec(ctx, "INSERT INTO attachments (digest, media_type, size, data, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING",
				digest, m.MediaType, int64(len(m.Data)), m.Data, now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO attachment_refs (session_id, digest) VALUES (?, ?) ON CONFLICT (session_id, digest) DO NOTHING", sessionID, digest); err != nil {
				return err
			}
		}
	}
	return nil
}

// withAttachments gives the media of recs, read without their bytes, the
// bytes the store keeps for their digests (each looked up once); media
// whose bytes it does not have keep none (a provider refuses them,
// naming them).
func withAttachments(ctx context.Context, q Querier, recs []store.Record) error {
	var got map[string][]byte
	fill := func(m *llm.Media) error {
		if m == nil || m.Data != nil || m.Digest == "" {
			return nil
		}
		data, ok := got[m.Digest]
		if !ok {
			if got == nil {
				got = map[string][]byte{}
			}
			err := q.QueryRow(ctx, "SELECT data FROM attachments WHERE digest = ?", m.Digest).Scan(&data)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			got[m.Digest] = data
		}
		m.Data = data
		return nil
	}
	for i := range recs {
		for _, m := range recs[i].Message.Media() {
			if err := fill(m); err != nil {
				return err
			}
		}
	}
	return nil
}
