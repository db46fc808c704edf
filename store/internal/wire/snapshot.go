package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/orca-agent/orca/llm"
)

// A snapshot is many records in one binary blob, for reading a long
// transcript back in one go: a version byte, then per record its seq,
// time, turn id, kind, model and message, every string length-prefixed. It is a
// cache of the records (which stay the truth, as JSON): a snapshot that
// does not decode is dropped, not trusted.

// SnapRecord is one record of a snapshot.
type SnapRecord struct {
	Seq     int64
	Time    time.Time
	TurnID  string
	Kind    string
	Model   string
	Message llm.Message
}

// snapVersion 2 added each block's media and parts; 3 keeps a tool
// result's media as blocks of their own, after it; 4 adds the model that
// served an answer (older snapshots are dropped, and made again from the
// records).
const snapVersion = 4

// EncodeSnapshot returns the snapshot of recs.
func EncodeSnapshot(recs []SnapRecord) []byte {
	b := []byte{snapVersion}
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(r.Seq))
		b = binary.AppendVarint(b, r.Time.UnixNano())
		b = appendStr(b, r.TurnID)
		b = appendStr(b, r.Kind)
		b = appendStr(b, r.Model)
		b = appendStr(b, string(r.Message.Role))
		if r.Message.Content == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(r.Message.Content)))
		for _, bl := range r.Message.Content {
			b = appendStr(b, string(bl.Type))
			b = appendStr(b, bl.Text)
			b = appendStr(b, bl.ID)
			b = appendStr(b, bl.Name)
			if bl.Input == nil {
				b = append(b, 0)
			} else {
				b = append(b, 1)
				b = appendStr(b, string(bl.Input))
			}
			b = appendStr(b, bl.ToolUseID)
			b = appendStr(b, bl.Content)
			if bl.IsError {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
			b = appendStr(b, bl.Thinking)
			b = appendStr(b, bl.Signature)
			b = appendStr(b, snapMedia(bl))
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errSnapshot = errors.New("snapshot: malformed")

// SnapshotLen returns how many records a snapshot holds, by its header
// (0 if it has none).
func SnapshotLen(data []byte) int {
	d := snapReader{b: data}
	if d.byte() != snapVersion {
		return 0
	}
	n := d.uvarint()
	if d.err || n > uint64(len(data)) {
		return 0
	}
	return int(n)
}

// Arena is where DecodeSnapshot carves the records' block slices and
// tool inputs from: one Arena for all the chunks of a transcript makes a
// few large allocations serve them all. The zero Arena is ready to use.
type Arena struct {
	// blocks and inputs are the free space of the current allocations.
	blocks []llm.Block
	inputs []byte
}

// DecodeSnapshot reads a snapshot back: it appends its records, each made
// by record, to out. The strings it passes share data, which must not be
// changed afterwards; the records' block slices and tool inputs are their
// own (each capped, so that appending to one never touches another),
// carved from a (nil: from a new Arena). A snapshot that does not decode
// whole is an error, and out is returned as it was.
func DecodeSnapshot[R any](data []byte, out []R, a *Arena, record func(SnapRecord) R) ([]R, error) {
	if a == nil {
		a = new(Arena)
	}
	more, err := decodeSnapshot(data, out, a, record)
	if err != nil {
		return out, err
	}
	return more, nil
}

func decodeSnapshot[R any](data []byte, out []R, a *Arena, record func(SnapRecord) R) ([]R, error) {
	d := snapReader{b: data, arena: a}
	if d.byte() != snapVersion {
		return nil, fmt.Errorf("%w: unknown version", errSnapshot)
	}
	n := d.uvarint()
	if n > uint64(len(data)) {
		return nil, errSnapshot
	}
	out = slices.Grow(out, int(n))
	for i := range n {
		r := SnapRecord{Seq: int64(d.uvarint()), Time: time.Unix(0, d.varint()).UTC()}
		r.TurnID, r.Kind, r.Model = d.str(), d.str(), d.str()
		r.Message.Role = llm.Role(d.str())
		if d.byte() == 1 {
			nb := d.uvarint()
			if nb > uint64(len(d.b)) {
				return nil, errSnapshot
			}
			r.Message.Content = d.blocks(int(nb), int(n-i))
			for j := range r.Message.Content {
				bl := &r.Message.Content[j]
				bl.Type, bl.Text, bl.ID, bl.Name = llm.BlockType(d.str()), d.str(), d.str(), d.str()
				if d.byte() == 1 {
					bl.Input = d.input()
				}
				bl.ToolUseID, bl.Content = d.str(), d.str()
				bl.IsError = d.byte() == 1
				bl.Thinking, bl.Signature = d.str(), d.str()
				if s := d.str(); s != "" && !fromSnapMedia(s, bl) {
					return nil, errSnapshot
				}
			}
		}
		if d.err {
			return nil, errSnapshot
		}
		out = append(out, record(r))
	}
	if d.err || len(d.b) != 0 {
		return nil, errSnapshot
	}
	return out, nil
}

// inputChunk is the size of the allocations tool inputs are copied into.
const inputChunk = 64 << 10

type snapReader struct {
	b     []byte
	err   bool
	arena *Arena
}

// blocks returns room for nb blocks of the record that has left records
// to go in its snapshot (itself included). A new allocation is sized for
// one block per record left, which most records have.
func (d *snapReader) blocks(nb, left int) []llm.Block {
	a := d.arena
	if nb > len(a.blocks) {
		a.blocks = make([]llm.Block, max(nb, left+16))
	}
	out := a.blocks[:nb:nb]
	a.blocks = a.blocks[nb:]
	return out
}

// input returns a copy of the next string, as bytes of its own.
func (d *snapReader) input() []byte {
	s := d.str()
	switch {
	case len(s) == 0:
		return []byte{} // present, and empty: not nil
	case len(s) > inputChunk/4:
		return []byte(s)
	}
	a := d.arena
	if len(s) > len(a.inputs) {
		a.inputs = make([]byte, min(inputChunk, max(len(d.b)+len(s), 4<<10)))
	}
	out := a.inputs[:len(s):len(s)]
	copy(out, s)
	a.inputs = a.inputs[len(s):]
	return out
}

func (d *snapReader) byte() byte {
	if len(d.b) == 0 {
		d.err = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *snapReader) uvarint() uint64 {
	if len(d.b) > 0 && d.b[0] < 0x80 { // most are lengths under 128
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *snapReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// str returns the next string, sharing the snapshot's bytes.
func (d *snapReader) str() string {
	n := d.uvarint()
	if d.err || n > uint64(len(d.b)) {
		d.err = true
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String(&d.b[0], int(n))
	d.b = d.b[n:]
	return s
}

// snapExtra is what a snapshot keeps of a block's media, as JSON (rare,
// so not worth a binary form of its own).
type snapExtra struct {
	Media *media `json:"m,omitempty"`
}

// snapMedia returns the JSON of bl's media, or "" if it has none.
func snapMedia(bl llm.Block) string {
	if bl.Media == nil {
		return ""
	}
	b, err := json.Marshal(snapExtra{Media: toMedia(bl.Media)})
	if err != nil {
		return "" // strings only: cannot fail
	}
	return string(b)
}

func fromSnapMedia(s string, bl *llm.Block) bool {
	var e snapExtra
	if json.Unmarshal([]byte(s), &e) != nil {
		return false
	}
	bl.Media = fromMedia(e.Media)
	return true
}
