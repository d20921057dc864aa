package termsafe_test

import (
	"testing"

	"github.com/deskd/deskd/desk/termsafe"
)

func TestPlural(t *testing.T) {
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{0, "problem", "0 problems"},
		{1, "problem", "1 problem"},
		{2, "problem", "2 problems"},
		{1, "turn", "1 turn"},
		{3, "entry", "3 entries"},
		{2, "day", "2 days"},
		{2, "batch", "2 batches"},
		{1, "entry", "1 entry"},
		{-1, "slot", "-1 slots"},
	}
	for _, tt := range tests {
		if got := termsafe.Plural(tt.n, tt.noun); got != tt.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
