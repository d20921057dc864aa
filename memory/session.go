package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// Record types.
const (
	RecordHeader  = "header"  // the first record of a session
	RecordMessage = "message" // a user or assistant message
	RecordEvent   = "event"   // something that happened; Kind is the topic
	// RecordTool is a tool's result, sent back to the model.
	RecordTool = "tool"
	// RecordCheckpoint summarises the exchanges before it (compaction):
	// later requests carry it instead of them. Nothing is deleted.
	RecordCheckpoint = "checkpoint"
)

// RequestSentKind is the Kind of the event record the router writes, for a
// trigger, just before the turn's first request goes to the model (and
// before any retry or fallback): a session whose trigger's message has no
// such record after it never sent the model that trigger. The record is
// written with Note (not fsynced by itself): a crash of deskd keeps it; a
// crash of the host before the next fsync may lose it.
const RequestSentKind = "request.sent"

// Usage is the token usage of one model call.
type Usage struct {
	// InputTokens counts the whole prompt, what was read from or written
	// to the service's prompt cache included.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CachedTokens are the prompt's tokens read from the service's prompt
	// cache.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are the prompt's tokens written to the service's
	// prompt cache (Anthropic's cache_creation_input_tokens; a session file
	// written before deskd counted them has none).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Record is one line of a session file.
type Record struct {
	Type       string          `json:"type"`                   // RecordHeader, RecordMessage, RecordEvent, ...
	At         time.Time       `json:"at"`                     // when it happened
	Session    string          `json:"session,omitempty"`      // header: the session id
	Desk       string          `json:"desk,omitempty"`         // header: the desk
	Date       string          `json:"trading_date,omitempty"` // header: the trading date, YYYY-MM-DD
	Parent     string          `json:"parent,omitempty"`       // header: the parent session id
	ForkedFrom string          `json:"forked_from,omitempty"`  // header: the session this one was forked from (also Parent); other records: copied by a fork, first written in this session
	Role       string          `json:"role,omitempty"`         // message: "user" or "assistant"
	Text       string          `json:"text,omitempty"`         // message text
	Trigger    string          `json:"trigger,omitempty"`      // message: the trigger id
	Kind       string          `json:"kind,omitempty"`         // message (user): the trigger kind; event: the event topic
	Model      string          `json:"model,omitempty"`        // assistant: the model route name that answered
	Provider   string          `json:"provider,omitempty"`     // assistant: the provider ("scripted", "openai", ...)
	Scripted   bool            `json:"scripted,omitempty"`     // assistant: true when the offline scripted model wrote it
	Usage      *Usage          `json:"usage,omitempty"`        // token usage of the call
	Cost       float64         `json:"cost,omitempty"`         // the call's cost, where its model has prices (the router's spend is rebuilt from it)
	DurationMS int64           `json:"duration_ms,omitempty"`  // how long it took
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`   // assistant: the tools it asked to run, []ToolCall (see Calls)
	ToolCallID string          `json:"tool_call_id,omitempty"` // tool: the call it answers
	ToolName   string          `json:"tool_name,omitempty"`    // tool: the tool that ran
	IsError    bool            `json:"is_error,omitempty"`     // tool: the result is an error
	Silent     bool            `json:"silent,omitempty"`       // message: part of a silent turn (the flush before a compaction)
	Truncated  bool            `json:"truncated,omitempty"`    // assistant message or event: the model's reply was cut at deskd's cap, the rest not read
	Data       json.RawMessage `json:"data,omitempty"`         // anything else a later feature needs
}

// ToolCall is one tool call of an assistant record, as it is stored: the
// router writes the model's calls in this shape, and everyone who reads a
// session (the router on resume, the curator, transcripts) reads them
// back with Calls.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Calls decodes the record's tool calls; ok is false when they do not
// parse. A record without tool calls has none, ok.
func (r Record) Calls() (calls []ToolCall, ok bool) {
	if len(r.ToolCalls) == 0 {
		return nil, true
	}
	if json.Unmarshal(r.ToolCalls, &calls) != nil {
		return nil, false
	}
	return calls, true
}

// TornTail describes a damaged last line found, and removed, when a session
// file was opened: the bytes of a write a crash cut short.
type TornTail struct {
	Path    string // the session file
	Offset  int64  // where the damaged line began; the file now ends here
	Bytes   int    // how many bytes were removed
	SavedTo string // the file that keeps them: <session file>.torn-<Offset>
}

// SessionLog is an open session file that records are appended to. It is
// safe for concurrent use. Keep one SessionLog per session file at a time.
type SessionLog struct {
	log     *durable.Log
	id      string
	now     func() time.Time
	skipped int
	size    atomic.Int64 // the file's length: where the next record begins
}

// validSessionID reports whether id matches ^[A-Za-z0-9_-]{1,80}$.
func validSessionID(id string) bool {
	if len(id) < 1 || len(id) > 80 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// SessionPath returns the path of session id's file, sessions/<id>.jsonl.
func (f *Folder) SessionPath(id string) string {
	return f.Path(filepath.Join(SessionsDir, id+".jsonl"))
}

// sessionPath is SessionPath for a valid id, and an error otherwise.
func (f *Folder) sessionPath(id string) (string, error) {
	if !validSessionID(id) {
		return "", fmt.Errorf("invalid session id %q: want 1 to 80 of A-Z a-z 0-9 _ -", id)
	}
	return f.SessionPath(id), nil
}

// CreateSession creates the file of a new session and writes header as its
// first line. header.Session is the id and must match ^[A-Za-z0-9_-]{1,80}$;
// header.Type is set to RecordHeader, a zero header.At to f.Now() and an
// empty header.Desk to f.Desk(). An existing file is refused (the error
// names it and satisfies errors.Is(err, fs.ErrExist)). The file and the
// sessions folder are fsynced before CreateSession returns.
func (f *Folder) CreateSession(header Record) (*SessionLog, error) {
	path, err := f.sessionPath(header.Session)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	header.Type = RecordHeader
	if header.At.IsZero() {
		header.At = f.Now()
	}
	if header.Desk == "" {
		header.Desk = f.desk
	}
	line, err := marshalRecord(header)
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	// sessions/ is made by the first session (see OpenFolder).
	if err := f.mkdirAll(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	log, err := durable.CreateLog(f.fs(), path, filePerm, bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	s := &SessionLog{log: log, id: header.Session, now: f.Now}
	s.size.Store(int64(len(line)))
	return s, nil
}

// OpenSession opens session id's file for appending and returns every good
// record in it. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist).
//
// A good record is a line holding a JSON object with a "type". If the file
// ends in lines that are not good, a crash (or a failed write) cut a write
// short: OpenSession copies them to <file>.torn-<offset> atomically,
// truncates the file back to the end of the last good record, fsyncs it,
// and returns torn != nil, so the caller reports it once: the next
// OpenSession finds a clean file. A good last line that lacks its '\n'
// (the crash came just before it) is kept: OpenSession adds the '\n'. A
// bad line before a good one is skipped, and left in the file; a good
// record glued onto the end of one (written after a failure that was not
// cut back) is recovered. SkippedLines counts the bad lines. Blank lines
// are ignored.
func (f *Folder) OpenSession(id string) (log *SessionLog, records []Record, torn *TornTail, err error) {
	log, _, torn, err = f.openSession(id, collect(&records))
	if err != nil {
		return nil, nil, nil, err
	}
	return log, records, torn, nil
}

// OpenSessionLines is OpenSession for a reader that needs only some of
// the session's records decoded: it returns the good records undecoded,
// and SessionLines decodes the ones asked for. It mends a torn tail as
// OpenSession does.
//
// To tell a good record from a bad line without decoding every line, a
// line in the shape every deskd writes, a JSON object whose first member
// is a non-empty "type", is good when it is valid JSON; any other line is
// decoded to tell. So a line a crash cut short is found and cut off as by
// OpenSession; only a line written by hand that is valid JSON in that
// shape yet does not decode as a record (a field of the wrong type) is
// left in the file: SessionLines.Record then reports it as bad, and it is
// not counted in SkippedLines.
func (f *Folder) OpenSessionLines(id string) (log *SessionLog, lines SessionLines, torn *TornTail, err error) {
	log, sc, torn, err := f.openSession(id, quickValid)
	if err != nil {
		return nil, SessionLines{}, nil, err
	}
	return log, SessionLines{lines: sc.Records}, torn, nil
}

// openSession opens session id's file with valid as the rule of a good
// record.
func (f *Folder) openSession(id string, valid durable.Valid) (*SessionLog, durable.Scan, *TornTail, error) {
	path, err := f.sessionPath(id)
	if err != nil {
		return nil, durable.Scan{}, nil, fmt.Errorf("open session: %w", err)
	}
	if _, err := os.Lstat(path); err != nil {
		return nil, durable.Scan{}, nil, fmt.Errorf("open session %s: %w", path, err)
	}
	l, sc, err := durable.OpenLog(f.fs(), path, filePerm, valid)
	if err != nil {
		return nil, durable.Scan{}, nil, fmt.Errorf("open session %s: %w", path, err)
	}
	var torn *TornTail
	if t := sc.Torn; t != nil {
		torn = &TornTail{Path: t.Path, Offset: t.Offset, Bytes: t.Bytes, SavedTo: t.SavedTo}
	}
	// OpenLog leaves the file ending at its last good record (a torn tail
	// cut, a missing '\n' added): its length is where appends go on.
	fi, err := os.Lstat(path)
	if err != nil {
		_ = l.Close()
		return nil, durable.Scan{}, nil, fmt.Errorf("open session %s: %w", path, err)
	}
	s := &SessionLog{log: l, id: id, now: f.Now, skipped: len(sc.Skipped)}
	s.size.Store(fi.Size())
	return s, sc, torn, nil
}

// SessionLines are the good records of a session file, undecoded, in
// file order (see OpenSessionLines). They hold the file's bytes: keep
// them no longer than it takes to decode what is needed.
type SessionLines struct {
	lines [][]byte
}

// Len returns how many records there are.
func (l SessionLines) Len() int { return len(l.lines) }

// Is reports whether record i is of type typ, without decoding it when it
// is in the shape deskd writes (its first member is the type).
func (l SessionLines) Is(i int, typ string) bool {
	if t, ok := leadingType(l.lines[i]); ok {
		return string(t) == typ
	}
	r, _ := decodeRecord(l.lines[i])
	return r.Type == typ
}

// Record decodes record i; ok is false when it does not decode as a
// record (a hand-written line, see OpenSessionLines).
func (l SessionLines) Record(i int) (Record, bool) { return decodeRecord(l.lines[i]) }

// typePrefix begins every line deskd writes: json.Marshal writes a
// Record's fields in order, and Type is the first.
const typePrefix = `{"type":"`

// leadingType returns the type of a line that begins with typePrefix and
// whose type has no escapes; ok is false for any other line.
func leadingType(line []byte) ([]byte, bool) {
	if len(line) < len(typePrefix) || string(line[:len(typePrefix)]) != typePrefix {
		return nil, false
	}
	rest := line[len(typePrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, false
	}
	return rest[:end], true
}

// quickValid is the rule of a good record of OpenSessionLines: a valid
// JSON line in deskd's shape with a non-empty type, or any line that
// decodes as a record.
func quickValid(line []byte) bool {
	if t, ok := leadingType(line); ok && len(t) > 0 {
		return json.Valid(line)
	}
	_, ok := decodeRecord(line)
	return ok
}

// SessionTail is what ReadSessionTail found after an offset of a session
// file.
type SessionTail struct {
	// Records are the good records from the offset on, as OpenSession and
	// ReadSession would return them.
	Records []Record
	// End is where the good records end: the file's length when Clean.
	End int64
	// Clean is true when OpenSession would find nothing to mend from the
	// offset on: no torn tail, and a '\n' after the last record.
	Clean bool
}

// ReadSessionTail reads session id's file from offset on, without
// changing it and without reading or decoding what comes before (but for
// the one byte that shows offset is where a line begins). ok is false when
// offset is not where a line of the file begins: past its end, or not just
// after a '\n' (the file is not the one the offset was taken of). A
// missing file is an error satisfying errors.Is(err, fs.ErrNotExist).
func (f *Folder) ReadSessionTail(id string, offset int64) (tail SessionTail, ok bool, err error) {
	var records []Record
	tail, ok, err = f.readSessionTail(id, offset, decodeRecord, func(data []byte) func(Record) {
		// One record a line: sized once, not grown (and copied) record by record.
		records = make([]Record, 0, bytes.Count(data, []byte{'\n'})+1)
		return func(r Record) { records = append(records, r) }
	})
	if len(records) > 0 {
		tail.Records = records
	}
	return tail, ok, err
}

// readSessionTail is ReadSessionTail with decode as the decoder of a
// record (and the rule of a good one), and takerFor, given the bytes to
// scan (once every check has passed), the taker of each good record.
func (f *Folder) readSessionTail(id string, offset int64, decode func(line []byte) (Record, bool), takerFor func(data []byte) func(Record)) (tail SessionTail, ok bool, err error) {
	path, err := f.sessionPath(id)
	if err != nil {
		return SessionTail{}, false, fmt.Errorf("read session: %w", err)
	}
	fail := func(err error) (SessionTail, bool, error) {
		return SessionTail{}, false, fmt.Errorf("read session %s from %d: %w", path, offset, err)
	}
	// Non-blocking, so that a FIFO put in the file's place is refused
	// below, not waited on.
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return fail(err)
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("not a regular file (%s)", fi.Mode().Type()))
	}
	if offset < 0 || offset > fi.Size() {
		return SessionTail{}, false, nil
	}
	from := offset
	if from > 0 {
		from-- // the byte before must end a line
	}
	// Read into a buffer of the file's size, not one that grows.
	data := make([]byte, fi.Size()-from)
	n, err := file.ReadAt(data, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	data = data[:n]
	if offset > 0 {
		if len(data) == 0 || data[0] != '\n' {
			return SessionTail{}, false, nil
		}
		data = data[1:]
	}
	end, terminated := durable.EachRecord(data, takeBy(decode, takerFor(data)))
	tail.End = offset + end
	tail.Clean = end == int64(len(data)) && terminated
	return tail, true, nil
}

// ReadSession returns the good records of session id's file without
// changing it: bad lines, a torn last line included, are skipped. A missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist).
func (f *Folder) ReadSession(id string) ([]Record, error) {
	path, err := f.sessionPath(id)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	data, err := readSessionFile(path)
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", path, err)
	}
	var records []Record
	durable.ScanRecords(data, collect(&records))
	return records, nil
}

// ReadSessionMentioning is ReadSession for a reader that wants only the
// records that name one of words (trigger ids, say): when no byte run of
// the file holds any of them, as deskd writes them (JSON strings), it
// returns nil and false without decoding a record, so that a restart that
// asks after triggers a session never saw costs one read of the file.
// Otherwise it returns every record, and true.
func (f *Folder) ReadSessionMentioning(id string, words []string) ([]Record, bool, error) {
	path, err := f.sessionPath(id)
	if err != nil {
		return nil, false, fmt.Errorf("read session: %w", err)
	}
	data, err := readSessionFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read session %s: %w", path, err)
	}
	if !mentionsAny(data, words) {
		return nil, false, nil
	}
	var records []Record
	durable.ScanRecords(data, collect(&records))
	return records, true, nil
}

// mentionsAny reports whether data holds any of words as JSON encodes it
// (or as it is, which is the same for a plain id).
func mentionsAny(data []byte, words []string) bool {
	for _, w := range words {
		enc, err := json.Marshal(w)
		if err != nil || len(enc) < 2 {
			return true // cannot tell: decode
		}
		if bytes.Contains(data, enc[1:len(enc)-1]) || bytes.Contains(data, []byte(w)) {
			return true
		}
	}
	return false
}

// readSessionFile reads a whole session file without waiting on anything
// that is not a regular file (a FIFO in its place is refused).
func readSessionFile(path string) ([]byte, error) {
	return durable.ReadRegular(path, maxSessionFile, durable.Follow)
}

// maxSessionFile bounds a whole read of a session file: far beyond any
// session deskd writes (a day of turns), short of exhausting memory.
const maxSessionFile = 4 << 30

// DiscardSession removes session id's file if it holds nothing but its
// header: a session that was created but never made current (its start
// failed). A file with more is left alone, and an error says so.
func (f *Folder) DiscardSession(id string) error {
	path, err := f.sessionPath(id)
	if err != nil {
		return fmt.Errorf("discard session: %w", err)
	}
	records, err := f.ReadSession(id)
	if err != nil {
		return fmt.Errorf("discard session: %w", err)
	}
	if len(records) > 1 || len(records) == 1 && records[0].Type != RecordHeader {
		return fmt.Errorf("discard session %s: it holds %d records, not only its header", path, len(records))
	}
	if err := f.fs().Remove(path); err != nil {
		return fmt.Errorf("discard session %s: %w", path, err)
	}
	return nil
}

// SessionIDs returns the ids of the session files, sessions/<id>.jsonl,
// sorted by modification time, then id.
func (f *Folder) SessionIDs() ([]string, error) {
	dir := f.Path(SessionsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions %s: %w", dir, err)
	}
	type session struct {
		id  string
		mod time.Time
	}
	var ss []session
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !validSessionID(id) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions %s: %w", dir, err)
		}
		ss = append(ss, session{id, fi.ModTime()})
	}
	sort.Slice(ss, func(i, j int) bool {
		if !ss[i].mod.Equal(ss[j].mod) {
			return ss[i].mod.Before(ss[j].mod)
		}
		return ss[i].id < ss[j].id
	})
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.id
	}
	return ids, nil
}

