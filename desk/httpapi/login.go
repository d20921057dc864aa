package httpapi

// The web console's sign-in: POST /v1/login trades the operator's token
// for a cookie of a random session id, held in memory for 12 hours on
// deskd's clock (a restart signs every console out); POST /v1/logout
// forgets it; GET /v1/whoami says which credential a request carries. The
// cookie gives the operator's credential only, is HttpOnly and
// SameSite=Strict, and every mutation a browser marks cross-origin is
// refused whatever its credential (net/http.CrossOriginProtection), as is
// a mutation credentialed by the cookie whose body is not JSON (an HTML
// form cannot send one).

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// The console's sign-ins.
const (
	// CookieName is the console's cookie.
	CookieName = "deskd_console"
	// SignInTTL is how long a sign-in lasts.
	SignInTTL = 12 * time.Hour
	// MaxSignIns bounds the live sign-ins; past it the oldest goes.
	MaxSignIns = 1000
	// maxLoginBody bounds the body of POST /v1/login.
	maxLoginBody = 4 << 10
)

// How a request's credential came: GET /v1/whoami's "via".
const (
	viaOpen   = "open"
	viaUnix   = "unix"
	viaToken  = "token"
	viaCookie = "cookie"
)

// LoginRequest is the body of POST /v1/login.
type LoginRequest struct {
	// Token is the operator's token (auth_token_file).
	Token string `json:"token"`
}

// LoginResponse is the answer of POST /v1/login.
type LoginResponse struct {
	// Credential is "operator".
	Credential string `json:"credential"`
	// Open is true when deskd has no token: every request is the
	// operator's, and no cookie is needed.
	Open bool `json:"open,omitempty"`
}

// WhoamiResponse is the answer of GET /v1/whoami.
type WhoamiResponse struct {
	// Credential is "operator" (the only one that reaches whoami).
	Credential string `json:"credential"`
	// Via is how it came: "token", "cookie", "unix" or "open".
	Via string `json:"via"`
	// NeedsToken is true when deskd has a token: a browser must sign in.
	NeedsToken bool `json:"needs_token"`
}

// signIns are the console's live sign-ins: the SHA-256 digest of each
// session id (so that a lookup's timing tells nothing of an id), with its
// expiry.
type signIns struct {
	clock clock.Clock
	mu    sync.Mutex
	live  map[[sha256.Size]byte]time.Time
}

func newSignIns(c clock.Clock) *signIns {
	return &signIns{clock: c, live: map[[sha256.Size]byte]time.Time{}}
}

// add makes a new session id, live for SignInTTL; the oldest sign-in
// goes when MaxSignIns are live.
func (s *signIns) add() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a console session id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, exp := range s.live {
		if !now.Before(exp) {
			delete(s.live, k)
		}
	}
	if len(s.live) >= MaxSignIns {
		var oldest [sha256.Size]byte
		var first time.Time
		for k, exp := range s.live {
			if first.IsZero() || exp.Before(first) {
				oldest, first = k, exp
			}
		}
		delete(s.live, oldest)
	}
	s.live[sha256.Sum256([]byte(id))] = now.Add(SignInTTL)
	return id, nil
}

// valid reports whether id is a live sign-in.
func (s *signIns) valid(id string) bool {
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.live[k]
	if ok && !s.clock.Now().Before(exp) {
		delete(s.live, k)
		return false
	}
	return ok
}

// forget ends the sign-in of id.
func (s *signIns) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, sha256.Sum256([]byte(id)))
}

// signedIn reports whether r carries the cookie of a live sign-in.
func (s *Server) signedIn(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	return err == nil && c.Value != "" && s.signIns.valid(c.Value)
}

// guard refuses what a browser must not send: a mutation it marks
// cross-origin (403), and a mutation credentialed by the console's
// cookie, or a sign-in, whose body is not JSON (415). It reports whether
// r may go on.
func (s *Server) guard(w http.ResponseWriter, r *http.Request, via string) bool {
	if err := s.csrf.Check(r); err != nil {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s: refused, a cross-origin request from a browser (%v): use the console deskd serves, or the CLI", r.Method, r.URL.Path, err))
		return false
	}
	if !mutation(r) || (via != viaCookie && r.URL.Path != "/v1/login") {
		return true
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s %s: want Content-Type: application/json, not %q", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
		return false
	}
	return true
}

// mutation reports whether r may change something: not GET, HEAD or
// OPTIONS.
func mutation(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
}

// postLogin signs a console in: the operator's token for a cookie.
func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) {
	var req LoginRequest
	if !readJSONBody(w, r, maxLoginBody, &req, `{"token": "..."}`, false) {
		return
	}
	if len(s.tokens) == 0 {
		writeJSON(w, http.StatusOK, LoginResponse{Credential: "operator", Open: true})
		return
	}
	if _, ok := s.tokens[credOperator]; !ok || s.tokenCredential(req.Token) != credOperator {
		s.failedToken(r, "console sign-in refused: not the operator's token")
		writeError(w, http.StatusUnauthorized, "sign-in refused: that is not the operator's token (auth_token_file)")
		return
	}
	id, err := s.signIns.add()
	if err != nil {
		s.o.Log.Error().Err(err).Msg("console sign-in")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	http.SetCookie(w, s.cookie(r, id, int(SignInTTL/time.Second)))
	writeJSON(w, http.StatusOK, LoginResponse{Credential: "operator"})
}

// cookie is the console's cookie of id, for maxAge seconds (<0: delete
// it).
func (s *Server) cookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: id, Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// postLogout forgets the request's sign-in, if any, and clears its cookie.
func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		s.signIns.forget(c.Value)
	}
	http.SetCookie(w, s.cookie(r, "", -1))
	w.WriteHeader(http.StatusNoContent)
}

// whoami says the request's credential and how it came.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	via, _ := r.Context().Value(viaKey{}).(string)
	writeJSON(w, http.StatusOK, WhoamiResponse{Credential: "operator", Via: via, NeedsToken: len(s.tokens) > 0})
}

// viaKey is the request context's key of how its credential came.
type viaKey struct{}
