package audit

import (
	"strings"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// scriptedSummaryNote is what the manifest adds to a summary file's line
// when the offline scripted model wrote it, as the data says: the file's
// header, or the day's summary record that holds its text ("scripted":
// true). It is "" for a model's summary.
func scriptedSummaryNote(s memory.Summary, events []transcript.Entry) string {
	model, ok := memory.ScriptedSummaryModel(s.Text)
	for i := len(events) - 1; !ok && i >= 0; i-- {
		e := events[i]
		if e.Scripted && strings.TrimSpace(e.Text) != "" && strings.Contains(s.Text, strings.TrimSpace(e.Text)) {
			model, ok = e.Model, true
		}
	}
	if !ok {
		return ""
	}
	return " (SCRIPTED: written by deskd's offline scripted model " + model + ", not a real LLM)"
}