// Size returns the length of the session file as this SessionLog wrote
// it: the offset where the next record will begin, and the end of every
// record appended so far (a failed Append leaves it as it was).
func (s *SessionLog) Size() int64 { return s.size.Load() }

// ID returns the session id.
func (s *SessionLog) ID() string { return s.id }

// Path returns the session file's path.
func (s *SessionLog) Path() string { return s.log.Path() }

// SkippedLines returns how many bad lines, other than a torn tail,
// OpenSession skipped.
func (s *SessionLog) SkippedLines() int { return s.skipped }

// Append writes r as one JSON line in a single write and fsyncs the file.
// r.Type must be set; a zero r.At becomes the folder's Now(). If the write
// or its fsync fails, the file is cut back to its previous length (and, if
// even that fails, later appends are refused until it succeeds): the
// record is not in the session. Append is safe for concurrent use and
// fails after Close.
func (s *SessionLog) Append(r Record) error {
	return s.append(true, r)
}

// Note is Append without the fsync: r rides on the next fsync of the file
// (the next Append's, or the kernel's own writeback). A crash of deskd
// keeps it; a crash of the host before that fsync may lose it. A failed
// write is cut back as in Append.
func (s *SessionLog) Note(r Record) error {
	return s.append(false, r)
}

// AppendAll is Append of several records in one write and one fsync: the
// file holds all of them, or (on any failure) none.
func (s *SessionLog) AppendAll(rs ...Record) error {
	return s.append(true, rs...)
}

