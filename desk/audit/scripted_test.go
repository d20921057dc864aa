package audit_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/audit"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

// manifestLine returns the line of manifest that lists the file name.
func manifestLine(t *testing.T, manifest, name string) string {
	t.Helper()
	for _, line := range strings.Split(manifest, "\n") {
		if strings.Contains(line, "  "+name+": ") {
			return line
		}
	}
	t.Fatalf("MANIFEST.txt does not list %s:\n%s", name, manifest)
	return ""
}

// TestManifestMarksAScriptedSummary: the manifest's line of the day's
// summary says the scripted model wrote it, from the data (the summary
// record's "scripted": true, for a file without the header; the header of
// a file that has it), and an earlier version no scripted record wrote
// has no mark.
func TestManifestMarksAScriptedSummary(t *testing.T) {
	s := memorytest.Populated(t)
	ist, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	date := memory.Date{Year: 2026, Month: time.March, Day: 2}
	build := func() string {
		t.Helper()
		b, err := audit.Build(audit.Request{Folder: s.Folder, Date: date, Day: memory.TradingDay{Location: ist},
			Now: memorytest.UTC(t, "2026-03-10T04:00:00Z"), Version: "test",
			Config: audit.Config{SnapshotDir: "config-history", Main: s.Config, Desk: filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml")}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b.Manifest())
	}
	const mark = "SCRIPTED: written by deskd's offline scripted model offline"
	m := build()
	if line := manifestLine(t, m, "summary/2026-03-02.md"); !strings.Contains(line, mark) {
		t.Errorf("the summary's manifest line lacks %q: %s", mark, line)
	}
	for _, line := range strings.Split(m, "\n") {
		if strings.Contains(line, "  summary/history/") && strings.Contains(line, "SCRIPTED") {
			t.Errorf("an earlier version no scripted record wrote is marked: %s", line)
		}
	}

	// A file with the header is marked by it, whatever the records say.
	if _, err := s.Folder.WriteSummary(date, memory.ScriptedSummaryHeader("rehearsal")+"Edited by hand.\n"); err != nil {
		t.Fatal(err)
	}
	want := "SCRIPTED: written by deskd's offline scripted model rehearsal"
	if line := manifestLine(t, build(), "summary/2026-03-02.md"); !strings.Contains(line, want) {
		t.Errorf("the summary's manifest line lacks %q: %s", want, line)
	}
}
