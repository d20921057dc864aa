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

// scriptedSummaryModel returns the model a summary's header names, and
// whether text begins with such a header.
func scriptedSummaryModel(text string) (string, bool) {
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
	s.Model, s.Scripted = scriptedSummaryModel(s.Text)
	return s
}
