package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// What operators see of a session: its title, its turns and tokens, and
// whether it is the desk's current session, was rolled over (with a
// degraded summary, perhaps), or was left for a fork; which session it was
// forked from; and the summary written when it rolled over. Everything
// here is read from the desk folder without changing it, so it is safe
// beside a running deskd; the only write is an operator's title, which
// deskd itself never touches.

// SessionState says where a session stands.
type SessionState string

// The states of a session, as ListSessions reports them.
const (
	// SessionActive is the desk's current session (StateFile names it).
	SessionActive SessionState = "active"
	// SessionRolledOver ended with a rollover: a later session names it
	// as its parent, or the rollover journal says its rollover is done.
	SessionRolledOver SessionState = "rolled over"
	// SessionDegraded was rolled over with a degraded summary: the model
	// could not summarise it and a mechanical digest stands in.
	SessionDegraded SessionState = "degraded"
	// SessionForked was current until a fork: a later session was forked
	// from it (deskd fork) and carries its context on. It has no summary.
	SessionForked SessionState = "forked"
	// SessionInactive is neither current nor rolled over (a session file
	// that nothing refers to any more).
	SessionInactive SessionState = "inactive"
)

const (
	// titleExt names an operator's title of a session: sessions/<id>.title.
	titleExt = ".title"
)

// SummaryKind is the Kind of the event record that holds a model's summary
// of its session (the router writes it; ListSessions reads it back).
const SummaryKind = "summary"

// MaxTitleLen is the longest session title, in characters, SetSessionTitle
// accepts.
const MaxTitleLen = 200

// SessionInfo is what an operator sees of one session, read from its file
// and the desk's state files.
type SessionInfo struct {
	// ID is the session id.
	ID string `json:"id"`
	// Date is the trading date of the header (zero when the file has no
	// readable header).
	Date Date `json:"trading_date"`
	// Parent is the session this one followed ("" for a desk's first).
	Parent string `json:"parent,omitempty"`
	// ForkedFrom is the session this one was forked from (then also its
	// Parent); "" for a session that a rollover started.
	ForkedFrom string `json:"forked_from,omitempty"`
	// Forks are the sessions forked from this one, oldest first.
	Forks []string `json:"forks,omitempty"`
	// Started is the header's time; Updated the last record's.
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	// Title is the operator's title ("" when the session has none; callers
	// then derive one from FirstUserText).
	Title string `json:"title,omitempty"`
	// FirstUserText is the text of the first user message that is not part
	// of a silent turn, as recorded (a new session's first message carries
	// the previous summary in front of its own text). A fork's is its own
	// first message, or, before it has one, the first it carries.
	FirstUserText string `json:"-"`
	// Turns counts the answered turns: assistant messages without tool
	// calls that are not part of a silent turn. The turns a fork carries
	// are counted in the session they were answered in, not in the fork.
	Turns int `json:"turns"`
	// Messages counts the message and tool records, carried ones too.
	Messages int `json:"messages"`
	// Carried counts the records a fork copied from earlier sessions.
	Carried int `json:"carried,omitempty"`
	// Checkpoints counts the compaction checkpoints.
	Checkpoints int `json:"checkpoints"`
	// InputTokens and OutputTokens sum the usage of every record that
	// carries one (turns, tool rounds, summaries, folds, compactions),
	// except the records a fork carries, which were spent in the session
	// they were first written in; Tokens is their sum.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	Tokens       int64 `json:"tokens"`
	// Scripted is true when any answer came from the offline scripted model.
	Scripted bool `json:"scripted,omitempty"`
	// State is where the session stands.
	State SessionState `json:"state"`
	// RolledOver and Degraded are the facts State is made from: a degraded
	// session is also rolled over.
	RolledOver bool `json:"rolled_over"`
	Degraded   bool `json:"degraded"`
}

// stateRefs is what ListSessions needs of the router's state file and the
// keeper's rollover journal.
type stateRefs struct {
	active  string
	journal Rollover
}

// readRefs reads StateFile and RolloverFile; missing files are empty.
func (f *Folder) readRefs() (stateRefs, error) {
	var refs stateRefs
	st, _, err := f.ReadState()
	if err != nil {
		return refs, err
	}
	refs.active = st.Session
	if refs.journal, _, err = f.ReadRollover(); err != nil {
		return refs, err
	}
	return refs, nil
}

