package memory_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

func TestReadSummaryTellsAScriptedOne(t *testing.T) {
	f, err := memory.OpenFolder(t.TempDir(), "main", func() time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		text      string
		scripted  bool
		wantModel string
	}{
		{"an older deskd's file, or a model's", "1 exchanges:\n- a -> b\n", false, ""},
		{"the scripted model's", memory.ScriptedSummaryHeader("offline") + "1 exchanges:\n- a -> b\n", true, "offline"},
		{"a name with a quote", memory.ScriptedSummaryHeader(`off"line`) + "No exchanges.\n", true, `off"line`},
		{"the header's lead alone", "> deskd: this summary was written by the offline scripted model\n", false, ""},
		{"the header's lead mid-text", "Notes.\n" + memory.ScriptedSummaryHeader("offline"), false, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := memory.Date{Year: 2026, Month: time.March, Day: i + 1}
			if _, err := f.WriteSummary(d, tt.text); err != nil {
				t.Fatal(err)
			}
			s, ok, err := f.ReadSummary(d)
			if err != nil || !ok {
				t.Fatalf("ReadSummary: %v, %v", ok, err)
			}
			if s.Text != tt.text || s.Scripted != tt.scripted || s.Model != tt.wantModel {
				t.Errorf("ReadSummary = text %q, scripted %v, model %q; want %q, %v, %q", s.Text, s.Scripted, s.Model, tt.text, tt.scripted, tt.wantModel)
			}
		})
	}
}
