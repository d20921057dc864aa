package triggers_test

import (
	"testing"

	"github.com/deskd/deskd/triggers"
)

func TestWithSummaryText(t *testing.T) {
	tr := triggers.Trigger{ID: "t1", Desk: "main", Kind: triggers.Market, Text: "Market opens.\nNIFTY gaps up 1%.", Source: "test"}
	got := triggers.WithSummary(tr, "2026-03-01", "Bought 10 NIFTY futures.\n\nStill open: the hedge.")
	want := "[This is the first message of a new session. Summary of your previous session, from 2026-03-01:]\n" +
		"Bought 10 NIFTY futures.\n" +
		"\n" +
		"Still open: the hedge.\n" +
		"[End of the summary. Your lasting lessons are in Memory.md. The message follows.]\n" +
		"\n" +
		"Market opens.\nNIFTY gaps up 1%."
	if got.Text != want {
		t.Errorf("WithSummary text =\n%q\nwant\n%q", got.Text, want)
	}
	tr.Text = want
	if got != tr {
		t.Errorf("WithSummary changed more than the text: %+v", got)
	}
}

func TestOwnTextRoundTrip(t *testing.T) {
	tests := []struct {
		name, summary, own string
	}{
		{"one line", "Bought 10.", "Market opens."},
		{"several lines", "Bought 10.\n\nHedge open.", "Market opens.\nNIFTY gaps up.\n"},
		{"empty own text", "Bought 10.", ""},
		{"empty summary", "", "Market opens."},
		{"own text that looks like a first message", "Bought 10.",
			"[This is the first message of a new session. Summary of your previous session, from 2026-02-27:]\nold\n" +
				"[End of the summary. Your lasting lessons are in Memory.md. The message follows.]\n\nolder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrapped := triggers.WithSummary(triggers.Trigger{Text: tt.own}, "2026-03-01", tt.summary).Text
			if wrapped == tt.own {
				t.Fatalf("WithSummary did not change %q", tt.own)
			}
			if got := triggers.OwnText(wrapped); got != tt.own {
				t.Errorf("OwnText(WithSummary(%q)) = %q", tt.own, got)
			}
		})
	}
}

func TestOwnTextOfOtherText(t *testing.T) {
	for _, text := range []string{
		"",
		"Market opens.",
		"[This is the first message of a new session. Summary of your previous session, from 2026-03-01:]\nno end marker",
		"Quoting: [End of the summary. Your lasting lessons are in Memory.md. The message follows.]\n\nrest",
	} {
		if got := triggers.OwnText(text); got != text {
			t.Errorf("OwnText(%q) = %q, want it unchanged", text, got)
		}
	}
}
