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
	"strconv"
	"strings"
	"sync"
	"time"
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

// Usage is the token usage of one model call.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	CachedTokens int `json:"cached_tokens,omitempty"`
}

// Record is one line of a session file.
type Record struct {
	Type       string          `json:"type"`                   // RecordHeader, RecordMessage, RecordEvent, ...
	At         time.Time       `json:"at"`                     // when it happened
	Session    string          `json:"session,omitempty"`      // header: the session id
	Desk       string          `json:"desk,omitempty"`         // header: the desk
	Date       string          `json:"trading_date,omitempty"` // header: the trading date, YYYY-MM-DD
	Parent     string          `json:"parent,omitempty"`       // header: the parent session id
	Role       string          `json:"role,omitempty"`         // message: "user" or "assistant"
	Text       string          `json:"text,omitempty"`         // message text
	Trigger    string          `json:"trigger,omitempty"`      // message: the trigger id
	Kind       string          `json:"kind,omitempty"`         // message (user): the trigger kind; event: the event topic
	Model      string          `json:"model,omitempty"`        // assistant: the model route name that answered
	Provider   string          `json:"provider,omitempty"`     // assistant: the provider ("scripted", "openai", ...)
	Scripted   bool            `json:"scripted,omitempty"`     // assistant: true when the offline scripted model wrote it
	Usage      *Usage          `json:"usage,omitempty"`        // token usage of the call
	DurationMS int64           `json:"duration_ms,omitempty"`  // how long it took
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`   // assistant: the tools it asked to run
	ToolCallID string          `json:"tool_call_id,omitempty"` // tool: the call it answers
	ToolName   string          `json:"tool_name,omitempty"`    // tool: the tool that ran
	IsError    bool            `json:"is_error,omitempty"`     // tool: the result is an error
	Silent     bool            `json:"silent,omitempty"`       // message: part of a silent turn (the flush before a compaction)
	Data       json.RawMessage `json:"data,omitempty"`         // anything else a later feature needs
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
	mu      sync.Mutex
	file    *os.File // nil once closed
	size    int64    // the file's length after the last good append
	id      string
	path    string
	now     func() time.Time
	skipped int
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
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, filePerm)
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	if _, err := file.Write(line); err == nil {
		err = file.Sync()
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = file.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	return &SessionLog{file: file, size: int64(len(line)), id: header.Session, path: path, now: f.Now}, nil
}

// OpenSession opens session id's file for appending and returns every good
// record in it. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist).
//
// A good record is a line holding a JSON object with a "type". If the last
// line is not good, a crash cut its write short: OpenSession copies that
// line (and anything after it) to <file>.torn-<offset> atomically,
// truncates the file back to where the line began, fsyncs it, and returns
// torn != nil, so the caller reports it once: the next OpenSession finds a
// clean file. A good last line that lacks its '\n' (the crash came just
// before it) is kept: OpenSession adds the '\n'. A bad line that is not the
// last is skipped, and left in the file; SkippedLines counts them. Blank
// lines are ignored.
func (f *Folder) OpenSession(id string) (log *SessionLog, records []Record, torn *TornTail, err error) {
	path, err := f.sessionPath(id)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open session: %w", err)
	}
	file, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open session %s: %w", path, err)
	}
	fail := func(err error) (*SessionLog, []Record, *TornTail, error) {
		_ = file.Close()
		return nil, nil, nil, fmt.Errorf("open session %s: %w", path, err)
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return fail(err)
	}
	sc := scanRecords(data)
	size := int64(len(data))
	switch {
	case sc.tornAt >= 0:
		frag := data[sc.tornAt:]
		stem := filepath.Base(path) + ".torn-" + strconv.Itoa(sc.tornAt)
		saved, err := writeFileKeep(filepath.Dir(path), stem, "", frag, filePerm)
		if err != nil {
			return fail(fmt.Errorf("save torn tail: %w", err))
		}
		if err := file.Truncate(int64(sc.tornAt)); err != nil {
			return fail(err)
		}
		if err := file.Sync(); err != nil {
			return fail(err)
		}
		size = int64(sc.tornAt)
		torn = &TornTail{Path: path, Offset: int64(sc.tornAt), Bytes: len(frag), SavedTo: saved}
	case sc.unterminated:
		if _, err := file.Write([]byte{'\n'}); err != nil {
			return fail(err)
		}
		if err := file.Sync(); err != nil {
			return fail(err)
		}
		size++
	}
	log = &SessionLog{file: file, size: size, id: id, path: path, now: f.Now, skipped: sc.skipped}
	return log, sc.records, torn, nil
}

// ReadSession returns the good records of session id's file without
// changing it: bad lines, a torn last line included, are skipped. A missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist).
func (f *Folder) ReadSession(id string) ([]Record, error) {
	path, err := f.sessionPath(id)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", path, err)
	}
	return scanRecords(data).records, nil
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

// ID returns the session id.
func (s *SessionLog) ID() string { return s.id }

// Path returns the session file's path.
func (s *SessionLog) Path() string { return s.path }

// SkippedLines returns how many bad lines, other than a torn last line,
// OpenSession skipped.
func (s *SessionLog) SkippedLines() int { return s.skipped }

// Append writes r as one JSON line in a single write and fsyncs the file.
// r.Type must be set; a zero r.At becomes the folder's Now(). If the write
// fails part way, the file is cut back to its previous length. Append is
// safe for concurrent use and fails after Close.
func (s *SessionLog) Append(r Record) error {
	if r.Type == "" {
		return fmt.Errorf("append to session %s: record has no type", s.path)
	}
	if r.At.IsZero() {
		r.At = s.now()
	}
	line, err := marshalRecord(r)
	if err != nil {
		return fmt.Errorf("append to session %s: %w", s.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return fmt.Errorf("append to session %s: %w", s.path, os.ErrClosed)
	}
	if _, err := s.file.Write(line); err != nil {
		_ = s.file.Truncate(s.size) // best effort: no half line for the next append to follow
		return fmt.Errorf("append to session %s: %w", s.path, err)
	}
	s.size += int64(len(line))
	if err := s.file.Sync(); err != nil {
		return fmt.Errorf("append to session %s: %w", s.path, err)
	}
	return nil
}

// Close closes the file. Closing again does nothing.
func (s *SessionLog) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	if err != nil {
		return fmt.Errorf("close session %s: %w", s.path, err)
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

// scanned is what scanRecords found in a session file.
type scanned struct {
	records      []Record
	skipped      int  // bad lines other than the last
	tornAt       int  // offset of the last non-blank line if it is bad, else -1
	unterminated bool // the last line is good but has no '\n'
}

// scanRecords parses the lines of a session file.
func scanRecords(data []byte) scanned {
	sc := scanned{tornAt: -1}
	for pos := 0; pos < len(data); {
		end, next := len(data), len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
		}
		line := data[pos:end]
		if len(bytes.TrimSpace(line)) == 0 {
			pos = next
			continue
		}
		if sc.tornAt >= 0 { // the bad line before this one was not the last
			sc.skipped++
			sc.tornAt = -1
		}
		if r, ok := decodeRecord(line); ok {
			sc.records = append(sc.records, r)
			sc.unterminated = end == len(data)
		} else {
			sc.tornAt = pos
			sc.unterminated = false
		}
		pos = next
	}
	return sc
}
