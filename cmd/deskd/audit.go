package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// `deskd audit DESK DATE -o FILE.tar.gz` gathers what compliance asks for
// about one trading day of one desk into one file: the day's sessions (raw
// and rendered), its summary, its notes, Memory.md as the day's fold read
// and wrote it with the diff, the curator's and the trigger ledger's
// entries of the day, and the config in force that day, each listed with
// its sha256 in MANIFEST.txt (and in SHA256SUMS, for `sha256sum -c`). The
// manifest also lists every model answer of the day's sessions and says
// which came from the offline scripted model.

// historyStampLayout names the files memory keeps under history/: the UTC
// instant of the replacement (see memory.Folder.WriteMemory).
const historyStampLayout = "20060102T150405.000000000Z"

// foldEvent is the Kind of the session record holding the model's fold of
// the day's notes into Memory.md.
const foldEvent = "fold"

// rolloverJournal is the keeper's rollover journal in the desk folder.
const rolloverJournal = "rollover.json"

func newAuditCommand(stdout io.Writer) *cobra.Command {
	var path, out string
	cmd := &cobra.Command{
		Use:   "audit DESK DATE -o FILE.tar.gz",
		Short: "Write a trading day's audit bundle: sessions, summary, notes, Memory.md before/after with the diff, ledgers, config",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: 2, err: errors.New("audit: -o FILE.tar.gz is required")}
			}
			date, err := memory.ParseDate(args[1])
			if err != nil || date.String() != args[1] || !date.Valid() {
				return &exitError{code: 2, err: fmt.Errorf("audit: trading date %q: want YYYY-MM-DD", args[1])}
			}
			cfg, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			now := clock.Real().Now()
			b, err := buildAudit(cfg, folder, date, now)
			if err != nil {
				return err
			}
			data, err := b.archive(now)
			if err != nil {
				return fmt.Errorf("audit %s %s: %w", folder.Desk(), date, err)
			}
			if err := memory.WriteFileAtomic(out, data, 0o640); err != nil {
				return fmt.Errorf("audit %s %s: %w", folder.Desk(), date, err)
			}
			fmt.Fprintf(stdout, "wrote %s: desk %s, trading date %s, %d sessions, %d files, %d bytes\n",
				out, folder.Desk(), date, b.sessions, len(b.files), len(data))
			for _, f := range b.files {
				fmt.Fprintf(stdout, "  %-48s %8d  %s\n", f.name, len(f.data), f.what)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the .tar.gz file to write")
	return cmd
}

// auditBundle is an audit bundle being put together.
type auditBundle struct {
	root     string // the folder every file of the archive is in
	header   []string
	files    []auditFile
	sessions int
}

// auditFile is one file of the bundle.
type auditFile struct {
	name string // relative to the bundle's root
	data []byte
	what string
}

func (b *auditBundle) add(name string, data []byte, what string) {
	b.files = append(b.files, auditFile{name: name, data: data, what: what})
}

func (b *auditBundle) note(format string, args ...any) {
	b.header = append(b.header, fmt.Sprintf(format, args...))
}

