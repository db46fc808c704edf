package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

// The bytes of images and documents are kept once per store, by digest
// (attachments), whatever the sessions and records that show them (the
// records keep their digests, wire.Encode); which sessions keep them,
// with each session's description of them, is attachment_refs, so that
// deleting the last session that keeps some deletes them
// (DeleteSession).

// KeepAttachments keeps, in the write transaction tx, the media of recs
// that carry their bytes as session sessionID's (see keepMedia).
func (d Dialect) KeepAttachments(ctx context.Context, tx Querier, sessionID string, now int64, recs []store.Record) error {
	var ms []*llm.Media
	for _, r := range recs {
		for _, m := range r.Message.Media() {
			if len(m.Data) > 0 {
				ms = append(ms, m)
			}
		}
	}
	return d.keepMedia(ctx, tx, sessionID, now, ms)
}

// keepMedia keeps ms in tx as session sessionID's: the bytes the store
// does not have yet, once per digest, and the session's description of
// each medium, unless it keeps its digest already.
func (d Dialect) keepMedia(ctx context.Context, tx Querier, sessionID string, now int64, ms []*llm.Media) error {
	var seen map[string]bool
	for _, m := range ms {
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
		if _, err := tx.Exec(ctx, "INSERT INTO attachment_refs (session_id, digest, media_type, name, width, height) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, digest) DO NOTHING",
			sessionID, digest, m.MediaType, d.Text(m.Name), m.Width, m.Height); err != nil {
			return err
		}
	}
	return nil
}

// PutAttachments implements store.Store.
func (s *Store) PutAttachments(ctx context.Context, sessionID string, ms []*llm.Media) error {
	if err := store.ValidateAttachments(sessionID, ms); err != nil {
		return s.where.Fail("put attachments of", sessionID, err)
	}
	return s.write(ctx, "put attachments of", sessionID, func(ctx context.Context, tx Querier) error {
		return s.d.keepMedia(ctx, tx, sessionID, ToNanos(s.clock.Now()), ms)
	})
}

// Attachment implements store.Store.
func (s *Store) Attachment(ctx context.Context, sessionID, digest string) (*llm.Media, error) {
	fail := func(err error) error {
		return fmt.Errorf("read attachment %s of session %q: %w", digest, sessionID, s.where.Err(err))
	}
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, fail(err)
	}
	m := &llm.Media{Digest: digest}
	var name text
	err = q.QueryRow(ctx, "SELECT r.media_type, r.name, r.width, r.height, a.data FROM attachment_refs r JOIN attachments a ON a.digest = r.digest WHERE r.session_id = ? AND r.digest = ?",
		sessionID, digest).Scan(&m.MediaType, &name, &m.Width, &m.Height, &m.Data)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fail(err)
	}
	m.Name, m.Size = string(name), int64(len(m.Data))
	return m, nil
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
