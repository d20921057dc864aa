package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// TestGeneratedHistoryReadsBack: the session file, state.json and ledger
// writeHistory generates are read back by today's memory and triggers
// packages, record for record, with nothing skipped or torn.
func TestGeneratedHistoryReadsBack(t *testing.T) {
	state := t.TempDir()
	start := time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)
	h := history{Desk: "main", Date: "2026-03-02", Start: start, Records: 101, Triggers: 40}
	if err := writeHistory(state, h); err != nil {
		t.Fatal(err)
	}
	f, err := memory.OpenFolder(filepath.Join(state, "desks", "main"), "main", func() time.Time { return start })
	if err != nil {
		t.Fatal(err)
	}
	st, ok, err := f.ReadState()
	if err != nil || !ok {
		t.Fatalf("ReadState() = %v, %v", ok, err)
	}
	if st.Session != h.sessionID() || st.Date.String() != h.Date {
		t.Errorf("ReadState() = %+v, want session %s of %s", st, h.sessionID(), h.Date)
	}
	log, recs, torn, err := f.OpenSession(st.Session)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if torn != nil || log.SkippedLines() != 0 {
		t.Errorf("OpenSession: torn %+v, %d lines skipped, want none", torn, log.SkippedLines())
	}
	if len(recs) != h.Records+1 {
		t.Fatalf("OpenSession: %d records, want %d (the header and %d)", len(recs), h.Records+1, h.Records)
	}
	if r := recs[0]; r.Type != memory.RecordHeader || r.Session != st.Session || r.Desk != "main" || r.Date != h.Date {
		t.Errorf("header = %+v", r)
	}
	for i, r := range recs[1:] {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if r.Type != memory.RecordMessage || r.Role != role || r.Text == "" || r.Trigger == "" || !r.At.After(start) {
			t.Errorf("record %d = %+v, want a %s message", i+1, r, role)
		}
		if role == "assistant" && (r.Usage == nil || r.Usage.InputTokens == 0 || r.Provider != "openai") {
			t.Errorf("record %d = %+v, want its usage and provider", i+1, r)
		}
		if role == "user" && r.Kind != string(triggers.Market) {
			t.Errorf("record %d: kind %q, want market", i+1, r.Kind)
		}
	}
	l, err := triggers.OpenLedger(filepath.Join(state, "desks", "main", triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Len() != h.Triggers || l.Records() != h.Triggers || l.Torn() != 0 {
		t.Errorf("ledger: %d triggers, %d records, %d torn; want %d, %d, 0", l.Len(), l.Records(), l.Torn(), h.Triggers, h.Triggers)
	}
	if u := l.Unfinished(); len(u) != 0 {
		t.Errorf("ledger: %d unfinished triggers, want none", len(u))
	}
	it, ok := l.Get("gen-7")
	if !ok || it.State != triggers.StateAnswered || it.Trigger.Kind != triggers.Market || it.Trigger.Desk != "main" ||
		it.Session != st.Session || it.Turn != 8 || it.Reply != "noted" || it.QueuedAt.IsZero() || it.SentAt.IsZero() {
		t.Errorf("ledger Get(gen-7) = %+v, %v", it, ok)
	}
}
