package notify_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/desk/logtest"
	"github.com/deskd/deskd/desk/notify"
	"github.com/deskd/deskd/memory/durable"
)

// delivery is one request the receiver took.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a webhook receiver: it records every request and answers
// with status(n), n counting the requests from 1.
type receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []delivery
	status  func(n int) int
	changed chan struct{}
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	r := &receiver{status: status, changed: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, delivery{header: req.Header.Clone(), body: body})
	code := http.StatusNoContent
	if r.status != nil {
		code = r.status(len(r.got))
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	w.WriteHeader(code)
}

// wait returns the requests once there are at least n.
func (r *receiver) wait(t *testing.T, n int) []delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		r.mu.Lock()
		got, changed := slices.Clone(r.got), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
	}
}

// rig is a notifier on a fake clock and a bus of its own.
type rig struct {
	t   *testing.T
	clk *clock.Fake
	bus *event.Bus
	dir string
	n   *notify.Notifier
	log *logtest.Buffer // what the notifier logged; its goroutines write at once
}

// start is a clock at real time (the reference library checks the
// webhook-timestamp against it), to the second.
func start() time.Time { return time.Now().UTC().Truncate(time.Second) }

func newRig(t *testing.T, o notify.Options) *rig {
	t.Helper()
	r := &rig{t: t, clk: clock.NewFake(start()), bus: event.New(), dir: t.TempDir(), log: &logtest.Buffer{}}
	t.Cleanup(func() { r.bus.Close() })
	r.open(o)
	return r
}

// open makes and starts a notifier on r's folder.
func (r *rig) open(o notify.Options) {
	r.t.Helper()
	o.Bus, o.Clock, o.Dir = r.bus, r.clk, r.dir
	o.Log = zerolog.New(r.log)
	n, err := notify.New(o)
	if err != nil {
		r.t.Fatal(err)
	}
	n.Start()
	r.n = n
	r.t.Cleanup(func() { _ = n.Close() })
}

// waitStats waits for cond on the stats of the one target.
func (r *rig) waitStats(cond func(notify.TargetStats) bool) notify.TargetStats {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.n.WaitStats(ctx, func(s []notify.TargetStats) bool { return cond(s[0]) }); err != nil {
		r.t.Fatal(err)
	}
	return r.n.Stats()[0]
}

// waitTimer waits for the sender's backoff timer d after now.
func (r *rig) waitTimer(d time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.clk.WaitTimerAt(ctx, r.clk.Now().Add(d)); err != nil {
		r.t.Fatal(err)
	}
}

func newKey(t *testing.T) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// standard is a standard target of key at url.
func standard(url string, key []byte, events ...string) notify.Target {
	if len(events) == 0 {
		events = defaultEvents
	}
	return notify.Target{Name: "ops", URL: url, Format: notify.Standard, Key: key, Events: events}
}

var defaultEvents = []string{"approval.requested", "turn.interrupted", "turn.failed", "turn.fallback", "storage.failed",
	"rollover.failed", "memory.unreadable", "config.rejected", "calendar.ending", "schedule.missed",
	"budget.exceeded", "mcp.server.down"}

