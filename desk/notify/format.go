package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deskd/deskd/desk/event"
)

// Caps on what a notification carries of a long text.
const (
	// MaxArguments caps an approval's arguments (their JSON); longer ones
	// are carried as the start of their text, with arguments_truncated.
	MaxArguments = 2048
	// MaxTriggerText caps the trigger's text in an approval or answer.
	MaxTriggerText = 1024
	// MaxAnswer caps an answer's text.
	MaxAnswer = 16 << 10
	// maxSlackDetail caps the detail in a Slack sentence.
	maxSlackDetail = 300
)

// sign is the HMAC-SHA256 of id.timestamp.body with key.
func sign(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return m.Sum(nil)
}

// types returns the notification types e becomes for t: its topic when t
// names it, turn.fallback for a turn a fallback model answered, and
// turn.answered when t gets the desk's answers. A notify.failed is never
// posted to the target it is about.
func (n *Notifier) types(t *target, e event.Event) []string {
	var out []string
	topic := e.Topic()
	switch ev := e.(type) {
	case event.NotifyFailed:
		if ev.Target == t.Name {
			return nil
		}
	case event.TurnCompleted:
		if ev.Fallback && t.events[TypeFallback] {
			out = append(out, TypeFallback)
		}
		if n.o.Answers != nil && ev.Desk != "" {
			for _, a := range n.o.Answers(ev.Desk) {
				if a == t.Name {
					out = append(out, TypeAnswered)
					break
				}
			}
		}
	}
	if t.events[topic] {
		out = append(out, topic)
	}
	return out
}

// data is the data of a notification of type typ for e: e's JSON as on
// GET /v1/events, plus console_url and what the type adds (an approval's
// trigger text and commands, an answer's text).
func (n *Notifier) data(typ string, e event.Event) map[string]any {
	d := map[string]any{}
	_ = json.Unmarshal(event.JSON(e), &d) // event.JSON: an object, always
	h := e.Head()
	link := n.deskLink(h.Desk)
	switch ev := e.(type) {
	case event.ApprovalRequested:
		if len(ev.Arguments) > MaxArguments {
			d["arguments"] = capText(string(ev.Arguments), MaxArguments)
			d["arguments_truncated"] = true
		}
		if ev.Trigger != "" && n.o.Trigger != nil {
			if tr, ok := n.o.Trigger(h.Desk, ev.Trigger); ok {
				d["trigger_text"] = capText(tr.Text, MaxTriggerText)
				d["trigger_kind"] = tr.Kind
			}
		}
		d["approve_command"] = "deskd approve " + h.Desk + " " + ev.ID
		d["deny_command"] = "deskd deny " + h.Desk + " " + ev.ID
		if n.o.ConsoleURL != "" {
			base := n.o.ConsoleURL + "/v1/desks/" + url.PathEscape(h.Desk) + "/approvals/" + url.PathEscape(ev.ID)
			d["approve_url"], d["deny_url"] = base+"/approve", base+"/deny"
		}
	case event.TurnCompleted:
		if typ == TypeAnswered {
			a := map[string]any{"topic": TypeAnswered, "at": ev.At, "desk": ev.Desk, "trigger": ev.Trigger,
				"session": ev.Session, "turn": ev.Turn, "model": ev.Model, "scripted": ev.Scripted}
			if n.o.Trigger != nil {
				if tr, ok := n.o.Trigger(h.Desk, ev.Trigger); ok {
					a["kind"] = tr.Kind
					a["trigger_text"] = capText(tr.Text, MaxTriggerText)
					a["text"] = capText(tr.Reply, MaxAnswer)
					if utf8.RuneCountInString(tr.Reply) > MaxAnswer {
						a["text_truncated"] = true
					}
				}
			}
			d = a
		}
	}
	if link != "" {
		d["console_url"] = link
	}
	return d
}

// deskLink is the console's page of desk ("" without console_url; the
// console's front page for an event of no desk).
func (n *Notifier) deskLink(desk string) string {
	switch {
	case n.o.ConsoleURL == "":
		return ""
	case desk == "":
		return n.o.ConsoleURL + "/"
	}
	return n.o.ConsoleURL + "/#/desk/" + url.PathEscape(desk)
}

