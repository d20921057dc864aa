package main

// The generator of desk folders: session files and trigger ledgers in the
// format today's deskd writes (memory/session.go, memory/records.go,
// triggers/ledger.go), written as JSON lines by this package's own types so
// that the bench keeps measuring files of today's format when the code
// changes (what an upgrade in place reads). gen_test.go shows that
// memory and triggers read them back.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
	_ "time/tzdata" // the trading zone on a host without zoneinfo
)

// tradingZone is deskd's default trading time zone.
const tradingZone = "Asia/Kolkata"

// tradingDate returns the trading date of now in Asia/Kolkata with the day
// starting at 00:00 (deskd's defaults), YYYY-MM-DD.
func tradingDate(now time.Time) (string, error) {
	loc, err := time.LoadLocation(tradingZone)
	if err != nil {
		return "", fmt.Errorf("load %s: %w", tradingZone, err)
	}
	return now.In(loc).Format(time.DateOnly), nil
}

// usage is a session record's token usage (memory.Usage).
type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// sessionRecord is one line of a session file (memory.Record), the fields
// the header, a user message and an assistant message carry.
type sessionRecord struct {
	Type       string    `json:"type"`
	At         time.Time `json:"at"`
	Session    string    `json:"session,omitempty"`
	Desk       string    `json:"desk,omitempty"`
	Date       string    `json:"trading_date,omitempty"`
	Role       string    `json:"role,omitempty"`
	Text       string    `json:"text,omitempty"`
	Trigger    string    `json:"trigger,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Model      string    `json:"model,omitempty"`
	Provider   string    `json:"provider,omitempty"`
	Usage      *usage    `json:"usage,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
}

// trigger is a ledger record's trigger (triggers.Trigger).
type trigger struct {
	ID     string    `json:"id"`
	Desk   string    `json:"desk"`
	Kind   string    `json:"kind"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
	Source string    `json:"source"`
}

// ledgerRecord is one line of a trigger ledger (triggers.Record) in the
// compacted form, one record for a trigger's whole life, as a ledger that
// deskd has compacted holds.
type ledgerRecord struct {
	At        time.Time `json:"at"`
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Trigger   *trigger  `json:"trigger,omitempty"`
	Session   string    `json:"session,omitempty"`
	Turn      int       `json:"turn,omitempty"`
	Reply     string    `json:"reply,omitempty"`
	QueuedAt  time.Time `json:"queued_at,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	SentAt    time.Time `json:"sent_at,omitzero"`
}

// deskState is the router's state.json (memory.State): the session a
// restart resumes.
type deskState struct {
	Session string `json:"session"`
	Date    string `json:"trading_date"`
}

// history describes one desk folder to generate.
type history struct {
	Desk     string    // the desk's name
	Date     string    // the trading date of its session (today's, so that no rollover runs)
	Start    time.Time // when its first record was written
	Records  int       // session records after the header (user and assistant messages, alternating)
	Triggers int       // answered triggers in the ledger
}

// sessionID is the id of the generated session of desk.
func (h history) sessionID() string {
	return h.Start.UTC().Format("20060102T150405Z") + "-bench-" + h.Desk
}

// marketText is the text a user record of a market trigger holds: the
// framing deskd puts around a feed's text (triggers.Prompt).
func marketText(id string, at time.Time, text string) string {
	return fmt.Sprintf("<market_event id=%q source=\"api\" at=%q>\n%s\n</market_event>", id, at.UTC().Format(time.RFC3339), text)
}

// eventText is the text of the n-th generated or posted trigger.
func eventText(marker string, n int) string {
	return fmt.Sprintf("market event %s: NIFTY 22,%03d, BANKNIFTY 47,%03d; check the tape.", marker, n%1000, (7*n)%1000)
}

// writeHistory writes the desk's folder below state (state/desks/<desk>):
// a session file with h.Records records after its header, state.json
// naming it as the current session, and a ledger of h.Triggers answered
// triggers. The files are fsynced once each, not per line.
func writeHistory(state string, h history) error {
	dir := filepath.Join(state, "desks", h.Desk)
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		return fmt.Errorf("generate desk %s: %w", h.Desk, err)
	}
	id := h.sessionID()
	step := time.Second
	err := writeLines(filepath.Join(dir, "sessions", id+".jsonl"), func(put func(any) error) error {
		if err := put(sessionRecord{Type: "header", At: h.Start, Session: id, Desk: h.Desk, Date: h.Date}); err != nil {
			return err
		}
		for i := 0; i < h.Records; i++ {
			n, at := i/2, h.Start.Add(time.Duration(i+1)*step)
			tid := fmt.Sprintf("gen-%d", n)
			r := sessionRecord{Type: "message", At: at, Trigger: tid}
			if i%2 == 0 {
				r.Role, r.Kind, r.Text = "user", "market", marketText(tid, at, eventText("gen", n))
			} else {
				r.Role, r.Text, r.Model, r.Provider = "assistant", "noted", "m", "openai"
				r.Usage, r.DurationMS = &usage{InputTokens: 40 + 60*n, OutputTokens: 1}, 2
			}
			if err := put(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("generate desk %s: session: %w", h.Desk, err)
	}
	err = writeLines(filepath.Join(dir, "triggers.jsonl"), func(put func(any) error) error {
		for n := 0; n < h.Triggers; n++ {
			at := h.Start.Add(time.Duration(n) * step)
			tid := fmt.Sprintf("gen-%d", n)
			r := ledgerRecord{At: at.Add(5 * time.Millisecond), ID: tid, State: "answered",
				Trigger: &trigger{ID: tid, Desk: h.Desk, Kind: "market", Text: eventText("gen", n), At: at, Source: "api"},
				Session: id, Turn: n + 1, Reply: "noted",
				QueuedAt: at, StartedAt: at.Add(time.Millisecond), SentAt: at.Add(time.Millisecond)}
			if err := put(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("generate desk %s: ledger: %w", h.Desk, err)
	}
	b, err := json.MarshalIndent(deskState{Session: id, Date: h.Date}, "", "  ")
	if err != nil {
		return fmt.Errorf("generate desk %s: state: %w", h.Desk, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("generate desk %s: %w", h.Desk, err)
	}
	return nil
}

// writeLines creates path and writes each value put is given as one JSON
// line, then fsyncs the file.
func writeLines(path string, fill func(put func(any) error) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true) // as json.Marshal, which deskd uses
	err = fill(enc.Encode)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
