package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// credential is the trust a request carries.
type credential int

// The credentials, from none to the operator's.
const (
	// credNone: no credential, or a token that is none of deskd's.
	credNone credential = iota
	// credMetrics: the scrape token; GET /metrics only.
	credMetrics
	// credFeed: a feed's token; market triggers, and the state of the
	// triggers posted with it.
	credFeed
	// credOperator: the operator's token, the unix socket, or any request
	// when no token is configured; everything.
	credOperator
)

// credentialKey is the request context's key of its credential.
type credentialKey struct{}

// credentialOf returns the credential ServeHTTP found for r.
func credentialOf(r *http.Request) credential {
	c, _ := r.Context().Value(credentialKey{}).(credential)
	return c
}

// The patterns a feed's token or the scrape token reaches.
const (
	patternPostTrigger = "POST /v1/desks/{desk}/triggers"
	patternGetTrigger  = "GET /v1/desks/{desk}/triggers/{id}"
	patternMetrics     = "GET /metrics"
)

// reaches reports whether c may use the endpoint of a mux pattern. The
// catch-all ("/", or "" for a redirect to a clean path) only says 404 or
// 405, so any credential reaches it.
func (c credential) reaches(pattern string) bool {
	switch {
	case c == credOperator, pattern == "/", pattern == "":
		return true
	case c == credFeed:
		return pattern == patternPostTrigger || pattern == patternGetTrigger
	case c == credMetrics:
		return pattern == patternMetrics
	}
	return false
}

// scope says what c may do, for a 403.
func (c credential) scope() string {
	if c == credMetrics {
		return "the scrape token of metrics_token_file reads GET /metrics only"
	}
	return "a feed's token (feed_token_file) may only post market triggers and read the state of those it posted"
}

// credential returns the credential of r and how it came (via: "open",
// "unix", "token" or "cookie"; "" with none). With no token configured
// every request is the operator's (deskd then listens on loopback only);
// a request over a unix socket is the operator's (the socket is mode
// 0660: only deskd's user and group open it); otherwise the bearer token
// says, compared in constant time with every token (as SHA-256 digests,
// so that not even its length leaks); without one, the console's cookie
// of a live sign-in (login.go) gives the operator's.
func (s *Server) credential(r *http.Request) (credential, string) {
	if len(s.tokens) == 0 {
		return credOperator, viaOpen
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && addr.Network() == "unix" {
		return credOperator, viaUnix
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		if s.signedIn(r) {
			return credOperator, viaCookie
		}
		return credNone, ""
	}
	if c := s.tokenCredential(strings.TrimSpace(tok)); c != credNone {
		return c, viaToken
	}
	return credNone, ""
}

// tokenCredential returns the credential tok gives, compared in constant
// time with every token.
func (s *Server) tokenCredential(tok string) credential {
	got := sha256.Sum256([]byte(tok))
	return s.digestCredential(got[:])
}

// digestCredential returns the credential of the token whose SHA-256
// begins with prefix (the whole digest, or a TokenID's bytes: proof.go;
// none for a shorter one), compared in constant time with every token.
func (s *Server) digestCredential(prefix []byte) credential {
	found := credNone
	if len(prefix) < tokenIDLen || len(prefix) > sha256.Size {
		return found
	}
	for _, c := range []credential{credMetrics, credFeed, credOperator} { // every one, whichever matches
		want, ok := s.tokens[c]
		if subtle.ConstantTimeCompare(prefix, want[:len(prefix)]) == 1 && ok {
			found = c
		}
	}
	return found
}
