package httpapi

import (
	"fmt"
	"net/http"

	"github.com/deskd/deskd/desk"
)

// MisdirectedResponse is the 421 of a request for a desk that another
// host of the cluster owns (config cluster): the client sends it again to
// Addr.
type MisdirectedResponse struct {
	Error string `json:"error"`
	// Owner is the host that owns the desk (its cluster.host); empty
	// while no host owns it (the hosts are contending for it).
	Owner string `json:"owner"`
	// Addr is the owner's API address; empty when it has none, or no
	// host owns the desk.
	Addr string `json:"addr"`
}

// clusterDesks is what the server reads of the desks of a cluster this
// host does not run, when its Desks has them (*desk.Set does).
type clusterDesks interface {
	Placement(name string) (o desk.Owner, ok bool, state desk.State)
}

var _ clusterDesks = (*desk.Set)(nil)

// misdirected answers 421 when this host stands by for the desk called
// name (another host owns it, or none yet), 503 while it starts the desk
// it has just won, and reports whether it answered.
func (s *Server) misdirected(w http.ResponseWriter, name string) bool {
	o, owned, state := s.placement(name)
	switch state {
	case desk.StateStarting:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("desk %q is starting on this host, which has just taken it (epoch %d): try again shortly", name, o.Epoch))
		return true
	case desk.StateStandby:
	default:
		return false
	}
	if !owned {
		writeJSON(w, http.StatusMisdirectedRequest, MisdirectedResponse{
			Error: fmt.Sprintf("desk %q does not run on this host: no host of the cluster owns it now (the hosts contend for it); try again shortly", name)})
		return true
	}
	writeJSON(w, http.StatusMisdirectedRequest, MisdirectedResponse{
		Error: fmt.Sprintf("desk %q runs on host %s (epoch %d), not on this one: send the request there", name, o.Host, o.Epoch),
		Owner: o.Host, Addr: o.Addr})
	return true
}

// standbyStatus returns the status of the desk called name when this
// host stands by for it, or is starting it (state standby, starting).
func (s *Server) standbyStatus(name string) (desk.Status, bool) {
	if _, _, state := s.placement(name); state == "" {
		return desk.Status{}, false
	}
	for _, st := range s.statuses() {
		if st.Name == name && (st.State == desk.StateStandby || st.State == desk.StateStarting) {
			return st, true
		}
	}
	return desk.Status{}, false
}

// placement is where the desk called name of a cluster is (Set.Placement);
// state "" without a cluster.
func (s *Server) placement(name string) (desk.Owner, bool, desk.State) {
	if cd, ok := s.desks.(clusterDesks); ok {
		return cd.Placement(name)
	}
	return desk.Owner{}, false, ""
}
