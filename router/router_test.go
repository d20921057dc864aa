package router_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	_ "time/tzdata" // the tests need Asia/Kolkata even on a host without zoneinfo

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// errDown is what a failing fake model answers.
var errDown = errors.New("service unavailable (injected)")

// fake is a router.Provider for tests: it records its requests and answers
// like the scripted model, or with a fixed text, or fails while told to.
type fake struct {
	mu     sync.Mutex
	reqs   []router.Request
	fail   bool
	answer string // if set, the text of every answer
}

func (f *fake) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	fail, answer := f.fail, f.answer
	f.mu.Unlock()
	if fail {
		return router.Response{}, &router.APIError{Model: "fake", Status: 503, Retryable: true, Err: errDown}
	}
	if answer != "" {
		return router.Response{Text: answer, Usage: memory.Usage{InputTokens: 10, OutputTokens: 3}}, nil
	}
	return router.Scripted{}.Complete(ctx, req)
}

func (f *fake) setFail(fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

func (f *fake) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// last returns the last request's messages as "role: text" lines.
func (f *fake) last(t *testing.T) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range lastOf(t, f.reqs).Messages {
		out = append(out, m.Role+": "+m.Text)
	}
	return out
}

// lastOf returns the last of kept, what a test model kept of each request
// it got, and fails t when it got none. The caller holds the model's lock.
func lastOf[T any](t *testing.T, kept []T) T {
	t.Helper()
	if len(kept) == 0 {
		t.Fatal("the model got no request")
	}
	return kept[len(kept)-1]
}

var offline = router.Model{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}}

// rig is a desk folder with a fake clock and a bus; routers come and go
// over it as processes would.
type rig struct {
	t     *testing.T
	dir   string
	clock *clock.Fake
	bus   *event.Bus
}

func newRig(t *testing.T, start string) *rig {
	t.Helper()
	bus := event.New()
	t.Cleanup(bus.Close)
	return &rig{t: t, dir: filepath.Join(t.TempDir(), "desks", "main"), clock: clock.NewFake(desktest.At(start)), bus: bus}
}

// open builds a folder and a router over the rig's directory, and restores
// the router's session; it reports whether the session was resumed.
func (g *rig) open(route ...router.Model) (*router.Router, *memory.Folder, bool) {
	g.t.Helper()
	folder, err := memory.OpenFolder(g.dir, "main", g.clock.Now)
	if err != nil {
		g.t.Fatal(err)
	}
	r, err := router.New(router.Options{
		Desk: "main", Folder: folder, Clock: g.clock, Day: desktest.Day(), Bus: g.bus,
		Settings: router.Settings{Route: route, Instructions: "You are a test desk."},
	})
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { _ = r.Close() })
	resumed, err := r.RestoreSession(g.t.Context())
	if err != nil {
		g.t.Fatalf("RestoreSession: %v", err)
	}
	return r, folder, resumed
}

func trigger(id, text string) triggers.Trigger {
	return triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: text, Source: "test"}
}

func send(t *testing.T, r *router.Router, id, text string) router.Reply {
	t.Helper()
	reply, err := r.Send(t.Context(), trigger(id, text))
	if err != nil {
		t.Fatalf("Send(%s): %v", id, err)
	}
	return reply
}

