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

// standbyDesks is what the server reads of the desks of a cluster this
// host stands by for, when its Desks has them (*desk.Set does).
type standbyDesks interface {
	StandbyOwner(name string) (o desk.Owner, ok, standby bool)
}

var _ standbyDesks = (*desk.Set)(nil)

// misdirected answers 421 when this host stands by for the desk called
// name (another host owns it, or none yet), and reports whether it did.
func (s *Server) misdirected(w http.ResponseWriter, name string) bool {
	sb, ok := s.desks.(standbyDesks)
	if !ok {
		return false
	}
	o, owned, standby := sb.StandbyOwner(name)
	if !standby {
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
// host stands by for it (state standby).
func (s *Server) standbyStatus(name string) (desk.Status, bool) {
	for _, st := range s.statuses() {
		if st.Name == name && st.State == desk.StateStandby {
			return st, true
		}
	}
	return desk.Status{}, false
}
