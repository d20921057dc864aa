package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// ErrNoTriggers is the error of a trading date none of whose triggers
// reached the desk's model: there is nothing to replay.
var ErrNoTriggers = errors.New("no trigger of that trading date reached the model")

// Day is a trading date of a desk as it ran: every trigger that reached
// the model, in order, with what the model saw and answered.
type Day struct {
	// Desk is the desk; Date the trading date; Start the instant it began.
	Desk  string
	Date  memory.Date
	Start time.Time
	// Triggers are the date's triggers that reached the model, oldest
	// first.
	Triggers []Trigger
	// Sessions are the sessions their messages are in, in order.
	Sessions []string
}

// Trigger is one trigger of the day, and what the original desk made of
// it.
type Trigger struct {
	ID   string    `json:"id"`
	Kind string    `json:"kind"`
	At   time.Time `json:"time"`
	// Text is the message the model saw: a new session's first message
	// with the previous summary in front of it, a market trigger framed.
	Text string `json:"text"`
	// Session is the original session its message is in.
	Session string `json:"session"`
	// Outcome is the trigger's state in the ledger (answered, interrupted,
	// failed), or what the session shows when the ledger has no record.
	Outcome string `json:"outcome"`
	// Reason is why it failed or was interrupted, when the ledger says.
	Reason string `json:"reason,omitempty"`
}

// Side is what one desk, the original or the candidate, answered to a
// trigger.
type Side struct {
	// Reply is the answer's text ("" when there was none: the turn was
	// interrupted, or failed, or was not run).
	Reply    string `json:"reply"`
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	// Scripted is true when deskd's offline scripted model answered: not
	// a real model.
	Scripted  bool         `json:"scripted,omitempty"`
	ToolCalls []Call       `json:"tool_calls"`
	Tokens    memory.Usage `json:"tokens"`
	Cost      float64      `json:"cost"`
	// LatencyMS is how long the turn took (the model's calls, as recorded,
	// for the original).
	LatencyMS int64 `json:"latency_ms"`
	// Error says why there is no reply: the turn failed, or was cut off.
	Error string `json:"error,omitempty"`
}

// The outcomes of a candidate's tool call.
const (
	// CallReplayed: answered with the original's recorded result of the
	// same call (same tool, same arguments).
	CallReplayed = "replayed"
	// CallRefused: not run; the model was told "not run in replay: <tool>".
	CallRefused = "refused"
	// CallRun: run for real (--allow-tools, not under approve).
	CallRun = "run"
)

// Call is one tool call and what answered it.
type Call struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    string          `json:"result"`
	IsError   bool            `json:"is_error,omitempty"`
	// Outcome is, for the candidate, CallReplayed, CallRefused or CallRun;
	// for the original, ok, error, or the operator's decision (approved,
	// denied, expired).
	Outcome string `json:"outcome"`
	// Approval is true for a call of a tool under approve: an operator
	// decides on it live; a replay never runs it, never queues it.
	Approval bool `json:"approval,omitempty"`
	// From names the original trigger whose recorded result answered a
	// replayed call.
	From string `json:"from,omitempty"`
}

// recorded is a trigger of the day with the original's side.
type recorded struct {
	Trigger
	original Side
}

// ledgerItem is what the trigger ledger says of one trigger.
type ledgerItem struct {
	trigger *triggers.Trigger
	state   triggers.State
	reply   string
	reason  string
	session string
}

