package desk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// LogEvents logs every event on b as one line whose field "event" is the
// topic, with the payload's fields beside it, and whose message is the
// event's sentence (Describe, instants in loc, the trading time zone).
// Failures, and a turn a fallback model answered, log at warn or error
// level, everything else at info (levelOf chooses, per topic). level, when
// not nil, is the filter of log's level (NewLogger's): an event is logged
// only if its level passed it when the event was published, and passes it
// still when the line is written, so that an event of a quiet spell is
// not logged because the level came down before the log's writes caught
// up. It returns the cancel of its subscription.
func LogEvents(b *event.Bus, log zerolog.Logger, loc *time.Location, level *LevelFilter) (cancel func()) {
	keep := func(e event.Event) bool { return level == nil || level.Sample(levelOf(e)) }
	// The handler runs on one goroutine, an event at a time (the bus's
	// subscriber), so one payloadCutter serves every line.
	cut := new(payloadCutter)
	return event.SubscribeAllIf(b, keep, func(e event.Event) {
		entry := log.WithLevel(levelOf(e)).Str("event", e.Topic())
		fields, err := cut.fields(e)
		if err != nil {
			entry = entry.AnErr("encode_error", err)
		}
		for _, f := range fields {
			entry = entry.RawJSON(f.key, f.value)
		}
		entry.Msg(Describe(e, loc))
	})
}

// rawField is one top-level field of an event's JSON, its value as encoded.
type rawField struct {
	key   string
	value []byte
}

// maxKeptPayload is the largest encoding buffer a payloadCutter keeps for
// the next event; maxPayloadKeys bounds the keys it remembers.
const (
	maxKeptPayload = 64 << 10
	maxPayloadKeys = 512
)

// payloadCutter cuts events' JSON into their top-level fields, reusing its
// buffers and the key strings it has seen (a payload's keys are its
// type's field names), so that a line costs no allocation of its own for
// them. It is for one goroutine at a time.
type payloadCutter struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	cut  []rawField
	keys map[string]string // unquoted keys by their JSON
}

// fields is e's JSON object cut into its top-level fields, in the order of
// their keys (as zerolog writes a map's Fields), each value as
// encoding/json wrote it (HTML characters unescaped, as zerolog writes a
// string): the fields of the line without decoding the JSON again. What it
// returns holds until its next call.
func (p *payloadCutter) fields(e event.Event) ([]rawField, error) {
	if p.enc == nil || p.buf.Cap() > maxKeptPayload {
		p.buf = bytes.Buffer{}
		p.enc = json.NewEncoder(&p.buf)
		p.enc.SetEscapeHTML(false)
	}
	p.buf.Reset()
	if err := p.enc.Encode(e); err != nil {
		return nil, err
	}
	data := bytes.TrimSpace(p.buf.Bytes())
	fields := p.cut[:0]
	for i := 1; i < len(data) && data[i] == '"'; {
		end := jsonValueEnd(data, i)
		key, err := p.key(data[i:end])
		if err != nil || end >= len(data) || data[end] != ':' {
			return nil, fmt.Errorf("event %s: its JSON is not an object of fields at byte %d", e.Topic(), i)
		}
		vend := jsonValueEnd(data, end+1)
		fields = append(fields, rawField{key: key, value: data[end+1 : vend]})
		i = vend + 1 // past the comma (or the closing brace)
	}
	slices.SortStableFunc(fields, func(a, b rawField) int { return strings.Compare(a.key, b.key) })
	p.cut = fields
	return fields, nil
}

// key returns the string a quoted JSON key stands for.
func (p *payloadCutter) key(quoted []byte) (string, error) {
	if k, ok := p.keys[string(quoted)]; ok {
		return k, nil
	}
	k, err := strconv.Unquote(string(quoted))
	if err != nil {
		return "", err
	}
	if p.keys == nil || len(p.keys) >= maxPayloadKeys {
		p.keys = make(map[string]string)
	}
	p.keys[string(quoted)] = k
	return k, nil
}