// body is a standard notification's body.
type body struct {
	Type      string         `json:"type"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// verify checks d's signature with the reference library (and its
// webhook-timestamp against the clock when clk is not nil) and returns
// its body.
func verify(t *testing.T, key []byte, d delivery, clk clock.Clock) body {
	t.Helper()
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.VerifyIgnoringTimestamp(d.body, d.header); err != nil {
		t.Fatalf("signature of %s: %v", d.body, err)
	}
	if clk != nil {
		if ts, want := d.header.Get("webhook-timestamp"), strconv.FormatInt(clk.Now().Unix(), 10); ts != want {
			t.Errorf("webhook-timestamp %s, want the clock's %s", ts, want)
		}
	}
	var b body
	if err := json.Unmarshal(d.body, &b); err != nil {
		t.Fatalf("body %s: %v", d.body, err)
	}
	return b
}

// everyDefault is one event of each default topic, a turn a fallback
// answered, and events no default names.
func everyDefault(at time.Time) (wanted, others []event.Event) {
	h := event.Header{At: at, Desk: "alpha"}
	wanted = []event.Event{
		event.ApprovalRequested{Header: h, ID: "ap1", Call: "c1", Tool: "place_order", Arguments: json.RawMessage(`{"qty":1}`), ExpiresAt: at.Add(time.Hour)},
		event.TurnInterrupted{Header: h, Trigger: "t1", Reason: "shutdown"},
		event.TurnFailed{Header: h, Trigger: "t2", Error: "model down"},
		event.TurnCompleted{Header: h, Trigger: "t3", Model: "small", Fallback: true, Primary: "big", PrimaryError: "503"},
		event.StorageFailed{Header: h, Error: "disk full", DiskFull: true},
		event.RolloverFailed{Header: h, Session: "s1", Step: "summary", Error: "x"},
		event.MemoryUnreadable{Header: h, Path: "/x/Memory.md", Error: "permission denied"},
		event.ConfigRejected{Header: event.Header{At: at}, Path: "/etc/deskd/deskd.yaml", Field: "listen", Reason: "bad"},
		event.CalendarEnding{Header: h, Calendar: "NSE", Through: "2026-12-31", DaysLeft: 10},
		event.ScheduleMissed{Header: h, Schedule: "open", Reason: "down", Count: 1},
		event.BudgetExceeded{Header: h, Budget: "day_tokens", Limit: 10, Used: 11},
		event.MCPServerDown{Header: event.Header{At: at}, Server: "broker", Error: "exit 1"},
	}
	others = []event.Event{
		event.TurnCompleted{Header: h, Trigger: "t4", Model: "big"},
		event.DeskStarted{Header: h, Model: "big"},
		event.TurnStarted{Header: h, Trigger: "t4"},
	}
	return wanted, others
}

func TestEveryDefaultEventDeliveredOncePerID(t *testing.T) {
	rc := newReceiver(t, nil)
	key := newKey(t)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key)}, ConsoleURL: "https://deskd.example"})
	wanted, others := everyDefault(r.clk.Now())
	for i, e := range wanted {
		event.Publish(r.bus, e)
		event.Publish(r.bus, others[i%len(others)])
	}
	s := r.waitStats(func(s notify.TargetStats) bool { return s.Delivered == int64(len(wanted)) && s.Pending == 0 })
	if s.Failed != 0 || s.Attempts != 0 || s.Failing {
		t.Errorf("stats %+v: want no failure", s)
	}
	got := rc.wait(t, len(wanted))
	if len(got) != len(wanted) {
		t.Fatalf("the receiver got %d requests, want %d", len(got), len(wanted))
	}
	ids := map[string]bool{}
	for i, d := range got {
		b := verify(t, key, d, r.clk)
		want := wanted[i].Topic()
		if tc, ok := wanted[i].(event.TurnCompleted); ok && tc.Fallback {
			want = notify.TypeFallback
		}
		if b.Type != want {
			t.Errorf("notification %d: type %q, want %q", i, b.Type, want)
		}
		if b.Timestamp != wanted[i].Head().At.Format(time.RFC3339Nano) {
			t.Errorf("notification %d: timestamp %q, want the event's time", i, b.Timestamp)
		}
		if b.Data["topic"] != wanted[i].Topic() {
			t.Errorf("notification %d: data %v, want the event's JSON", i, b.Data)
		}
		link, _ := b.Data["console_url"].(string)
		if h := wanted[i].Head(); h.Desk != "" && link != "https://deskd.example/#/desk/"+h.Desk {
			t.Errorf("notification %d: console_url %q, want the desk's page", i, link)
		}
		id := d.header.Get("webhook-id")
		if ids[id] {
			t.Errorf("webhook-id %s twice", id)
		}
		ids[id] = true
	}
}

// TestReceiverDownThenUp: a refused connection is retried with backoff on
// the clock, 1s then 2s, with the same webhook-id and body, until the
// receiver is up; the failure shows in Stats and as notify.failed.
func TestReceiverDownThenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // down: connections are refused
	key := newKey(t)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard("http://"+addr+"/hook", key)}})
	failed := eventtest.Watch[event.NotifyFailed](t, r.bus)
	event.Publish(r.bus, event.TurnFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t1", Error: "x"})

	s := r.waitStats(func(s notify.TargetStats) bool { return s.Attempts == 1 })
	if !s.Failing || s.Pending != 1 || !strings.Contains(s.LastError, "refused") {
		t.Errorf("stats %+v: want failing, 1 pending, the refusal", s)
	}
	f := eventtest.Next[event.NotifyFailed](failed)
	if f.Target != "ops" || f.Reason != "failing" || f.Type != "turn.failed" {
		t.Errorf("notify.failed %+v", f)
	}
	r.waitTimer(time.Second)
	r.clk.Advance(time.Second)
	r.waitStats(func(s notify.TargetStats) bool { return s.Attempts == 2 })

	rc := &receiver{changed: make(chan struct{})}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	rc.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(rc.serve)}}
	rc.srv.Start()
	t.Cleanup(rc.srv.Close)

	r.waitTimer(2 * time.Second)
	r.clk.Advance(2 * time.Second)
	got := rc.wait(t, 1)
	b := verify(t, key, got[0], r.clk)
	if b.Type != "turn.failed" || got[0].header.Get("webhook-id") != f.WebhookID {
		t.Errorf("got %s (id %s), want turn.failed with id %s", got[0].body, got[0].header.Get("webhook-id"), f.WebhookID)
	}
	s = r.waitStats(func(s notify.TargetStats) bool { return s.Delivered == 1 })
	if s.Failing || s.Pending != 0 {
		t.Errorf("stats %+v after the delivery: want nothing failing or pending", s)
	}
}

// TestReceiver500Then200: a 500 is retried (1s, then 2s), every copy the
// same id and bytes, each signed at its own attempt.
func TestReceiver500Then200(t *testing.T) {
	rc := newReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	key := newKey(t)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key)}})
	event.Publish(r.bus, event.StorageFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Error: "disk full"})
	rc.wait(t, 1)
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		r.waitTimer(d)
		r.clk.Advance(d)
	}
	got := rc.wait(t, 3)
	s := r.waitStats(func(s notify.TargetStats) bool { return s.Delivered == 1 })
	if s.Attempts != 2 || len(got) != 3 {
		t.Errorf("stats %+v, %d requests: want 2 failed attempts, 3 requests", s, len(got))
	}
	t0 := r.clk.Now().Add(-3 * time.Second)
	for i, d := range got {
		verify(t, key, d, nil)
		at := t0.Add([]time.Duration{0, time.Second, 3 * time.Second}[i])
		if ts := d.header.Get("webhook-timestamp"); ts != strconv.FormatInt(at.Unix(), 10) {
			t.Errorf("copy %d: webhook-timestamp %s, want its attempt's time %d", i, ts, at.Unix())
		}
		if d.header.Get("webhook-id") != got[0].header.Get("webhook-id") || !bytes.Equal(d.body, got[0].body) {
			t.Errorf("copy %d differs: %s %s", i, d.header.Get("webhook-id"), d.body)
		}
	}
}

// TestPendingSurvivesARestart: what waits when the notifier closes is
// posted by the next one on the same folder, with the same id and bytes.
func TestPendingSurvivesARestart(t *testing.T) {
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	key := newKey(t)
	o := notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key)}}
	r := newRig(t, o)
	event.Publish(r.bus, event.TurnInterrupted{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t1", Reason: "crash"})
	first := rc.wait(t, 1)[0]
	r.waitStats(func(s notify.TargetStats) bool { return s.Attempts == 1 })
	if err := r.n.Close(); err != nil {
		t.Fatal(err)
	}
	r.open(o)
	again := rc.wait(t, 2)[1]
	if again.header.Get("webhook-id") != first.header.Get("webhook-id") || !bytes.Equal(again.body, first.body) {
		t.Errorf("after the restart: %s %s, want %s %s", again.header.Get("webhook-id"), again.body, first.header.Get("webhook-id"), first.body)
	}
	verify(t, key, again, r.clk)
	r.waitStats(func(s notify.TargetStats) bool { return s.Delivered == 1 && s.Pending == 0 })
}

// TestGiveUpAfter: a notification retried for give_up_after is dropped,
// counted and announced, to the other targets and never to its own.
func TestGiveUpAfter(t *testing.T) {
	down := newReceiver(t, func(int) int { return http.StatusBadGateway })
	other := newReceiver(t, nil)
	key := newKey(t)
	ops := standard(down.srv.URL, key, "turn.failed", "notify.failed")
	ops.GiveUpAfter = 3 * time.Second
	audit := notify.Target{Name: "audit", URL: other.srv.URL, Format: notify.Standard, Key: key, Events: []string{"notify.failed"}}
	r := newRig(t, notify.Options{Targets: []notify.Target{ops, audit}})
	failed := eventtest.Watch[event.NotifyFailed](t, r.bus)
	event.Publish(r.bus, event.TurnFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t1", Error: "x"})
	down.wait(t, 1)
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		r.waitTimer(d)
		r.clk.Advance(d)
	}
	g := eventtest.NextWhere(failed, func(e event.NotifyFailed) bool { return e.Reason == "gave_up" })
	if g.Target != "ops" || g.Type != "turn.failed" || !strings.Contains(g.Error, "502") {
		t.Errorf("notify.failed %+v", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.n.WaitStats(ctx, func(s []notify.TargetStats) bool {
		return s[1].Failed == 1 && s[1].Pending == 0 && s[0].Delivered == 2
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range down.wait(t, 2) {
		if b := verify(t, key, d, nil); b.Type != "turn.failed" {
			t.Errorf("the failing target got %s: a notify.failed about itself", d.body)
		}
	}
	reasons := []string{}
	for _, d := range other.wait(t, 2) {
		b := verify(t, key, d, nil)
		reasons = append(reasons, b.Data["reason"].(string))
	}
	if !slices.Equal(reasons, []string{"failing", "gave_up"}) {
		t.Errorf("the other target got notify.failed %v, want failing then gave_up", reasons)
	}
}

// TestFullOutboxCountedAndAnnounced: at MaxBytes an outbox keeps no new
// notification: each is counted, the first announced once.
func TestFullOutboxCountedAndAnnounced(t *testing.T) {
	rc := newReceiver(t, func(int) int { return http.StatusInternalServerError })
	key := newKey(t)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key)}, MaxBytes: 1200})
	failed := eventtest.Watch[event.NotifyFailed](t, r.bus)
	for i := range 10 {
		event.Publish(r.bus, event.TurnFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t" + strconv.Itoa(i), Error: strings.Repeat("x", 200)})
	}
	s := r.waitStats(func(s notify.TargetStats) bool { return s.Pending+int(s.Failed) == 10 })
	if s.Failed == 0 || s.Pending == 0 || s.Bytes > 1200 {
		t.Errorf("stats %+v: want some kept (within 1200 bytes), some counted as failed", s)
	}
	d := eventtest.NextWhere(failed, func(e event.NotifyFailed) bool { return e.Reason == "dropped" })
	if d.Target != "ops" || !strings.Contains(d.Error, "full") {
		t.Errorf("notify.failed %+v", d)
	}
	n := 0
	for _, e := range eventtest.Rest[event.NotifyFailed](failed) {
		if e.Reason == "dropped" {
			n++
		}
	}
	if n != 0 {
		t.Errorf("%d more notify.failed dropped: want one per outage", n)
	}
	if !strings.Contains(r.log.String(), "could not be kept") {
		t.Errorf("log %s: want the drop logged", r.log)
	}
}

// TestSlackBody: a slack target gets {"text": one sentence}, with the
// desk and the link, unsigned; its URL's secret path is nowhere: not in
// the outbox, the log, the stats or notify.failed.
func TestSlackBody(t *testing.T) {
	status := http.StatusOK
	var mu sync.Mutex
	rc := newReceiver(t, func(int) int { mu.Lock(); defer mu.Unlock(); return status })
	url := rc.srv.URL + "/services/T000/B000/SECRETPATHxyz"
	r := newRig(t, notify.Options{Targets: []notify.Target{{Name: "chat", URL: url, Format: notify.Slack, Events: []string{"turn.failed", "approval.requested"}}},
		ConsoleURL: "https://deskd.example"})
	event.Publish(r.bus, event.TurnFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t1", Error: "model <down> & out"})
	got := rc.wait(t, 1)
	var b map[string]string
	if err := json.Unmarshal(got[0].body, &b); err != nil || len(b) != 1 {
		t.Fatalf("body %s: want {\"text\": ...} (%v)", got[0].body, err)
	}
	want := "deskd desk alpha: failed turn t1: model &lt;down&gt; &amp; out. https://deskd.example/#/desk/alpha"
	if b["text"] != want {
		t.Errorf("text %q\nwant %q", b["text"], want)
	}
	if got[0].header.Get("webhook-signature") != "" {
		t.Errorf("a slack post is signed: %v", got[0].header)
	}

	mu.Lock()
	status = http.StatusForbidden
	mu.Unlock()
	failed := eventtest.Watch[event.NotifyFailed](t, r.bus)
	event.Publish(r.bus, event.TurnFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t2", Error: "x"})
	f := eventtest.Next[event.NotifyFailed](failed)
	s := r.waitStats(func(s notify.TargetStats) bool { return s.Attempts == 1 })
	out, err := os.ReadFile(filepath.Join(r.dir, "chat", notify.OutboxFile))
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"outbox": string(out), "log": r.log.String(), "last error": s.LastError, "notify.failed": f.Error} {
		if strings.Contains(text, "SECRETPATH") {
			t.Errorf("the %s holds the URL's secret path: %s", what, text)
		}
	}
	if !strings.Contains(s.LastError, "403") || s.Host != rc.srv.Listener.Addr().String() {
		t.Errorf("stats %+v: want the 403 and the host", s)
	}
}

// TestApprovalCarriesWhatAnOperatorNeeds: desk, tool, arguments (capped),
// the trigger's id and text (capped), expiry, the commands and links.
func TestApprovalCarriesWhatAnOperatorNeeds(t *testing.T) {
	rc := newReceiver(t, nil)
	key := newKey(t)
	long := strings.Repeat("y", 5000)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key)}, ConsoleURL: "https://deskd.example",
		Trigger: func(desk, id string) (notify.Trigger, bool) {
			if desk != "alpha" || id != "t9" {
				return notify.Trigger{}, false
			}
			return notify.Trigger{Kind: "market", Text: "buy the dip " + long}, true
		}})
	args := json.RawMessage(`{"symbol":"INFY","note":"` + long + `"}`)
	exp := r.clk.Now().Add(15 * time.Minute)
	event.Publish(r.bus, event.ApprovalRequested{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, ID: "ap7", Trigger: "t9",
		Call: "c1", Tool: "mcp__broker__place_order", Arguments: args, ExpiresAt: exp})
	b := verify(t, key, rc.wait(t, 1)[0], r.clk)
	d := b.Data
	checks := map[string]any{
		"desk": "alpha", "tool": "mcp__broker__place_order", "trigger": "t9", "id": "ap7", "trigger_kind": "market",
		"expires_at": exp.Format(time.RFC3339Nano), "arguments_truncated": true,
		"approve_command": "deskd approve alpha ap7", "deny_command": "deskd deny alpha ap7",
		"approve_url": "https://deskd.example/v1/desks/alpha/approvals/ap7/approve",
		"deny_url":    "https://deskd.example/v1/desks/alpha/approvals/ap7/deny",
		"console_url": "https://deskd.example/#/desk/alpha",
	}
	for k, want := range checks {
		if d[k] != want {
			t.Errorf("data.%s = %v, want %v", k, d[k], want)
		}
	}
	if a, _ := d["arguments"].(string); !strings.HasPrefix(a, `{"symbol":"INFY"`) || len([]rune(a)) > notify.MaxArguments+1 {
		t.Errorf("arguments %.80q… (%d runes): want the start, capped at %d", a, len([]rune(a)), notify.MaxArguments)
	}
	if tt, _ := d["trigger_text"].(string); !strings.HasPrefix(tt, "buy the dip") || len([]rune(tt)) > notify.MaxTriggerText+1 {
		t.Errorf("trigger_text %.40q… (%d runes): want the start, capped", tt, len([]rune(tt)))
	}
}

// TestAnswersGoToTheDesksTargets: a desk's answers (notify.answers) are
// posted with the reply, kind, model and scripted flag, once per trigger
// id (a reconciled copy after a restart has the same webhook-id).
func TestAnswersGoToTheDesksTargets(t *testing.T) {
	rc := newReceiver(t, nil)
	key := newKey(t)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key, "turn.failed")},
		Answers: func(desk string) []string {
			if desk == "alpha" {
				return []string{"ops"}
			}
			return nil
		},
		Trigger: func(desk, id string) (notify.Trigger, bool) {
			return notify.Trigger{Kind: "manual", Text: "how are we?", Reply: "flat, 2 open orders"}, true
		}})
	done := event.TurnCompleted{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Session: "s1", Turn: 3, Trigger: "t1", Model: "demo", Scripted: true}
	event.Publish(r.bus, done)
	event.Publish(r.bus, event.TurnCompleted{Header: event.Header{At: r.clk.Now(), Desk: "beta"}, Trigger: "t2", Model: "demo"})
	done.Reconciled = true
	event.Publish(r.bus, done)
	got := rc.wait(t, 2)
	r.waitStats(func(s notify.TargetStats) bool { return s.Delivered == 2 })
	b := verify(t, key, got[0], r.clk)
	want := map[string]any{"desk": "alpha", "trigger": "t1", "kind": "manual", "text": "flat, 2 open orders", "model": "demo", "scripted": true}
	for k, w := range want {
		if b.Data[k] != w {
			t.Errorf("data.%s = %v, want %v", k, b.Data[k], w)
		}
	}
	if b.Type != notify.TypeAnswered || got[1].header.Get("webhook-id") != got[0].header.Get("webhook-id") {
		t.Errorf("type %s, ids %s %s: want turn.answered, the same id for the same trigger", b.Type, got[0].header.Get("webhook-id"), got[1].header.Get("webhook-id"))
	}
}

// stallFS is the operating system's file system, whose files' Sync waits
// for gate once stalled is set (a stalled disk).
type stallFS struct {
	durable.OS
	stalled *atomic.Bool
	gate    chan struct{}
}

func (f stallFS) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	file, err := f.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return stallFile{file, f}, nil
}

type stallFile struct {
	durable.File
	fs stallFS
}

func (f stallFile) Sync() error {
	if f.fs.stalled.Load() {
		<-f.fs.gate
	}
	return f.File.Sync()
}

// TestAStalledDiskNeverBlocksTheBus: while the outbox's fsync hangs, the
// notifier still takes every event from the bus (its mailbox never backs
// up); past MaxQueued notifications not yet on disk are counted as failed
// and announced once; once the disk is back the rest are delivered.
func TestAStalledDiskNeverBlocksTheBus(t *testing.T) {
	rc := newReceiver(t, nil)
	key := newKey(t)
	gate := make(chan struct{})
	var stalled atomic.Bool
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	r := newRig(t, notify.Options{Targets: []notify.Target{standard(rc.srv.URL, key)}, MaxQueued: 3, FS: stallFS{stalled: &stalled, gate: gate}})
	stalled.Store(true)
	failed := eventtest.Watch[event.NotifyFailed](t, r.bus)
	for i := range 10 {
		event.Publish(r.bus, event.TurnFailed{Header: event.Header{At: r.clk.Now(), Desk: "alpha"}, Trigger: "t" + strconv.Itoa(i), Error: "x"})
	}
	// One waits on the disk, three in the queue: at least six dropped, with the disk still stalled.
	s := r.waitStats(func(s notify.TargetStats) bool { return s.Failed >= 6 })
	d := eventtest.Next[event.NotifyFailed](failed)
	if d.Reason != "dropped" || !strings.Contains(d.Error, "not yet on disk") {
		t.Errorf("notify.failed %+v: want dropped, the queue", d)
	}
	release()
	s = r.waitStats(func(s notify.TargetStats) bool { return s.Delivered+s.Failed == 10 && s.Pending == 0 })
	if got := rc.wait(t, int(s.Delivered)); len(got) != int(s.Delivered) || s.Delivered < 1 {
		t.Errorf("stats %+v, %d requests", s, len(got))
	}
}
