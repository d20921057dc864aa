// Package httpapitest runs the HTTP API of package httpapi for tests: one
// desk "main", wired whole (folder, ledger, router, keeper, loop) on a fake
// clock, behind the real httpapi.Server (and its GET /metrics) on an
// httptest server; and Gate, a model whose turns wait for the test.
package httpapitest

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/metrics"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// DeskName is the name of the harness's desk.
const DeskName = "main"

// Options configures a Harness. The zero value is a desk on the scripted
// model with an open API.
type Options struct {
	// Model is the desk's model; nil: router.Scripted.
	Model router.Provider
	// QueueLimit, Coalesce, RefusePaused and Schedules are the desk's
	// (desk.Options).
	QueueLimit   int
	Coalesce     bool
	RefusePaused bool
	Schedules    []triggers.Entry
	// PauseFile keeps the desk's pause in its folder, as deskd does.
	PauseFile bool
	// FS, if set, is the file layer of the desk's folder and ledger.
	FS durable.FS
	// Token, FeedToken and MetricsToken are the API's (httpapi.Options).
	Token, FeedToken, MetricsToken string
	// Dir and Clock are desktest's: the state folder (the desk's folder
	// is Dir/main; empty: a new one) and the clock (nil: a fake one at
	// desktest.Start).
	Dir   string
	Clock *clock.Fake
	// Files is the API's (httpapi.Options); its zero Day is desktest.Day
	// and its empty Version "test".
	Files httpapi.Files
	// NATS is the API's (httpapi.Options); nil: no NATS.
	NATS func() *httpapi.NATSStatus
	// Approvals is the API's (httpapi.Options); nil: not configured.
	Approvals httpapi.Approvals
	// Check is the API's (httpapi.Options): GET /v1/config/diff; nil: 501.
	Check func() desk.ConfigCheck
	// Console is the API's (httpapi.Options): the web console's handler.
	Console http.Handler
	// Listen and AllowedHosts are the API's (httpapi.Options): the names
	// its Host rule accepts beyond localhost and the IP addresses.
	Listen       []string
	AllowedHosts func() []string
	// Host is the API's (httpapi.Options): this host's cluster name, which
	// GET /v1/proof names.
	Host string
	// Space is the desk's free-space probe (desk.Options.Space); the test
	// sets its Clock and Bus (the Harness's) and makes it look.
	Space *desk.SpaceProbe
	// RingSize is how many events the API's event ring holds; 0:
	// httpapi.RingSize.
	RingSize int
}

// Harness is one running desk behind the API.
type Harness struct {
	t testing.TB
	// Clock is the desk's and the API's clock; it starts at 2026-03-02
	// 10:00 in Asia/Kolkata.
	Clock *clock.Fake
	// Bus is the desk's bus.
	Bus *event.Bus
	// Desk is the running desk; Set is the API's set of desks, which
	// holds it.
	Desk *desk.Desk
	Set  *desk.Set
	// Dir is the desk's folder.
	Dir string
	// Events receives every event of the bus (1000 are buffered).
	Events <-chan event.Event
	// API is the server; Server serves it.
	API    *httpapi.Server
	Server *httptest.Server

	rig *desktest.Desk
}

// StopDesk stops the desk's loop and waits until it has stopped: its
// Submit then answers desk.ErrStopped.
func (h *Harness) StopDesk() { h.rig.Stop() }

// Start runs the desk and serves the API until the test ends; the cleanup
// stops the server and the desk (moving the clock past the shutdown
// timeout of a turn that is still running) and closes what was opened.
func Start(tb testing.TB, o Options) *Harness {
	tb.Helper()
	d := desktest.New(tb, desktest.Options{Model: o.Model, FS: o.FS, QueueLimit: o.QueueLimit, Coalesce: o.Coalesce,
		RefusePaused: o.RefusePaused, Schedules: o.Schedules, PauseFile: o.PauseFile, Dir: o.Dir, Clock: o.Clock, Space: o.Space})
	events := make(chan event.Event, 1000)
	h := &Harness{t: tb, Clock: d.Clock, Bus: d.Bus, Desk: d.Desk, Dir: d.Folder.Dir(), Events: events, rig: d}
	unsub := event.SubscribeAll(h.Bus, func(e event.Event) {
		select {
		case events <- e:
		default: // a test that does not read them loses the newest
		}
	})
	ring := httpapi.NewEventRing(h.Bus, h.Clock.Now(), cmp.Or(o.RingSize, httpapi.RingSize))
	set := desk.NewSet(h.Desk)
	h.Set = set
	met := metrics.New(h.Bus)
	met.SetGauges(metrics.DeskGauges(set))
	h.API = httpapi.New(httpapi.Options{Desks: set, Token: o.Token, FeedToken: o.FeedToken, MetricsToken: o.MetricsToken,
		Clock: h.Clock, Events: ring, Log: zerolog.New(zerolog.NewTestWriter(tb)).Level(zerolog.DebugLevel), Files: files(o.Files), NATS: o.NATS, Approvals: o.Approvals, Console: o.Console, Check: o.Check,
		Listen: o.Listen, AllowedHosts: o.AllowedHosts, Host: o.Host}) // the trace of each request: not into a fuzz target's F
	h.API.Handle("GET /metrics", met.Handler())
	h.Server = httptest.NewServer(h.API)
	tb.Cleanup(func() { // before desktest's, which stops the desk and closes the bus
		h.Server.CloseClientConnections()
		h.Server.Close()
		ring.Close()
		met.Close()
		unsub()
	})
	return h
}

