package httpapi

// The desk page's past replays (deskd replay, desk/replay), read only:
// the reports that replays run without --out left under the state
// folder, <state_dir>/replays/<desk>/<date>-<n>/report.json. A report
// is found beside the desk's folder (<state_dir>/desks/<desk>), never in
// it; this API never starts a replay.

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"

	"github.com/deskd/deskd/desk/replay"
)

// ReplaysResponse is the body of GET /v1/desks/{desk}/replays.
type ReplaysResponse struct {
	// Replays are the desk's past replays, newest first.
	Replays []replay.Summary `json:"replays"`
}

// routeReplays adds the past replays' endpoints.
func (s *Server) routeReplays() {
	s.mux.HandleFunc("GET /v1/desks/{desk}/replays", s.listReplays)
	s.mux.HandleFunc("GET /v1/desks/{desk}/replays/{replay}", s.getReplay)
}

// replaysState returns the state folder of the desk the path names (its
// folder's grandparent), or answers 404.
func (s *Server) replaysState(w http.ResponseWriter, r *http.Request) (string, string, bool) {
	d, f, ok := s.folder(w, r)
	if !ok {
		return "", "", false
	}
	return filepath.Dir(filepath.Dir(f.Dir())), d.Name(), true
}

func (s *Server) listReplays(w http.ResponseWriter, r *http.Request) {
	state, name, ok := s.replaysState(w, r)
	if !ok {
		return
	}
	list, err := replay.List(state, name)
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ReplaysResponse{Replays: list})
}

func (s *Server) getReplay(w http.ResponseWriter, r *http.Request) {
	state, name, ok := s.replaysState(w, r)
	if !ok {
		return
	}
	id := r.PathValue("replay")
	if !replay.ValidID(id) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q does not name a replay", id))
		return
	}
	rep, err := replay.ReadReport(filepath.Join(replay.Dir(state, name), id))
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("desk %s has no replay %s", name, id))
		return
	}
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