// readLedger folds the desk's trigger ledger into what it says of each
// trigger, reading the file without changing it (the daemon owns it; a
// line that does not parse, a torn last one, is passed over). A missing
// ledger says nothing.
func readLedger(folder *memory.Folder) (map[string]*ledgerItem, error) {
	path := folder.Path(triggers.LedgerFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*ledgerItem{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read trigger ledger: %w", err)
	}
	defer f.Close()
	items := map[string]*ledgerItem{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var r triggers.Record
		if len(line) == 0 || json.Unmarshal(line, &r) != nil || r.ID == "" {
			continue
		}
		it := items[r.ID]
		if it == nil {
			it = &ledgerItem{}
			items[r.ID] = it
		}
		if r.Trigger != nil && it.trigger == nil {
			it.trigger = r.Trigger
		}
		if r.State != "" && r.State != triggers.StateAcknowledged {
			it.state = r.State
		}
		if r.Reply != "" {
			it.reply = r.Reply
		}
		if r.Reason != "" {
			it.reason = r.Reason
		}
		if r.Session != "" {
			it.session = r.Session
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trigger ledger %s: %w", path, err)
	}
	return items, nil
}

// LoadDay reads trading date date of folder's desk: the messages of its
// triggers from the session files (those of the date, and the records of
// any other session made during it) and their outcomes from the trigger
// ledger, without changing any file. A date none of whose triggers
// reached the model is an error satisfying errors.Is(err, ErrNoTriggers).
func LoadDay(folder *memory.Folder, day memory.TradingDay, date memory.Date) (Day, error) {
	d, _, err := loadDay(folder, day, date)
	return d, err
}

// loadDay is LoadDay with the original's side of each trigger.
func loadDay(folder *memory.Folder, day memory.TradingDay, date memory.Date) (Day, []recorded, error) {
	out := Day{Desk: folder.Desk(), Date: date, Start: day.StartOf(date)}
	fail := func(err error) (Day, []recorded, error) {
		return Day{}, nil, fmt.Errorf("replay %s %s: read the day: %w", folder.Desk(), date, err)
	}
	infos, err := folder.ListSessions()
	if err != nil {
		return fail(err)
	}
	ledger, err := readLedger(folder)
	if err != nil {
		return fail(err)
	}
	end := day.StartOf(date.AddDays(1))
	var recs []recorded
	seen := map[string]bool{}
	for _, info := range infos {
		if info.Date != date && (info.Updated.Before(out.Start) || !info.Started.Before(end)) {
			continue // neither of the date nor written during it
		}
		records, err := folder.ReadSession(info.ID)
		if err != nil {
			return fail(err)
		}
		before := len(recs)
		recs = append(recs, sessionTriggers(records, info, func(at time.Time) bool {
			return info.Date == date || day.DateOf(at) == date
		}, seen)...)
		if len(recs) > before {
			out.Sessions = append(out.Sessions, info.ID)
		}
	}
	if len(recs) == 0 {
		return fail(ErrNoTriggers)
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].At.Before(recs[j].At) })
	for i := range recs {
		r := &recs[i]
		it, ok := ledger[r.ID]
		if !ok {
			if r.original.Reply == "" && r.original.Error == "" {
				r.Outcome, r.original.Error = string(triggers.StateInterrupted), "no answer in the session (the ledger has no record of it)"
			}
			continue
		}
		if it.trigger != nil {
			r.At = it.trigger.At
			if r.Kind == "" {
				r.Kind = string(it.trigger.Kind)
			}
		}
		r.Outcome, r.Reason = string(it.state), it.reason
		switch it.state {
		case triggers.StateAnswered:
			r.original.Reply = it.reply // the ledger's reply is the answer of record
		case triggers.StateInterrupted, triggers.StateFailed:
			r.original.Reply = ""
			if r.original.Error == "" {
				r.original.Error = fmt.Sprintf("%s: %s", it.state, it.reason)
			}
		}
	}
	for _, r := range recs {
		out.Triggers = append(out.Triggers, r.Trigger)
	}
	return out, recs, nil
}

// sessionTriggers returns the triggers whose messages a session's records
// hold (of the date: ofDate of the message's time), each with what the
// records say the original answered. A fork's copies and silent turns
// are passed over, and so is a trigger already seen.
func sessionTriggers(records []memory.Record, info memory.SessionInfo, ofDate func(time.Time) bool, seen map[string]bool) []recorded {
	var out []recorded
	cur := -1 // the trigger in out that the records now belong to
	calls := map[string]int{}
	for _, rec := range records {
		if rec.ForkedFrom != "" || rec.Silent {
			continue
		}
		if rec.Type == memory.RecordMessage && rec.Role == router.RoleUser {
			cur = -1
			if rec.Trigger == "" || seen[rec.Trigger] || !ofDate(rec.At) {
				continue
			}
			seen[rec.Trigger] = true
			out = append(out, recorded{Trigger: Trigger{ID: rec.Trigger, Kind: rec.Kind, At: rec.At, Text: rec.Text, Session: info.ID,
				Outcome: string(triggers.StateAnswered)}})
			cur = len(out) - 1
			calls = map[string]int{}
			continue
		}
		if cur < 0 || rec.Trigger != out[cur].ID {
			continue
		}
		side := &out[cur].original
		switch {
		case rec.Type == memory.RecordMessage && rec.Role == router.RoleAssistant:
			side.Reply, side.Model, side.Provider, side.Scripted = rec.Text, rec.Model, rec.Provider, rec.Scripted
			if rec.Usage != nil {
				side.Tokens = addUsage(side.Tokens, *rec.Usage)
			}
			side.Cost += rec.Cost
			side.LatencyMS += rec.DurationMS
			cs, _ := rec.Calls()
			for _, c := range cs {
				calls[c.ID] = len(side.ToolCalls)
				side.ToolCalls = append(side.ToolCalls, Call{ID: c.ID, Tool: c.Name, Arguments: c.Arguments})
			}
		case rec.Type == memory.RecordTool:
			if i, ok := calls[rec.ToolCallID]; ok {
				c := &side.ToolCalls[i]
				c.Result, c.IsError = rec.Text, rec.IsError
				if c.Outcome == "" {
					c.Outcome = map[bool]string{true: router.OutcomeError, false: "ok"}[rec.IsError]
				}
			}
		case rec.Type == memory.RecordEvent && rec.Kind == router.RecordApproval:
			if i, ok := calls[rec.ToolCallID]; ok {
				var d router.Decision
				_ = json.Unmarshal(rec.Data, &d)
				side.ToolCalls[i].Approval, side.ToolCalls[i].Outcome = true, d.Outcome
			}
		case rec.Type == memory.RecordEvent && (rec.Kind == "turn.failed" || rec.Kind == "budget.exceeded"):
			side.Error = rec.Text
		}
	}
	return out
}

// addUsage sums two usages.
func addUsage(a, b memory.Usage) memory.Usage {
	return memory.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		CachedTokens: a.CachedTokens + b.CachedTokens, CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens}
}
