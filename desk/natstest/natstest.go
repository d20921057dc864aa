// Package natstest runs a real NATS server with JetStream inside a test
// (nats-server, embedded), for the tests of deskd's NATS ingress and
// events. Only tests import it.
package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/testport"
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

// StartAt is Start on port (-1: a free one below the ephemeral range,
// testport.Free, which the kernel gives no outgoing connection while the
// server is down).
func StartAt(tb testing.TB, port int) *Server {
	tb.Helper()
	picked := port == -1
	if picked {
		port = testport.Free(tb)
	}
	s := &Server{tb: tb, Dir: tb.TempDir(), Port: port}
	for try := 1; ; try++ {
		err := s.up()
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || !picked || try == 3 {
			tb.Fatalf("natstest: %v", err)
		}
		s.Port = testport.Free(tb) // another process took the port between the guess and the bind
	}
	tb.Cleanup(s.Down)
	return s
}

// URL is the server's client URL, nats://127.0.0.1:<port>.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// Up starts the server (again) on Port with Dir, and waits until it
// takes connections.
func (s *Server) Up() {
	s.tb.Helper()
	if err := s.up(); err != nil {
		s.tb.Fatalf("natstest: %v", err)
	}
}

// up is Up, with its error.
func (s *Server) up() error {
	srv, err := run(&server.Options{Host: "127.0.0.1", Port: s.Port, JetStream: true, StoreDir: s.Dir, NoSigs: true}, s.Port)
	if err != nil {
		return fmt.Errorf("the server: %w", err)
	}
	s.srv = srv
	return nil
}

// readyWait is how long a server started is given to take connections:
// a loaded machine (the whole suite, under -race) recovers a JetStream
// store slowly.
const readyWait = 30 * time.Second

// errPortTaken is run's error when a port of the server was taken by
// another process (between testport's guess and the server's bind).
var errPortTaken = errors.New("port taken by another process")

// run starts a server of opts and waits, up to readyWait, until it takes
// connections on ports (its client port, then its route port). When it
// does not, it is shut down, and the error says why: a port another
// process holds (errPortTaken: the server's listener is not up and the
// port cannot be bound), or the wait passed.
func run(opts *server.Options, ports ...int) (*server.Server, error) {
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	go srv.Start()
	deadline := time.Now().Add(readyWait)
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		err := taken(srv, ports)
		if err == nil && time.Now().After(deadline) {
			err = fmt.Errorf("not ready within %v (its ports are free: it is slow, not refused)", readyWait)
		}
		if err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, err
		}
	}
	return srv, nil
}

// taken returns an error wrapping errPortTaken when a listener of srv on
// ports (client, route) is not up and something answers on its port:
// another process has it. It dials, never binds, so that it cannot take
// the port from srv.
func taken(srv *server.Server, ports []int) error {
	listening := func(i int) bool {
		return i == 0 && srv.Addr() != nil || i == 1 && srv.ClusterAddr() != nil
	}
	for i, port := range ports {
		if listening(i) {
			continue
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			continue // nothing there yet: srv has not bound it
		}
		c.Close()
		if !listening(i) { // not srv's, which may have bound it meanwhile
			return fmt.Errorf("127.0.0.1:%d: %w (something else answers there)", port, errPortTaken)
		}
	}
	return nil
}

// Down shuts the server down and waits until it has; Up starts it again.
func (s *Server) Down() { shutdown(&s.srv) }

// shutdown shuts *srv down, if it runs, waits until it has, and clears
// it: a server's and a cluster node's Down.
func shutdown(srv **server.Server) {
	if *srv == nil {
		return
	}
	(*srv).Shutdown()
	(*srv).WaitForShutdown()
	*srv = nil
}

// Client connects a publisher to the server (reconnecting forever, as
// the server may be restarted) and returns its connection and JetStream;
// both are closed at the end of the test.
func (s *Server) Client() (*nats.Conn, jetstream.JetStream) {
	s.tb.Helper()
	return connect(s.tb, s.URL())
}

