package desk_test

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
)

// TestConsoleLogTimeHasMilliseconds: the console format's leading time
// is UTC with the milliseconds the README promises for every line's
// "time", as the JSON format has it (zerolog's console writer would show
// whole seconds in the host's zone).
func TestConsoleLogTimeHasMilliseconds(t *testing.T) {
	var out bytes.Buffer
	log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "console"}, time.UTC, &out, clock.NewFake(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("deskd ready")
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `).Match(out.Bytes()) {
		t.Errorf("console line %q does not begin with an RFC3339 time with milliseconds", out.String())
	}
}
