package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// ScriptedLabel marks every reply of the scripted model, so that no log,
// session file or status can pass it off as a real model's words.
const ScriptedLabel = "[scripted]"

// Scripted is the offline, deterministic model, for demos, rehearsals and
// tests. It needs no network and no key. A turn's reply quotes the first
// line of the message it was sent; a summary is a digest of the session's
// exchanges; a fold appends the notes to Memory.md under a dated heading.
type Scripted struct{}

var _ Provider = Scripted{}

// Complete answers req without any model.
func (Scripted) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	var text string
	switch req.Task {
	case TaskSummary, TaskCompact:
		text = Digest(req.Messages[:max(0, len(req.Messages)-1)])
	case TaskFlush:
		text = "NO_REPLY"
	case TaskCurate:
		text = `{"operations": []}`
	case TaskFold:
		if req.Fold == nil {
			return Response{}, fmt.Errorf("scripted fold: no fold input")
		}
		text = foldByAppending(req.Fold)
	default:
		if call, ok := scriptedNote(req); ok {
			return Response{ToolCalls: []ToolCall{call}, Usage: estimateUsage(req, ""), ModelID: string(ScriptedProvider)}, nil
		}
		text = fmt.Sprintf("%s Received: %q", ScriptedLabel, subject(lastUserText(req.Messages)))
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == RoleTool {
			last := req.Messages[n-1]
			text += fmt.Sprintf(" Tool %s answered: %q", last.ToolName, cutText(firstLine(last.Text), 200))
		}
	}
	return Response{Text: text, Usage: estimateUsage(req, text), ModelID: string(ScriptedProvider)}, nil
}

// scriptedNote makes the scripted model call a tool for a message whose
// own text has a line "NOTE: ..." (the note tool, with that text) or
// "CALL: <tool> {json arguments}" (any tool the request offers), once per
// turn: a way to rehearse the tool loop, MCP tools and approvals
// included, offline.
func scriptedNote(req Request) (ToolCall, bool) {
	n := len(req.Messages)
	if n == 0 || req.Messages[n-1].Role != RoleUser {
		return ToolCall{}, false
	}
	if req.ToolChoice == ToolChoiceNone {
		return ToolCall{}, false
	}
	offered := func(name string) bool {
		for _, t := range req.Tools {
			if t.Name == name {
				return true
			}
		}
		return false
	}
	for _, line := range strings.Split(triggers.OwnText(req.Messages[n-1].Text), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "NOTE:"); ok && strings.TrimSpace(rest) != "" && offered("note") {
			args, _ := json.Marshal(map[string]string{"text": strings.TrimSpace(rest)})
			return ToolCall{ID: "scripted-note-1", Name: "note", Arguments: args}, true
		}
		if rest, ok := strings.CutPrefix(line, "CALL:"); ok {
			name, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
			args = strings.TrimSpace(args)
			if args == "" {
				args = "{}"
			}
			if name != "" && offered(name) {
				return ToolCall{ID: "scripted-call-1", Name: name, Arguments: json.RawMessage(args)}, true
			}
		}
	}
	return ToolCall{}, false
}

// lastUserText returns the text of the last user message.
func lastUserText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

func foldByAppending(in *FoldInput) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(in.Memory, "\n"))
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "## Notes of %s\n\n%s\n", in.Date, strings.TrimRight(in.Notes, "\n"))
	return b.String()
}

// estimateUsage counts about four characters a token; the scripted model
// reports usage so that budgets and reports work offline.
func estimateUsage(req Request, reply string) (u memory.Usage) {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text)
	}
	u.InputTokens = (n + 3) / 4
	u.OutputTokens = (len(reply) + 3) / 4
	return u
}

// Digest is the mechanical summary of a conversation: one line for each
// exchange, the trigger's first line and the reply's. The scripted model
// answers summaries with it, and a rollover whose model fails falls back on it.
func Digest(msgs []Message) string {
	var b strings.Builder
	n := 0
	for i, m := range msgs {
		if m.Role != "user" {
			continue
		}
		// The reply is the turn's last answer that asks for no tools.
		reply := "(no reply)"
		for _, next := range msgs[i+1:] {
			if next.Role == RoleUser {
				break
			}
			if next.Role == RoleAssistant && len(next.ToolCalls) == 0 {
				reply = firstLine(next.Text)
			}
		}
		n++
		fmt.Fprintf(&b, "- %s -> %s\n", subject(m.Text), reply)
	}
	if n == 0 {
		return "No exchanges.\n"
	}
	if n == 1 {
		return "1 exchange:\n" + b.String()
	}
	return fmt.Sprintf("%d exchanges:\n%s", n, b.String())
}

// subject is what the scripted model quotes of a user message: the first
// line of the trigger's own text, without a new session's summary in
// front of it (triggers.OwnText) and, for a market event, without the
// <market_event> framing (triggers.EventText), so that a demo's reply
// shows what was sent.
func subject(text string) string {
	text = triggers.OwnText(text)
	if own, ok := triggers.EventText(text); ok {
		text = own
	}
	return firstLine(text)
}

func firstLine(s string) string {
	s = strings.TrimLeft(s, "\n")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
