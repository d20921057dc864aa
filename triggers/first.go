package triggers

import (
	"strings"
)

// The lines that put the previous session's summary in front of a new
// session's first message (DESIGN.md, "Session keeper semantics").
const (
	firstMessageHead = "[This is the first message of a new session. Summary of your previous session, from "
	firstMessageTail = "[End of the summary. Your lasting lessons are in Memory.md. The message follows.]"
)

// WithSummary returns t with the summary of the session of date (YYYY-MM-DD)
// in front of its text, line by line:
//
//	[This is the first message of a new session. Summary of your previous session, from YYYY-MM-DD:]
//	<summary text>
//	[End of the summary. Your lasting lessons are in Memory.md. The message follows.]
//	<empty line>
//	<the trigger's own text>
func WithSummary(t Trigger, date, summary string) Trigger {
	t.Text = strings.Join([]string{
		firstMessageHead + date + ":]",
		summary,
		firstMessageTail,
		"",
		t.Text,
	}, "\n")
	return t
}

// OwnText returns the trigger's own text of a message that WithSummary made,
// and any other text unchanged.
func OwnText(text string) string {
	if !strings.HasPrefix(text, firstMessageHead) {
		return text
	}
	if i := strings.Index(text, "\n"+firstMessageTail+"\n\n"); i >= 0 {
		return text[i+len(firstMessageTail)+3:]
	}
	return text
}