// ListSessions returns every session of the desk, oldest first (by the
// header's time, then id). It reads the session files without changing
// them.
func (f *Folder) ListSessions() ([]SessionInfo, error) {
	ids, err := f.SessionIDs()
	if err != nil {
		return nil, err
	}
	refs, err := f.readRefs()
	if err != nil {
		return nil, fmt.Errorf("list sessions of %s: %w", f.desk, err)
	}
	type listed struct {
		info SessionInfo
		recs []Record
	}
	var all []listed
	for _, id := range ids {
		recs, err := f.ReadSession(id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions of %s: %w", f.desk, err)
		}
		info, err := f.scanInfo(id, recs)
		if err != nil {
			return nil, fmt.Errorf("list sessions of %s: %w", f.desk, err)
		}
		all = append(all, listed{info, recs})
	}
	sort.SliceStable(all, func(a, b int) bool {
		x, y := all[a].info, all[b].info
		if !x.Started.Equal(y.Started) {
			return x.Started.Before(y.Started)
		}
		return x.ID < y.ID
	})
	infos := make([]SessionInfo, len(all))
	recs := make([][]Record, len(all))
	for i, s := range all {
		infos[i], recs[i] = s.info, s.recs
	}
	if err := f.settleStates(infos, recs, refs); err != nil {
		return nil, fmt.Errorf("list sessions of %s: %w", f.desk, err)
	}
	return infos, nil
}

// SessionInfo returns what ListSessions reports of session id. A missing
// session is an error satisfying errors.Is(err, fs.ErrNotExist).
func (f *Folder) SessionInfo(id string) (SessionInfo, error) {
	if !validSessionID(id) {
		return SessionInfo{}, fmt.Errorf("session info: invalid session id %q", id)
	}
	if _, err := os.Stat(f.SessionPath(id)); err != nil {
		return SessionInfo{}, fmt.Errorf("session info %s of %s: %w", id, f.desk, err)
	}
	all, err := f.ListSessions()
	if err != nil {
		return SessionInfo{}, err
	}
	for _, info := range all {
		if info.ID == id {
			return info, nil
		}
	}
	return SessionInfo{}, fmt.Errorf("session info %s of %s: %w", id, f.desk, fs.ErrNotExist)
}

// scanInfo makes the part of a SessionInfo that one session's records and
// title file give.
func (f *Folder) scanInfo(id string, recs []Record) (SessionInfo, error) {
	info := SessionInfo{ID: id}
	var carriedUser string
	for i, r := range recs {
		if i == 0 && r.Type == RecordHeader {
			info.Started, info.Parent, info.ForkedFrom = r.At, r.Parent, r.ForkedFrom
			if d, err := ParseDate(r.Date); err == nil {
				info.Date = d
			}
		}
		if r.At.After(info.Updated) {
			info.Updated = r.At
		}
		carried := r.Type != RecordHeader && r.ForkedFrom != ""
		if carried {
			info.Carried++
		}
		if r.Usage != nil && !carried {
			info.InputTokens += int64(r.Usage.InputTokens)
			info.OutputTokens += int64(r.Usage.OutputTokens)
		}
		switch r.Type {
		case RecordCheckpoint:
			info.Checkpoints++
		case RecordTool:
			info.Messages++
		case RecordMessage:
			info.Messages++
			if r.Scripted {
				info.Scripted = true
			}
			if r.Kind == legacyForkKind && info.ForkedFrom == "" {
				info.ForkedFrom = info.Parent // a fork written before records said so
			}
			if r.Silent {
				continue
			}
			switch r.Role {
			case "user":
				switch {
				case carried || r.Kind == legacyForkKind:
					if carriedUser == "" {
						carriedUser = r.Text
					}
				case info.FirstUserText == "":
					info.FirstUserText = r.Text
				}
			case "assistant":
				if !hasToolCalls(r) && !carried && r.Kind != legacyForkKind {
					info.Turns++
				}
			}
		}
	}
	if info.FirstUserText == "" {
		info.FirstUserText = carriedUser
	}
	if info.Started.IsZero() && len(recs) > 0 {
		info.Started = recs[0].At
	}
	info.Tokens = info.InputTokens + info.OutputTokens
	title, _, err := f.SessionTitle(id)
	if err != nil {
		return info, err
	}
	info.Title = title
	return info, nil
}

// legacyForkKind is the Kind of the messages a fork copied before copied
// records kept their own and said where they came from (ForkedFrom).
const legacyForkKind = "fork"

// hasToolCalls reports whether an assistant record asked for tools.
func hasToolCalls(r Record) bool {
	s := strings.TrimSpace(string(r.ToolCalls))
	return s != "" && s != "null" && s != "[]"
}

