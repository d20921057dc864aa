package httpapi

import (
	"net/http"
)

// traced runs h on r and then logs, at trace level, the request's method,
// path, status and duration on deskd's clock. The query is left out: it
// is not logged, whatever it carries.
func (s *Server) traced(w http.ResponseWriter, r *http.Request, h http.HandlerFunc) {
	e := s.o.Log.Trace()
	if !e.Enabled() {
		h(w, r)
		return
	}
	start := s.o.Clock.Now()
	rec := &statusRecorder{ResponseWriter: w}
	h(rec, r)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	e.Str("method", r.Method).Str("path", r.URL.Path).Int("status", status).
		Dur("duration", s.o.Clock.Now().Sub(start)).Msg("http request")
}

// statusRecorder keeps the status a handler wrote. Unwrap lets
// http.ResponseController reach the writer's Flush.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader keeps the first status and passes it on.
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write notes the implicit 200 of a body written without a status.
func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the wrapped writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// traceSSE logs, at trace level, that an event-stream client connected,
// and returns what logs its disconnection with how long it stayed.
func (s *Server) traceSSE(r *http.Request, desk string, follow bool) (disconnected func()) {
	start := s.o.Clock.Now()
	s.o.Log.Trace().Str("remote", r.RemoteAddr).Str("desk", desk).Bool("follow", follow).Msg("event stream client connected")
	return func() {
		s.o.Log.Trace().Str("remote", r.RemoteAddr).Str("desk", desk).Dur("duration", s.o.Clock.Now().Sub(start)).
			Msg("event stream client disconnected")
	}
}