// body is the exact request body of a notification of type typ for e.
func (n *Notifier) body(t *target, typ string, e event.Event) ([]byte, error) {
	d := n.data(typ, e)
	if t.Format == Slack {
		return json.Marshal(map[string]string{"text": slackText(typ, e, d)})
	}
	return json.Marshal(struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}{typ, e.Head().At.UTC().Format(time.RFC3339Nano), d})
}

// slackText is one readable sentence: the desk, what happened, the link.
func slackText(typ string, e event.Event, d map[string]any) string {
	h := e.Head()
	who := "deskd"
	if h.Desk != "" {
		who = "deskd desk " + h.Desk
	}
	var what string
	switch ev := e.(type) {
	case event.ApprovalRequested:
		what = fmt.Sprintf("asks for approval of %s %s (expires %s); approve: `%s`, deny: `%s`",
			ev.Tool, capText(string(ev.Arguments), maxSlackDetail), ev.ExpiresAt.UTC().Format(time.RFC3339), d["approve_command"], d["deny_command"])
		if s, ok := d["trigger_text"].(string); ok && s != "" {
			what += fmt.Sprintf("; asked by trigger %s: %q", ev.Trigger, capText(s, maxSlackDetail))
		}
	case event.TurnInterrupted:
		what = fmt.Sprintf("had turn %s interrupted: %s; it is not run again until an operator decides", ev.Trigger, ev.Reason)
	case event.TurnFailed:
		what = fmt.Sprintf("failed turn %s: %s", ev.Trigger, capText(ev.Error, maxSlackDetail))
	case event.TurnCompleted:
		if typ == TypeAnswered {
			text, _ := d["text"].(string)
			what = fmt.Sprintf("answered trigger %s (%s): %s", ev.Trigger, ev.Model, capText(text, 2000))
		} else {
			what = fmt.Sprintf("answered trigger %s on fallback model %s: %s failed (%s)", ev.Trigger, ev.Model, ev.Primary, capText(ev.PrimaryError, maxSlackDetail))
		}
	case event.StorageFailed:
		what = "cannot write to its disk: " + capText(ev.Error, maxSlackDetail) + "; it takes no turn until a write succeeds"
	case event.RolloverFailed:
		what = fmt.Sprintf("failed its rollover at step %s: %s", ev.Step, capText(ev.Error, maxSlackDetail))
	case event.MemoryUnreadable:
		what = fmt.Sprintf("cannot read %s: %s", ev.Path, capText(ev.Error, maxSlackDetail))
	case event.ConfigRejected:
		what = fmt.Sprintf("refused config file %s: %s: %s", ev.Path, ev.Field, capText(ev.Reason, maxSlackDetail))
	case event.CalendarEnding:
		what = fmt.Sprintf("follows calendar %s, which ends %s (%d days left)", ev.Calendar, ev.Through, ev.DaysLeft)
	case event.ScheduleMissed:
		what = fmt.Sprintf("missed %d slot(s) of schedule %s: %s", ev.Count, ev.Schedule, capText(ev.Reason, maxSlackDetail))
	case event.BudgetExceeded:
		what = fmt.Sprintf("exceeded its %s budget (%d of %d)", ev.Budget, ev.Used, ev.Limit)
	case event.MCPServerDown:
		what = fmt.Sprintf("lost MCP server %s: %s", ev.Server, capText(ev.Error, maxSlackDetail))
	case event.NotifyFailed:
		what = fmt.Sprintf("notify target %s: %s %s", ev.Target, ev.Reason, capText(ev.Error, maxSlackDetail))
	default:
		what = "announced " + typ
	}
	// Slack's text is its mrkdwn: &, < and > are escaped, as its docs ask.
	s := slackEscape(who + ": " + what + ".")
	if link, ok := d["console_url"].(string); ok && link != "" {
		s += " " + link
	}
	return s
}

// slackEscape escapes what Slack's mrkdwn gives a meaning to.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// capText is s cut to at most max runes, with … when cut.
func capText(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:max]), func(r rune) bool { return r == ' ' }) + "…"
}