// settleStates sets RolledOver, Degraded, Forks and State of infos
// (sorted oldest first, with their records).
func (f *Folder) settleStates(infos []SessionInfo, recs [][]Record, refs stateRefs) error {
	parents := map[string]bool{}
	forks := map[string][]string{}
	for _, info := range infos {
		switch {
		case info.ForkedFrom != "":
			forks[info.ForkedFrom] = append(forks[info.ForkedFrom], info.ID)
		case info.Parent != "":
			parents[info.Parent] = true
		}
	}
	j := refs.journal
	for i := range infos {
		info := &infos[i]
		info.Forks = forks[info.ID]
		info.RolledOver = parents[info.ID] || (j.Session == info.ID && j.Done)
		info.Degraded = j.Session == info.ID && j.Degraded
	}
	for date, i := range lastSummarised(infos) {
		info := &infos[i]
		if info.Degraded || hasSummaryEvent(recs[i]) {
			continue
		}
		s, ok, err := f.ReadSummary(date)
		if err != nil {
			return err
		}
		if ok && IsDegradedSummary(s.Text) {
			info.Degraded = true
		}
	}
	for i := range infos {
		info := &infos[i]
		switch {
		case info.ID == refs.active:
			info.State = SessionActive
		case info.Degraded:
			info.State = SessionDegraded
		case info.RolledOver:
			info.State = SessionRolledOver
		case len(info.Forks) > 0:
			info.State = SessionForked
		default:
			info.State = SessionInactive
		}
	}
	return nil
}

// lastSummarised returns, by trading date, the index in infos (sorted
// oldest first, RolledOver set) of the date's last rolled-over session with
// turns: the summary file of a date is that session's last word, as
// earlier sessions of the date (a manual rollover) had theirs replaced.
func lastSummarised(infos []SessionInfo) map[Date]int {
	last := map[Date]int{}
	for i, info := range infos {
		if info.RolledOver && info.Turns > 0 && !info.Date.IsZero() {
			last[info.Date] = i
		}
	}
	return last
}

// hasSummaryEvent reports whether the records hold a summary the model
// gave the session itself (a degraded rollover has none; the ones a fork
// carries are not its own).
func hasSummaryEvent(recs []Record) bool {
	_, ok := summaryEventOf(recs)
	return ok
}

// summaryEventOf returns the text of the session's own last summary event.
func summaryEventOf(recs []Record) (string, bool) {
	r, ok := summaryRecordOf(recs)
	return r.Text, ok
}

// SessionSummary is the summary written when a session rolled over.
type SessionSummary struct {
	// Summary is the text, the session's trading date, and the file that
	// holds that text: summaries/YYYY-MM-DD.md, or the version of it kept
	// under history/summaries/YYYY-MM-DD/ when a later rollover of the same
	// date (or an operator) replaced it; Path is "" when no file holds the
	// text any more.
	Summary
	// Session is the session summarised.
	Session string
	// Source says how the summary was linked to the session:
	// SummaryFromSession, SummaryFromJournal or SummaryFromDate.
	Source string
	// Degraded is true for a mechanical digest (the model could not
	// summarise the session).
	Degraded bool
}

// Where SessionSummary found a session's summary.
const (
	// SummaryFromSession: the model's summary, recorded in the session's
	// own file when the rollover asked for it; the summary file is the
	// version that holds the same text.
	SummaryFromSession = "session"
	// SummaryFromJournal: the rollover journal, which names the session
	// (a degraded summary of the last rollover).
	SummaryFromJournal = "journal"
	// SummaryFromDate: the date's summary file, as the session is the
	// date's last rolled-over session with turns (a degraded summary of an
	// earlier rollover).
	SummaryFromDate = "date"
)

// SessionSummary returns the summary written when session id rolled
// over; ok is false when none was written for it (it is still active, had
// no turns, or was left for a fork). It never returns the summary of
// another session of the same trading date: a summary file is per date,
// and a manual rollover's is replaced by the next rollover of that date.
// A missing session is an error satisfying errors.Is(err, fs.ErrNotExist).
func (f *Folder) SessionSummary(id string) (SessionSummary, bool, error) {
	recs, err := f.ReadSession(id)
	if err != nil {
		return SessionSummary{}, false, err
	}
	var date Date
	if len(recs) > 0 && recs[0].Type == RecordHeader {
		date, _ = ParseDate(recs[0].Date)
	}
	if !date.Valid() {
		return SessionSummary{}, false, nil
	}
	fail := func(err error) (SessionSummary, bool, error) {
		return SessionSummary{}, false, fmt.Errorf("summary of session %s of %s: %w", id, f.desk, err)
	}
	found := func(text, source string) (SessionSummary, bool, error) {
		s, err := f.summaryHolding(date, text)
		if err != nil {
			return fail(err)
		}
		return SessionSummary{Summary: s, Session: id, Source: source, Degraded: IsDegradedSummary(s.Text)}, true, nil
	}
	if rec, ok := summaryRecordOf(recs); ok {
		s, ok, err := found(rec.Text, SummaryFromSession)
		return withRecordModel(s, rec), ok, err
	}
	refs, err := f.readRefs()
	if err != nil {
		return fail(err)
	}
	if j := refs.journal; j.Session == id && strings.TrimSpace(j.Summary) != "" {
		return found(j.Summary, SummaryFromJournal)
	}
	infos, err := f.ListSessions()
	if err != nil {
		return fail(err)
	}
	i, ok := lastSummarised(infos)[date]
	if !ok || infos[i].ID != id {
		return SessionSummary{}, false, nil
	}
	s, ok, err := f.ReadSummary(date)
	if err != nil || !ok {
		return SessionSummary{}, false, err
	}
	return SessionSummary{Summary: s, Session: id, Source: SummaryFromDate, Degraded: IsDegradedSummary(s.Text)}, true, nil
}

