package httpapi

// The desk page's endpoints: a desk's sessions and their transcripts and
// exports, its Memory.md and kept versions (and a restore of one), its
// notes, summaries, skills and curator's changes (and an undo of one),
// and a day's audit bundle. Reads go to the desk's folder; a restore and
// an undo go through the desk (desk.Desk.RestoreMemory, UndoSkillChange),
// which does them between turns and announces them. Errors name what was
// asked for, never a file's path: 404 an unknown desk, session or
// version; 409 an ambiguous prefix (the matching ids, at most 5); 400 a
// bad date or body.

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/audit"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/diff"
	"github.com/deskd/deskd/memory/transcript"
)

// Files is what the desk page's endpoints need beyond a desk's folder.
type Files struct {
	// Day maps instants to trading dates (the default date of the notes
	// and of an audit); its Location shows the times of an export. Zero:
	// UTC dates from midnight.
	Day memory.TradingDay
	// Version is deskd's version, named in exports and audit bundles.
	Version string
	// AuditConfig, if set, says where the audit of a desk finds the config
	// in force on the day; nil: GET .../audit answers 501.
	AuditConfig func(desk string) (audit.Config, error)
}

// MaxFilesBody bounds the body of a restore or an undo.
const MaxFilesBody = 64 << 10

// SessionsResponse is the body of GET /v1/desks/{desk}/sessions.
type SessionsResponse struct {
	// Sessions are the desk's sessions, oldest first.
	Sessions []termview.SessionRow `json:"sessions"`
}

// TranscriptResponse is the body of GET
// /v1/desks/{desk}/sessions/{session}/transcript.
type TranscriptResponse struct {
	Desk    string              `json:"desk"`
	Session termview.SessionRow `json:"session"`
	Entries []transcript.Entry  `json:"entries"`
}

// MemoryVersionRow is one kept version of Memory.md.
type MemoryVersionRow struct {
	// ID is the version's id; a unique prefix of it names it too.
	ID   string `json:"id"`
	Size int64  `json:"size"`
	// At is when it was replaced.
	At time.Time `json:"at,omitzero"`
}

// MemoryResponse is the body of GET /v1/desks/{desk}/memory.
type MemoryResponse struct {
	// Text is Memory.md ("" when there is none).
	Text string `json:"text"`
	// Versions are the kept versions, newest first.
	Versions []MemoryVersionRow `json:"versions"`
}

// MemoryVersionResponse is the body of GET
// /v1/desks/{desk}/memory/versions/{version}.
type MemoryVersionResponse struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Diff is the unified diff from the version to the current Memory.md.
	Diff string `json:"diff"`
}

// RestoreRequest is the body of POST /v1/desks/{desk}/memory/restore.
type RestoreRequest struct {
	// Version is a kept version's id or a unique prefix of one.
	Version string `json:"version"`
	// By names who restores (memory.restored); default "api".
	By string `json:"by,omitempty"`
}

// RestoreResponse is the answer of POST /v1/desks/{desk}/memory/restore.
type RestoreResponse struct {
	// Restored is the id of the version that is now Memory.md.
	Restored string `json:"restored"`
	// KeptAs is the id the replaced text is kept as ("" when there was no
	// Memory.md).
	KeptAs string `json:"kept_as"`
}

// NotesResponse is the body of GET /v1/desks/{desk}/notes.
type NotesResponse struct {
	Date string `json:"date"`
	// Text is the date's notes, "" when there are none.
	Text string `json:"text"`
}

// SummaryRow is one summary of GET /v1/desks/{desk}/summaries.
type SummaryRow struct {
	Date string `json:"date"`
	// Session is the session summarised ("" when none is known).
	Session string `json:"session,omitempty"`
	// Path is the file that holds the text, inside the desk's folder
	// (summaries/YYYY-MM-DD.md, or a version kept under history/).
	Path string `json:"path,omitempty"`
	Text string `json:"text"`
	// Model wrote it; Scripted when that is the offline scripted model.
	Model    string `json:"model,omitempty"`
	Scripted bool   `json:"scripted,omitempty"`
}

