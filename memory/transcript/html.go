package transcript

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/deskd/deskd/memory"
)

// pageHTML is the page HTML renders: one self-contained HTML file (inline
// CSS, no scripts, nothing fetched), every value escaped by html/template.
//
//go:embed page.html
var pageHTML string

// page is what page.html shows.
type page struct {
	Desk        string
	Info        memory.SessionInfo
	Title       string
	TitleSource string
	StateClass  string // the state as a CSS class name
	Date        string
	Started     string
	Updated     string
	Exported    string
	Zone        string
	Version     string
	Entries     []pageEntry
	Checkpoints []pageEntry
	Summary     *pageSummary
}

// pageEntry is one transcript entry as the page shows it.
type pageEntry struct {
	Entry
	Anchor       string // the element id, e1, e2, ...
	Class        string // CSS classes
	Who          string
	Time         string
	Detail       string
	UsageText    string
	DurationText string
}

// pageSummary is the summary written when the session rolled over.
type pageSummary struct {
	Text     string
	Path     string
	Degraded bool
	Note     string
	// Scripted is true when the offline scripted model wrote it, and
	// Model names the model.
	Scripted bool
	Model    string
}

// HTML renders session s of folder's desk as one self-contained HTML page,
// with the summary written when it rolled over: times in loc, now the
// export's time, version deskd's (named in the page).
func HTML(folder *memory.Folder, s Session, loc *time.Location, now time.Time, version string) ([]byte, error) {
	info := s.Info
	title, byOperator := Title(info)
	pg := page{
		Desk: s.Desk, Info: info, Title: title, Date: DateText(info.Date),
		TitleSource: "from the first message", StateClass: strings.ReplaceAll(string(info.State), " ", "-"),
		Started: showTime(info.Started, loc), Updated: showTime(info.Updated, loc), Exported: showTime(now, loc),
		Zone: loc.String(), Version: version,
	}
	if byOperator {
		pg.TitleSource = "given by an operator"
	}
	for i, e := range s.Entries {
		pe := pageEntry{Entry: e, Anchor: fmt.Sprintf("e%d", i+1), Class: string(e.Kind), Who: string(e.Kind),
			Time: showTime(e.At, loc), UsageText: usageText(e.Usage)}
		if e.Duration > 0 {
			pe.DurationText = e.Duration.String()
		}
		switch e.Kind {
		case User:
			pe.Detail = strings.TrimSpace(e.TriggerKind + " trigger " + e.Trigger)
			if e.Trigger == "" {
				pe.Detail = e.TriggerKind
			}
		case Tool:
			pe.Who = "tool result"
			pe.Detail = e.ToolName
			if e.ToolCallID != "" {
				pe.Detail += " (call " + e.ToolCallID + ")"
			}
			if e.IsError {
				pe.Class += " error"
			}
		case Checkpoint:
			pe.Detail = "the exchanges before it were summarised into this; later requests carry it instead of them"
		case Event:
			pe.Detail = e.EventKind
		}
		if e.Silent {
			pe.Class += " silent"
		}
		if e.CopiedFrom != "" {
			copied := "copied by a fork from session " + e.CopiedFrom
			if pe.Detail != "" {
				copied = pe.Detail + " · " + copied
			}
			pe.Detail = copied
			pe.Class += " copied"
		}
		pg.Entries = append(pg.Entries, pe)
		if e.Kind == Checkpoint {
			pg.Checkpoints = append(pg.Checkpoints, pe)
		}
	}
	sum, ok, err := folder.SessionSummary(info.ID)
	if err != nil {
		return nil, fmt.Errorf("export session %s: %w", info.ID, err)
	}
	if ok {
		pg.Summary = &pageSummary{Text: sum.Text, Path: summaryPlace(folder, sum), Degraded: sum.Degraded, Note: summaryNote(folder, sum),
			Scripted: sum.Scripted, Model: sum.Model}
	}
	tmpl, err := template.New("page.html").Parse(pageHTML)
	if err != nil {
		return nil, fmt.Errorf("export session %s: parse page template: %w", info.ID, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, pg); err != nil {
		return nil, fmt.Errorf("export session %s: render page: %w", info.ID, err)
	}
	return b.Bytes(), nil
}

// summaryPlace is where a session's summary is kept, relative to the desk
// folder.
func summaryPlace(folder *memory.Folder, sum memory.SessionSummary) string {
	if sum.Path == "" {
		return "the session's own records (no summary file holds this text any more)"
	}
	if rel, err := filepath.Rel(folder.Dir(), sum.Path); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return sum.Path
}

// summaryNote says how a summary was linked to its session, and why a
// summary kept under history/ is not the date's current one.
func summaryNote(folder *memory.Folder, sum memory.SessionSummary) string {
	var note string
	switch sum.Source {
	case memory.SummaryFromSession:
		note = "The summary written when this session rolled over, as the session's own records hold it"
	case memory.SummaryFromJournal:
		note = "The summary written when this session rolled over, as the rollover journal names it"
	default:
		note = "The date's summary, written when this session, the date's last to roll over, did"
	}
	if sum.Path != "" && sum.Path != folder.Path(path.Join(memory.SummariesDir, sum.Date.String()+".md")) {
		note += "; a later rollover of the same trading date (or an operator) replaced the date's summary file since, which kept this version"
	}
	return note + "."
}

// showTime formats t in loc, "-" for the zero time.
func showTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(TimeLayout)
}