// jsonValueEnd returns the index just past the JSON value starting at
// data[i], of compact, valid JSON (as encoding/json writes it).
func jsonValueEnd(data []byte, i int) int {
	depth, inString := 0, false
	for j := i; j < len(data); j++ {
		c := data[j]
		switch {
		case inString:
			if c == '\\' {
				j++
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return j + 1
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case c == ',' && depth == 0:
			return j
		}
	}
	return len(data)
}

// describeProgress is the sentence of a rollover step's progress: what
// it does, or how long it has run.
func describeProgress(p event.RolloverProgress) string {
	elapsed := (time.Duration(p.ElapsedMS) * time.Millisecond).Round(100 * time.Millisecond)
	switch p.State {
	case event.ProgressStarted:
		return fmt.Sprintf("rollover of desk %s: %s session %s (%s)", p.Desk, p.Phase, p.Session, p.Date)
	case event.ProgressRunning:
		return fmt.Sprintf("rollover of desk %s: still %s after %s", p.Desk, p.Phase, elapsed.Round(time.Second))
	}
	return fmt.Sprintf("rollover of desk %s: %s in %s", p.Desk, pastTense(p.Phase), elapsed)
}

// pastTense turns a rollover phase (summarising) into its end (summarised).
func pastTense(phase string) string {
	if stem, ok := strings.CutSuffix(phase, "ing"); ok {
		return stem + "ed" // summaris+ed, fold+ed, curat+ed
	}
	return phase + " done"
}

func levelOf(e event.Event) zerolog.Level {
	switch e := e.(type) {
	case event.ConfigRejected, event.RolloverFailed, event.StorageFailed, event.MemoryUnreadable, event.DeskFailed:
		return zerolog.ErrorLevel
	case event.TurnFailed, event.TurnInterrupted, event.TriggerDropped, event.InboxRejected, event.CalendarEnding,
		event.BudgetExceeded, event.SessionTorn, event.FileTorn, event.StorageLow, event.FileRebuilt, event.ModelFailed, event.NATSOutboxFull, event.MCPServerDown, event.DeskLost:
		return zerolog.WarnLevel
	case event.ScheduleMissed:
		if e.Held {
			return zerolog.ErrorLevel // past its calendar's end: nothing fires until it is extended
		}
		return zerolog.WarnLevel
	case event.NATSDuplicate:
		return zerolog.ErrorLevel // an event is not on the stream
	case event.ApprovalDecided:
		if e.Outcome == "expired" {
			return zerolog.WarnLevel // nobody decided on a call that waited
		}
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

// NewLogger returns the daemon's logger, writing to w in the configured
// format, and the filter that holds its level: a reload changes the level
// through it (zerolog's own level is fixed per logger value, and its
// global level is a package global). Every line carries "time" (the wall
// clock, UTC, RFC3339 with milliseconds), "clock" (deskd's clock) and
// "trading_time" (deskd's clock in loc, the trading time zone). The
// console format is coloured only when w is a terminal.
func NewLogger(cfg config.Log, loc *time.Location, w io.Writer, clk clock.Clock) (zerolog.Logger, *LevelFilter, error) {
	level, err := zerolog.ParseLevel(cfg.Level)
	if err != nil {
		return zerolog.Logger{}, nil, fmt.Errorf("log level %q: %w", cfg.Level, err)
	}
	if loc == nil {
		loc = time.UTC
	}
	if cfg.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: logTime, TimeLocation: time.UTC, NoColor: !isTerminal(w)}
	}
	f := &LevelFilter{w: w}
	f.Set(level)
	return zerolog.New(f).Level(zerolog.TraceLevel).Sample(f).Hook(clockHook{clk: clk, loc: loc, wall: time.Now}), f, nil
}

// isTerminal reports whether w is a character device (a terminal), where
// colour codes are read as colours, not written into a file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// logTime is the layout of a log line's instants: RFC3339 with milliseconds.
const logTime = "2006-01-02T15:04:05.000Z07:00"

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

// Sample reports whether a line at level l passes (zerolog.Sampler): a
// line below the level is not even built, so a debug line costs nothing
// at info, and `if e := log.Debug(); e.Enabled()` guards the work of
// computing its fields.
func (f *LevelFilter) Sample(l zerolog.Level) bool { return l == zerolog.NoLevel || l >= f.Level() }

// Write passes on a line without a level.
func (f *LevelFilter) Write(p []byte) (int, error) { return f.w.Write(p) }

// WriteLevel passes on a line at or above the level.
func (f *LevelFilter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l != zerolog.NoLevel && l < f.Level() {
		return len(p), nil
	}
	return f.w.Write(p)
}

// clockHook stamps each line with the wall clock's "time", deskd's
// clock, which --clock-start may have moved, and deskd's clock in the
// trading time zone.
type clockHook struct {
	clk  clock.Clock
	loc  *time.Location
	wall func() time.Time
}

// Run adds the time fields.
func (h clockHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	now := h.clk.Now()
	e.Str(zerolog.TimestampFieldName, h.wall().UTC().Format(logTime)).
		Time("clock", now).
		Str("trading_time", now.In(h.loc).Format(logTime))
}

// logConfigRead says, at debug level, which config files cfg was read
// from: the main file and each desk file, in name order.
func logConfigRead(log zerolog.Logger, cfg *config.Config) {
	files := []string{cfg.Path}
	for _, name := range slices.Sorted(maps.Keys(cfg.Desks)) {
		files = append(files, cfg.Desks[name].Path)
	}
	log.Debug().Str("config", cfg.Path).Strs("files", files).Int("desks", len(cfg.Desks)).Msg("config files read")
}
