package router_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
)

// countingFront is a model service that counts the connections its
// clients open: a reverse proxy, over HTTP/1.1 or (TLS) HTTP/2, in front
// of a routertest server, which speaks the API.
type countingFront struct {
	srv    *httptest.Server
	api    *routertest.Server
	conns  atomic.Int64 // connections opened (http.StateNew)
	mu     sync.Mutex
	protos map[int]int // requests by ProtoMajor
}

func newCountingFront(t testing.TB, tlsH2 bool) *countingFront {
	t.Helper()
	f := &countingFront{api: routertest.New(t, routertest.ChatCompletions, routertest.Options{}), protos: map[int]int{}}
	back, err := url.Parse(f.api.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(back)
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.protos[r.ProtoMajor]++
		f.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	if tlsH2 {
		f.srv.EnableHTTP2 = true
		f.srv.StartTLS()
	} else {
		f.srv.Start()
	}
	t.Cleanup(f.srv.Close)
	return f
}

// base is a transport that trusts the front's certificate and, on its
// own, would not speak HTTP/2 to it (a custom TLS config turns that off
// unless ForceAttemptHTTP2 is set).
func (f *countingFront) base() *http.Transport {
	pool := x509.NewCertPool()
	if c := f.srv.Certificate(); c != nil {
		pool.AddCert(c)
	}
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
}

// desks builds the model client of n desks, as deskd does (router.NewModel
// of each desk's spec), all on the HTTP client hc.
func (f *countingFront) desks(t testing.TB, n int, hc *http.Client) []router.Model {
	t.Helper()
	var ms []router.Model
	for i := range n {
		m, err := router.NewModel(router.Spec{Name: fmt.Sprintf("desk%d", i), Provider: router.OpenAIProvider, BaseURL: f.srv.URL + "/v1",
			Model: "gpt-test", Timeout: time.Minute, Key: func() (string, error) { return "sk-test", nil }, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

func turn(t testing.TB, m router.Model) {
	t.Helper()
	_, err := m.Client.Complete(context.Background(), router.Request{Task: router.TaskTurn, System: "You run a desk.",
		Messages: []router.Message{{Role: router.RoleUser, Text: "Check the tape."}}})
	if err != nil {
		t.Errorf("Complete: %v", err)
	}
}

// calls makes 50 sequential calls, cycling through the desks' clients,
// then rounds of one call from each desk at once, and returns the
// connections opened by the sequential calls and by all the rounds.
func (f *countingFront) calls(t *testing.T, ms []router.Model, rounds int) (sequential, concurrent int64) {
	t.Helper()
	for i := range 50 {
		turn(t, ms[i%len(ms)])
	}
	sequential = f.conns.Load()
	for range rounds {
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Add(1)
			go func() { defer wg.Done(); turn(t, m) }()
		}
		wg.Wait()
	}
	return sequential, f.conns.Load() - sequential
}

// TestPoolKeepsConnectionsAlive: the model clients of 20 desks on one
// Pool open one connection for 50 sequential calls, and for rounds of 20
// concurrent calls (every desk calling at once) no more than the 20 that
// the first round needs over HTTP/1.1: later rounds reuse them. Clients
// on http.DefaultTransport (deskd before the pool) keep 2 idle
// connections and open new ones every round.
func TestPoolKeepsConnectionsAlive(t *testing.T) {
	const desks, rounds = 20, 4
	t.Run("pool", func(t *testing.T) {
		f := newCountingFront(t, false)
		pool := router.NewPool(desks, nil)
		t.Cleanup(pool.CloseIdleConnections)
		seq, conc := f.calls(t, f.desks(t, desks, pool.Client()), rounds)
		t.Logf("pool: %d connections for 50 sequential calls, %d for %d rounds of %d concurrent calls", seq, conc, rounds, desks)
		// 2: a drain cut short by a stall of a loaded machine.
		if seq > 2 {
			t.Errorf("50 sequential calls opened %d connections, want 1 (2 at most)", seq)
		}
		if conc > desks {
			t.Errorf("%d rounds of %d concurrent calls opened %d connections, want at most %d (the first round's)", rounds, desks, conc, desks)
		}
	})
	t.Run("a client of its own on http.DefaultTransport", func(t *testing.T) {
		f := newCountingFront(t, false)
		t.Cleanup(http.DefaultClient.CloseIdleConnections)
		_, conc := f.calls(t, f.desks(t, desks, nil), rounds)
		t.Logf("DefaultTransport: %d connections for %d rounds of %d concurrent calls", conc, rounds, desks)
		if conc <= desks {
			t.Errorf("%d connections without the pool: this test shows nothing", conc)
		}
	})
}

// TestPoolSpeaksHTTP2: over TLS to a service that speaks HTTP/2, every
// call of the pool's clients is HTTP/2, and 20 concurrent calls share one
// connection.
func TestPoolSpeaksHTTP2(t *testing.T) {
	f := newCountingFront(t, true)
	pool := router.NewPool(20, f.base())
	t.Cleanup(pool.CloseIdleConnections)
	seq, conc := f.calls(t, f.desks(t, 20, pool.Client()), 2)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.protos[1] != 0 || f.protos[2] != 50+2*20 {
		t.Errorf("requests by HTTP major version: %v, want all %d HTTP/2", f.protos, 50+2*20)
	}
	if seq+conc > 2 {
		t.Errorf("%d connections (%d sequential, %d concurrent), want 1 (or 2, if the first concurrent calls raced the first dial)", seq+conc, seq, conc)
	}
}

// TestPoolFit: a pool sized for few desks keeps MinPoolIdlePerHost idle
// connections per service; Fit grows it for more desks (to at least
// twice its size, so that desks added one by one do not rebuild it each
// time) and never shrinks it; the Client stays the same.
func TestPoolFit(t *testing.T) {
	pool := router.NewPool(3, nil)
	client := pool.Client()
	steps := []struct {
		desks, want int
	}{
		{0, router.MinPoolIdlePerHost},
		{16, 16},
		{17, 32},
		{20, 32},
		{100, 100},
		{10, 100},
	}
	if got := pool.IdlePerHost(); got != router.MinPoolIdlePerHost {
		t.Errorf("NewPool(3): IdlePerHost = %d, want %d", got, router.MinPoolIdlePerHost)
	}
	for _, s := range steps {
		pool.Fit(s.desks)
		if got := pool.IdlePerHost(); got != s.want {
			t.Errorf("Fit(%d): IdlePerHost = %d, want %d", s.desks, got, s.want)
		}
	}
	if pool.Client() != client || client.Timeout != 0 {
		t.Errorf("the pool's client changed, or has a Timeout (%v) that would cut streams", client.Timeout)
	}
}

// TestPoolFitKeepsServing: calls keep working through a Fit that
// replaces the transport under them.
func TestPoolFitKeepsServing(t *testing.T) {
	f := newCountingFront(t, false)
	pool := router.NewPool(2, nil)
	t.Cleanup(pool.CloseIdleConnections)
	ms := f.desks(t, 4, pool.Client())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				turn(t, ms[i])
			}
		}()
	}
	for n := 17; n < 200; n += 20 {
		pool.Fit(n)
	}
	wg.Wait()
	if got := f.api.Count(); got != 40 {
		t.Errorf("%d calls reached the service, want 40", got)
	}
}

// TestPoolCloseOfAStreamStillGoing: closing an answer that is still
// streaming (a reply cut at deskd's cap) does not wait for its end: the
// drain gives up and the connection is closed.
func TestPoolCloseOfAStreamStillGoing(t *testing.T) {
	release := make(chan struct{})
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"partial\":true}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done(): // the client closed the connection
			close(gone)
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	pool := router.NewPool(1, nil)
	t.Cleanup(pool.CloseIdleConnections)
	resp, err := pool.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- resp.Body.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close of a body still streaming did not return: the drain waits for its end")
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the connection closed")
	}
}

// BenchmarkModelCalls: calls of 16 desks' clients at once to an HTTP/1.1
// model service, on a Pool and each on a client of its own
// (http.DefaultTransport, as before the pool); conns/op is the
// connections opened per call.
func BenchmarkModelCalls(b *testing.B) {
	for _, tt := range []struct {
		name string
		pool bool
	}{{"pool", true}, {"own-clients", false}} {
		b.Run(tt.name, func(b *testing.B) {
			f := newCountingFront(b, false)
			var hc *http.Client
			if tt.pool {
				p := router.NewPool(16, nil)
				b.Cleanup(p.CloseIdleConnections)
				hc = p.Client()
			} else {
				b.Cleanup(http.DefaultClient.CloseIdleConnections)
			}
			ms := f.desks(b, 16, hc)
			var next atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				m := ms[int(next.Add(1))%len(ms)]
				for pb.Next() {
					turn(b, m)
				}
			})
			b.ReportMetric(float64(f.conns.Load())/float64(b.N), "conns/op")
		})
	}
}
