package desk_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// lines is an io.Writer that hands each line written to it to a channel.
type lines chan map[string]any

func (l lines) Write(p []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		m = map[string]any{"unparsed": string(p)}
	}
	l <- m
	return len(p), nil
}

func (l lines) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-l:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no log line within 10s")
		return nil
	}
}

// logLine is the log line, as JSON, of the one event pub publishes on
// the bus of a daemon's logger at info in loc, its clock at at.
func logLine(t *testing.T, loc *time.Location, at time.Time, pub func(*event.Bus)) map[string]any {
	t.Helper()
	out := make(lines, 4)
	log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, loc, out, clock.NewFake(at))
	if err != nil {
		t.Fatal(err)
	}
	b := event.New()
	defer b.Close()
	stop := desk.LogEvents(b, log, loc, nil)
	defer stop()
	pub(b)
	return out.next(t)
}

func kolkata(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestLogEventsSentences: an event's log line says what happened in a
// sentence from its payload, its topic in "event"; a summed-up
// schedule.missed gives its count and its first and last slot in the
// trading time zone.
func TestLogEventsSentences(t *testing.T) {
	ist := kolkata(t)
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	tests := []struct {
		name  string
		pub   func(b *event.Bus)
		topic string
		want  string
		field string
	}{
		{"turn completed", func(b *event.Bus) {
			event.Publish(b, event.TurnCompleted{Header: event.Header{At: at, Desk: "main"}, Session: "s-1", Turn: 3, Model: "gpt-4o",
				DurationMS: 1234, InputTokens: 1, OutputTokens: 20})
		}, "turn.completed", "turn 3 of session s-1 answered by gpt-4o in 1.2s (1 token in, 20 tokens out)", "model"},
		{"missed summary", func(b *event.Bus) {
			first := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
			last := first.Add(99 * time.Minute)
			event.Publish(b, event.ScheduleMissed{Header: event.Header{At: at, Desk: "main"}, Schedule: "every-minute",
				Slot: first, First: first, Last: last, Count: 100, Reason: "deskd was not running at the slot"})
		}, "schedule.missed", "schedule every-minute missed 100 slots from 2026-03-02 10:00 IST to 2026-03-02 11:39 IST: deskd was not running at the slot", "count"},
		{"one missed slot", func(b *event.Bus) {
			slot := time.Date(2026, 3, 2, 3, 45, 0, 0, time.UTC)
			event.Publish(b, event.ScheduleMissed{Header: event.Header{At: at, Desk: "main"}, Schedule: "open", Slot: slot, Count: 1,
				First: slot, Last: slot, Reason: "desk paused"})
		}, "schedule.missed", "schedule open missed the slot of 2026-03-02 09:15 IST: desk paused", "slot"},
		{"config reloaded", func(b *event.Bus) {
			event.Publish(b, event.ConfigReloaded{Header: event.Header{At: at}, Changes: []string{"desk fx: desk added"}})
		}, "config.reloaded", "config reloaded: 1 change: desk fx: desk added", "changes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := logLine(t, ist, at, tt.pub)
			if m["event"] != tt.topic || m["message"] != tt.want {
				t.Errorf("line event %q message %q, want %q %q", m["event"], m["message"], tt.topic, tt.want)
			}
			if _, ok := m[tt.field]; !ok {
				t.Errorf("line %v has no payload field %q", m, tt.field)
			}
		})
	}
}