// connect connects to urls (comma-separated), reconnecting forever, and
// returns the connection and its JetStream, both closed at the end of the
// test.
func connect(tb testing.TB, urls string) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		tb.Fatalf("natstest: connect to %s: %v", urls, err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("natstest: jetstream: %v", err)
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
// pending delivery or ack. It reads the consumer's info at once and again
// after each ack, nak or term the consumer gets (seen on
// $JS.ACK.<stream>.<consumer>.>), but only once the server has applied
// what it saw: the server passes an ack on to subscribers before its
// consumer applies it (in a queue of the consumer's own), so an info read
// at once can still count the message pending, and when that ack was the
// last one nothing would ever make WaitAcked read again. Before each read
// it therefore sends a no-op through that same queue (a progress ack of
// a sequence never delivered, with a reply; the server queues an ack for
// its consumer as it passes it on), answered once everything before it
// is applied. Acks that come faster than it reads are coalesced
// into one more read, never dropped. A read that fails (the no-op not
// answered within 5s by a server busy applying a long queue) is tried
// again at once: the ack it waits for may have been the last. At the
// deadline it fails with the consumer's info as it is then.
func WaitAcked(tb testing.TB, nc *nats.Conn, js jetstream.JetStream, stream, consumer string, timeout time.Duration) *jetstream.ConsumerInfo {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	barrier := ackSubject(stream, consumer, barrierSeq)
	acked := make(chan struct{}, 1)
	sub, err := nc.Subscribe("$JS.ACK."+stream+"."+consumer+".>", func(m *nats.Msg) {
		if m.Subject == barrier {
			return // WaitAcked's own
		}
		select {
		case acked <- struct{}{}:
		default: // a read is due already; it will see this ack too
		}
	})
	if err != nil {
		tb.Fatalf("natstest: subscribe to the acks of consumer %s of %s: %v", consumer, stream, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil { // the subscription is in place before the first read
		tb.Fatalf("natstest: subscribe to the acks of consumer %s of %s: %v", consumer, stream, err)
	}
	var (
		info *jetstream.ConsumerInfo
		last error
	)
	for {
		info, last = appliedInfo(ctx, nc, js, stream, consumer, barrier)
		if last == nil && info.NumAckPending == 0 && info.NumPending == 0 {
			return info
		}
		var retry <-chan time.Time
		if last != nil { // the server was too busy to answer: read again, as no ack may come
			retry = time.After(50 * time.Millisecond)
		}
		select {
		case <-acked:
		case <-retry:
		case <-ctx.Done():
			fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
			if c, err := js.Consumer(fctx, stream, consumer); err == nil {
				if now, err := c.Info(fctx); err == nil {
					info = now
				}
			}
			fcancel()
			tb.Fatalf("natstest: consumer %s of %s still has messages pending after %v: %+v (last error: %v)", consumer, stream, timeout, info, last)
		}
	}
}

// barrierSeq is the stream sequence of WaitAcked's no-op progress ack:
// far beyond any stream of a test, so never a message that is pending.
const barrierSeq = 1 << 50

// ackSubject is the subject the server gives a delivery of the message
// at stream sequence seq of consumer on stream (its first delivery, in
// the format JetStream uses unless the server enables its version 2).
func ackSubject(stream, consumer string, seq uint64) string {
	return fmt.Sprintf("$JS.ACK.%s.%s.1.%d.%d.0.0", stream, consumer, seq, seq)
}

// appliedInfo reads the consumer's info once the server's consumer has
// applied every ack it had when it was called: a progress ack of
// barrier's (no) message, whose reply comes after those acks are applied.
func appliedInfo(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, stream, consumer, barrier string) (*jetstream.ConsumerInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := nc.RequestMsgWithContext(rctx, &nats.Msg{Subject: barrier, Data: []byte("+WPI")}); err != nil {
		return nil, fmt.Errorf("natstest: wait until consumer %s of %s has applied its acks: %w", consumer, stream, err)
	}
	c, err := js.Consumer(rctx, stream, consumer)
	if err != nil {
		return nil, fmt.Errorf("natstest: look up consumer %s of %s: %w", consumer, stream, err)
	}
	info, err := c.Info(rctx)
	if err != nil {
		return nil, fmt.Errorf("natstest: info of consumer %s of %s: %w", consumer, stream, err)
	}
	return info, nil
}
