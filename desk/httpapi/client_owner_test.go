package httpapi_test

// Tests of the client's side of a cluster: hosts that stand by for a desk
// (httptest servers answering 421 as a standby does) in front of the real
// server (httpapitest), the desk's owner.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// dialStandby starts a standby that names host owner at addr and dials it
// with token.
func dialStandby(t *testing.T, owner, addr, token string) (*httpapi.Client, *httpapitest.Standby) {
	t.Helper()
	sb := httpapitest.StartStandby(t, owner, &addr)
	return httpapitest.Dial(t, sb.URL, token), sb
}

// postOnOwner posts req to desk main with c.OnOwner and returns the client
// it ended at and its error.
func postOnOwner(t *testing.T, c *httpapi.Client, req triggers.Request) (*httpapi.Client, error) {
	return c.OnOwner(func(at *httpapi.Client) error {
		_, err := at.PostTrigger(t.Context(), httpapitest.DeskName, req)
		return err
	})
}

// TestOnOwnerSendsTheTriggerToTheOwner: a trigger posted to a standby is
// sent again, with the same id and token, to the owner the 421 names,
// which takes it once; the hop is told, and the client returned is the
// owner's, where the trigger is then waited for. A second post of the same
// id through the standby is a duplicate: a retry never makes two.
func TestOnOwnerSendsTheTriggerToTheOwner(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok", Host: "a"}) // host a, as the 421 names it: its proof (GET /v1/proof) says so
	c, sb := dialStandby(t, "a", httpapitest.HostPort(h.URL()), "tok")
	var hops []httpapi.Hop
	c.OnHop = func(hp httpapi.Hop) { hops = append(hops, hp) }
	post := func() (httpapi.TriggerResponse, *httpapi.Client, error) {
		var acc httpapi.TriggerResponse
		at, err := c.OnOwner(func(at *httpapi.Client) (err error) {
			acc, err = at.PostTrigger(t.Context(), "main", triggers.Request{Text: "plan?", ID: "f1", Source: "cli"})
			return err
		})
		return acc, at, err
	}
	acc, at, err := post()
	if err != nil || acc.ID != "f1" || acc.Duplicate || at.URL() != h.URL() {
		t.Fatalf("OnOwner(PostTrigger) = %+v at %s, %v; want f1 queued at the owner %s", acc, at.URL(), err, h.URL())
	}
	if len(hops) != 1 || hops[0] != (httpapi.Hop{From: sb.URL, Owner: "a", To: h.URL()}) {
		t.Errorf("hops = %+v, want one from %s to host a at %s", hops, sb.URL, h.URL())
	}
	if s, err := at.WaitTrigger(t.Context(), "main", "f1", 10*time.Second); err != nil || s.State != triggers.StateAnswered {
		t.Errorf("WaitTrigger at the owner = %+v, %v; want answered", s, err)
	}
	again, _, err := post()
	if err != nil || !again.Duplicate {
		t.Errorf("the same id again through the standby = %+v, %v; want a duplicate", again, err)
	}
	if len(sb.Requests()) != 2 || sb.Requests()[0] != "Bearer tok" {
		t.Errorf("the standby got %d requests, tokens %q; want 2 with the token", len(sb.Requests()), sb.Requests())
	}
}

// TestClientFollowsReadsNotWrites: a read (GET) sent to a standby is
// answered by the owner; a write other than through OnOwner (a pause) is
// not sent on, and its error names the owner and its address.
func TestClientFollowsReadsNotWrites(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	addr := httpapitest.HostPort(h.URL())
	c, _ := dialStandby(t, "a", addr, "")
	hops := 0
	c.OnHop = func(httpapi.Hop) { hops++ }
	if code, _, body := h.Call(http.MethodPost, "/v1/desks/main/triggers", `{"id": "r1", "text": "plan?"}`); code != http.StatusAccepted {
		t.Fatalf("POST r1 to the owner = %d %s", code, body)
	}
	if s, err := c.WaitTrigger(t.Context(), "main", "r1", 10*time.Second); err != nil || s.State != triggers.StateAnswered || hops != 1 {
		t.Errorf("WaitTrigger through the standby = %+v, %v after %d hops; want the owner's answer, answered, after 1", s, err, hops)
	}
	_, err := c.Pause(t.Context(), "main", httpapi.PauseRequest{By: "ops", Reason: "lunch"})
	e, ok := httpapi.Misdirected(err)
	if !ok || e.Owner != "a" || e.Addr != addr || !strings.Contains(err.Error(), "host a") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Pause through the standby = %v, want a 421 naming host a at %s", err, addr)
	}
	if hops != 1 || h.Desk.Status().Paused != nil {
		t.Errorf("the pause was sent on (%d hops, paused %v); want it refused where it was sent", hops, h.Desk.Status().Paused)
	}
}

