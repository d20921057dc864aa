package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// decisionLine is one line of approvals.jsonl: an operator's decision on a
// tool call that waited for one, with the session and trigger it was in.
type decisionLine struct {
	Session string `json:"session"`
	Trigger string `json:"trigger,omitempty"`
	router.Decision
}

// addDecisions bundles the operators' decisions on the tool calls of the
// day's sessions (approved, denied, expired: who decided, when, on which
// arguments) as approvals.jsonl, and lists them in the manifest.
func addDecisions(b *Bundle, folder *memory.Folder, sessions []string, loc *time.Location) error {
	var lines []decisionLine
	for _, id := range sessions {
		recs, err := folder.ReadSession(id)
		if err != nil {
			return fmt.Errorf("read the decisions of session %s: %w", id, err)
		}
		for _, rec := range recs {
			if rec.Type != memory.RecordEvent || rec.Kind != router.RecordApproval || rec.ForkedFrom != "" {
				continue
			}
			var d router.Decision
			if err := json.Unmarshal(rec.Data, &d); err != nil {
				return fmt.Errorf("session %s: a decision on tool call %s does not parse: %w", id, rec.ToolCallID, err)
			}
			lines = append(lines, decisionLine{Session: id, Trigger: rec.Trigger, Decision: d})
		}
	}
	b.note("operator decisions on tool calls: %d%s", len(lines), map[bool]string{true: " (approvals.jsonl):", false: ""}[len(lines) > 0])
	if len(lines) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, l := range lines {
		data, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("encode the decision on tool call %s: %w", l.Call, err)
		}
		buf.Write(append(data, '\n'))
		line := fmt.Sprintf("  %s %s call %s (session %s, trigger %s) %s by %s", l.DecidedAt.In(loc).Format(time.DateTime), l.Tool, l.ID,
			l.Session, l.Trigger, l.Outcome, l.By)
		if l.Reason != "" {
			line += ": " + l.Reason
		}
		var args bytes.Buffer
		if json.Compact(&args, l.Arguments) != nil {
			args.Reset()
			fmt.Fprintf(&args, "%q", l.Arguments)
		}
		b.note("%s; arguments %s", line, args.String())
	}
	b.add("approvals.jsonl", buf.Bytes(), "the operators' decisions on the day's tool calls that waited for one (approved, denied, expired), JSON lines")
	return nil
}
