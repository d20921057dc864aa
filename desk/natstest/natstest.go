// Package natstest runs a real NATS server with JetStream inside a test
// (nats-server, embedded), for the tests of deskd's NATS ingress and
// events. Only tests import it.
package natstest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// Client connects a publisher to the server (reconnecting forever, as
// the server may be restarted) and returns its connection and JetStream;
// both are closed at the end of the test.
func (s *Server) Client() (*nats.Conn, jetstream.JetStream) {
	s.tb.Helper()
	nc, err := nats.Connect(s.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		s.tb.Fatalf("natstest: connect: %v", err)
	}
	s.tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		s.tb.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// Publish publishes body on subject, with a Nats-Msg-Id when id is not
// empty, and retries (for up to 60s) until a stream has stored it: the
// stream may not exist yet, or the server may be away. It fails the test
// if it cannot; from a goroutine of the test's own, call TryPublish.
func Publish(tb testing.TB, js jetstream.JetStream, subject, id, body string) *jetstream.PubAck {
	tb.Helper()
	ack, err := TryPublish(js, subject, id, body)
	if err != nil {
		tb.Fatal(err)
	}
	return ack
}

// TryPublish is Publish without the test: it returns the last error
// after 60s of retries.
func TryPublish(js jetstream.JetStream, subject, id, body string) (*jetstream.PubAck, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := &nats.Msg{Subject: subject, Data: []byte(body), Header: nats.Header{}}
		if id != "" {
			m.Header.Set(jetstream.MsgIDHeader, id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ack, err := js.PublishMsg(ctx, m)
		cancel()
		if err == nil {
			return ack, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("natstest: publish %s on %s: %w", id, subject, err)
		}
		<-time.After(50 * time.Millisecond) // "no responders" fails at once: do not spin a core until the stream is there
	}
}

// WaitAcked waits, up to timeout, until the consumer has no message
// pending delivery or ack; it checks again on each ack the consumer
// gets (seen on $JS.ACK.<stream>.<consumer>.>).
func WaitAcked(tb testing.TB, nc *nats.Conn, js jetstream.JetStream, stream, consumer string, timeout time.Duration) *jetstream.ConsumerInfo {
	tb.Helper()
	acks := make(chan *nats.Msg, 4096)
	sub, err := nc.ChanSubscribe("$JS.ACK."+stream+"."+consumer+".>", acks)
	if err != nil {
		tb.Fatalf("natstest: subscribe to acks: %v", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var (
		info *jetstream.ConsumerInfo
		last error
	)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if c, err := js.Consumer(ctx, stream, consumer); err != nil {
			last = err
		} else if info, last = c.Info(ctx); last == nil && info.NumAckPending == 0 && info.NumPending == 0 {
			cancel()
			return info
		}
		cancel()
		select {
		case <-acks:
		case <-deadline.C:
			tb.Fatalf("natstest: consumer %s of %s still has messages pending after %v: %+v, %v", consumer, stream, timeout, info, last)
		}
	}
}
