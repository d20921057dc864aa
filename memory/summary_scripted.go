package memory

import (
	"strconv"
	"strings"
)

// scriptedSummaryLead begins the first line of a summary that the
// offline scripted model wrote (ScriptedSummaryHeader).
const scriptedSummaryLead = "> deskd: this summary was written by the offline scripted model "

// ScriptedSummaryHeader is the line, and the blank line after it, that
// begins a summary written by the offline scripted model model: a
// Markdown quote a reader of the file sees, and that ReadSummary finds
// (Summary.Scripted, Summary.Model). A summary without it (a model's, a
// mechanical digest, or a file of an older deskd) reads as not scripted.
func ScriptedSummaryHeader(model string) string {
	return scriptedSummaryLead + strconv.Quote(model) + ", not a language model: it is a canned digest.\n\n"
}

// ScriptedSummaryModel returns the model a summary's header names, and
// whether text begins with such a header (ScriptedSummaryHeader): whether
// the offline scripted model wrote it.
func ScriptedSummaryModel(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, scriptedSummaryLead)
	if !ok {
		return "", false
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	model, err := strconv.Unquote(quoted)
	if err != nil {
		return "", false
	}
	return model, true
}

// withScriptedHeader returns s with Scripted and Model read from its text.
func withScriptedHeader(s Summary) Summary {
	s.Model, s.Scripted = ScriptedSummaryModel(s.Text)
	return s
}

// withoutScriptedHeader returns text without the scripted header it may
// begin with: the model's answer, as the session's summary record holds it.
func withoutScriptedHeader(text string) string {
	if _, ok := ScriptedSummaryModel(text); !ok {
		return text
	}
	_, rest, _ := strings.Cut(text, "\n\n")
	return rest
}

// summaryRecordOf returns the session's own last summary event.
func summaryRecordOf(recs []Record) (Record, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Type == RecordEvent && r.Kind == SummaryKind && r.ForkedFrom == "" && strings.TrimSpace(r.Text) != "" {
			return r, true
		}
	}
	return Record{}, false
}

// withRecordModel returns s with the model its summary record names, and
// scripted when the record says so (the flag of the data, not the name).
func withRecordModel(s SessionSummary, rec Record) SessionSummary {
	if rec.Model != "" {
		s.Model = rec.Model
	}
	s.Scripted = s.Scripted || rec.Scripted
	return s
}