// SummariesResponse is the body of GET /v1/desks/{desk}/summaries.
type SummariesResponse struct {
	// Summaries are newest first.
	Summaries []SummaryRow `json:"summaries"`
}

// SkillRow is one of a desk's skills.
type SkillRow struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Pinned      bool   `json:"pinned,omitempty"`
}

// SkillChange is one change of the curator's ledger.
type SkillChange struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	Skill  string    `json:"skill"`
	Reason string    `json:"reason"`
}

// SkillsResponse is the body of GET /v1/desks/{desk}/skills.
type SkillsResponse struct {
	Skills []SkillRow `json:"skills"`
	// Changes are the curator's changes, newest first.
	Changes []SkillChange `json:"changes"`
}

// UndoRequest is the body of POST /v1/desks/{desk}/skills/undo.
type UndoRequest struct {
	// Change is the id of the curator's change to undo.
	Change string `json:"change"`
	// By names who undoes it (skills.undone); default "api".
	By string `json:"by,omitempty"`
}

// routeFiles adds the desk page's endpoints.
func (s *Server) routeFiles() {
	s.mux.HandleFunc("GET /v1/desks/{desk}/sessions", s.getSessions)
	s.mux.HandleFunc("GET /v1/desks/{desk}/sessions/{session}/transcript", s.getTranscript)
	s.mux.HandleFunc("GET /v1/desks/{desk}/sessions/{session}/export", s.getExport)
	s.mux.HandleFunc("GET /v1/desks/{desk}/memory", s.getMemory)
	s.mux.HandleFunc("GET /v1/desks/{desk}/memory/versions/{version}", s.getMemoryVersion)
	s.mux.HandleFunc("POST /v1/desks/{desk}/memory/restore", s.postRestore)
	s.mux.HandleFunc("GET /v1/desks/{desk}/notes", s.getNotes)
	s.mux.HandleFunc("GET /v1/desks/{desk}/summaries", s.getSummaries)
	s.mux.HandleFunc("GET /v1/desks/{desk}/skills", s.getSkills)
	s.mux.HandleFunc("POST /v1/desks/{desk}/skills/undo", s.postUndo)
	s.mux.HandleFunc("GET /v1/desks/{desk}/audit", s.getAudit)
}

// folder returns the desk the path names and its folder, or answers 404.
func (s *Server) folder(w http.ResponseWriter, r *http.Request) (*desk.Desk, *memory.Folder, bool) {
	d, ok := s.desk(w, r)
	if !ok {
		return nil, nil, false
	}
	f := d.Folder()
	if f == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("desk %s has no folder to show", d.Name()))
		return nil, nil, false
	}
	return d, f, true
}

// fileError answers err of a read or change of a desk's files: 404 for
// what is not there, 409 for an ambiguous name or a change that cannot be
// made, 400 for a name that is not one; for any other error, the answer
// of a desk that has left this host meanwhile (leftHere: 421), else 503
// when the desk stopped and 500 (logged) for the rest.
func (s *Server) fileError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, transcript.ErrNoSessions), errors.Is(err, transcript.ErrUnknownSession),
		errors.Is(err, memory.ErrUnknownVersion), errors.Is(err, curator.ErrNoSuchChange):
		status = http.StatusNotFound
	case errors.Is(err, transcript.ErrAmbiguousSession), errors.Is(err, memory.ErrAmbiguousVersion),
		errors.Is(err, curator.ErrAlreadyUndone), errors.Is(err, curator.ErrCannotUndo):
		status = http.StatusConflict
	case errors.Is(err, memory.ErrBadVersionName):
		status = http.StatusBadRequest
	case s.leftHere(w, r, r.PathValue("desk")): // stopped or fenced: the desk has gone to another host
		return
	case errors.Is(err, desk.ErrStopped):
		status = http.StatusServiceUnavailable
	default: // the cause, a file's path in it, goes to the log alone
		s.o.Log.Error().Err(err).Str("path", r.URL.Path).Msg("desk files")
		writeError(w, status, fmt.Sprintf("desk %s: reading or writing its files failed (deskd's log has the cause)", r.PathValue("desk")))
		return
	}
	writeError(w, status, err.Error())
}