// TestOnOwnerEndsLoopsAndLongChains: two standbys that each name the
// other end with an error naming both; a chain of standbys longer than
// MaxHops ends after MaxHops hops.
func TestOnOwnerEndsLoopsAndLongChains(t *testing.T) {
	var addrA, addrB string
	a, b := httpapitest.StartStandby(t, "b", &addrB), httpapitest.StartStandby(t, "a", &addrA)
	addrA, addrB = httpapitest.HostPort(a.URL), httpapitest.HostPort(b.URL)
	_, err := postOnOwner(t, httpapitest.Dial(t, a.URL, ""), triggers.Request{Text: "x", ID: "l1"})
	if err == nil || !strings.Contains(err.Error(), "loop of 421s") || !strings.Contains(err.Error(), "host a ("+a.URL+")") ||
		!strings.Contains(err.Error(), "host b ("+b.URL+")") {
		t.Errorf("a loop between two standbys = %v, want a loop naming host a at %s and host b at %s", err, a.URL, b.URL)
	}
	if len(a.Requests()) != 1 || len(b.Requests()) != 1 {
		t.Errorf("requests: a %d, b %d; want one each", len(a.Requests()), len(b.Requests()))
	}

	next := make([]string, MaxHopsPlus2)
	chain := make([]*httpapitest.Standby, MaxHopsPlus2)
	for i := len(chain) - 1; i >= 0; i-- {
		chain[i] = httpapitest.StartStandby(t, "h"+string(rune('0'+i+1)), &next[i])
		if i > 0 {
			next[i-1] = httpapitest.HostPort(chain[i].URL)
		}
	}
	next[len(next)-1] = httpapitest.HostPort(chain[0].URL) // never reached
	_, err = postOnOwner(t, httpapitest.Dial(t, chain[0].URL, ""), triggers.Request{Text: "x"})
	if err == nil || !strings.Contains(err.Error(), "after 3 hops") {
		t.Errorf("a chain of %d standbys = %v, want an end after %d hops", len(chain), err, httpapi.MaxHops)
	}
	for i, s := range chain {
		if want := map[bool]int{true: 1, false: 0}[i <= httpapi.MaxHops]; len(s.Requests()) != want {
			t.Errorf("standby %d of the chain got %d requests, want %d", i, len(s.Requests()), want)
		}
	}
}

// MaxHopsPlus2 is a chain longer than the client follows.
const MaxHopsPlus2 = httpapi.MaxHops + 2

// TestOwnerURLRefusesWhatTheTokenMustNotReach: the addresses a 421 may
// name and where each is reached; the others are refused, and a request
// whose 421 names one is not sent there.
func TestOwnerURLRefusesWhatTheTokenMustNotReach(t *testing.T) {
	for _, tt := range []struct {
		from, addr, url, err string
	}{
		{"http://127.0.0.1:1", "10.0.0.2:7317", "http://10.0.0.2:7317", ""},
		{"https://a.internal:443", "b.internal:7317", "https://b.internal:7317", ""},
		{"http://deskd", "[fd00::2]:7317", "http://[fd00::2]:7317", ""},
		{"http://a:1", "https://b.internal:8443/", "https://b.internal:8443", ""},
		{"http://a:1", "http://user:pw@b:7317", "", "credentials"},
		{"http://a:1", "http://b:7317/evil", "", "path"},
		{"http://a:1", "http://b:7317?x=1", "", "query"},
		{"http://a:1", "unix:/run/deskd/api.sock", "", "want http(s)://host:port"},
		{"http://a:1", "ftp://b:21", "", "want http or https"},
		{"http://a:1", "http://b", "", "names no port"},
		{"http://a:1", "0.0.0.0:7317", "", "wildcard"},
		{"http://a:1", "[::]:7317", "", "wildcard"},
		{"http://a:1", "b", "", "want http(s)://host:port"},
	} {
		got, err := httpapi.OwnerURL(tt.from, tt.addr)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("OwnerURL(%q, %q) = %q, %v; want an error saying %q", tt.from, tt.addr, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.url):
			t.Errorf("OwnerURL(%q, %q) = %q, %v; want %q", tt.from, tt.addr, got, err, tt.url)
		}
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the token reached an address with a path: %s %s", r.Method, r.URL)
	}))
	defer evil.Close()
	addr := evil.URL + "/steal"
	c, _ := dialStandby(t, "a", addr, "tok")
	if _, err := postOnOwner(t, c, triggers.Request{Text: "x"}); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("a 421 naming %s = %v, want it not followed", addr, err)
	}
}

// TestOnOwnerFollowsADeskThatMovedBack: host a answers 421 naming host b
// at epoch 5; b, which a stale a sent the client to, has meanwhile lost
// the desk to a and names a at epoch 6. That is a move, not a loop: the
// client goes back to a, which takes the trigger. The same two answers at
// one epoch are a loop (TestOnOwnerEndsLoopsAndLongChains).
func TestOnOwnerFollowsADeskThatMovedBack(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	var addrA, addrB string
	var asked atomic.Int32
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 1 { // stale: it has not yet won the desk back
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_ = json.NewEncoder(w).Encode(httpapi.MisdirectedResponse{Error: "runs on host b", Owner: "b", Addr: addrB, Epoch: 5})
			return
		}
		h.API.ServeHTTP(w, r)
	}))
	t.Cleanup(a.Close)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_ = json.NewEncoder(w).Encode(httpapi.MisdirectedResponse{Error: "runs on host a", Owner: "a", Addr: addrA, Epoch: 6})
	}))
	t.Cleanup(b.Close)
	addrA, addrB = httpapitest.HostPort(a.URL), httpapitest.HostPort(b.URL)
	at, err := postOnOwner(t, httpapitest.Dial(t, a.URL, ""), triggers.Request{Text: "x", ID: "moved-1"})
	if err != nil {
		t.Fatalf("a desk that moved back to host a: %v, want the trigger taken there", err)
	}
	if asked.Load() != 2 {
		t.Errorf("host a was asked %d times, want 2 (stale, then the owner)", asked.Load())
	}
	if st, found := h.Desk.Trigger("moved-1"); !found {
		t.Errorf("the desk behind host a has no trigger moved-1 (status %+v)", st)
	}
	if at == nil {
		t.Error("no client returned")
	}
}