// summaryHolding returns the summary of date d whose text is text (but
// for trailing newlines, which the keeper normalises): the current file,
// or the newest kept version of it that holds it. With none, it returns
// text itself with an empty Path.
func (f *Folder) summaryHolding(d Date, text string) (Summary, error) {
	// A summary file of the scripted model begins with a header its
	// record does not hold.
	same := func(b string) bool {
		return strings.TrimRight(withoutScriptedHeader(b), "\n") == strings.TrimRight(withoutScriptedHeader(text), "\n")
	}
	cur, ok, err := f.ReadSummary(d)
	if err != nil {
		return Summary{}, err
	}
	if ok && same(cur.Text) {
		return cur, nil
	}
	kept, err := f.SummaryVersions(d)
	if err != nil {
		return Summary{}, err
	}
	for i := len(kept) - 1; i >= 0; i-- {
		if same(kept[i].Text) {
			return withScriptedHeader(Summary{Date: d, Text: kept[i].Text, Path: kept[i].Path}), nil
		}
	}
	return withScriptedHeader(Summary{Date: d, Text: text}), nil
}

// titlePath returns the path of session id's title file, sessions/<id>.title.
func (f *Folder) titlePath(id string) (string, error) {
	if !validSessionID(id) {
		return "", fmt.Errorf("invalid session id %q: want 1 to 80 of A-Z a-z 0-9 _ -", id)
	}
	return f.Path(filepath.Join(SessionsDir, id+titleExt)), nil
}

// SessionTitle returns the operator's title of session id; ok is false
// when it has none.
func (f *Folder) SessionTitle(id string) (title string, ok bool, err error) {
	path, err := f.titlePath(id)
	if err != nil {
		return "", false, fmt.Errorf("read session title: %w", err)
	}
	b, _, err := readIfThere(path)
	if err != nil {
		return "", false, fmt.Errorf("read session title %s: %w", path, err)
	}
	title = strings.TrimSpace(string(b))
	return title, title != "", nil
}

// SetSessionTitle stores title as the operator's title of session id,
// atomically, in sessions/<id>.title, and returns the title as stored:
// surrounding space trimmed. A title must be one line of at most
// MaxTitleLen characters, without control characters, and not empty. The
// session must exist (an error satisfying errors.Is(err, fs.ErrNotExist)
// otherwise).
func (f *Folder) SetSessionTitle(id, title string) (string, error) {
	path, err := f.titlePath(id)
	if err != nil {
		return "", fmt.Errorf("set session title: %w", err)
	}
	title = strings.TrimSpace(title)
	if err := checkTitle(title); err != nil {
		return "", fmt.Errorf("set title of session %s: %w", id, err)
	}
	if _, err := os.Stat(f.SessionPath(id)); err != nil {
		return "", fmt.Errorf("set title of session %s: %w", id, err)
	}
	if err := f.writeAtomic(path, []byte(title+"\n"), filePerm); err != nil {
		return "", fmt.Errorf("set title of session %s: %w", id, err)
	}
	return title, nil
}

// checkTitle refuses titles an operator's listing could not show on one line.
func checkTitle(title string) error {
	if title == "" {
		return errors.New("empty title")
	}
	if !utf8.ValidString(title) {
		return errors.New("title is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(title); n > MaxTitleLen {
		return fmt.Errorf("title has %d characters, at most %d", n, MaxTitleLen)
	}
	for _, r := range title {
		if unicode.IsControl(r) {
			return fmt.Errorf("title has a control character %q (a title is one line)", r)
		}
	}
	return nil
}
