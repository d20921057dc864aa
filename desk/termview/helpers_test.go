package termview_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
)

// status is what deskd status prints for the desks sts.
func status(sts ...desk.Status) string {
	var b strings.Builder
	termview.Status(&b, sts)
	return b.String()
}

// has fails the test for each of want that out, what a command printed
// (what names it), lacks, and for each of not that it holds.
func has(t *testing.T, what, out string, want []string, not ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
	for _, n := range not {
		if strings.Contains(out, n) {
			t.Errorf("%s has %q:\n%s", what, n, out)
		}
	}
}
