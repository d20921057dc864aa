package triggers

import (
	"strings"
	"unicode"
)

// The lines that put the previous session's summary in front of a new
// session's first message (DESIGN.md, "Session keeper semantics").
const (
	firstMessageHead = "[This is the first message of a new session. Summary of your previous session, from "
	firstMessageTail = "[End of the summary. Your lasting lessons are in Memory.md. The message follows.]"
)

// How the framing's marker lines open, in lower case: a summary line that
// opens like one is escaped by WithSummary.
const (
	headOpening = "[this is the first message of a new session"
	tailOpening = "[end of the summary"
)

// WithSummary returns t with the summary of the session of date (YYYY-MM-DD)
// in front of its text, line by line:
//
//	[This is the first message of a new session. Summary of your previous session, from YYYY-MM-DD:]
//	<summary text>
//	[End of the summary. Your lasting lessons are in Memory.md. The message follows.]
//	<empty line>
//	<the trigger's own text>
//
// The summary is fenced so that none of its lines can pass for a marker
// line: a line that, once leading white space, backslashes and Markdown
// quote, list and emphasis characters are set aside, opens like a marker
// ("[This is the first message of a new session", "[End of the summary",
// in any case) gets a backslash in front, as Markdown escapes a bracket.
// Every other line, so every ordinary summary, is kept byte for byte, and
// OwnText still finds the trigger's own text after the one real end marker.
func WithSummary(t Trigger, date, summary string) Trigger {
	t.Text = strings.Join([]string{
		firstMessageHead + date + ":]",
		fenceSummary(summary),
		firstMessageTail,
		"",
		t.Text,
	}, "\n")
	return t
}

// fenceSummary escapes the lines of summary that open like a marker line
// (see WithSummary). The escape is reversible: a line that already opens
// with backslashes before a marker gets one more.
func fenceSummary(summary string) string {
	lines := strings.Split(summary, "\n")
	for i, line := range lines {
		if opensLikeMarker(line) {
			lines[i] = `\` + line
		}
	}
	return strings.Join(lines, "\n")
}

// opensLikeMarker reports whether line, once leading decoration is set
// aside, opens like one of the framing's marker lines.
func opensLikeMarker(line string) bool {
	l := strings.ToLower(strings.TrimLeftFunc(line, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("\\>*_#`~+-|", r)
	}))
	return strings.HasPrefix(l, headOpening) || strings.HasPrefix(l, tailOpening)
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