// getFiles serves a GET on a desk's files: read gives the 200's body
// from the desk's folder; its error is a fileError.
func (s *Server) getFiles(w http.ResponseWriter, r *http.Request, read func(f *memory.Folder) (any, error)) {
	_, f, ok := s.folder(w, r)
	if !ok {
		return
	}
	out, err := read(f)
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSessions(w http.ResponseWriter, r *http.Request) {
	s.getFiles(w, r, func(f *memory.Folder) (any, error) {
		infos, err := f.ListSessions()
		return SessionsResponse{Sessions: termview.SessionRows(infos)}, err
	})
}

// session reads the session the path names: "current", an id, or a
// unique prefix of one.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (*memory.Folder, transcript.Session, bool) {
	_, f, ok := s.folder(w, r)
	if !ok {
		return nil, transcript.Session{}, false
	}
	name := r.PathValue("session")
	if name == "current" {
		name = ""
	}
	sess, err := transcript.Load(f, name)
	if err != nil {
		s.fileError(w, r, err)
		return nil, transcript.Session{}, false
	}
	return f, sess, true
}

func (s *Server) getTranscript(w http.ResponseWriter, r *http.Request) {
	_, sess, ok := s.session(w, r)
	if !ok {
		return
	}
	entries := sess.Entries
	if entries == nil {
		entries = []transcript.Entry{}
	}
	writeJSON(w, http.StatusOK, TranscriptResponse{Desk: sess.Desk, Session: termview.SessionRows([]memory.SessionInfo{sess.Info})[0], Entries: entries})
}

func (s *Server) getExport(w http.ResponseWriter, r *http.Request) {
	f, sess, ok := s.session(w, r)
	if !ok {
		return
	}
	page, err := transcript.HTML(f, sess, s.location(), s.o.Clock.Now(), s.o.Files.Version)
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	writeAttachment(w, "text/html; charset=utf-8", sess.Desk+"-"+sess.Info.ID+".html", page)
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	s.getFiles(w, r, func(f *memory.Folder) (any, error) {
		text, err := f.ReadMemory()
		if err != nil {
			return nil, err
		}
		versions, err := f.MemoryHistory()
		if err != nil {
			return nil, err
		}
		out := MemoryResponse{Text: text, Versions: []MemoryVersionRow{}}
		for i := len(versions) - 1; i >= 0; i-- {
			v := versions[i]
			out.Versions = append(out.Versions, MemoryVersionRow{ID: v.ID, Size: v.Size, At: v.At})
		}
		return out, nil
	})
}

func (s *Server) getMemoryVersion(w http.ResponseWriter, r *http.Request) {
	s.getFiles(w, r, func(f *memory.Folder) (any, error) {
		v, err := f.ResolveMemoryVersion(r.PathValue("version"))
		if err != nil {
			return nil, err
		}
		old, err := f.ReadMemoryVersion(v.ID)
		if err != nil {
			return nil, err
		}
		cur, err := f.ReadMemory()
		if err != nil {
			return nil, err
		}
		return MemoryVersionResponse{ID: v.ID, Text: old, Diff: diff.Unified("Memory.md@"+v.ID, "Memory.md", old, cur)}, nil
	})
}

func (s *Server) postRestore(w http.ResponseWriter, r *http.Request) {
	postNamed(s, w, r, "version", "version to restore", func(q *RestoreRequest) (string, string) { return q.Version, q.By },
		func(d *desk.Desk, version, by string) (any, error) {
			v, keptAs, err := d.RestoreMemory(r.Context(), version, by)
			return RestoreResponse{Restored: v.ID, KeptAs: keptAs}, err
		})
}

