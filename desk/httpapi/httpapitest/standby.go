package httpapitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
)

// Spy is a test server that records the Authorization header of each
// request, then has its handler answer it.
type Spy struct {
	*httptest.Server

	mu     sync.Mutex
	tokens []string
}

// StartSpy starts a Spy in front of h; it closes at the test's end.
func StartSpy(tb testing.TB, h http.Handler) *Spy {
	tb.Helper()
	s := &Spy{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.tokens = append(s.tokens, r.Header.Get("Authorization"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(s.Close)
	return s
}

// Requests returns the Authorization header of each request it answered,
// in order.
func (s *Spy) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

// Standby is a host of a cluster that stands by for every desk, as far as
// a client sees: it answers every request 421 naming Owner at the address
// *Addr holds when the request comes, as deskd's standby does, and
// records the requests (the Spy's Requests).
type Standby struct {
	*Spy
	// Owner is the host the 421s name.
	Owner string
	// Addr is the owner's API address they name.
	Addr *string
}

// StartStandby starts a Standby that names owner at *addr; it closes at
// the test's end.
func StartStandby(tb testing.TB, owner string, addr *string) *Standby {
	tb.Helper()
	return &Standby{Owner: owner, Addr: addr, Spy: StartSpy(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_ = json.NewEncoder(w).Encode(httpapi.MisdirectedResponse{
			Error: "desk \"" + DeskName + "\" runs on host " + owner + " (epoch 7), not on this one: send the request there", Owner: owner, Addr: *addr})
	}))}
}

// HostPort is a test server's URL as a 421 names its address: host:port.
func HostPort(url string) string { return strings.TrimPrefix(url, "http://") }