func records(t *testing.T, f *memory.Folder, id string) []memory.Record {
	t.Helper()
	recs, err := f.ReadSession(id)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSendRecordsTheExchange(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z") // 10:00 IST, 1 March
	r, folder, resumed := g.open(offline)
	if resumed {
		t.Fatal("RestoreSession on a fresh folder reported a resumed session")
	}
	id := r.SessionID()

	reply := send(t, r, "t1", "NIFTY gap up\nLTP 22000")
	if want := `[scripted] Received: "NIFTY gap up"`; reply.Text != want {
		t.Errorf("reply = %q, want %q", reply.Text, want)
	}
	if reply.Session != id || reply.Turn != 1 || reply.Model != "offline" || reply.Provider != "scripted" || !reply.Scripted {
		t.Errorf("reply = %+v, want session %s, turn 1, model offline, provider scripted, scripted", reply, id)
	}
	if reply.Usage.InputTokens <= 0 || reply.Usage.OutputTokens <= 0 {
		t.Errorf("reply usage = %+v, want tokens in and out", reply.Usage)
	}

	recs := records(t, folder, id)
	if len(recs) != 4 {
		t.Fatalf("session file has %d records, want header, user, request.sent, assistant: %+v", len(recs), recs)
	}
	if h := recs[0]; h.Type != memory.RecordHeader || h.Session != id || h.Desk != "main" || h.Date != "2026-03-01" || h.Parent != "" {
		t.Errorf("header = %+v, want session %s of desk main, 2026-03-01, no parent", h, id)
	}
	if u := recs[1]; u.Type != memory.RecordMessage || u.Role != "user" || u.Text != "NIFTY gap up\nLTP 22000" || u.Trigger != "t1" || u.Kind != "market" {
		t.Errorf("user record = %+v", u)
	}
	if q := recs[2]; q.Type != memory.RecordEvent || q.Kind != memory.RequestSentKind || q.Trigger != "t1" {
		t.Errorf("record before the answer = %+v, want t1's request.sent", q)
	}
	a := recs[3]
	if a.Type != memory.RecordMessage || a.Role != "assistant" || a.Text != reply.Text || a.Trigger != "t1" ||
		a.Model != "offline" || a.Provider != "scripted" || !a.Scripted || a.Usage == nil || *a.Usage != reply.Usage {
		t.Errorf("assistant record = %+v (usage %v), want the reply by offline/scripted, scripted, with usage %+v", a, a.Usage, reply.Usage)
	}
	// The file itself says scripted: true, so that no reader can take the
	// scripted model for a real one.
	lines := strings.Split(strings.TrimSpace(readFile(t, folder.SessionPath(id))), "\n")
	for _, want := range []string{`"scripted":true`, `"model":"offline"`, `"provider":"scripted"`, `"usage":{"input_tokens":`} {
		if !strings.Contains(lines[len(lines)-1], want) {
			t.Errorf("assistant line %s lacks %s", lines[len(lines)-1], want)
		}
	}
}

func TestResetStartsAChildSession(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z") // 10:00 IST, 1 March
	r, folder, _ := g.open(offline)
	send(t, r, "t1", "hello")
	old := r.SessionID()
	oldFile := readFile(t, folder.SessionPath(old))

	g.clock.Set(desktest.At("2026-03-01T18:30:00Z")) // 00:00 IST, 2 March
	if err := r.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	id := r.SessionID()
	if id == old {
		t.Fatal("Reset kept the session id")
	}
	if h := records(t, folder, id)[0]; h.Type != memory.RecordHeader || h.Session != id || h.Parent != old || h.Date != "2026-03-02" {
		t.Errorf("new session's header = %+v, want parent %s, date 2026-03-02", h, old)
	}
	if d, ok := r.TradingDate(); !ok || d.String() != "2026-03-02" {
		t.Errorf("TradingDate() = %v, %v; want 2026-03-02", d, ok)
	}
	if n := r.Exchanges(); n != 0 {
		t.Errorf("Exchanges() = %d after Reset, want 0", n)
	}
	if got := r.Digest(); got != "No exchanges.\n" {
		t.Errorf("Digest() after Reset = %q, want the new session's (none)", got)
	}
	if got := readFile(t, folder.SessionPath(old)); got != oldFile {
		t.Errorf("Reset changed the old session's file:\n%q\nwas\n%q", got, oldFile)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, _, resumed := g.open(offline)
	if !resumed || r2.SessionID() != id {
		t.Errorf("after a restart: session %s (resumed %v), want %s resumed", r2.SessionID(), resumed, id)
	}
}

func TestExchangesSurviveARestart(t *testing.T) {
	for _, turns := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("%d turns", turns), func(t *testing.T) {
			g := newRig(t, "2026-03-01T04:30:00Z")
			model := &fake{}
			route := router.Model{Name: "offline", Provider: router.ScriptedProvider, Client: model}
			r, _, _ := g.open(route)
			var want []string
			for i := range turns {
				text := "message " + string(rune('a'+i))
				reply := send(t, r, text, text)
				if reply.Turn != i+1 {
					t.Errorf("turn %d reported as %d", i+1, reply.Turn)
				}
				want = append(want, "user: "+text, "assistant: "+reply.Text)
			}
			if n := r.Exchanges(); n != turns {
				t.Errorf("Exchanges() = %d, want %d", n, turns)
			}
			id := r.SessionID()
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}

			// A session never used was never written: the restart starts
			// it again, as the first, under the same id.
			r2, _, resumed := g.open(route)
			if resumed != (turns > 0) || r2.SessionID() != id {
				t.Fatalf("after a restart: session %s (resumed %v), want %s (resumed %v)", r2.SessionID(), resumed, id, turns > 0)
			}
			if n := r2.Exchanges(); n != turns {
				t.Errorf("after a restart: Exchanges() = %d, want %d", n, turns)
			}
			if reply := send(t, r2, "after", "after"); reply.Turn != turns+1 {
				t.Errorf("first turn after a restart reported as %d, want %d", reply.Turn, turns+1)
			}
			if got := model.last(t); !slices.Equal(got, append(want, "user: after")) {
				t.Errorf("first request after a restart carried\n%q\nwant\n%q", got, append(want, "user: after"))
			}
		})
	}
}

