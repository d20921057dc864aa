// Package natsconn is deskd's connection to NATS: made from the main
// file's nats section, it never fails because the server is down (it
// keeps trying, with backoff and jitter, for as long as deskd runs) and
// it records its state for deskd status, GET /healthz, GET /v1/desks and
// the metrics.
package natsconn

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
)

// States of a connection, the values of Status.State.
const (
	// StateConnecting: never connected yet; trying.
	StateConnecting = "connecting"
	// StateConnected: connected to a server.
	StateConnected = "connected"
	// StateReconnecting: the connection was lost; trying again.
	StateReconnecting = "reconnecting"
	// StateClosed: closed (deskd is stopping).
	StateClosed = "closed"
)

// Reconnect backoff: the first retry after ReconnectMin, doubling up to
// ReconnectMax, each plus a random jitter of up to half the delay, so that
// many deskd instances do not come back at one instant.
const (
	ReconnectMin = 250 * time.Millisecond
	ReconnectMax = 15 * time.Second
)

// Status is the connection's state, as status reports it.
type Status struct {
	// Connected is true while a server is connected.
	Connected bool `json:"connected"`
	// State is connecting, connected, reconnecting or closed.
	State string `json:"state"`
	// Since is when State began, on deskd's clock.
	Since time.Time `json:"since"`
	// Server is the server connected to (without credentials), while connected.
	Server string `json:"server,omitempty"`
	// Error is the last connection error, while not connected.
	Error string `json:"error,omitempty"`
}

// Conn is a connection to NATS and its recorded state.
type Conn struct {
	nc    *nats.Conn
	clock clock.Clock
	log   zerolog.Logger

	mu      sync.Mutex
	st      Status
	changed chan struct{} // closed, and replaced, when st changes
}

// Connect connects to the servers of cfg. It returns at once, connected
// or not: while no server answers, the connection keeps trying (forever)
// and State says so. Its error is only for settings it cannot use (a
// credentials file it cannot read). A nil cfg (no nats section) is a nil
// *Conn, whose Close does nothing.
func Connect(cfg *config.NATS, log zerolog.Logger, clk clock.Clock) (*Conn, error) {
	if cfg == nil {
		return nil, nil
	}
	c := &Conn{clock: clk, log: log, st: Status{State: StateConnecting, Since: clk.Now()}, changed: make(chan struct{})}
	opts, err := c.options(cfg)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(joinURLs(cfg.URLs), opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", redacted(cfg.URLs), err)
	}
	c.mu.Lock() // the handlers, on nats.go's goroutine, read it
	c.nc = nc
	c.mu.Unlock()
	if nc.IsConnected() {
		c.set(StateConnected, nil)
		return c, nil
	}
	c.set(StateConnecting, nc.LastError())
	c.log.Warn().Str("servers", redacted(cfg.URLs)).Str("error", c.State().Error).
		Msg("nats: connecting: no server answers yet; deskd runs on and keeps trying")
	return c, nil
}

// options are the nats.go options of cfg, with the handlers that record
// the state.
func (c *Conn) options(cfg *config.NATS) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("deskd"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(backoff),
		nats.ConnectHandler(func(*nats.Conn) { c.set(StateConnected, nil) }),
		nats.ReconnectHandler(func(*nats.Conn) { c.set(StateConnected, nil) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { c.set(StateReconnecting, err) }),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { c.failed(err) }),
		nats.ClosedHandler(func(*nats.Conn) { c.set(StateClosed, nil) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.log.Warn().Err(err).Msg("nats: asynchronous error")
		}),
	}
	switch {
	case cfg.CredsFile != "":
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	case cfg.TokenFile != "":
		tok, err := config.ReadAuthToken(cfg.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("nats token_file: %w", err)
		}
		opts = append(opts, nats.Token(tok))
	case cfg.NkeyFile != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats nkey_file %s: %w", cfg.NkeyFile, err)
		}
		opts = append(opts, o)
	}
	if cfg.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CAFile))
	}
	if cfg.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.CertFile, cfg.TLS.KeyFile))
	}
	return opts, nil
}

// backoff is the delay before reconnect attempt n (1, 2, ...): ReconnectMin
// doubled per attempt up to ReconnectMax, plus up to half of it again.
func backoff(attempts int) time.Duration {
	d := ReconnectMin
	for i := 1; i < attempts && d < ReconnectMax; i++ {
		d *= 2
	}
	d = min(d, ReconnectMax)
	return d + rand.N(d/2+1)
}

// set records a new state; err, if any, as its error.
func (c *Conn) set(state string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.State == StateClosed {
		return
	}
	changed := c.st.State != state
	if changed {
		c.st.Since = c.clock.Now()
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.st.State, c.st.Connected = state, state == StateConnected
	c.st.Server, c.st.Error = "", ""
	if err != nil {
		c.st.Error = err.Error()
	}
	if c.st.Connected && c.nc != nil {
		c.st.Server = redacted([]string{c.nc.ConnectedUrlRedacted()})
	}
	if !changed {
		return
	}
	ev := c.log.Info()
	if !c.st.Connected {
		ev = c.log.Warn()
	}
	ev.Str("state", state).Str("server", c.st.Server).Str("error", c.st.Error).Msg("nats: " + state)
}

// failed records the error of a failed reconnect attempt.
func (c *Conn) failed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && !c.st.Connected {
		c.st.Error = err.Error()
	}
}

// State returns the connection's state now.
func (c *Conn) State() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	if st.State == StateConnected && c.nc != nil && !c.nc.IsConnected() {
		// The disconnect handler has not run yet: say what the
		// connection says, with a reason, as the handler will.
		st.Connected, st.State, st.Server, st.Since = false, StateReconnecting, "", c.clock.Now()
		st.Error = "the connection to the server was lost"
		if err := c.nc.LastError(); err != nil {
			st.Error = err.Error()
		}
	}
	return st
}

// Connected reports whether a server is connected now.
func (c *Conn) Connected() bool { return c.State().Connected }

// Changed returns a channel that is closed at the next change of state.
func (c *Conn) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// NATS returns the nats.go connection (for JetStream).
func (c *Conn) NATS() *nats.Conn { return c.nc }

// Close drains nothing: it closes the connection at once. Whoever
// consumes through it stops first.
func (c *Conn) Close() {
	if c == nil {
		return
	}
	c.nc.Close()
	c.set(StateClosed, nil)
}

func joinURLs(urls []string) string { return strings.Join(urls, ",") }

// redacted is urls without any credentials, for messages.
func redacted(urls []string) string {
	s := ""
	for i, raw := range urls {
		if i > 0 {
			s += ","
		}
		if u, err := url.Parse(raw); err == nil {
			s += u.Redacted()
		} else {
			s += "(unparsable url)"
		}
	}
	return s
}