// NoteAll is Note of several records in one write: the file holds all of
// them, or (on any failure) none.
func (s *SessionLog) NoteAll(rs ...Record) error {
	return s.append(false, rs...)
}

// append writes rs in one write, a line each, fsynced when sync is set.
// The records are encoded one after another into one buffer, which is the
// write: no record is copied after its encoding.
func (s *SessionLog) append(sync bool, rs ...Record) error {
	if len(rs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range rs {
		if r.Type == "" {
			return fmt.Errorf("append to session %s: record has no type", s.Path())
		}
		if r.At.IsZero() {
			r.At = s.now()
		}
		start := buf.Len()
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("append to session %s: encode %s record: %w", s.Path(), r.Type, err)
		}
		if bytes.IndexByte(buf.Bytes()[start:], '\n') != buf.Len()-start-1 {
			return fmt.Errorf("append to session %s: encode %s record: newline in JSON", s.Path(), r.Type)
		}
	}
	if err := s.log.AppendLines(buf.Bytes(), len(rs), sync); err != nil {
		return fmt.Errorf("append %s to session %s: %w", recordTypes(rs), s.id, err)
	}
	s.size.Add(int64(buf.Len()))
	return nil
}

// recordTypes names the types of rs for an error: "message record", or
// "message and event records".
func recordTypes(rs []Record) string {
	if len(rs) == 1 {
		return rs[0].Type + " record"
	}
	types := make([]string, len(rs))
	for i, r := range rs {
		types[i] = r.Type
	}
	return strings.Join(types, " and ") + " records"
}

// Close closes the file. Closing again does nothing.
func (s *SessionLog) Close() error {
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("close session %s: %w", s.id, err)
	}
	return nil
}

// marshalRecord returns r as one JSON line ending in '\n'.
func marshalRecord(r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s record: %w", r.Type, err)
	}
	if bytes.IndexByte(b, '\n') >= 0 {
		return nil, fmt.Errorf("encode %s record: newline in JSON", r.Type)
	}
	return append(b, '\n'), nil
}

// decodeRecord parses one line; ok is false unless it is a JSON object
// with a type.
func decodeRecord(line []byte) (Record, bool) {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil || r.Type == "" {
		return Record{}, false
	}
	return r, true
}

// collect returns the record rule of session files (a JSON object with a
// type) that also appends each good record to *records, so that a file is
// decoded once.
func collect(records *[]Record) durable.Valid {
	return takeBy(decodeRecord, func(r Record) { *records = append(*records, r) })
}

// takeBy is the durable.Valid of a record scan: a line is good when
// decode finds it so, and each good record goes to take.
func takeBy(decode func(line []byte) (Record, bool), take func(Record)) durable.Valid {
	return func(line []byte) bool {
		r, ok := decode(line)
		if ok {
			take(r)
		}
		return ok
	}
}
