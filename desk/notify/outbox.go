package notify

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// OutboxFile is a target's outbox file, in Options.Dir/<target>/.
const OutboxFile = "outbox.jsonl"

// A target's outbox file holds two kinds of line, in the order they
// happened:
//
//	{"seq":N,"id":"msg_...","type":"turn.failed","at":"...","body":{...}}   a notification to post
//	{"done":N}                                                            everything up to N was posted or given up
//
// The body is the exact request body, so that every copy of a
// notification, after a retry or a restart, is the same bytes with the
// same webhook-id. It never holds a secret: the signature is made at each
// attempt. A compaction rewrites the file as one done line and the
// entries still waiting. Each entry is fsynced before add returns; a done
// line is not (one lost to a crash only posts the entry again, with the
// same webhook-id).

// record is one line of an outbox file.
type record struct {
	Seq  uint64          `json:"seq,omitempty"`
	ID   string          `json:"id,omitempty"`
	Type string          `json:"type,omitempty"`
	At   time.Time       `json:"at,omitzero"`
	Body json.RawMessage `json:"body,omitempty"`
	Done uint64          `json:"done,omitempty"`
}

// ok says whether a decoded line is an entry or a done line.
func (r record) ok() bool {
	if r.Done > 0 {
		return r.Seq == 0 && r.ID == "" && len(r.Body) == 0
	}
	return r.Seq > 0 && r.ID != "" && r.Type != "" && !r.At.IsZero() && json.Valid(r.Body)
}

// item is a notification kept in an outbox.
type item struct {
	id   string
	typ  string
	at   time.Time // when it was kept: give_up_after counts from it
	body []byte
}

// entry is a notification waiting in an outbox.
type entry = durable.OutboxEntry[item]

// outbox is one target's durable, bounded queue of notifications.
type outbox = durable.Outbox[item]

// openOutbox opens (creating it) the outbox file in dir and reads what
// waits in it. The Scan says what damage was found and set aside.
func openOutbox(fsys durable.FS, dir string, maxBytes int64) (*outbox, durable.Scan, error) {
	return durable.OpenOutbox(durable.OutboxOptions[item]{
		FS: fsys, Path: filepath.Join(dir, OutboxFile), Perm: 0o600, MaxBytes: maxBytes,
		Name: "the notification outbox", SyncAdd: true,
		Encode: func(seq uint64, it item) ([]byte, error) {
			return json.Marshal(record{Seq: seq, ID: it.id, Type: it.typ, At: it.at, Body: it.body})
		},
		Mark: func(seq uint64) []byte {
			line, _ := json.Marshal(record{Done: seq}) // cannot fail
			return line
		},
		Decode: func(line []byte) (uint64, uint64, item, bool) {
			var r record
			if json.Unmarshal(line, &r) != nil || !r.ok() {
				return 0, 0, item{}, false
			}
			return r.Seq, r.Done, item{id: r.ID, typ: r.Type, at: r.At, body: r.Body}, true
		},
	})
}