// TestLoggerTimeFields: every line carries "time" (UTC, milliseconds),
// "clock" and "trading_time", deskd's clock in the configured trading time
// zone (not a hard-coded IST).
func TestLoggerTimeFields(t *testing.T) {
	at := time.Date(2026, 3, 2, 3, 45, 0, 0, time.UTC)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		loc  *time.Location
		want string
	}{
		{kolkata(t), "2026-03-02T09:15:00.000+05:30"},
		{ny, "2026-03-01T22:45:00.000-05:00"},
	} {
		out := make(lines, 1)
		log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, tt.loc, out, clock.NewFake(at))
		if err != nil {
			t.Fatal(err)
		}
		log.Info().Msg("hello")
		m := out.next(t)
		if m["trading_time"] != tt.want {
			t.Errorf("trading_time in %s = %v, want %s", tt.loc, m["trading_time"], tt.want)
		}
		wall, _ := m["time"].(string)
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", wall); err != nil {
			t.Errorf("time = %q, want UTC RFC3339 with milliseconds: %v", wall, err)
		}
		if m["clock"] != "2026-03-02T03:45:00Z" {
			t.Errorf("clock = %v", m["clock"])
		}
	}
}

// TestConsoleLogNoColourOffTerminal: the console format writes no colour
// codes into a file or a pipe.
func TestConsoleLogNoColourOffTerminal(t *testing.T) {
	file, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var fromPipe bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = fromPipe.ReadFrom(r) }()
	for _, out := range []*os.File{file, w} {
		log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "console"}, kolkata(t), out, clock.NewFake(time.Unix(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		log.Warn().Str("desk", "main").Msg("storage failed")
	}
	w.Close()
	wg.Wait()
	inFile, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"file": string(inFile), "pipe": fromPipe.String()} {
		if !strings.Contains(got, "storage failed") {
			t.Errorf("%s: %q lacks the message", name, got)
		}
		if strings.Contains(got, "\x1b[") {
			t.Errorf("%s: colour codes in %q", name, got)
		}
	}
}

// TestLoggerBuildsNoLineBelowItsLevel: below the level a line is not even
// built (Enabled is false, so a caller skips computing its fields), and a
// level changed at run time (a reload) takes effect at the next line.
func TestLoggerBuildsNoLineBelowItsLevel(t *testing.T) {
	var out bytes.Buffer
	log, level, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, time.UTC, &out, clock.NewFake(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if log.Debug().Enabled() || log.Trace().Enabled() {
		t.Error("at info, debug and trace lines are built")
	}
	if !log.Info().Enabled() || !log.Error().Enabled() {
		t.Error("at info, info and error lines are not built")
	}
	log.Debug().Msg("hidden")
	level.Set(zerolog.DebugLevel)
	if !log.Debug().Enabled() || log.Trace().Enabled() {
		t.Error("after the level changed to debug, debug lines are not built, or trace lines are")
	}
	log.Debug().Msg("shown")
	if got := out.String(); strings.Contains(got, "hidden") || !strings.Contains(got, "shown") {
		t.Errorf("log output = %q, want the debug line after the change only", got)
	}
}

// TestLogEventsCarryThePayloadsFields: an event's line carries each of its
// payload's fields beside "event", with the values its JSON has (nested
// objects, arrays, escapes and HTML characters included), HTML characters
// written as themselves.
func TestLogEventsCarryThePayloadsFields(t *testing.T) {
	ist := kolkata(t)
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	e := event.ApprovalRequested{Header: event.Header{At: at, Desk: "main", ID: `a"1`}, ID: "ap-1", Call: "c-1", Tool: "place_order",
		Arguments: json.RawMessage(`{"symbol":"NIFTY <fut> & co","legs":[{"qty":50,"px":24310.5},{"qty":-50,"note":"a\"b, }]"}],"ok":true,"none":null}`),
		ExpiresAt: at.Add(5 * time.Minute)}
	var out syncBuffer
	log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, ist, &out, clock.NewFake(at))
	if err != nil {
		t.Fatal(err)
	}
	b := event.New()
	stop := desk.LogEvents(b, log, ist, nil)
	event.Publish(b, e)
	stop()
	b.Close() // waits for the line
	line := []byte(out.String())
	var got, want map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("line %s: %v", line, err)
	}
	raw, _ := json.Marshal(e)
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if got["event"] != "approval.requested" {
		t.Errorf("line %s: event %v", line, got["event"])
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, v) {
			t.Errorf("field %q = %#v, want %#v (line %s)", k, g, v, line)
		}
	}
	if !bytes.Contains(line, []byte(`NIFTY <fut> & co`)) {
		t.Errorf("line %s: the HTML characters are escaped", line)
	}
}

