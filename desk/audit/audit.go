// Package audit gathers what compliance asks for about one trading day of
// one desk into one bundle: the day's sessions (raw and rendered), its
// summary with its earlier versions, its notes, Memory.md as the day's fold
// read and wrote it with the diff, the curator's and the trigger ledger's
// entries of the day, and the config in force that day, each listed with
// its sha256 in MANIFEST.txt (and in SHA256SUMS, for `sha256sum -c`). The
// manifest also lists every model answer of the day's sessions and says
// which came from the offline scripted model.
//
// It reads the desk folder through the packages that own its files
// (memory, memory/transcript, curator, triggers) and never changes it.
package audit

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
	"github.com/deskd/deskd/router"
)

// ErrEmptyDay is Build's error for a trading date of which the desk has
// no session, summary or notes.
var ErrEmptyDay = errors.New("the desk has no session, summary or notes of that trading date")

// Request says which day of which desk to gather, and what Build cannot
// find in the desk folder.
type Request struct {
	// Folder is the desk's folder.
	Folder *memory.Folder
	// Date is the trading date.
	Date memory.Date
	// Day maps instants to trading dates; its Location shows the times.
	Day memory.TradingDay
	// Now is when the bundle is made.
	Now time.Time
	// Version is deskd's version, named in the manifest and the pages.
	Version string
	// Config is the config the desk ran on.
	Config Config
}

// Config is where the config in force on the day is found.
type Config struct {
	// Snapshots are the snapshots deskd kept of its effective config at
	// each start and reload that changed it, oldest first.
	Snapshots []Snapshot
	// SnapshotDir is the folder that keeps them, as the manifest names it.
	SnapshotDir string
	// Main, Desk and Instructions are the config files as they are now:
	// the main file, the desk's file ("" when the desk is no longer in the
	// config) and its instructions_file ("" for none). They are bundled
	// only when no snapshot was in force on the day.
	Main, Desk, Instructions string
}

// Snapshot is one kept snapshot of deskd's effective config.
type Snapshot struct {
	// Name is the file's name, Path its path.
	Name, Path string
	// Taken is when it came into force.
	Taken time.Time
}

// File is one file of a bundle.
type File struct {
	// Name is its path inside the bundle's folder.
	Name string
	// Data is its content.
	Data []byte
	// What says what it is, for the manifest.
	What string
}

// Bundle is an audit bundle: notes for the manifest, and the files.
type Bundle struct {
	root     string // the folder every file of the archive is in
	header   []string
	files    []File
	sessions int
}

// Files returns the bundle's files, in archive order (MANIFEST.txt and
// SHA256SUMS, which Archive adds in front, left out).
func (b *Bundle) Files() []File { return b.files }

// Sessions returns how many sessions of the day the bundle holds.
func (b *Bundle) Sessions() int { return b.sessions }

func (b *Bundle) add(name string, data []byte, what string) {
	b.files = append(b.files, File{Name: name, Data: data, What: what})
}

func (b *Bundle) note(format string, args ...any) {
	b.header = append(b.header, fmt.Sprintf(format, args...))
}

