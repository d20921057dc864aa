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
// whether it is the desk's current session, was rolled over, or was rolled
// over with a degraded summary. Everything here is read from the desk
// folder without changing it, so it is safe beside a running deskd; the
// only write is an operator's title, which deskd itself never touches.

// SessionState says where a session stands.
type SessionState string

// The states of a session, as ListSessions reports them.
const (
	// SessionActive is the desk's current session (state.json names it).
	SessionActive SessionState = "active"
	// SessionRolledOver ended with a rollover: a later session names it
	// as its parent, or the rollover journal says its rollover is done.
	SessionRolledOver SessionState = "rolled over"
	// SessionDegraded was rolled over with a degraded summary: the model
	// could not summarise it and a mechanical digest stands in.
	SessionDegraded SessionState = "degraded"
	// SessionInactive is neither current nor rolled over (a session file
	// that nothing refers to any more).
	SessionInactive SessionState = "inactive"
)

// Files of the desk folder that other packages write and ListSessions reads.
const (
	// stateFile is the router's state: {"session": id, ...}.
	stateFile = "state.json"
	// rolloverFile is the keeper's rollover journal.
	rolloverFile = "rollover.json"
	// titleExt names an operator's title of a session: sessions/<id>.title.
	titleExt = ".title"
	// degradedMark starts the text of a degraded summary.
	degradedMark = "[Degraded summary"
	// summaryEvent is the Kind of the event record holding a model's summary.
	summaryEvent = "summary"
)

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
	// Started is the header's time; Updated the last record's.
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	// Title is the operator's title ("" when the session has none; callers
	// then derive one from FirstUserText).
	Title string `json:"title,omitempty"`
	// FirstUserText is the text of the first user message that is not part
	// of a silent turn, as recorded (a new session's first message carries
	// the previous summary in front of its own text).
	FirstUserText string `json:"-"`
	// Turns counts the answered turns: assistant messages without tool
	// calls that are not part of a silent turn.
	Turns int `json:"turns"`
	// Messages counts the message and tool records.
	Messages int `json:"messages"`
	// Checkpoints counts the compaction checkpoints.
	Checkpoints int `json:"checkpoints"`
	// InputTokens and OutputTokens sum the usage of every record that
	// carries one (turns, tool rounds, summaries, folds, compactions);
	// Tokens is their sum.
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
	journal struct {
		Session  string `json:"session"`
		Degraded bool   `json:"degraded"`
		Done     bool   `json:"done"`
	}
}

// readRefs reads state.json and rollover.json; missing files are empty.
func (f *Folder) readRefs() (stateRefs, error) {
	var refs stateRefs
	var st struct {
		Session string `json:"session"`
	}
	if _, err := f.ReadJSON(stateFile, &st); err != nil {
		return refs, err
	}
	refs.active = st.Session
	if _, err := f.ReadJSON(rolloverFile, &refs.journal); err != nil {
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
	for i, r := range recs {
		if i == 0 && r.Type == RecordHeader {
			info.Started, info.Parent = r.At, r.Parent
			if d, err := ParseDate(r.Date); err == nil {
				info.Date = d
			}
		}
		if r.At.After(info.Updated) {
			info.Updated = r.At
		}
		if r.Usage != nil {
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
			if r.Silent {
				continue
			}
			switch r.Role {
			case "user":
				if info.FirstUserText == "" {
					info.FirstUserText = r.Text
				}
			case "assistant":
				if !hasToolCalls(r) {
					info.Turns++
				}
			}
		}
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

// hasToolCalls reports whether an assistant record asked for tools.
func hasToolCalls(r Record) bool {
	s := strings.TrimSpace(string(r.ToolCalls))
	return s != "" && s != "null" && s != "[]"
}

// settleStates sets RolledOver, Degraded and State of infos (sorted oldest
// first, with their records).
func (f *Folder) settleStates(infos []SessionInfo, recs [][]Record, refs stateRefs) error {
	parents := map[string]bool{}
	for _, info := range infos {
		if info.Parent != "" {
			parents[info.Parent] = true
		}
	}
	// The summary file of a date is the last word of the date's last
	// rolled-over session with turns: earlier sessions of the date (a
	// manual rollover) had theirs replaced.
	lastOfDate := map[Date]int{}
	for i := range infos {
		info := &infos[i]
		j := refs.journal
		info.RolledOver = parents[info.ID] || (j.Session == info.ID && j.Done)
		info.Degraded = j.Session == info.ID && j.Degraded
		if info.RolledOver && info.Turns > 0 && !info.Date.IsZero() {
			lastOfDate[info.Date] = i
		}
	}
	for date, i := range lastOfDate {
		info := &infos[i]
		if info.Degraded || hasSummaryEvent(recs[i]) {
			continue
		}
		s, ok, err := f.ReadSummary(date)
		if err != nil {
			return err
		}
		if ok && strings.HasPrefix(s.Text, degradedMark) {
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
		default:
			info.State = SessionInactive
		}
	}
	return nil
}

// hasSummaryEvent reports whether the records hold a summary the model
// gave (a degraded rollover has none).
func hasSummaryEvent(recs []Record) bool {
	for _, r := range recs {
		if r.Type == RecordEvent && r.Kind == summaryEvent && strings.TrimSpace(r.Text) != "" {
			return true
		}
	}
	return false
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
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
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
	if err := WriteFileAtomic(path, []byte(title+"\n"), filePerm); err != nil {
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
