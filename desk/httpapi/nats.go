package httpapi

import (
	"time"

	"github.com/deskd/deskd/desk/natsconn"
)

// NATSStatus is the state of deskd's connection to NATS, in GET /healthz
// and GET /v1/desks (field nats, present when NATS is configured). NATS
// away does not make deskd unhealthy: the HTTP API, the spool folder and
// the schedules go on, so /healthz stays 200 and says so in this detail.
// Its fields are natsconn.Status's.
type NATSStatus struct {
	// Connected is true while a server is connected.
	Connected bool `json:"connected"`
	// State is connecting, connected, reconnecting or closed.
	State string `json:"state"`
	// Since is when State began, on deskd's clock.
	Since time.Time `json:"since"`
	// Server is the server connected to, while connected.
	Server string `json:"server,omitempty"`
	// Error is the last connection error, while not connected.
	Error string `json:"error,omitempty"`
}

// natsStatus is Options.NATS's answer, or nil without NATS.
func (s *Server) natsStatus() *NATSStatus {
	if s.o.NATS == nil {
		return nil
	}
	return s.o.NATS()
}

// NATSStatusOf returns the function that reads nc's state for
// Options.NATS; nil without NATS.
func NATSStatusOf(nc *natsconn.Conn) func() *NATSStatus {
	if nc == nil {
		return nil
	}
	return func() *NATSStatus { st := NATSStatus(nc.State()); return &st }
}
