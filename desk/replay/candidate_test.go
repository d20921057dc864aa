package replay_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/replay"
)

// TestCandidateOf: the desk's own file by default, its model replaced
// (fallbacks dropped, the config's desk untouched) by --model; a desk no
// longer in the config without --with, a model the config does not
// have and an unreadable --with file are ErrBadOptions, each message as
// deskd replay prints it.
func TestCandidateOf(t *testing.T) {
	live := &config.Desk{Name: "main", Model: "gpt", Fallbacks: []string{"claude"}}
	cfg := &config.Config{Path: "/etc/deskd/deskd.yaml", DesksDir: "/etc/deskd/desks.d",
		Models: map[string]config.Model{"gpt": {}, "cheap": {}}, Desks: map[string]*config.Desk{"main": live}}

	dc, source, err := replay.CandidateOf(cfg, "main", "", "")
	if err != nil || dc != live || source != "the desk's own file" {
		t.Errorf("CandidateOf(main) = %v, %q, %v; want the desk's own", dc, source, err)
	}
	dc, source, err = replay.CandidateOf(cfg, "main", "", "cheap")
	if err != nil || dc.Model != "cheap" || dc.Fallbacks != nil || dc.Name != "main" || source != "the desk's own file, --model cheap" {
		t.Errorf("CandidateOf(main, --model cheap) = %+v, %q, %v", dc, source, err)
	}
	if live.Model != "gpt" || len(live.Fallbacks) != 1 {
		t.Errorf("--model changed the config's desk: %+v", live)
	}

	missing := filepath.Join(t.TempDir(), "candidate.yaml")
	for _, tt := range []struct {
		name, desk, with, model string
		want                    string // the whole message, or its start for --with
	}{
		{"a desk gone from the config", "old", "", "", "replay: desk old is no longer in /etc/deskd/desks.d: give its candidate file with --with"},
		{"an unknown model", "main", "", "nope", `replay: --model "nope": no such model in /etc/deskd/deskd.yaml`},
		{"an unreadable file", "main", missing, "", "replay: --with " + missing + ": "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := replay.CandidateOf(cfg, tt.desk, tt.with, tt.model)
			if !errors.Is(err, replay.ErrBadOptions) {
				t.Fatalf("CandidateOf = %v, want an ErrBadOptions", err)
			}
			if got := err.Error(); got != tt.want && !(tt.with != "" && strings.HasPrefix(got, tt.want)) {
				t.Errorf("error %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReportLine: the summary line names the counts, both costs, a
// scripted candidate, why the replay stopped and where the report is.
func TestReportLine(t *testing.T) {
	rep := &replay.Report{Desk: "main", Date: "2026-03-02", Stopped: "max cost 0.5 passed",
		Totals: replay.Totals{Replayed: 3, Triggers: 5, Differing: 2, Refused: 1, OriginalCost: 0.25, CandidateCost: 0.5}}
	rep.Candidate.Scripted = true
	rep.Approvals = make([]replay.Approval, 4)
	want := "replayed 3 of 5 triggers of main 2026-03-02: 2 replies differ, 1 tool calls refused, 4 need approval; cost original 0.2500, candidate 0.5000" +
		" (SCRIPTED candidate: not a real model); stopped: max cost 0.5 passed; report /tmp/r/report.html"
	if got := rep.Line("/tmp/r"); got != want {
		t.Errorf("Line =\n%s\nwant\n%s", got, want)
	}
}
