package memory_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

func TestParseHistoryName(t *testing.T) {
	at := time.Date(2026, 3, 2, 18, 30, 2, 500, time.UTC)
	tests := []struct {
		name    string
		wantAt  time.Time
		wantSeq int
		ok      bool
	}{
		{"20260302T183002.000000500Z.md", at, 1, true},
		{"20260302T183002.000000500Z-2.md", at, 2, true},
		{"20260302T183002.000000500Z-12.md", at, 12, true},
		{"20260302T183002.000000500Z-x.md", time.Time{}, 0, false},
		{"20260302T183002.000000500Z.txt", time.Time{}, 0, false},
		{"notes.md", time.Time{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotAt, seq, ok := memory.ParseHistoryName(tt.name, ".md")
			if !gotAt.Equal(tt.wantAt) || seq != tt.wantSeq || ok != tt.ok {
				t.Errorf("ParseHistoryName(%q) = %v, %d, %v; want %v, %d, %v", tt.name, gotAt, seq, ok, tt.wantAt, tt.wantSeq, tt.ok)
			}
		})
	}
	// The layout names what the folder keeps: a replaced Memory.md reads back.
	if got, _, ok := memory.ParseHistoryName(at.Format(memory.HistoryStampLayout)+".md", ".md"); !ok || !got.Equal(at) {
		t.Errorf("a name made with HistoryStampLayout parses as %v, %v", got, ok)
	}
}

func TestDegradedSummary(t *testing.T) {
	text := memory.DegradedSummary("timeout", "- Open. -> Opened.")
	if want := "[Degraded summary: the model could not summarise this session (timeout). This is a mechanical digest of its exchanges.]\n\n- Open. -> Opened."; text != want {
		t.Errorf("DegradedSummary = %q, want %q", text, want)
	}
	if !memory.IsDegradedSummary(text) || memory.IsDegradedSummary("- Open. -> Opened.\n") {
		t.Error("IsDegradedSummary does not tell a degraded summary from a model's")
	}
}
