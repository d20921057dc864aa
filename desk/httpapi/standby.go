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
	// Epoch is the owner's epoch of the desk (0 while no host owns it): a
	// client sent back to a host it asked already follows only a higher
	// epoch than it has seen (the desk moved), never a loop.
	Epoch uint64 `json:"epoch,omitempty"`
}

// locator is what the server reads of where a desk is when its Desks
// knows more than the desks it runs (*desk.Set does): one look, so that a
// desk taken over or handed over while a request looks is seen in one
// state, never in none.
type locator interface {
	Locate(name string) desk.Place
}

var _ locator = (*desk.Set)(nil)

// locate returns where the desk called name is.
func (s *Server) locate(name string) desk.Place {
	if l, ok := s.desks.(locator); ok {
		return l.Locate(name)
	}
	d, _ := s.desks.Get(name)
	return desk.Place{Name: name, Desk: d}
}

// leftHere answers, and reports true, when the desk called name, which a
// request found running here, has left this host since (its lease lost:
// it stands by, or is starting again here): a request whose act failed
// because the desk stopped, or could no longer write (fenced), is
// answered as a request a moment later is, 421 naming the owner, not as
// a failure of this host's desk.
func (s *Server) leftHere(w http.ResponseWriter, r *http.Request, name string) bool {
	p := s.locate(name)
	if p.Desk != nil || p.State == "" || p.State == desk.StateFailed {
		return false
	}
	s.notHere(w, r, name, p)
	return true
}

// notHere answers for a desk that does not run on this host, by where it
// is (p): 421 when this host stands by for it (another host owns it, or
// none yet), 503 while it starts the desk it has just won or when the
// desk failed to start, 404 for a name it does not know.
func (s *Server) notHere(w http.ResponseWriter, r *http.Request, name string, p desk.Place) {
	switch p.State {
	case desk.StateStarting:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("desk %q is starting on this host, which has just taken it (epoch %d): try again shortly", name, p.Owner.Epoch))
	case desk.StateStandby:
		if !p.Owned {
			writeJSON(w, http.StatusMisdirectedRequest, MisdirectedResponse{
				Error: fmt.Sprintf("desk %q does not run on this host: no host of the cluster owns it now (the hosts contend for it); try again shortly", name)})
			return
		}
		writeJSON(w, http.StatusMisdirectedRequest, MisdirectedResponse{
			Error: fmt.Sprintf("desk %q runs on host %s (epoch %d), not on this one: send the request there", name, p.Owner.Host, p.Owner.Epoch),
			Owner: p.Owner.Host, Addr: p.Owner.Addr, Epoch: p.Owner.Epoch})
	case desk.StateFailed:
		msg := fmt.Sprintf("desk %q failed to start", name)
		if credentialOf(r) == credOperator {
			msg += ": " + p.Failure.Reason
		}
		writeError(w, http.StatusServiceUnavailable, msg)
	default:
		writeError(w, http.StatusNotFound, s.unknownDesk(r, name))
	}
}