// buildAudit gathers the bundle of trading date date of folder's desk.
func buildAudit(cfg *config.Config, folder *memory.Folder, date memory.Date, now time.Time) (*auditBundle, error) {
	desk := folder.Desk()
	fail := func(err error) (*auditBundle, error) { return nil, fmt.Errorf("audit %s %s: %w", desk, date, err) }
	loc := cfg.Location
	b := &auditBundle{root: fmt.Sprintf("deskd-audit-%s-%s", desk, date)}
	dayStart, dayEnd := cfg.Day.StartOf(date), cfg.Day.StartOf(date.AddDays(1))
	b.note("deskd audit bundle")
	b.note("desk: %s", desk)
	b.note("trading date: %s (%s, from %s to %s)", date, loc, dayStart.Format(timeLayout), dayEnd.Format(timeLayout))
	b.note("generated: %s by deskd %s", now.In(loc).Format(time.RFC3339), version())
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
		return nil, &exitError{code: 1, err: fmt.Errorf("audit %s %s: the desk has no session, summary or notes of that trading date", desk, date)}
	}

	// The sessions, raw and rendered.
	var folds []dayFold
	var replies []string
	scripted := 0
	var ids []string
	for _, info := range day {
		raw, err := os.ReadFile(folder.SessionPath(info.ID))
		if err != nil {
			return fail(err)
		}
		view, err := readSessionView(folder, info)
		if err != nil {
			return fail(err)
		}
		for _, e := range view.Entries {
			if e.CopiedFrom != "" {
				continue // a fork's copy: it is of the session it was written in
			}
			if e.Kind == entryEvent && e.EventKind == foldEvent {
				folds = append(folds, dayFold{session: info.ID, at: e.At, result: e.Text, end: rolloverEnd(infos, info.ID)})
			}
			if line, ok := replyLine(info.ID, e, loc); ok {
				replies = append(replies, line)
				if e.Scripted {
					scripted++
				}
			}
		}
		page, err := renderSessionPage(folder, view, loc, now)
		if err != nil {
			return fail(err)
		}
		title, _ := sessionTitle(info)
		b.add("sessions/"+info.ID+".jsonl", raw, fmt.Sprintf("session %s, %q, %s: its records as stored, JSON lines", info.ID, title, info.State))
		b.add("sessions/"+info.ID+".html", page, fmt.Sprintf("session %s rendered for reading (deskd export)", info.ID))
		ids = append(ids, info.ID)
	}
	b.sessions = len(day)
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
		if strings.HasPrefix(summary.Text, degradedPrefix) {
			what += " (DEGRADED: a mechanical digest; the model could not summarise)"
		}
		b.add("summary/"+date.String()+".md", []byte(summary.Text), what)
		hist, err := auditReadDir(folder.Path(filepath.Join(memory.HistoryDir, memory.SummariesDir, date.String())))
		if err != nil {
			return fail(err)
		}
		for _, h := range hist {
			b.add("summary/history/"+h.name, h.data, "an earlier version of the summary, replaced at the instant its name gives (UTC)")
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
	if err := addMemory(b, folder, infos, day, folds, dayEnd, now, loc); err != nil {
		return fail(err)
	}

	// The ledgers.
	curPath := folder.Path(curator.LedgerFile)
	if _, err := os.Stat(curPath); errors.Is(err, fs.ErrNotExist) {
		b.note("curator ledger: none (%s does not exist)", curator.LedgerFile)
	} else {
		lines, skipped, err := ledgerLines(curPath, func(line []byte) (bool, error) {
			var e struct {
				Date string `json:"trading_date"`
			}
			err := json.Unmarshal(line, &e)
			return e.Date == date.String(), err
		})
		if err != nil {
			return fail(err)
		}
		b.add("curator/ledger.jsonl", lines, fmt.Sprintf("the curator ledger's entries of the trading date (from %s)", curator.LedgerFile))
		if skipped > 0 {
			b.note("curator ledger: %d %s that did not parse left out", skipped, auditPlural(skipped, "line", "lines"))
		}
	}
	trigPath := folder.Path(triggers.LedgerFile)
	if _, err := os.Stat(trigPath); errors.Is(err, fs.ErrNotExist) {
		b.note("trigger ledger: none (%s does not exist)", triggers.LedgerFile)
	} else {
		lines, skipped, err := ledgerLines(trigPath, func(line []byte) (bool, error) {
			return triggerOfDay(line, cfg.Day, date, dayIDs)
		})
		if err != nil {
			return fail(err)
		}
		b.add("triggers/"+triggers.LedgerFile, lines, "the trigger ledger's records of the trading date (by time, or by a session of the date)")
		if skipped > 0 {
			b.note("trigger ledger: %d %s that did not parse left out", skipped, auditPlural(skipped, "line", "lines"))
		}
	}
	var j struct {
		Session string `json:"session"`
	}
	if ok, err := folder.ReadJSON(rolloverJournal, &j); err != nil {
		return fail(err)
	} else if ok && dayIDs[j.Session] {
		raw, err := os.ReadFile(folder.Path(rolloverJournal))
		if err != nil {
			return fail(err)
		}
		b.add(rolloverJournal, raw, "the rollover journal, which is of a session of this date")
	}

	// The config in force that day.
	if err := addConfig(b, cfg, desk, date, dayStart, dayEnd, loc); err != nil {
		return fail(err)
	}
	return b, nil
}