// postNamed serves a POST on a desk's files whose body (a Req) names the
// one thing to change, a version to restore or a change to undo, and who
// changes it: fields gives the two from the body, key is the name's JSON
// key and what the thing in the words of a 400 when the name is missing
// or blank. change does it, with the name trimmed and by defaulting to
// "api" (byOrAPI), and gives the 200's body; its error is a fileError.
func postNamed[Req any](s *Server, w http.ResponseWriter, r *http.Request, key, what string,
	fields func(*Req) (name, by string), change func(d *desk.Desk, name, by string) (any, error)) {
	d, _, ok := s.folder(w, r)
	if !ok {
		return
	}
	var req Req
	if !readFilesBody(w, r, &req, `{"`+key+`": "...", "by": "..."}`) {
		return
	}
	name, by := fields(&req)
	if name = strings.TrimSpace(name); name == "" {
		writeError(w, http.StatusBadRequest, `want a JSON body {"`+key+`": "..."}: the `+what+` is missing`)
		return
	}
	out, err := change(d, name, byOrAPI(by))
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getNotes(w http.ResponseWriter, r *http.Request) {
	_, f, date, ok := s.folderOn(w, r)
	if !ok {
		return
	}
	text, _, err := f.ReadNotes(date)
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NotesResponse{Date: date.String(), Text: text})
}

func (s *Server) getSummaries(w http.ResponseWriter, r *http.Request) {
	s.getFiles(w, r, func(f *memory.Folder) (any, error) {
		rows, err := summaries(f)
		return SummariesResponse{Summaries: rows}, err
	})
}

// summaries returns the summary of each session that has one, then the
// summary files no session is known to have written, newest date first.
func summaries(f *memory.Folder) ([]SummaryRow, error) {
	infos, err := f.ListSessions()
	if err != nil {
		return nil, err
	}
	rows := []SummaryRow{}
	seen := map[string]bool{} // the files (or dates) a session's summary came from
	for _, info := range infos {
		ss, ok, err := f.SessionSummary(info.ID)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !ok {
			continue
		}
		if err != nil {
			return nil, err
		}
		row := SummaryRow{Date: ss.Date.String(), Session: info.ID, Path: relPath(f, ss.Path), Text: ss.Text}
		row.Model, row.Scripted = summaryModel(f, info.ID)
		seen[row.Path] = true
		rows = append(rows, row)
	}
	dates, err := f.SummaryDates()
	if err != nil {
		return nil, err
	}
	for _, d := range dates {
		sum, ok, err := f.ReadSummary(d)
		if err != nil {
			return nil, err
		}
		if ok && !seen[relPath(f, sum.Path)] {
			rows = append(rows, SummaryRow{Date: d.String(), Path: relPath(f, sum.Path), Text: sum.Text})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Date > rows[j].Date })
	return rows, nil
}

// summaryModel returns the model that wrote session id's summary, as the
// session's summary record says.
func summaryModel(f *memory.Folder, id string) (model string, scripted bool) {
	recs, err := f.ReadSession(id)
	if err != nil {
		return "", false
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if rec := recs[i]; rec.Type == memory.RecordEvent && rec.Kind == memory.SummaryKind && rec.ForkedFrom == "" {
			return rec.Model, rec.Scripted
		}
	}
	return "", false
}

// relPath returns path inside the desk's folder, slash-separated; "" for
// "" or a path outside it.
func relPath(f *memory.Folder, path string) string {
	if path == "" {
		return ""
	}
	rel, err := filepath.Rel(f.Dir(), path)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}

