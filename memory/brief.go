package memory

import (
	"github.com/deskd/deskd/memory/jsonline"
)

// A start counts a session's turns and spend from the records after its
// state's mark (or, for a state file that has none, from every record):
// ReadSessionBrief reads them as briefs, which hold every field but the
// texts, decoded without reflection where a line is in the plain form
// deskd writes, so that counting 10,000 records costs a scan of their
// bytes and not their decoding.

// ReadSessionBrief is ReadSessionTail for a reader that needs no text
// and keeps no record: it hands every good record to take (not nil), in
// order, and returns the tail without Records. A record holds Type, At,
// Role, Trigger, Model, Provider, Scripted, Silent, Usage, Cost,
// ForkedFrom and ToolCalls as ReadSessionTail gives them, and no other
// field. It finds the same records (a line is good exactly when
// ReadSessionTail finds it good), the same End and Clean. take is not
// called at all when ok is false or err is not nil.
func (f *Folder) ReadSessionBrief(id string, offset int64, take func(Record)) (tail SessionTail, ok bool, err error) {
	return f.readSessionTail(id, offset, decodeBrief, func(_ []byte) func(Record) { return take })
}

// briefOf returns r with only the fields of a brief.
func briefOf(r Record) Record {
	return Record{Type: r.Type, At: r.At, Role: r.Role, Trigger: r.Trigger, Model: r.Model, Provider: r.Provider,
		Scripted: r.Scripted, Silent: r.Silent, Usage: r.Usage, Cost: r.Cost, ForkedFrom: r.ForkedFrom, ToolCalls: r.ToolCalls}
}

// decodeBrief decodes line as a brief: by decodeBriefFast when the line
// is in deskd's plain form, else by decodeRecord.
func decodeBrief(line []byte) (Record, bool) {
	if r, ok := decodeBriefFast(line); ok {
		return r, true
	}
	r, ok := decodeRecord(line)
	return briefOf(r), ok
}

// The keys of a Record that decodeBriefFast reads, as json.Marshal writes
// them, and of its Usage. A line with any other key (tool_calls, data) is
// left to decodeRecord.
var (
	briefKeys = [...]string{"type", "at", "session", "desk", "trading_date", "parent", "forked_from", "role", "text",
		"trigger", "kind", "model", "provider", "scripted", "usage", "cost", "duration_ms", "tool_call_id", "tool_name",
		"is_error", "silent", "truncated"}
	usageKeys = [...]string{"input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"}
)

// decodeBriefFast decodes a line of the plain form json.Marshal gives a
// Record into a brief, without reflection. ok is false when the line is
// of another form (escapes in a kept string, nulls, keys it does not
// read, repeated keys, ...) or is not a record (no type): decodeRecord
// decides those. It accepts only lines decodeRecord accepts, with the
// same values.
func decodeBriefFast(line []byte) (Record, bool) {
	var r Record
	s := jsonline.New(line)
	kept := func(dst *string) bool {
		v, ok := s.Plain()
		*dst = common(v)
		return ok
	}
	flag := func(dst *bool) bool {
		v, ok := s.Bool()
		*dst = v
		return ok
	}
	ok := s.Object(briefKeys[:], func(k int) bool {
		switch briefKeys[k] {
		case "type":
			return kept(&r.Type)
		case "at":
			var ok bool
			r.At, ok = s.Time()
			return ok
		case "forked_from":
			return kept(&r.ForkedFrom)
		case "role":
			return kept(&r.Role)
		case "trigger":
			return kept(&r.Trigger)
		case "model":
			return kept(&r.Model)
		case "provider":
			return kept(&r.Provider)
		case "scripted":
			return flag(&r.Scripted)
		case "silent":
			return flag(&r.Silent)
		case "is_error", "truncated":
			var v bool
			return flag(&v)
		case "cost":
			var ok bool
			r.Cost, ok = s.Float()
			return ok
		case "duration_ms":
			_, ok := s.Int()
			return ok
		case "usage":
			if !s.Peek('{') {
				return false
			}
			u := &Usage{}
			r.Usage = u
			return s.Object(usageKeys[:], func(k int) bool {
				v, ok := s.Int()
				switch usageKeys[k] {
				case "input_tokens":
					u.InputTokens = int(v)
				case "output_tokens":
					u.OutputTokens = int(v)
				case "cached_tokens":
					u.CachedTokens = int(v)
				case "cache_write_tokens":
					u.CacheWriteTokens = int(v)
				}
				return ok
			})
		}
		return s.Str() // a string that is not kept
	})
	if !ok || !s.End() || r.Type == "" {
		return Record{}, false
	}
	return r, true
}

// common returns v as a string, without a copy of its own when it is one
// of the values most records repeat (record types, roles, providers): a
// start that reads a long session then allocates little per record.
func common(v []byte) string {
	switch string(v) {
	case RecordMessage:
		return RecordMessage
	case RecordTool:
		return RecordTool
	case RecordEvent:
		return RecordEvent
	case RecordHeader:
		return RecordHeader
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "openai":
		return "openai"
	case "anthropic":
		return "anthropic"
	}
	return string(v)
}