// Build gathers the bundle of the trading date r.Date of r.Folder's desk.
// A date with nothing of the desk's is an error satisfying
// errors.Is(err, ErrEmptyDay).
func Build(r Request) (*Bundle, error) {
	folder, date := r.Folder, r.Date
	desk := folder.Desk()
	fail := func(err error) (*Bundle, error) { return nil, fmt.Errorf("audit %s %s: %w", desk, date, err) }
	loc := r.Day.Location
	b := &Bundle{root: fmt.Sprintf("deskd-audit-%s-%s", desk, date)}
	dayStart, dayEnd := r.Day.StartOf(date), r.Day.StartOf(date.AddDays(1))
	b.note("deskd audit bundle")
	b.note("desk: %s", desk)
	b.note("trading date: %s (%s, from %s to %s)", date, loc, dayStart.Format(transcript.TimeLayout), dayEnd.Format(transcript.TimeLayout))
	b.note("generated: %s by deskd %s", r.Now.In(loc).Format(time.RFC3339), r.Version)
	b.note("desk folder: %s", folder.Dir())

	infos, err := folder.ListSessions()
	if err != nil {
		return fail(err)
	}
	var day []memory.SessionInfo
	dayIDs := map[string]bool{}
	for _, info := range infos {
		if info.Date == date {
			day = append(day, info)
			dayIDs[info.ID] = true
		}
	}
	summary, hasSummary, err := folder.ReadSummary(date)
	if err != nil {
		return fail(err)
	}
	notes, hasNotes, err := folder.ReadNotes(date)
	if err != nil {
		return fail(err)
	}
	if len(day) == 0 && !hasSummary && !hasNotes {
		return fail(ErrEmptyDay)
	}

	// The sessions, raw and rendered.
	var folds []dayFold
	var replies []string
	scripted := 0
	var summaries []transcript.Entry // the day's summary events, to tell who wrote the summary
	var ids []string
	for _, info := range day {
		raw, err := os.ReadFile(folder.SessionPath(info.ID))
		if err != nil {
			return fail(err)
		}
		view, err := transcript.Read(folder, info)
		if err != nil {
			return fail(err)
		}
		for _, e := range view.Entries {
			if e.CopiedFrom != "" {
				continue // a fork's copy: it is of the session it was written in
			}
			if e.Kind == transcript.Event && e.EventKind == string(router.TaskSummary) {
				summaries = append(summaries, e)
			}
			if e.Kind == transcript.Event && e.EventKind == string(router.TaskFold) {
				folds = append(folds, dayFold{session: info.ID, at: e.At, result: e.Text, end: rolloverEnd(infos, info.ID)})
			}
			if line, ok := replyLine(info.ID, e, loc); ok {
				replies = append(replies, line)
				if e.Scripted {
					scripted++
				}
			}
		}
		page, err := transcript.HTML(folder, view, loc, r.Now, r.Version)
		if err != nil {
			return fail(err)
		}
		title, _ := transcript.Title(info)
		b.add("sessions/"+info.ID+".jsonl", raw, fmt.Sprintf("session %s, %q, %s: its records as stored, JSON lines", info.ID, title, info.State))
		b.add("sessions/"+info.ID+".html", page, fmt.Sprintf("session %s rendered for reading (deskd export)", info.ID))
		ids = append(ids, info.ID)
	}
	b.sessions = len(day)
	if err := addDecisions(b, folder, ids, loc); err != nil {
		return fail(err)
	}
	if len(ids) == 0 {
		b.note("sessions: none of this trading date")
	} else {
		b.note("sessions: %d (%s)", len(ids), strings.Join(ids, ", "))
	}
	b.note("model answers: %d in the day's sessions, %d of them SCRIPTED (written by deskd's offline scripted model, not a real LLM)%s",
		len(replies), scripted, map[bool]string{true: ":", false: ""}[len(replies) > 0])
	for _, line := range replies {
		b.note("  %s", line)
	}

	// The summary, with any earlier versions of it, and the notes.
	if hasSummary {
		what := "the trading date's summary"
		if memory.IsDegradedSummary(summary.Text) {
			what += " (DEGRADED: a mechanical digest; the model could not summarise)"
		}
		what += scriptedSummaryNote(summary, summaries)
		b.add("summary/"+date.String()+".md", []byte(summary.Text), what)
		hist, err := folder.SummaryVersions(date)
		if err != nil {
			return fail(err)
		}
		for _, h := range hist {
			b.add("summary/history/"+h.Name, []byte(h.Text), "an earlier version of the summary, replaced at the instant its name gives (UTC)"+
				scriptedSummaryNote(memory.Summary{Text: h.Text}, summaries))
		}
	} else {
		b.note("summary: none (the day has not rolled over, or had no exchanges)")
	}
	if hasNotes {
		b.add("notes/"+date.String()+".md", []byte(notes), "the day's notes")
	} else {
		b.note("notes: none")
	}

	// Memory.md as the day's fold read and wrote it, and the diff.
	sort.SliceStable(folds, func(i, j int) bool { return folds[i].at.Before(folds[j].at) })
	if err := addMemory(b, folder, infos, day, folds, dayEnd, r.Now, loc); err != nil {
		return fail(err)
	}

	// The ledgers, and the rollover journal when it is of the day.
	if err := addLedgers(b, folder, r.Day, date, dayIDs); err != nil {
		return fail(err)
	}
	if j, ok, err := folder.ReadRollover(); err != nil {
		return fail(err)
	} else if ok && dayIDs[j.Session] {
		raw, err := os.ReadFile(folder.Path(memory.RolloverFile))
		if err != nil {
			return fail(err)
		}
		b.add(memory.RolloverFile, raw, "the rollover journal, which is of a session of this date")
	}

	// The config in force that day.
	if err := addConfig(b, r.Config, date, dayStart, dayEnd, loc); err != nil {
		return fail(err)
	}
	return b, nil
}

// rolloverEnd returns when the session that a rollover of session id
// started began (zero when there is none yet).
func rolloverEnd(all []memory.SessionInfo, id string) time.Time {
	for _, s := range all {
		if s.Parent == id && s.ForkedFrom == "" && !s.Started.IsZero() {
			return s.Started
		}
	}
	return time.Time{}
}

// replyLine describes a model's answer in a session of the day, for the
// manifest; ok is false for an entry no model wrote.
func replyLine(session string, e transcript.Entry, loc *time.Location) (string, bool) {
	var what string
	switch {
	case e.Kind == transcript.Assistant:
		what = "reply"
		if e.Trigger != "" {
			what += " to " + e.Trigger
		}
		if len(e.Calls) > 0 {
			what += " (tool calls)"
		}
		if e.Silent {
			what += " (silent)"
		}
	case e.Kind == transcript.Event && e.Model != "":
		what = e.EventKind
	default:
		return "", false
	}
	model := e.Model
	if e.Provider != "" {
		model += " (" + e.Provider + ")"
	}
	line := fmt.Sprintf("session %s %s %s: %s", session, e.At.In(loc).Format(time.RFC3339), what, model)
	if e.Scripted {
		line += " SCRIPTED"
	}
	return line, true
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