// dayFold is a fold of notes into Memory.md recorded in a session of the
// day (the model's answer, recorded by the rollover of that session).
type dayFold struct {
	session string
	at      time.Time // when the model answered
	result  string    // what it answered: the Memory.md it proposed
	end     time.Time // when the rollover was done (the next session started); zero when none has
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
func replyLine(session string, e transcriptEntry, loc *time.Location) (string, bool) {
	var what string
	switch {
	case e.Kind == entryAssistant:
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
	case e.Kind == entryEvent && e.Model != "":
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

// addMemory adds Memory.md as the day's fold read it and as it wrote it,
// and their diff. The day's fold is the fold recorded in the day's
// sessions (several on a day of manual rollovers: then the first one's
// read and the last one's write). What a fold read and wrote is found,
// in this order, in the rollover journal (rollover.json: fold_before and
// fold_result, for the desk's last rollover), then in history/memory/ (the
// version the fold replaced, kept when it wrote; none when Memory.md did
// not exist and the fold created it). Without a fold, the day's "before"
// is Memory.md at the end of the trading day and its "after" Memory.md when
// the session that followed the day's began.
func addMemory(b *auditBundle, folder *memory.Folder, all, day []memory.SessionInfo, folds []dayFold, dayEnd, now time.Time, loc *time.Location) error {
	versions, err := memoryVersions(folder)
	if err != nil {
		return err
	}
	var journal struct {
		Session    string  `json:"session"`
		FoldBefore string  `json:"fold_before"`
		FoldResult *string `json:"fold_result"`
	}
	if _, err := folder.ReadJSON(rolloverJournal, &journal); err != nil {
		return err
	}
	var beforeText, beforeSrc, afterText, afterSrc, beforeLabel, afterLabel string
	if n := len(folds); n > 0 {
		first, last := folds[0], folds[n-1]
		if first.session == journal.Session && journal.FoldResult != nil && *journal.FoldResult == first.result {
			beforeText, beforeSrc = journal.FoldBefore, rolloverJournal+" (fold_before: what the fold read)"
		} else {
			beforeText, beforeSrc, err = foldRead(folder, versions, first)
			if err != nil {
				return err
			}
		}
		afterText, afterSrc, err = foldWrote(folder, versions, last)
		if err != nil {
			return err
		}
		which := "the day's fold of notes"
		if n > 1 {
			which = fmt.Sprintf("the first of the day's %d folds of notes", n)
		}
		beforeLabel = fmt.Sprintf("Memory.md as %s read it (session %s, %s)", which, first.session, first.at.In(loc).Format(time.RFC3339Nano))
		which = "the day's fold"
		if n > 1 {
			which = fmt.Sprintf("the last of the day's %d folds", n)
		}
		afterLabel = fmt.Sprintf("Memory.md as %s left it (session %s, %s)", which, last.session, last.at.In(loc).Format(time.RFC3339Nano))
	} else {
		before, beforeWhy := dayEnd, "at the end of the trading day (no fold of the day's notes is recorded)"
		if now.Before(before) {
			before, beforeWhy = now, "now (the trading day has not ended)"
		}
		after, afterWhy := now, "now (no session has followed the day's sessions yet)"
		if n := len(day); n > 0 {
			if end := rolloverEnd(all, day[n-1].ID); !end.IsZero() {
				after, afterWhy = end, "when the day's rollover had finished (the session that followed started)"
			}
		}
		if after.Before(before) {
			after = before
		}
		if beforeText, beforeSrc, err = memoryAt(folder, versions, before); err != nil {
			return err
		}
		if afterText, afterSrc, err = memoryAt(folder, versions, after); err != nil {
			return err
		}
		beforeLabel = fmt.Sprintf("Memory.md %s, %s", beforeWhy, before.In(loc).Format(time.RFC3339Nano))
		afterLabel = fmt.Sprintf("Memory.md %s, %s", afterWhy, after.In(loc).Format(time.RFC3339Nano))
	}
	b.add("memory/Memory.before.md", []byte(beforeText), beforeLabel+"; from "+beforeSrc)
	b.add("memory/Memory.after.md", []byte(afterText), afterLabel+"; from "+afterSrc)
	diff := unifiedHunks("a/Memory.md", "b/Memory.md", beforeText, afterText)
	what := "unified diff of Memory.md, before to after"
	if diff == "" {
		what += " (empty: no change)"
	}
	b.add("memory/Memory.diff", []byte(diff), what)
	b.note("memory before: %s; from %s", beforeLabel, beforeSrc)
	b.note("memory after: %s; from %s", afterLabel, afterSrc)
	return nil
}

// foldReplaced returns the index of the version of Memory.md that fold f
// replaced when it wrote its result: the first kept after the model
// answered and by the time its rollover was done. -1 when there is none
// (the fold wrote nothing, or created Memory.md).
func foldReplaced(versions []memoryVersion, f dayFold) int {
	for i, v := range versions {
		if v.At.Before(f.at) {
			continue
		}
		if !f.end.IsZero() && v.At.After(f.end) {
			return -1
		}
		return i
	}
	return -1
}

// foldRead returns the Memory.md that fold f read, and where it was found.
func foldRead(folder *memory.Folder, versions []memoryVersion, f dayFold) (text, source string, err error) {
	if i := foldReplaced(versions, f); i >= 0 {
		text, err := readVersion(folder, versions[i])
		if err != nil {
			return "", "", err
		}
		return text, versionName(versions[i]) + ", the version the fold replaced", nil
	}
	// Nothing was replaced: the fold created Memory.md, or left it as it was.
	text, source, err = memoryAt(folder, versions, f.at)
	if err != nil {
		return "", "", err
	}
	if text == f.result {
		return "", "no Memory.md: there was none, and the fold created it (no earlier version was replaced)", nil
	}
	return text, source + " (the fold did not write Memory.md: refused, failed, or an operator's edit was kept)", nil
}

// foldWrote returns the Memory.md that fold f left, and where it was found.
func foldWrote(folder *memory.Folder, versions []memoryVersion, f dayFold) (text, source string, err error) {
	i := foldReplaced(versions, f)
	if i < 0 {
		text, source, err := memoryAt(folder, versions, f.at)
		if err != nil {
			return "", "", err
		}
		if text == f.result {
			return text, source + ", the Memory.md the fold created", nil
		}
		return text, source + " (the fold did not write Memory.md: refused, failed, or an operator's edit was kept)", nil
	}
	if i+1 < len(versions) {
		text, err = readVersion(folder, versions[i+1])
		source = versionName(versions[i+1]) + ", what the fold wrote, kept when it was replaced in turn"
	} else {
		text, err = folder.ReadMemory()
		source = memory.MemoryFile + ", the current file, which the fold wrote"
	}
	if err != nil {
		return "", "", err
	}
	if text != f.result {
		source += " (it differs from the fold's answer recorded in the session: the version after the fold is shown)"
	}
	return text, source, nil
}

// readVersion reads a kept version of Memory.md.
func readVersion(folder *memory.Folder, v memoryVersion) (string, error) {
	rel := path.Join(memory.HistoryDir, "memory", v.Name)
	b, err := os.ReadFile(folder.Path(rel))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", rel, err)
	}
	return string(b), nil
}

// versionName names a kept version of Memory.md in the manifest.
func versionName(v memoryVersion) string {
	return path.Join(memory.HistoryDir, "memory", v.Name) + " (replaced at " + v.At.Format(time.RFC3339Nano) + ")"
}

// memoryVersion is a version of Memory.md kept under history/memory/: the
// text Memory.md had until it was replaced at At.
type memoryVersion struct {
	At   time.Time
	Name string
	Seq  int // the -2, -3 ... suffix of a name already taken
}

// memoryVersions lists history/memory/, oldest replacement first.
func memoryVersions(folder *memory.Folder) ([]memoryVersion, error) {
	dir := folder.Path(filepath.Join(memory.HistoryDir, "memory"))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var vs []memoryVersion
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		seq := 1
		if i := strings.LastIndex(stem, "Z-"); i >= 0 {
			n, err := strconv.Atoi(stem[i+2:])
			if err != nil {
				continue
			}
			stem, seq = stem[:i+1], n
		}
		at, err := time.Parse(historyStampLayout, stem)
		if err != nil {
			continue
		}
		vs = append(vs, memoryVersion{At: at, Name: e.Name(), Seq: seq})
	}
	sort.Slice(vs, func(i, j int) bool {
		if !vs[i].At.Equal(vs[j].At) {
			return vs[i].At.Before(vs[j].At)
		}
		return vs[i].Seq < vs[j].Seq
	})
	return vs, nil
}

// memoryAt returns the text Memory.md had at instant t, and where it was
// found: the first version replaced at or after t, or the current file.
func memoryAt(folder *memory.Folder, versions []memoryVersion, t time.Time) (text, source string, err error) {
	for _, v := range versions {
		if v.At.Before(t) {
			continue
		}
		rel := path.Join(memory.HistoryDir, "memory", v.Name)
		b, err := os.ReadFile(folder.Path(rel))
		if err != nil {
			return "", "", fmt.Errorf("read %s: %w", rel, err)
		}
		return string(b), rel + ", the version replaced at " + v.At.Format(time.RFC3339Nano), nil
	}
	text, err = folder.ReadMemory()
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(folder.Path(memory.MemoryFile)); errors.Is(err, fs.ErrNotExist) {
		return "", "no Memory.md (the file does not exist)", nil
	}
	return text, memory.MemoryFile + ", the current file", nil
}

// auditDirFile is one file read from a folder.
type auditDirFile struct {
	name string
	data []byte
}

// readDir reads the regular files of dir, by name; a missing dir has none.
func auditReadDir(dir string) ([]auditDirFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []auditDirFile
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		out = append(out, auditDirFile{name: e.Name(), data: b})
	}
	return out, nil
}

