package httpapi

import "net/http"

// routes is the server's mux, which remembers the patterns registered on
// it, so that the endpoints served can be listed (Server.Routes).
type routes struct {
	*http.ServeMux
	patterns []string
}

func newRoutes() *routes { return &routes{ServeMux: http.NewServeMux()} }

// Handle registers h for pattern.
func (m *routes) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers f for pattern.
func (m *routes) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(f))
}

// Routes returns the patterns of every endpoint the server serves, as
// registered ("GET /healthz", "POST /v1/desks/{desk}/pause", the
// catch-all "/", and those added with Handle), in the order they were:
// what a test walks to check each endpoint's credentials and Host rule.
func (s *Server) Routes() []string { return append([]string(nil), s.mux.patterns...) }
