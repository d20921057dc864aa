// Package natstest runs a real NATS server with JetStream inside a test
// (nats-server, embedded), for the tests of deskd's NATS ingress and
// events. Only tests import it.
package natstest

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded nats-server with JetStream, on 127.0.0.1.
type Server struct {
	tb testing.TB
	// Dir is its JetStream store folder; a restart keeps it.
	Dir string
	// Port is its client port, kept across restarts.
	Port int
	srv  *server.Server
}

// Start starts a server on a free port with a store folder of its own;
// it is shut down at the end of the test.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartAt(tb, -1)
}

// StartAt is Start on port (-1: a free one).
func StartAt(tb testing.TB, port int) *Server {
	tb.Helper()
	s := &Server{tb: tb, Dir: tb.TempDir(), Port: port}
	s.Up()
	tb.Cleanup(s.Down)
	return s
}

// URL is the server's client URL, nats://127.0.0.1:<port>.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// Up starts the server (again) on Port with Dir, and waits until it
// takes connections.
func (s *Server) Up() {
	s.tb.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: s.Port, JetStream: true, StoreDir: s.Dir, NoSigs: true})
	if err != nil {
		s.tb.Fatalf("natstest: new server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.tb.Fatalf("natstest: the server is not ready within 10s")
	}
	s.srv = srv
	if s.Port == -1 {
		s.Port = srv.Addr().(*net.TCPAddr).Port
	}
}

// Down shuts the server down and waits until it has; Up starts it again.
func (s *Server) Down() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}