func TestFailedTurnLeavesExchangesUnchanged(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z")
	model := &fake{}
	route := router.Model{Name: "primary", Provider: "openai", Client: model}
	r, folder, _ := g.open(route)
	ok := send(t, r, "t1", "first")

	model.setFail(true)
	if _, err := r.Send(t.Context(), trigger("t2", "second")); !errors.Is(err, errDown) {
		t.Fatalf("Send to a failing model: err = %v, want the model's error", err)
	}
	if n := r.Exchanges(); n != 1 {
		t.Errorf("Exchanges() = %d after a failed turn, want 1", n)
	}
	recs := records(t, folder, r.SessionID())
	var t2 []string
	for _, rec := range recs {
		if rec.Trigger == "t2" {
			t2 = append(t2, rec.Type+"/"+rec.Role+rec.Kind)
			if rec.Type == memory.RecordEvent && rec.Kind == "turn.failed" && rec.Text == "" {
				t.Errorf("turn.failed record without the error: %+v", rec)
			}
		}
	}
	if want := []string{"message/usermarket", "event/" + memory.RequestSentKind, "event/turn.failed"}; !slices.Equal(t2, want) {
		t.Errorf("records of the failed turn = %q, want %q", t2, want)
	}

	// The failed message is not sent again, neither by this process nor
	// after a restart.
	model.setFail(false)
	third := send(t, r, "t3", "third")
	if third.Turn != 2 {
		t.Errorf("turn after the failed one reported as %d, want 2", third.Turn)
	}
	want := []string{"user: first", "assistant: " + ok.Text, "user: third"}
	if got := model.last(t); !slices.Equal(got, want) {
		t.Errorf("request after a failed turn carried\n%q\nwant\n%q", got, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, _, _ := g.open(route)
	if n := r2.Exchanges(); n != 2 {
		t.Errorf("after a restart: Exchanges() = %d, want 2", n)
	}
	send(t, r2, "t4", "fourth")
	want = append(want, "assistant: "+third.Text, "user: fourth")
	if got := model.last(t); !slices.Equal(got, want) {
		t.Errorf("request after a restart carried\n%q\nwant\n%q", got, want)
	}
}

func TestSendFallsBackAlongTheRoute(t *testing.T) {
	tests := []struct {
		name          string
		first, second *fake
		wantModel     string // "" when every model fails
		wantProvider  router.ProviderName
		wantScripted  bool
		wantText      string
		wantCalls     [2]int
	}{
		{"the desk's model answers", &fake{answer: "Buy 10."}, &fake{}, "primary", "openai", false, "Buy 10.", [2]int{1, 0}},
		{"falls back to the next model", &fake{fail: true}, &fake{}, "offline", "scripted", true, `[scripted] Received: "hello"`, [2]int{1, 1}},
		{"every model fails", &fake{fail: true}, &fake{fail: true}, "", "", false, "", [2]int{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t, "2026-03-01T04:30:00Z")
			r, folder, _ := g.open(
				router.Model{Name: "primary", Provider: "openai", Client: tt.first},
				router.Model{Name: "offline", Provider: router.ScriptedProvider, Client: tt.second},
			)
			reply, err := r.Send(t.Context(), trigger("t1", "hello"))
			if got := [2]int{tt.first.calls(), tt.second.calls()}; got != tt.wantCalls {
				t.Errorf("calls to the route's models = %v, want %v", got, tt.wantCalls)
			}
			recs := records(t, folder, r.SessionID())
			last := recs[len(recs)-1]
			if tt.wantModel == "" {
				if !errors.Is(err, errDown) {
					t.Fatalf("Send with every model failing: err = %v, want the models' error", err)
				}
				if r.Exchanges() != 0 || last.Type != memory.RecordEvent || last.Kind != "turn.failed" {
					t.Errorf("after every model failed: Exchanges() = %d, last record %+v", r.Exchanges(), last)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if reply.Model != tt.wantModel || reply.Provider != tt.wantProvider || reply.Scripted != tt.wantScripted || reply.Text != tt.wantText {
				t.Errorf("reply = %+v, want %s/%s (scripted %v) saying %q", reply, tt.wantModel, tt.wantProvider, tt.wantScripted, tt.wantText)
			}
			if last.Role != "assistant" || last.Model != tt.wantModel || last.Provider != string(tt.wantProvider) || last.Scripted != tt.wantScripted || last.Text != tt.wantText {
				t.Errorf("assistant record = %+v, want it to name %s/%s (scripted %v)", last, tt.wantModel, tt.wantProvider, tt.wantScripted)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	first := triggers.WithSummary(trigger("t1", "Good morning.\nNIFTY flat."), "2026-03-01", "Bought 10.\nHedge open.").Text
	tests := []struct {
		name string
		msgs []router.Message
		want string
	}{
		{"no exchanges", nil, "No exchanges.\n"},
		{"first lines only", []router.Message{
			{Role: "user", Text: "Buy NIFTY?\nLTP 22000"}, {Role: "assistant", Text: "Yes.\nSize 10."},
		}, "1 exchange:\n- Buy NIFTY? -> Yes.\n"},
		{"unanswered message", []router.Message{
			{Role: "user", Text: "a"}, {Role: "assistant", Text: "b"}, {Role: "user", Text: "c"},
		}, "2 exchanges:\n- a -> b\n- c -> (no reply)\n"},
		{"first message of a session shows its own text", []router.Message{
			{Role: "user", Text: first}, {Role: "assistant", Text: "Morning."},
		}, "1 exchange:\n- Good morning. -> Morning.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := router.Digest(tt.msgs); got != tt.want {
				t.Errorf("Digest() = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("of a router's session", func(t *testing.T) {
		g := newRig(t, "2026-03-01T04:30:00Z")
		r, _, _ := g.open(offline)
		send(t, r, "t1", "Buy NIFTY?\nLTP 22000")
		send(t, r, "t2", "Close half.")
		want := "2 exchanges:\n" +
			"- Buy NIFTY? -> [scripted] Received: \"Buy NIFTY?\"\n" +
			"- Close half. -> [scripted] Received: \"Close half.\"\n"
		if got := r.Digest(); got != want {
			t.Errorf("Digest() = %q, want %q", got, want)
		}
	})
}

// closeWithTail closes r and appends tail to its session file (a torn
// line, as a write cut short leaves it, or nothing); it returns the
// file's path and its good records, what it held before the tail.
func closeWithTail(t *testing.T, r *router.Router, folder *memory.Folder, tail string) (path, good string) {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	path = folder.SessionPath(r.SessionID())
	good = readFile(t, path)
	if err := os.WriteFile(path, []byte(good+tail), 0o640); err != nil {
		t.Fatal(err)
	}
	return path, good
}

func TestRestoreReportsATornSessionFileOnce(t *testing.T) {
	tests := []struct {
		name string
		tail string
	}{
		{"half a record", `{"type":"message","role":"assistant","te`},
		{"a damaged line", "\x00\x00 not json\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t, "2026-03-01T04:30:00Z")
			torn := eventtest.Watch[event.SessionTorn](t, g.bus)
			r, folder, _ := g.open(offline)
			send(t, r, "t1", "hello")
			id := r.SessionID()
			path, good := closeWithTail(t, r, folder, tt.tail)

			r2, _, resumed := g.open(offline)
			if !resumed || r2.SessionID() != id {
				t.Fatalf("restore of a torn session: %s (resumed %v), want %s resumed", r2.SessionID(), resumed, id)
			}
			ev := eventtest.Next[event.SessionTorn](torn)
			if ev.Desk != "main" || ev.Session != id || ev.Path != path || ev.Offset != int64(len(good)) || ev.Bytes != len(tt.tail) {
				t.Errorf("session.torn = %+v, want session %s, path %s, offset %d, %d bytes", ev, id, path, len(good), len(tt.tail))
			}
			if ev.SavedTo == "" || readFile(t, ev.SavedTo) != tt.tail {
				t.Errorf("the torn tail was not kept in %q", ev.SavedTo)
			}
			if got := readFile(t, path); got != good {
				t.Errorf("session file after restore = %q, want its good records %q", got, good)
			}
			if n := r2.Exchanges(); n != 1 {
				t.Errorf("Exchanges() = %d after restoring a torn file, want 1", n)
			}
			if err := r2.Close(); err != nil {
				t.Fatal(err)
			}

			r3, _, _ := g.open(offline)
			if reply := send(t, r3, "t2", "again"); reply.Turn != 2 {
				t.Errorf("turn after the torn restore reported as %d, want 2", reply.Turn)
			}
			// Closing the bus delivers every event published: a second restore publishes no session.torn.
			g.bus.Close()
			eventtest.ExpectNone[event.SessionTorn](torn)
		})
	}
}
