package transcript_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/memory/transcript"
)

// summaryBox renders session id of d's desk and returns its summary section.
func summaryBox(t *testing.T, d *memorytest.Desk, id string) string {
	t.Helper()
	s, err := transcript.Load(d.Folder, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := transcript.HTML(d.Folder, s, time.UTC, memorytest.UTC(t, "2026-03-04T10:00:00Z"), "test")
	if err != nil {
		t.Fatal(err)
	}
	pg := string(b)
	i := strings.Index(pg, `<h2 id="summary">`)
	if i < 0 {
		t.Fatalf("the page of %s has no summary section", id)
	}
	return pg[i:]
}

const scriptedBox = `<span class="badge scripted">SCRIPTED</span> Written by deskd's offline scripted model (offline)`

// TestHTMLSummaryBoxSaysScripted: the export's summary box says the
// scripted model wrote the summary, from the data: the summary record's
// "scripted": true (a summary file of an older deskd, without the header),
// or the file's header (a live rollover's); a model's summary has no mark.
func TestHTMLSummaryBoxSaysScripted(t *testing.T) {
	t.Run("from the summary record, a file without the header", func(t *testing.T) {
		d := memorytest.Populated(t)
		if box := summaryBox(t, d, memorytest.S1); !strings.Contains(box, scriptedBox) {
			t.Errorf("the summary box lacks %q:\n%s", scriptedBox, box)
		}
	})
	t.Run("from a live rollover's file", func(t *testing.T) {
		s := memorytest.New(t)
		d := memorytest.NewLive(t, s, "2026-03-02T04:00:00Z")
		d.Turn("t1", "Morning: watch NIFTY.")
		id := d.Router.SessionID()
		d.At("2026-03-02T18:31:00Z") // 00:01 IST, 3 March
		d.Turn("t2", "Good morning.")
		sum, ok, err := d.Folder.ReadSummary(memory.Date{Year: 2026, Month: 3, Day: 2})
		if err != nil || !ok || !sum.Scripted || sum.Model != "offline" || !strings.HasPrefix(sum.Text, memory.ScriptedSummaryHeader("offline")) {
			t.Fatalf("summaries/2026-03-02.md = %+v, %v, %v; want the scripted header", sum, ok, err)
		}
		box := summaryBox(t, s, id)
		if !strings.Contains(box, scriptedBox) || !strings.Contains(box, "From summaries/2026-03-02.md") {
			t.Errorf("the summary box lacks %q or its file:\n%s", scriptedBox, box)
		}
	})
	t.Run("a model's summary", func(t *testing.T) {
		d := memorytest.New(t)
		model := func(r memory.Record) memory.Record {
			r.Model, r.Provider = "gpt-4o", "openai"
			return r
		}
		d.Session(t, memory.Record{Session: "s-model", Date: "2026-03-02", At: memorytest.UTC(t, "2026-03-02T03:30:00Z")},
			memory.Record{Type: memory.RecordMessage, Role: "user", Trigger: "t1", Text: "Check the tape."},
			model(memory.Record{Type: memory.RecordMessage, Role: "assistant", Trigger: "t1", Text: "Flat."}),
			model(memory.Record{Type: memory.RecordEvent, Kind: memory.SummaryKind, Text: "Flat day.\n"}))
		if _, err := d.Folder.WriteSummary(memory.Date{Year: 2026, Month: 3, Day: 2}, "Flat day.\n"); err != nil {
			t.Fatal(err)
		}
		box := summaryBox(t, d, "s-model")
		if !strings.Contains(box, "Flat day.") || strings.Contains(box, "SCRIPTED") {
			t.Errorf("a model's summary box should hold its text and no SCRIPTED mark:\n%s", box)
		}
	})
}
