package httpapi_test

// Tests of the answers for a desk while it moves between the states a
// cluster host sees it in (standby, starting, running, failed).

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestADeskMovingIsNeverUnknown moves the desk between standby, starting,
// running and failed as fast as the set takes it while requests read it:
// every answer is one of those states' (200 or 404 of the trigger for a
// running desk, 421 standing by, 503 starting or failed), never the 404
// of a desk deskd does not know, and the listing names the desk once.
// Each request looks once (Set.Locate); a request that looked at the set
// three times saw the desk in none of the states and answered "unknown
// desk" (TestClusterBenchSmallest found it in CI).
func TestADeskMovingIsNeverUnknown(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				h.Set.Put(h.Desk)
				return
			default:
			}
			h.Set.Standby("main", &desk.Owner{Host: "b", Epoch: 1, Addr: "127.0.0.1:1"})
			h.Set.Own("main", desk.Owner{Host: "a", Epoch: 2})
			h.Set.Put(h.Desk)
			h.Set.Fail("main", desk.Failure{Reason: "a test's failure"})
			h.Set.Put(h.Desk)
		}
	}()
	defer wg.Wait()
	defer close(stop)

	answers := map[string]int{}
	for i := range 400 {
		path := "/v1/desks/main"
		if i%2 == 1 {
			path = "/v1/desks/main/triggers/t-none"
		}
		code, _, body := h.Call(http.MethodGet, path, "")
		switch {
		case strings.Contains(body, "unknown desk"):
			t.Fatalf("GET %s while the desk moves = %d %s, want an answer of one of its states", path, code, body)
		case code == http.StatusOK, code == http.StatusNotFound && i%2 == 1, code == http.StatusMisdirectedRequest, code == http.StatusServiceUnavailable:
			answers[http.StatusText(code)]++
		default:
			t.Fatalf("GET %s while the desk moves = %d %s", path, code, body)
		}
		if i%10 == 0 {
			code, _, body := h.Call(http.MethodGet, "/v1/desks", "")
			ds := httpapitest.Decode[httpapi.DesksResponse](t, body)
			if code != http.StatusOK || len(ds.Desks) != 1 || ds.Desks[0].Name != "main" {
				t.Fatalf("GET /v1/desks while the desk moves = %d, desks %+v, want main once", code, ds.Desks)
			}
		}
	}
	t.Logf("answers: %v", answers)
}

// TestGetDeskOfEachPlace answers GET /v1/desks/main in each state: the
// status of a desk standing by, starting or failed names its state and
// owner (and failure), that of a running desk of a cluster its owner; the
// event stream of the desk is served in each, and 404 for a name deskd
// does not know.
func TestGetDeskOfEachPlace(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	b := desk.Owner{Host: "b", Epoch: 1, Addr: "127.0.0.1:1"}
	a := desk.Owner{Host: "a", Epoch: 2}
	for _, c := range []struct {
		move  func()
		state desk.State
		owner string
	}{
		{func() { h.Set.Standby("main", &b) }, desk.StateStandby, "b"},
		{func() { h.Set.Own("main", a) }, desk.StateStarting, "a"},
		{func() { h.Set.Put(h.Desk) }, "", "a"},
		{func() { h.Set.Fail("main", desk.Failure{Reason: "a test's failure"}) }, desk.StateFailed, "a"},
	} {
		c.move()
		code, _, body := h.Call(http.MethodGet, "/v1/desks/main", "")
		st := httpapitest.Decode[desk.Status](t, body)
		if code != http.StatusOK || st.Name != "main" || (c.state != "" && st.State != c.state) || (c.state == "" && (st.State == desk.StateStandby || st.State == desk.StateStarting || st.State == desk.StateFailed)) {
			t.Fatalf("GET /v1/desks/main in state %q = %d %s", c.state, code, body)
		}
		if st.Owner == nil || st.Owner.Host != c.owner {
			t.Errorf("GET /v1/desks/main in state %q: owner %+v, want host %s", c.state, st.Owner, c.owner)
		}
		if c.state == desk.StateFailed && (st.Failed == nil || st.Failed.Reason != "a test's failure") {
			t.Errorf("GET /v1/desks/main failed: failure %+v", st.Failed)
		}
		if code, _, body := h.Call(http.MethodGet, "/v1/events?desk=main&follow=0", ""); code != http.StatusOK {
			t.Errorf("GET /v1/events?desk=main in state %q = %d %s, want 200: what this host sees of it", c.state, code, body)
		}
	}
	if code, _, body := h.Call(http.MethodGet, "/v1/events?desk=nope&follow=0", ""); code != http.StatusNotFound || !strings.Contains(body, "unknown desk") {
		t.Errorf("GET /v1/events?desk=nope = %d %s, want 404 unknown desk", code, body)
	}
}

// handedOver is the desks of a host that found its desk running at a
// request's first look and lost its lease right after: every later look
// sees the set as it is (the desk standing by for host b).
type handedOver struct {
	*desk.Set
	d      *desk.Desk
	looked atomic.Bool
}

func (h *handedOver) Locate(name string) desk.Place {
	if !h.looked.Swap(true) {
		return desk.Place{Desk: h.d}
	}
	return h.Set.Locate(name)
}

// TestARequestToADeskThatLeftMeanwhileIsMisdirected: a trigger POSTed,
// and a pause asked, of a desk that was running here when the request
// looked and has since gone to host b (its loop stopped, the set stands
// by for it) are answered 421 naming b, as a request a moment later is,
// not 503 "desk is not running" nor a disk's failure.
func TestARequestToADeskThatLeftMeanwhileIsMisdirected(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	h.StopDesk()
	h.Set.Standby("main", &desk.Owner{Host: "b", Epoch: 3, Addr: "10.0.0.2:7317"})
	for _, c := range []struct{ path, body string }{
		{"/v1/desks/main/triggers", `{"text": "NIFTY 22,000", "id": "left-1"}`},
		{"/v1/desks/main/rollover", ""},
	} {
		hs := &handedOver{Set: h.Set, d: h.Desk}
		srv := httptest.NewServer(httpapi.New(httpapi.Options{Desks: hs, Clock: h.Clock}))
		res, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		srv.Close()
		if !hs.looked.Load() {
			t.Fatalf("POST %s: the server never looked for the desk", c.path)
		}
		mis := httpapitest.Decode[httpapi.MisdirectedResponse](t, string(body))
		if res.StatusCode != http.StatusMisdirectedRequest || mis.Owner != "b" || mis.Addr != "10.0.0.2:7317" {
			t.Errorf("POST %s to a desk that left meanwhile = %d %s, want 421 naming host b", c.path, res.StatusCode, body)
		}
	}
}
