package transcript

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
)

// TimeLayout is how transcripts show instants, in the trading zone.
const TimeLayout = "2006-01-02 15:04:05 MST"

// WriteText writes session s as plain text for a terminal: a header, then
// one block per entry, times in loc, everything that came from outside
// escaped (termsafe). full writes the previous summary a first message
// carries; without it, a line says how long it is.
func WriteText(w io.Writer, s Session, loc *time.Location, full bool) error {
	info := s.Info
	title, _ := Title(info)
	var b strings.Builder
	p := termsafe.Line // one-line fields: no line break of theirs can start a forged entry
	fmt.Fprintf(&b, "desk %s, session %s, trading date %s\n", p(s.Desk), p(info.ID), DateText(info.Date))
	fmt.Fprintf(&b, "title: %s\n", p(title))
	fmt.Fprintf(&b, "state: %s; turns %d; tokens %d (%d in, %d out)", p(StateText(info)), info.Turns, info.Tokens, info.InputTokens, info.OutputTokens)
	if info.Parent != "" && info.ForkedFrom == "" {
		fmt.Fprintf(&b, "; parent %s", p(info.Parent))
	}
	b.WriteString("\n")
	if info.Carried > 0 {
		fmt.Fprintf(&b, "carries %s copied by a fork, as they were written (marked \"copied from\"; their turns and tokens count where they were written)\n",
			termsafe.Plural(info.Carried, "record"))
	}
	if info.Scripted {
		b.WriteString("SCRIPTED: answers in this session come from the offline scripted model, not a real LLM\n")
	}
	for _, e := range s.Entries {
		b.WriteString("\n")
		fmt.Fprintf(&b, "--- %s  %s\n", e.At.In(loc).Format(TimeLayout), p(heading(e)))
		if e.Preamble != "" {
			if full {
				fmt.Fprintf(&b, "[summary of the previous session, from %s:]\n%s\n[end of the summary]\n", p(e.PreambleDate), termsafe.Text(e.Preamble))
			} else {
				fmt.Fprintf(&b, "[carries the summary of the previous session, from %s: %s; --full prints it]\n",
					p(e.PreambleDate), termsafe.Plural(strings.Count(e.Preamble, "\n")+1, "line"))
			}
		}
		if text := strings.TrimRight(e.Text, "\n"); text != "" {
			b.WriteString(termsafe.Text(text))
			b.WriteString("\n")
		}
		for _, c := range e.Calls {
			fmt.Fprintf(&b, "-> tool call %s (%s): %s\n", p(c.Name), p(c.ID), p(strings.Join(strings.Fields(c.Args), " ")))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("print session %s: %w", info.ID, err)
	}
	return nil
}

// heading is the one-line description of an entry: who, and the facts
// beside the text.
func heading(e Entry) string {
	var parts []string
	switch e.Kind {
	case User:
		parts = append(parts, "user")
		if e.TriggerKind != "" {
			parts = append(parts, e.TriggerKind)
		}
		if e.Trigger != "" {
			parts = append(parts, "trigger "+e.Trigger)
		}
	case Assistant:
		parts = append(parts, "assistant")
		if e.Model != "" {
			parts = append(parts, modelText(e))
		}
	case Tool:
		r := "tool result " + e.ToolName
		if e.ToolCallID != "" {
			r += " (" + e.ToolCallID + ")"
		}
		parts = append(parts, r)
		if e.IsError {
			parts = append(parts, "ERROR")
		}
	case Checkpoint:
		parts = append(parts, "checkpoint (the exchanges before it were summarised into this)")
	default:
		parts = append(parts, "event "+e.EventKind)
		if e.Model != "" {
			parts = append(parts, modelText(e))
		}
	}
	if e.Silent {
		parts = append(parts, "silent")
	}
	if u := usageText(e.Usage); u != "" {
		parts = append(parts, u)
	}
	if e.Duration > 0 {
		parts = append(parts, e.Duration.String())
	}
	if e.CopiedFrom != "" {
		parts = append(parts, "copied from "+e.CopiedFrom)
	}
	return strings.Join(parts, " · ")
}

// modelText names the model that wrote an entry, marking the scripted one.
func modelText(e Entry) string {
	s := e.Model
	if e.Provider != "" {
		s += " (" + e.Provider + ")"
	}
	if e.Scripted {
		s += " SCRIPTED"
	}
	return s
}

// usageText describes a call's token usage, "" for none.
func usageText(u *memory.Usage) string {
	if u == nil {
		return ""
	}
	s := fmt.Sprintf("%d in / %d out tokens", u.InputTokens, u.OutputTokens)
	if u.CachedTokens > 0 {
		s += fmt.Sprintf(" (%d cached)", u.CachedTokens)
	}
	return s
}
