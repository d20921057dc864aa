package desk

import (
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// LogEvents logs every event on b as one line whose field "event" is the
// topic, with the payload's fields beside it. Failures, and a turn a
// fallback model answered, log at warn or error level, everything else at
// info (levelOf chooses, per topic). It returns the cancel of its subscription.
func LogEvents(b *event.Bus, log zerolog.Logger) (cancel func()) {
	return event.SubscribeAll(b, func(e event.Event) {
		var fields map[string]any
		raw, err := json.Marshal(e)
		if err == nil {
			err = json.Unmarshal(raw, &fields)
		}
		entry := log.WithLevel(levelOf(e)).Str("event", e.Topic())
		if err != nil {
			entry = entry.AnErr("encode_error", err)
		}
		entry.Fields(fields).Msg(messageOf(e))
	})
}

func levelOf(e event.Event) zerolog.Level {
	switch e := e.(type) {
	case event.ConfigRejected, event.RolloverFailed, event.StorageFailed, event.MemoryUnreadable:
		return zerolog.ErrorLevel
	case event.TurnFailed, event.TurnInterrupted, event.TriggerDropped, event.ScheduleMissed, event.InboxRejected,
		event.BudgetExceeded, event.SessionTorn, event.FileTorn, event.ModelFailed:
		return zerolog.WarnLevel
	case event.TurnCompleted:
		if e.Fallback {
			return zerolog.WarnLevel
		}
	case event.SessionSummarized:
		if e.Degraded {
			return zerolog.WarnLevel
		}
	}
	return zerolog.InfoLevel
}

// messageOf is an event's message: its topic, or a sentence where the
// topic alone would hide what matters.
func messageOf(e event.Event) string {
	if tc, ok := e.(event.TurnCompleted); ok && tc.Fallback {
		name := tc.Model
		if tc.Scripted {
			name += " (scripted)"
		}
		return fmt.Sprintf("desk %s: answered by fallback %s because primary %s failed: %s", tc.Desk, name, tc.Primary, tc.PrimaryError)
	}
	return e.Topic()
}

// NewLogger returns the daemon's logger, writing to w in the configured
// format, and the filter that holds its level: a reload changes the level
// through it (zerolog's own level is fixed per logger value, and its
// global level is a package global).
func NewLogger(cfg config.Log, w io.Writer, clk clock.Clock) (zerolog.Logger, *LevelFilter, error) {
	level, err := zerolog.ParseLevel(cfg.Level)
	if err != nil {
		return zerolog.Logger{}, nil, fmt.Errorf("log level %q: %w", cfg.Level, err)
	}
	if cfg.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	f := &LevelFilter{w: w}
	f.Set(level)
	return zerolog.New(f).Level(zerolog.TraceLevel).With().Timestamp().Logger().Hook(clockHook{clk}), f, nil
}

// LevelFilter passes on the log lines at or above its level, which may be
// changed at any time. zerolog hands it each line with its level
// (zerolog.LevelWriter); a line without a level always passes.
type LevelFilter struct {
	w     io.Writer
	level atomic.Int32
}

var _ LevelSetter = (*LevelFilter)(nil)

// Set changes the level.
func (f *LevelFilter) Set(l zerolog.Level) { f.level.Store(int32(l)) }

// Level returns the level.
func (f *LevelFilter) Level() zerolog.Level { return zerolog.Level(f.level.Load()) }

// Write passes on a line without a level.
func (f *LevelFilter) Write(p []byte) (int, error) { return f.w.Write(p) }

// WriteLevel passes on a line at or above the level.
func (f *LevelFilter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l != zerolog.NoLevel && l < f.Level() {
		return len(p), nil
	}
	return f.w.Write(p)
}

// clockHook stamps each line with deskd's clock, which --clock-start may
// have moved, beside zerolog's wall-clock "time".
type clockHook struct{ clk clock.Clock }

// Run adds the clock field.
func (h clockHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Time("clock", h.clk.Now())
}