func (s *Server) getSkills(w http.ResponseWriter, r *http.Request) {
	s.getFiles(w, r, func(f *memory.Folder) (any, error) {
		skills, err := f.Skills()
		if err != nil {
			return nil, err
		}
		entries, err := curator.ReadLedger(f)
		if err != nil {
			return nil, err
		}
		out := SkillsResponse{Skills: []SkillRow{}, Changes: []SkillChange{}}
		for _, sk := range skills {
			out.Skills = append(out.Skills, SkillRow{Name: sk.Name, Description: sk.Description, Pinned: sk.Pinned})
		}
		for i := len(entries) - 1; i >= 0; i-- {
			if e := entries[i]; e.ID != "" {
				out.Changes = append(out.Changes, skillChange(e))
			}
		}
		return out, nil
	})
}

func skillChange(e curator.LedgerEntry) SkillChange {
	return SkillChange{ID: e.ID, At: e.At, Action: e.Action, Skill: e.Skill, Reason: e.Reason}
}

func (s *Server) postUndo(w http.ResponseWriter, r *http.Request) {
	postNamed(s, w, r, "change", "change to undo", func(q *UndoRequest) (string, string) { return q.Change, q.By },
		func(d *desk.Desk, change, by string) (any, error) {
			e, err := d.UndoSkillChange(r.Context(), change, by)
			return skillChange(e), err
		})
}

func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) {
	d, f, date, ok := s.folderOn(w, r)
	if !ok {
		return
	}
	if s.o.Files.AuditConfig == nil {
		writeError(w, http.StatusNotImplemented, "this deskd cannot find its config for an audit bundle")
		return
	}
	ac, err := s.o.Files.AuditConfig(d.Name())
	if err != nil {
		s.fileError(w, r, fmt.Errorf("audit %s %s: %w", d.Name(), date, err))
		return
	}
	now := s.o.Clock.Now()
	b, err := audit.Build(audit.Request{Folder: f, Date: date, Day: s.day(), Now: now, Version: s.o.Files.Version, Config: ac})
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	data, err := b.Archive(now)
	if err != nil {
		s.fileError(w, r, fmt.Errorf("audit %s %s: %w", d.Name(), date, err))
		return
	}
	writeAttachment(w, "application/gzip", fmt.Sprintf("%s-%s.tar.gz", d.Name(), date), data)
}

// folderOn is folder, then date: the desk, its folder and the trading
// date the request asks about, or false once one of them has answered.
func (s *Server) folderOn(w http.ResponseWriter, r *http.Request) (*desk.Desk, *memory.Folder, memory.Date, bool) {
	d, f, ok := s.folder(w, r)
	if !ok {
		return nil, nil, memory.Date{}, false
	}
	date, ok := s.date(w, r)
	return d, f, date, ok
}

// date returns ?date=YYYY-MM-DD, by default the trading date now, or
// answers 400 with the reason.
func (s *Server) date(w http.ResponseWriter, r *http.Request) (memory.Date, bool) {
	q := r.URL.Query().Get("date")
	if q == "" {
		return s.day().DateOf(s.o.Clock.Now()), true
	}
	d, err := memory.ParseDate(q)
	if err != nil || d.String() != q || !d.Valid() {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("date %q: want a trading date YYYY-MM-DD", q))
		return memory.Date{}, false
	}
	return d, true
}

// day returns Files.Day, UTC when it has no location.
func (s *Server) day() memory.TradingDay {
	d := s.o.Files.Day
	if d.Location == nil {
		d.Location = time.UTC
	}
	return d
}

func (s *Server) location() *time.Location { return s.day().Location }

// readFilesBody decodes a restore's or an undo's body strictly
// (triggers.DecodeJSON), or answers 400 (413 past MaxFilesBody).
func readFilesBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	return readJSONBody(w, r, MaxFilesBody, v, shape, false)
}

// byOrAPI is who a request acts for: its by, trimmed, or "api" when it
// names nobody.
func byOrAPI(by string) string {
	if by = strings.TrimSpace(by); by == "" {
		return "api"
	}
	return by
}
