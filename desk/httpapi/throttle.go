package httpapi

// The guessing throttle: a remote address that presents 10 wrong tokens
// within a minute (a wrong POST /v1/login, or a wrong Authorization:
// Bearer on any endpoint) has every token it presents refused, right or
// wrong, with 429 and Retry-After until its minute is over, on deskd's
// clock. Unix-socket connections carry no token and are never throttled.
// At most maxThrottled addresses are remembered: past that, the windows
// that are over go, then the oldest.

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// The guessing throttle's limits.
const (
	// MaxTokenFailures is how many wrong tokens an address may present
	// within TokenFailureWindow before it is refused 429.
	MaxTokenFailures = 10
	// TokenFailureWindow is the window of MaxTokenFailures, from the
	// address's first wrong token.
	TokenFailureWindow = time.Minute
	// maxThrottled bounds the addresses the throttle remembers.
	maxThrottled = 10000
)

// failures is one address's wrong tokens in its window.
type failures struct {
	since time.Time // the first of the window
	n     int
}

// throttle counts the wrong tokens of each remote address.
type throttle struct {
	clock clock.Clock
	mu    sync.Mutex
	addrs map[string]*failures
}

func newThrottle(c clock.Clock) *throttle {
	return &throttle{clock: c, addrs: map[string]*failures{}}
}

// refusedFor returns how long addr is still refused (0: it is not).
func (t *throttle) refusedFor(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.addrs[addr]
	if !ok {
		return 0
	}
	left := f.since.Add(TokenFailureWindow).Sub(t.clock.Now())
	if left <= 0 {
		delete(t.addrs, addr)
		return 0
	}
	if f.n < MaxTokenFailures {
		return 0
	}
	return left
}

// fail counts a wrong token of addr.
func (t *throttle) fail(addr string) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.addrs[addr]; ok && now.Before(f.since.Add(TokenFailureWindow)) {
		f.n++
		return
	}
	if len(t.addrs) >= maxThrottled {
		t.makeRoom(now)
	}
	t.addrs[addr] = &failures{since: now, n: 1}
}

// makeRoom forgets the windows that are over, or else the oldest.
func (t *throttle) makeRoom(now time.Time) {
	var oldest string
	var first time.Time
	for a, f := range t.addrs {
		if !now.Before(f.since.Add(TokenFailureWindow)) {
			delete(t.addrs, a)
			continue
		}
		if first.IsZero() || f.since.Before(first) {
			oldest, first = a, f.since
		}
	}
	if len(t.addrs) >= maxThrottled {
		delete(t.addrs, oldest)
	}
}

// remoteHost is the throttle's key of r: its remote IP address, or ""
// for a unix-socket connection (never throttled).
func remoteHost(r *http.Request) string {
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && addr.Network() == "unix" {
		return ""
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// presentsToken reports whether r presents a token for the throttle to
// count: a sign-in, an Authorization header, or a proof's token id.
func presentsToken(r *http.Request) bool {
	return (r.Method == http.MethodPost && r.URL.Path == "/v1/login") || r.Header.Get("Authorization") != "" || r.Header.Get(HeaderTokenID) != ""
}

// throttled answers 429 when r presents a token from an address refused
// for its wrong ones, and reports whether it did.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request) bool {
	host := remoteHost(r)
	if len(s.tokens) == 0 || host == "" || !presentsToken(r) {
		return false
	}
	left := s.throttle.refusedFor(host)
	if left <= 0 {
		return false
	}
	secs := int((left + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%s %s: refused, %d wrong tokens from %s within %s; try again in %d s",
		r.Method, r.URL.Path, MaxTokenFailures, host, TokenFailureWindow, secs))
	return true
}

// failedToken counts a wrong token of r's address, and logs it at warn
// with the address (never the token).
func (s *Server) failedToken(r *http.Request, what string) {
	host := remoteHost(r)
	if host == "" {
		return
	}
	s.throttle.fail(host)
	s.o.Log.Warn().Str("remote", r.RemoteAddr).Msg(what)
}
