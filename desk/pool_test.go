package desk_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/router/routertest"
)

// TestDaemonDesksShareKeptAliveModelConnections: the desks of a daemon
// call their model through one pool of kept-alive connections. 20 desks
// on an openai model served over HTTP/1.1 make 50 sequential turns on one
// connection, and rounds of a turn on every desk at once on no more
// connections than the first round opens (20: one a desk). With each
// desk's client on http.DefaultTransport, which keeps two idle
// connections, every round opened 18 more.
func TestDaemonDesksShareKeptAliveModelConnections(t *testing.T) {
	const desks, rounds = 20, 3
	api := routertest.New(t, routertest.ChatCompletions, routertest.Options{})
	back, err := url.Parse(api.URL())
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(back))
	front.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	front.Start()
	t.Cleanup(front.Close)

	t.Setenv("DESKD_TEST_KEY", "sk-test")
	main := daemonMain + "  fast: {provider: openai, base_url: " + front.URL + "/v1, model: gpt-test, api_key_env: DESKD_TEST_KEY}\n"
	files := map[string]string{}
	var names []string
	for i := range desks {
		name := fmt.Sprintf("desk%02d", i)
		names = append(names, name)
		files[name] = daemonDesk("fast")
	}
	r := startDaemon(t, daemonConfig(t, main, files))

	for i := range 50 {
		r.turn(names[i%desks], fmt.Sprintf("seq-%02d", i))
	}
	sequential := conns.Load()
	for round := range rounds {
		ids := map[string]bool{}
		for _, name := range names {
			id := fmt.Sprintf("round%d-%s", round, name)
			ids[id] = true
			r.submit(name, id, "Check the tape.")
		}
		for len(ids) > 0 {
			e := expectEvent(r, func(e event.TurnCompleted) bool { return ids[e.Trigger] })
			delete(ids, e.Trigger)
		}
	}
	concurrent := conns.Load() - sequential
	t.Logf("%d connections for 50 sequential turns, %d for %d rounds of %d desks' turns at once", sequential, concurrent, rounds, desks)
	// 2: a drain cut short by a stall of a loaded machine. Without the
	// pool's drain, 50 calls opened 7 or more.
	if sequential > 2 {
		t.Errorf("50 sequential turns opened %d connections, want 1 (2 at most)", sequential)
	}
	if concurrent > desks {
		t.Errorf("%d rounds of %d concurrent turns opened %d connections, want at most %d", rounds, desks, concurrent, desks)
	}
	if n := api.Count(); n != 50+rounds*desks {
		t.Errorf("the model got %d calls, want %d", n, 50+rounds*desks)
	}
	r.stop()
}