// ledgerLines returns the lines of the JSON-lines file at path that keep
// accepts, verbatim, and how many lines did not parse. A missing file has
// no lines.
func ledgerLines(path string, keep func(line []byte) (bool, error)) (kept []byte, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read ledger: %w", err)
	}
	defer f.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ok, err := keep(line)
		if err != nil {
			skipped++
			continue
		}
		if ok {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("read ledger %s: %w", path, err)
	}
	return out.Bytes(), skipped, nil
}

// triggerOfDay reports whether a trigger ledger line is of trading date
// date: one of its times falls in it, or it names a session of the date.
func triggerOfDay(line []byte, day memory.TradingDay, date memory.Date, sessions map[string]bool) (bool, error) {
	var r struct {
		At        time.Time `json:"at"`
		QueuedAt  time.Time `json:"queued_at"`
		StartedAt time.Time `json:"started_at"`
		SentAt    time.Time `json:"sent_at"`
		Session   string    `json:"session"`
		Trigger   *struct {
			At time.Time `json:"at"`
		} `json:"trigger"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return false, err
	}
	if r.Session != "" && sessions[r.Session] {
		return true, nil
	}
	times := []time.Time{r.At, r.QueuedAt, r.StartedAt, r.SentAt}
	if r.Trigger != nil {
		times = append(times, r.Trigger.At)
	}
	for _, t := range times {
		if !t.IsZero() && day.DateOf(t) == date {
			return true, nil
		}
	}
	return false, nil
}

// addConfig adds the config in force on the trading date: every snapshot
// deskd kept of its effective config (see config.WriteSnapshot) that was in
// force during the day, the one in force when it began first. With none
// (a deskd that kept no snapshots then), it adds the config files as they
// are now, and says so.
func addConfig(b *auditBundle, cfg *config.Config, desk string, date memory.Date, dayStart, dayEnd time.Time, loc *time.Location) error {
	snaps, err := config.Snapshots(filepath.Join(cfg.StateDir, config.HistoryDir))
	if err != nil {
		return err
	}
	var inForce []config.SnapshotFile
	for _, s := range snaps {
		switch {
		case s.Taken.Before(dayStart):
			inForce = append(inForce[:0], s) // the one in force when the day began
		case s.Taken.Before(dayEnd):
			inForce = append(inForce, s)
		}
	}
	if len(inForce) > 0 {
		for i, s := range inForce {
			data, err := os.ReadFile(s.Path)
			if err != nil {
				return fmt.Errorf("read config snapshot %s: %w", s.Path, err)
			}
			until := "the end of the day or later"
			if i+1 < len(inForce) {
				until = inForce[i+1].Taken.In(loc).Format(time.RFC3339Nano)
			}
			b.add("config/in-force/"+s.Name, data, fmt.Sprintf("the effective config deskd ran on from %s to %s (kept in %s/%s when it came into force; no secrets)",
				s.Taken.In(loc).Format(time.RFC3339Nano), until, config.HistoryDir, s.Name))
		}
		b.note("config: the config in force on %s: %d %s of deskd's effective config, from %s/ (taken at each start and reload that changed it)",
			date, len(inForce), auditPlural(len(inForce), "snapshot", "snapshots"), config.HistoryDir)
		if _, ok := cfg.Desks[desk]; !ok {
			b.note("config: the desk is not in the config at export time")
		}
		return nil
	}
	return addCurrentConfig(b, cfg, desk, date)
}

// addCurrentConfig adds the config files as they are now, and their hash.
func addCurrentConfig(b *auditBundle, cfg *config.Config, desk string, date memory.Date) error {
	type cfgFile struct{ src, name, what string }
	files := []cfgFile{{cfg.Path, "config/" + filepath.Base(cfg.Path), "the main config file, as it is at export time"}}
	if dc, ok := cfg.Desks[desk]; ok {
		files = append(files, cfgFile{dc.Path, "config/desks.d/" + filepath.Base(dc.Path), "the desk's config file, as it is at export time"})
		if dc.InstructionsFile != "" {
			files = append(files, cfgFile{dc.InstructionsFile, "config/instructions/" + filepath.Base(dc.InstructionsFile), "the desk's instructions file, as it is at export time"})
		}
	} else {
		b.note("config: the desk is not in the config at export time; only the main file is included")
	}
	var sums strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return fmt.Errorf("read config %s: %w", f.src, err)
		}
		b.add(f.name, data, f.what+" ("+f.src+")")
		fmt.Fprintf(&sums, "%s  %s\n", sha256Hex(data), f.name)
	}
	b.note("config: the files as they are at export time, not a snapshot of the config in force on %s: deskd kept no snapshot of its config in force that day (%s/ has none of it); compare the hashes below with your config history", date, config.HistoryDir)
	b.note("config sha256: %s (the sha256 of the lines \"<sha256>  <name>\" of the config files, in this order:)", sha256Hex([]byte(sums.String())))
	for _, line := range strings.Split(strings.TrimRight(sums.String(), "\n"), "\n") {
		b.note("  %s", line)
	}
	return nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// manifest returns MANIFEST.txt: the notes, then every file with its
// sha256, size and what it is.
func (b *auditBundle) manifest() []byte {
	var m strings.Builder
	for _, line := range b.header {
		m.WriteString(line)
		m.WriteByte('\n')
	}
	m.WriteString("\nfiles (sha256, bytes, path in this bundle: what it is):\n")
	for _, f := range b.files {
		fmt.Fprintf(&m, "%s  %d  %s: %s\n", sha256Hex(f.data), len(f.data), f.name, f.what)
	}
	m.WriteString("\nSHA256SUMS lists the same hashes for `sha256sum -c SHA256SUMS`, run in this folder.\n")
	return []byte(m.String())
}

// sums returns SHA256SUMS in sha256sum's format.
func (b *auditBundle) sums() []byte {
	var s strings.Builder
	for _, f := range b.files {
		fmt.Fprintf(&s, "%s  %s\n", sha256Hex(f.data), f.name)
	}
	return []byte(s.String())
}

// archive returns the bundle as a gzipped tar: MANIFEST.txt and
// SHA256SUMS first, then the files, all under the bundle's root folder.
func (b *auditBundle) archive(now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Name, gz.ModTime = b.root+".tar", now
	tw := tar.NewWriter(gz)
	all := append([]auditFile{{name: "MANIFEST.txt", data: b.manifest()}, {name: "SHA256SUMS", data: b.sums()}}, b.files...)
	for _, f := range all {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: b.root + "/" + f.name, Mode: 0o644, Size: int64(len(f.data)),
			ModTime: now.UTC().Truncate(time.Second), Uname: "deskd", Gname: "deskd", Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("archive %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("archive %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return buf.Bytes(), nil
}

// unifiedContext is how many unchanged lines a hunk shows around a change.
const unifiedContext = 3

// unifiedMaxCells bounds the LCS table; past it, the changed middle of the
// two texts is shown as removed and added whole.
const unifiedMaxCells = 16 << 20

// unifiedOp is one line of a diff: ' ' kept, '-' removed, '+' added. Lines
// keep their '\n', so that a missing last newline is a difference.
type unifiedOp struct {
	kind byte
	line string
}

// unifiedHunks returns the unified diff (as diff -u prints it, with three
// lines of context) that turns a into b, "" when they are equal.
func unifiedHunks(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	ops := unifiedLines(unifiedSplit(a), unifiedSplit(b))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	// aAt[k], bAt[k]: the lines of a and b before ops[k].
	aAt, bAt := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for k, op := range ops {
		aAt[k+1], bAt[k+1] = aAt[k], bAt[k]
		if op.kind != '+' {
			aAt[k+1]++
		}
		if op.kind != '-' {
			bAt[k+1]++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start, end := max(0, k-unifiedContext), k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*unifiedContext {
				end = min(end+unifiedContext, run)
				break
			}
			end = run
		}
		aLen, bLen := aAt[end]-aAt[start], bAt[end]-bAt[start]
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", unifiedRange(aAt[start], aLen), unifiedRange(bAt[start], bLen))
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return out.String()
}

// unifiedRange formats a hunk's start and length as diff -u does.
func unifiedRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	if n == 1 {
		return strconv.Itoa(before + 1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// unifiedSplit splits s into lines, each keeping its '\n'.
func unifiedSplit(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// unifiedLines returns the ops that turn a into b, keeping a longest common
// subsequence of lines.
func unifiedLines(a, b []string) []unifiedOp {
	var head, tail []unifiedOp
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		head = append(head, unifiedOp{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		tail = append(tail, unifiedOp{' ', a[len(a)-1]})
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	ops := head
	n, m := len(a), len(b)
	if n*m > unifiedMaxCells {
		for _, l := range a {
			ops = append(ops, unifiedOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, unifiedOp{'+', l})
		}
	} else {
		// lcs[i*(m+1)+j] is the LCS length of a[i:] and b[j:].
		lcs := make([]int32, (n+1)*(m+1))
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i*(m+1)+j] = lcs[(i+1)*(m+1)+j+1] + 1
				} else {
					lcs[i*(m+1)+j] = max(lcs[(i+1)*(m+1)+j], lcs[i*(m+1)+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n && j < m {
			switch {
			case a[i] == b[j]:
				ops = append(ops, unifiedOp{' ', a[i]})
				i, j = i+1, j+1
			case lcs[(i+1)*(m+1)+j] >= lcs[i*(m+1)+j+1]:
				ops = append(ops, unifiedOp{'-', a[i]})
				i++
			default:
				ops = append(ops, unifiedOp{'+', b[j]})
				j++
			}
		}
		for ; i < n; i++ {
			ops = append(ops, unifiedOp{'-', a[i]})
		}
		for ; j < m; j++ {
			ops = append(ops, unifiedOp{'+', b[j]})
		}
	}
	for k := len(tail) - 1; k >= 0; k-- {
		ops = append(ops, tail[k])
	}
	return ops
}

// auditPlural returns one when n is 1, else many.
func auditPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
