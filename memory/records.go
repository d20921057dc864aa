package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The small JSON files of the desk folder that other packages write:
// this package names each one and defines its fields, once, and everyone
// who reads one calls its reader here. A writer that keeps more in a file
// than this package knows of (the router's spend, the keeper's journalled
// events) embeds the type below in its own and writes both with WriteJSON,
// so the file keeps one definition of every field.

// StateFile is the router's state: the desk's current session.
const StateFile = "state.json"

// State is what StateFile says of the desk's current session. The router
// keeps its spend beside these fields, as of a point of the session file
// that it also keeps there (the records after it carry the rest).
type State struct {
	// Session is the current session's id.
	Session string `json:"session"`
	// Date is its trading date.
	Date Date `json:"trading_date"`
	// Parent is the session it followed ("" for the desk's first).
	Parent string `json:"parent,omitempty"`
}

// ReadState reads StateFile; ok is false, with no error, when there is none.
func (f *Folder) ReadState() (st State, ok bool, err error) {
	ok, err = f.ReadJSON(StateFile, &st)
	return st, ok, err
}

// RolloverFile is the keeper's rollover journal: how far the rollover of
// one session (the desk's last) has come.
const RolloverFile = "rollover.json"

// Rollover is what RolloverFile says of the rollover of one session. The
// keeper journals each step's event beside these fields.
type Rollover struct {
	// Session is the session rolled over; Date its trading date.
	Session string `json:"session"`
	Date    Date   `json:"trading_date"`
	// Reason is why it rolled over (daily_rollover, manual_rollover).
	Reason string `json:"reason"`

	// Summary is the summary's text, journalled before the summary file is
	// written; SummaryPath is that file. SummaryAttempts and SummaryError
	// say how the model's summary went; Degraded is true when every
	// attempt failed and Summary is a mechanical digest (DegradedSummary).
	Summary         string `json:"summary,omitempty"`
	SummaryAttempts int    `json:"summary_attempts,omitempty"`
	SummaryError    string `json:"summary_error,omitempty"`
	SummaryPath     string `json:"summary_path,omitempty"`
	Degraded        bool   `json:"degraded,omitempty"`
	// Summarised: the summary step is done.
	Summarised bool `json:"summarised"`

	// FoldBefore is the Memory.md the fold read, FoldResult the one the
	// model gave (nil until it answered), and FoldNotes the dates whose
	// notes it took in.
	FoldBefore string   `json:"fold_before,omitempty"`
	FoldResult *string  `json:"fold_result,omitempty"`
	FoldNotes  []string `json:"fold_notes,omitempty"`
	// Folded: the fold step is done.
	Folded bool `json:"folded"`

	// Curated: the curator's step is done.
	Curated bool `json:"curated"`

	// NewSession is the session the rollover started; Done is true once
	// it is announced.
	NewSession string `json:"new_session,omitempty"`
	Done       bool   `json:"done"`
}

// ReadRollover reads RolloverFile; ok is false, with no error, when there
// is none.
func (f *Folder) ReadRollover() (r Rollover, ok bool, err error) {
	ok, err = f.ReadJSON(RolloverFile, &r)
	return r, ok, err
}

// degradedMark starts the text of a degraded summary.
const degradedMark = "[Degraded summary"

// DegradedSummary is the text of the summary that stands in for a session
// the model could not summarise (why says why, on one line): a mechanical
// digest of its exchanges, marked so that readers can tell (see
// IsDegradedSummary).
func DegradedSummary(why, digest string) string {
	return fmt.Sprintf("%s: the model could not summarise this session (%s). "+
		"This is a mechanical digest of its exchanges.]\n\n%s", degradedMark, why, digest)
}

// IsDegradedSummary reports whether a summary's text is a mechanical
// digest (DegradedSummary).
func IsDegradedSummary(text string) bool { return strings.HasPrefix(text, degradedMark) }

// FoldedFile records how much of each notes file is folded into Memory.md.
//
// It holds, for each notes file by date, a mark (NotesMark): the byte
// offset up to which the file's notes are folded, and the SHA-256 of those
// bytes. Notes are append-only, so a fold takes in exactly what was
// appended beyond each file's mark, and moves the marks on only once its
// result is in Memory.md: notes written after a same-day rollover, and
// notes a degraded, failed, refused or conflicting fold did not take in,
// wait for the next fold.
//
// An operator may edit a notes file by hand. When the file no longer
// begins with the bytes its mark covers (it shrank, or was edited before
// the mark), the next fold takes in the whole file again: nothing the
// operator wrote is lost, at the cost of the model seeing notes it folded
// before (it folds them into a Memory.md that has their lessons already).
//
// An older deskd wrote the file as a JSON list of the dates folded. Such a
// record is migrated when it is first read (ReadFolded): each date listed
// counts as folded up to its notes file's size at that moment, and what is
// appended after is folded by the next fold.
const FoldedFile = "folded-notes.json"

// Folded is the content of FoldedFile.
type Folded struct {
	// Notes maps a notes file's date (YYYY-MM-DD) to its mark.
	Notes map[string]NotesMark `json:"notes"`
}

// ReadFolded reads FoldedFile (a missing file folded nothing), migrating
// and rewriting a record in the older format, a list of dates. Notes is
// never nil.
func (f *Folder) ReadFolded() (Folded, error) {
	rec := Folded{Notes: map[string]NotesMark{}}
	var raw json.RawMessage
	ok, err := f.ReadJSON(FoldedFile, &raw)
	if err != nil || !ok {
		return rec, err
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '[' {
		if err := json.Unmarshal(raw, &rec); err != nil {
			return rec, fmt.Errorf("parse %s: %w", f.Path(FoldedFile), err)
		}
		if rec.Notes == nil {
			rec.Notes = map[string]NotesMark{}
		}
		return rec, nil
	}
	var dates []string
	if err := json.Unmarshal(raw, &dates); err != nil {
		return rec, fmt.Errorf("parse %s: %w", f.Path(FoldedFile), err)
	}
	for _, s := range dates {
		d, err := ParseDate(s)
		if err != nil {
			continue // not a date: it named no notes file
		}
		tail, ok, err := f.ReadNotesFrom(d, NotesMark{})
		if err != nil {
			return rec, fmt.Errorf("migrate %s: %w", FoldedFile, err)
		}
		if ok {
			rec.Notes[d.String()] = tail.To
		}
	}
	if err := f.WriteFolded(rec); err != nil {
		return rec, fmt.Errorf("migrate %s: %w", FoldedFile, err)
	}
	return rec, nil
}

// WriteFolded replaces FoldedFile with rec, atomically.
func (f *Folder) WriteFolded(rec Folded) error { return f.WriteJSON(FoldedFile, rec) }