// files fills in f's Day and Version.
func files(f httpapi.Files) httpapi.Files {
	if f.Day.Location == nil {
		f.Day = desktest.Day()
	}
	if f.Version == "" {
		f.Version = "test"
	}
	return f
}

// SocketDir returns a fresh folder with a short path (a unix socket's path
// has a small limit, which t.TempDir's may pass), removed when the test
// ends.
func SocketDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "deskd-sock")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// ServeUnix serves the API on a unix socket too, as deskd does for a
// listen address unix:PATH, until the test ends, and returns its
// Serving; its one address is unix:PATH.
func (h *Harness) ServeUnix() *httpapi.Serving {
	h.t.Helper()
	ls, err := httpapi.Listen([]string{"unix:" + filepath.Join(SocketDir(h.t), "api.sock")})
	if err != nil {
		h.t.Fatal(err)
	}
	srv := httpapi.Serve(h.t.Context(), h.API, ls)
	h.t.Cleanup(func() { _ = srv.Shutdown(5 * time.Second) })
	return srv
}

// URL is the API's address, for a client or the CLI's --addr.
func (h *Harness) URL() string { return h.Server.URL }

// Client is a client of the API with token (Dial of URL).
func (h *Harness) Client(token string) *httpapi.Client {
	h.t.Helper()
	return Dial(h.t, h.URL(), token)
}

// Call sends a request with the header's name, value pairs ("Host" sets
// the request's Host) and returns the status, the headers and the body.
func (h *Harness) Call(method, path, body string, header ...string) (int, http.Header, string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.Server.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if http.CanonicalHeaderKey(header[i]) == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// Decode decodes a JSON body, failing the test when it is not a T.
func Decode[T any](tb testing.TB, body string) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		tb.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// Dial is httpapi.Dial of addr, failing the test on an error, with the
// client's Token set to token.
func Dial(tb testing.TB, addr, token string) *httpapi.Client {
	tb.Helper()
	c, err := httpapi.Dial(addr)
	if err != nil {
		tb.Fatal(err)
	}
	c.Token = token
	return c
}

// Gate is a model whose turns wait for the test: the text of each turn's
// last message is sent on Calls, and the turn is answered "answered" when
// the test sends on Release. Other tasks (summaries) get the scripted
// model's answers at once.
type Gate struct {
	// Calls receives the last message of each turn, as it reaches the
	// model (100 are buffered).
	Calls chan string
	// Release lets one waiting turn answer.
	Release chan struct{}
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{Calls: make(chan string, 100), Release: make(chan struct{}, 100)}
}

// Complete is the model's call.
func (g *Gate) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task != router.TaskTurn {
		return router.Scripted{}.Complete(ctx, req)
	}
	g.Calls <- req.Messages[len(req.Messages)-1].Text
	select {
	case <-g.Release:
		return router.Response{Text: "answered"}, nil
	case <-ctx.Done():
		return router.Response{}, ctx.Err()
	}
}

// Expect waits (up to 10 s) for the next turn to reach the model and
// fails the test unless its last message contains want.
func (g *Gate) Expect(tb testing.TB, want string) {
	tb.Helper()
	select {
	case got := <-g.Calls:
		if !strings.Contains(got, want) {
			tb.Errorf("the model got %q, want it to contain %q", got, want)
		}
	case <-time.After(10 * time.Second):
		tb.Fatalf("no model call within 10s, want %q", want)
	}
}