// TestLogEventsLinesOfSuccessiveEventsAreTheirOwn: events of different
// shapes and sizes logged one after another (the subscriber reuses its
// buffers between lines) each get a line of exactly their own fields,
// values and count, none left over from the event before.
func TestLogEventsLinesOfSuccessiveEventsAreTheirOwn(t *testing.T) {
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	big := json.RawMessage(`{"note":"` + strings.Repeat("long <argument> ", 8<<10) + `"}`)
	events := []event.Event{
		event.ApprovalRequested{Header: event.Header{At: at, Desk: "main"}, ID: "ap-1", Call: "c-1", Tool: "place_order", Arguments: json.RawMessage(`{"qty":50}`), ExpiresAt: at},
		event.TurnCompleted{Header: event.Header{At: at, Desk: "fx"}, Session: "s-2", Turn: 7, Model: "m"},
		event.ApprovalRequested{Header: event.Header{At: at, Desk: "main"}, ID: "ap-2", Call: "c-2", Tool: "note", Arguments: big, ExpiresAt: at},
		event.ConfigReloaded{Header: event.Header{At: at}, Changes: []string{"desk fx: desk added"}},
		event.TurnCompleted{Header: event.Header{At: at, Desk: "main"}, Session: "s-1", Turn: 3, Model: "gpt-4o", InputTokens: 5},
	}
	var out syncBuffer
	log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, time.UTC, &out, clock.NewFake(at))
	if err != nil {
		t.Fatal(err)
	}
	b := event.New()
	stop := desk.LogEvents(b, log, time.UTC, nil)
	for _, e := range events {
		event.Publish(b, e)
	}
	stop()
	b.Close() // waits for the lines
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(events) {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(events), out.String())
	}
	for i, e := range events {
		var got, want map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d %.200s: %v", i, lines[i], err)
		}
		raw, _ := json.Marshal(e)
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || !reflect.DeepEqual(g, v) {
				t.Errorf("line %d (%s): field %q = %.80v, want %.80v", i, e.Topic(), k, g, v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !slices.Contains([]string{"event", "level", "time", "message", "clock", "trading_time"}, k) {
				t.Errorf("line %d (%s): field %q is not the event's (%.80v)", i, e.Topic(), k, got[k])
			}
		}
	}
}

// TestLogEventsKeepTheLevelOfTheirPublication: an event published while
// the level is above its own is not logged, even when the log's writes
// are behind and the level has come down again by the time its turn
// comes (cmd/deskd TestE2EReloadSIGHUPAndLogLevel saw such a line under
// load). The test holds the log's first write until both level changes
// are made.
func TestLogEventsKeepTheLevelOfTheirPublication(t *testing.T) {
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	out := make(lines) // unbuffered: each write waits for the test to read it
	log, level, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, time.UTC, out, clock.NewFake(at))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	b := event.New()
	defer b.Close()
	stop := desk.LogEvents(b, log, time.UTC, level)
	defer stop()
	defer func() { // read what is left, so that Close does not wait on a held write
		go func() {
			for {
				select {
				case <-out:
				case <-done:
					return
				}
			}
		}()
	}()

	h := event.Header{At: at, Desk: "main"}
	event.Publish(b, event.TurnFailed{Header: h, Trigger: "held", Error: "boom"}) // warn: logged, its write held
	level.Set(zerolog.WarnLevel)
	event.Publish(b, event.TurnCompleted{Header: h, Trigger: "quiet"}) // info, published at warn
	level.Set(zerolog.InfoLevel)
	event.Publish(b, event.TurnCompleted{Header: h, Trigger: "loud"}) // info, published at info

	for _, want := range []string{"held", "loud"} {
		if line := out.next(t); line["trigger"] != want {
			t.Fatalf("log line %v, want the one of trigger %s (quiet's turn came at level warn)", line, want)
		}
	}
}
