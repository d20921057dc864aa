package router_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// TestScriptedQuotesTheMarketEventsOwnText: a market trigger reaches the
// model after a standing instruction and inside <market_event> tags; the
// scripted model's reply and its summary's digest quote the event's own
// first line, not the standing instruction, so `deskd trigger main hello`
// on the demo answers `[scripted] Received: "hello"`.
func TestScriptedQuotesTheMarketEventsOwnText(t *testing.T) {
	text := triggers.Prompt(triggers.Trigger{ID: "t1", Kind: triggers.Market, Source: "cli", Key: "NIFTY",
		Text: "NIFTY gap up\nLTP 22000", At: time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)})
	msgs := []router.Message{{Role: router.RoleUser, Text: text}}
	resp, err := router.Scripted{}.Complete(t.Context(), router.Request{Task: router.TaskTurn, System: "desk", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[scripted] Received: "NIFTY gap up"`; resp.Text != want {
		t.Errorf("reply to a market event = %q, want %q", resp.Text, want)
	}
	msgs = append(msgs, router.Message{Role: router.RoleAssistant, Text: resp.Text})
	if got, want := router.Digest(msgs), "1 exchange:\n- NIFTY gap up -> [scripted] Received: \"NIFTY gap up\"\n"; got != want {
		t.Errorf("digest = %q, want %q", got, want)
	}
}
