package natsevents

import (
	"encoding/json"
	"path/filepath"

	"github.com/deskd/deskd/memory/durable"
)

// OutboxFile is the outbox's file in Options.Dir.
const OutboxFile = "outbox.jsonl"

// An entry is written (one write) when it is added, and fsynced by flush,
// which the sender calls before it sends: a process killed after add
// returned leaves the entry in the file (the kernel has it); a host that
// loses power may lose what was not flushed yet.
//
// The outbox's file holds two kinds of line, in the order they happened:
//
//	{"seq":N,"id":"...","subject":"...","data":{...}}   an event to send
//	{"acked":N}                                         everything up to N was acknowledged
//
// so that a restart sends again exactly the entries after the last acked
// line. A compaction rewrites the file as one acked line and the entries
// still waiting. An acked line is not fsynced: one lost to a crash only
// sends the entry again, which the stream's dedupe drops.

// record is one line of the outbox's file.
type record struct {
	Seq     uint64          `json:"seq,omitempty"`
	ID      string          `json:"id,omitempty"`
	Subject string          `json:"subject,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	Acked   uint64          `json:"acked,omitempty"`
}

// ok says whether a decoded line is an entry or an acked line.
func (r record) ok() bool {
	if r.Acked > 0 {
		return r.Seq == 0 && r.ID == "" && r.Subject == "" && len(r.Data) == 0
	}
	return r.Seq > 0 && r.ID != "" && r.Subject != "" && json.Valid(r.Data)
}

// item is an event kept in the outbox: its subject, its body and its
// Nats-Msg-Id.
type item struct {
	id      string
	subject string
	data    []byte
}

// entry is an event waiting in the outbox.
type entry = durable.OutboxEntry[item]

// outbox is the durable, bounded queue of events waiting for their PubAck.
type outbox = durable.Outbox[item]

// openOutbox opens (creating it) the outbox in dir and reads what waits in
// it. The Scan says what damage was found and set aside.
func openOutbox(dir string, maxBytes int64) (*outbox, durable.Scan, error) {
	return durable.OpenOutbox(durable.OutboxOptions[item]{
		Path: filepath.Join(dir, OutboxFile), Perm: 0o640, MaxBytes: maxBytes,
		Name: "the NATS event outbox",
		Encode: func(seq uint64, it item) ([]byte, error) {
			return json.Marshal(record{Seq: seq, ID: it.id, Subject: it.subject, Data: it.data})
		},
		Mark: func(seq uint64) []byte {
			line, _ := json.Marshal(record{Acked: seq}) // cannot fail
			return line
		},
		Decode: func(line []byte) (uint64, uint64, item, bool) {
			var r record
			if json.Unmarshal(line, &r) != nil || !r.ok() {
				return 0, 0, item{}, false
			}
			return r.Seq, r.Acked, item{id: r.ID, subject: r.Subject, data: r.Data}, true
		},
	})
}
