package transcript

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/triggers"
)

func TestSessionDefaultTitle(t *testing.T) {
	long := strings.Repeat("é", 70)
	tests := []struct {
		name, text, want string
	}{
		{"first line", "Check the tape.\nNIFTY 22,450.", "Check the tape."},
		{"summary preamble stripped", triggers.WithSummary(triggers.Trigger{Text: "\n  Open the book.  \nMore."}, "2026-03-01", "Old summary.").Text, "Open the book."},
		{"market framing skipped", triggers.Prompt(triggers.Trigger{Kind: triggers.Market, ID: "m1", Source: "feed", Text: "NIFTY down 2%\nmore"}), "NIFTY down 2%"},
		{"spaces folded", "  a \t b  ", "a b"},
		{"cut at 60 characters", long, strings.Repeat("é", 59) + "…"},
		{"exactly 60", strings.Repeat("x", 60), strings.Repeat("x", 60)},
		{"empty", "", untitled},
		{"blank lines only", "\n \n", untitled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultTitle(tt.text); got != tt.want {
				t.Errorf("defaultTitle(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}
