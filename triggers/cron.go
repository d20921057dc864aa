package triggers

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads the standard five-field cron format plus descriptors such as
// @hourly. It is stateless, so one value serves every caller.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron expression, evaluated in a fixed location.
type Spec struct {
	expr     string
	location *time.Location
	schedule cron.Schedule
}

// ParseSpec parses a five-field cron expression (or a descriptor such as
// @hourly) to be evaluated in loc. CRON_TZ= and TZ= prefixes are refused:
// every schedule runs in the desk's trading time zone. An expression that
// can never fire is refused too.
func ParseSpec(expr string, loc *time.Location) (*Spec, error) {
	if loc == nil {
		return nil, fmt.Errorf("cron %q: no time zone", expr)
	}
	if len(expr) >= 3 && (expr[:3] == "TZ=" || len(expr) >= 8 && expr[:8] == "CRON_TZ=") {
		return nil, fmt.Errorf("cron %q: time zone prefixes are not allowed; schedules run in the trading time zone", expr)
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", expr, err)
	}
	spec := &Spec{expr: expr, location: loc, schedule: s}
	probe := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	if spec.Next(probe).IsZero() {
		return nil, fmt.Errorf("cron %q: never fires", expr)
	}
	return spec, nil
}

// String returns the expression as written.
func (s *Spec) String() string { return s.expr }

// Next returns the first slot strictly after t, or the zero time if there is none.
func (s *Spec) Next(t time.Time) time.Time {
	return s.schedule.Next(t.In(s.location))
}
