package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory"
)

// exportHTML is the page `deskd export` writes: one self-contained HTML
// file (inline CSS, no scripts, nothing fetched), every value escaped by
// html/template.
//
//go:embed export.html
var exportHTML string

// degradedPrefix starts the text of a degraded summary (see keeper).
const degradedPrefix = "[Degraded summary"

func newExportCommand(stdout io.Writer) *cobra.Command {
	var path, out string
	cmd := &cobra.Command{
		Use:   "export DESK [SESSION] -o FILE.html",
		Short: "Write a session (the current one by default) as one self-contained HTML page",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: 2, err: fmt.Errorf("export: -o FILE.html is required (- for standard output)")}
			}
			cfg, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			sess, err := loadSessionView(folder, optionalArg(args, 1))
			if err != nil {
				return err
			}
			page, err := renderSessionPage(folder, sess, cfg.Location, clock.Real().Now())
			if err != nil {
				return err
			}
			if out == "-" {
				if _, err := stdout.Write(page); err != nil {
					return fmt.Errorf("export session %s: %w", sess.Info.ID, err)
				}
				return nil
			}
			if err := memory.WriteFileAtomic(out, page, 0o640); err != nil {
				return fmt.Errorf("export session %s: %w", sess.Info.ID, err)
			}
			fmt.Fprintf(stdout, "wrote %s: session %s of desk %s, %d records, %d bytes\n", out, sess.Info.ID, sess.Desk, len(sess.Entries), len(page))
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write (- for standard output)")
	return cmd
}

// exportPage is what export.html shows.
type exportPage struct {
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
	Entries     []exportEntry
	Checkpoints []exportEntry
	Summary     *exportSummary
}

// exportEntry is one transcript entry as the page shows it.
type exportEntry struct {
	transcriptEntry
	Anchor       string // the element id, e1, e2, ...
	Class        string // CSS classes
	Who          string
	Time         string
	Detail       string
	UsageText    string
	DurationText string
}

// exportSummary is the summary written when the session rolled over.
type exportSummary struct {
	Text     string
	Path     string
	Degraded bool
	Note     string
}

// renderSessionPage renders session s of folder's desk as a self-contained
// HTML page, times shown in loc; now is the export's time.
func renderSessionPage(folder *memory.Folder, s sessionView, loc *time.Location, now time.Time) ([]byte, error) {
	info := s.Info
	title, byOperator := sessionTitle(info)
	page := exportPage{
		Desk: s.Desk, Info: info, Title: title, Date: dateText(info.Date),
		TitleSource: "from the first message", StateClass: strings.ReplaceAll(string(info.State), " ", "-"),
		Started: showTime(info.Started, loc), Updated: showTime(info.Updated, loc), Exported: showTime(now, loc),
		Zone: loc.String(), Version: version(),
	}
	if byOperator {
		page.TitleSource = "given by an operator"
	}
	for i, e := range s.Entries {
		pe := exportEntry{transcriptEntry: e, Anchor: fmt.Sprintf("e%d", i+1), Class: e.Kind, Who: e.Kind,
			Time: showTime(e.At, loc), UsageText: usageText(e.Usage)}
		if e.Duration > 0 {
			pe.DurationText = e.Duration.String()
		}
		switch e.Kind {
		case entryUser:
			pe.Detail = strings.TrimSpace(e.TriggerKind + " trigger " + e.Trigger)
			if e.Trigger == "" {
				pe.Detail = e.TriggerKind
			}
		case entryTool:
			pe.Who = "tool result"
			pe.Detail = e.ToolName
			if e.ToolCallID != "" {
				pe.Detail += " (call " + e.ToolCallID + ")"
			}
			if e.IsError {
				pe.Class += " error"
			}
		case entryCheckpoint:
			pe.Detail = "the exchanges before it were summarised into this; later requests carry it instead of them"
		case entryEvent:
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
		page.Entries = append(page.Entries, pe)
		if e.Kind == entryCheckpoint {
			page.Checkpoints = append(page.Checkpoints, pe)
		}
	}
	sum, ok, err := folder.SessionSummary(info.ID)
	if err != nil {
		return nil, fmt.Errorf("export session %s: %w", info.ID, err)
	}
	if ok {
		page.Summary = &exportSummary{Text: sum.Text, Path: summaryPlace(folder, sum), Degraded: sum.Degraded, Note: summaryNote(folder, sum)}
	}
	tmpl, err := template.New("export.html").Parse(exportHTML)
	if err != nil {
		return nil, fmt.Errorf("export session %s: parse page template: %w", info.ID, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, page); err != nil {
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
	return t.In(loc).Format(timeLayout)
}
