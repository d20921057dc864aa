package router

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Sizes of a Pool.
const (
	// MinPoolIdlePerHost is the fewest idle connections a Pool keeps per
	// model service, however few desks it serves.
	MinPoolIdlePerHost = 16
	// PoolIdleTimeout is how long a Pool keeps an idle connection open.
	PoolIdleTimeout = 90 * time.Second

	// copyBufSize is the size of the buffers a request body is copied to
	// its connection through (copyConn): io.Copy's.
	copyBufSize = 32 << 10

	// drainMax and drainWait bound what closing an HTTP/1.1 answer reads
	// of what is left of it (see drainBody). The end of a finished stream
	// is a few bytes that come within a round trip; a second is generous
	// on a loaded machine, and holds up only a call that failed mid-stream
	// (a cut reply cancels its call first, which ends the drain at once).
	drainMax  = 4 << 10
	drainWait = time.Second
)

// Pool is the connections to the model services that every model client
// of a daemon shares (ClientOptions.HTTPClient, Spec.HTTPClient), so that
// a call reuses a kept-alive connection (and its TLS session) instead of
// opening one: one http.Transport, HTTP/2 where the service speaks it
// (ForceAttemptHTTP2; all of a service's calls then share one connection),
// and for HTTP/1.1 services an idle pool of max(desks,
// MinPoolIdlePerHost) connections per service, each kept PoolIdleTimeout.
// A desk runs one turn at a time, so that is enough for every desk to be
// calling at once. Proxies come from the environment (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY), as with http.DefaultTransport.
//
// The Pool sets no overall timeout: each call is bounded by its model's
// own timeout, the whole stream included (ClientOptions.Timeout).
//
// Fit grows the pool when the daemon comes to run more desks. Its methods
// are safe for concurrent use.
type Pool struct {
	client *http.Client

	// copyBufs are the buffers of copyConn's ReadFrom (*[]byte).
	copyBufs sync.Pool

	mu      sync.Mutex
	base    *http.Transport // cloned for each transport
	cur     *http.Transport // the transport of new calls
	perHost int             // cur's MaxIdleConnsPerHost
}

// NewPool returns a pool sized for desks desks. base, if not nil, is the
// transport it clones (its proxy, dialer and TLS settings); nil clones
// http.DefaultTransport.
func NewPool(desks int, base *http.Transport) *Pool {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	p := &Pool{base: base.Clone()}
	p.copyBufs.New = func() any { b := make([]byte, copyBufSize); return &b }
	p.client = &http.Client{Transport: poolTransport{p}}
	p.perHost = idlePerHost(desks)
	p.cur = p.transport(p.perHost)
	return p
}

// idlePerHost is the idle connections per service for desks desks.
func idlePerHost(desks int) int { return max(desks, MinPoolIdlePerHost) }

// transport returns a new transport keeping perHost idle connections per
// service.
func (p *Pool) transport(perHost int) *http.Transport {
	t := p.base.Clone()
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConns = 0 // no limit across services: each has perHost
	t.MaxIdleConnsPerHost = perHost
	t.IdleConnTimeout = PoolIdleTimeout
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &copyConn{Conn: c, bufs: &p.copyBufs}, nil
	}
	return t
}

// copyConn is a connection of a Pool whose ReadFrom copies through a
// buffer of the pool's. An HTTP/1.1 request body larger than what the
// transport's write buffer still holds after the headers goes to the
// connection's ReadFrom, and a TCP connection's ReadFrom falls back, for
// a body that is no file, to an io.Copy that allocates a buffer of up to
// 32 KiB for each request: with many desks calling at once, most of the
// bytes deskd allocated (and so most of its garbage collection). The
// bytes written are the same. (Over TLS the transport wraps the
// connection in a tls.Conn, which has no ReadFrom; HTTP/2 writes bodies
// in frames of its own.)
type copyConn struct {
	net.Conn
	bufs *sync.Pool
}

// ReadFrom copies r to the connection through a pooled buffer.
func (c *copyConn) ReadFrom(r io.Reader) (int64, error) {
	b := c.bufs.Get().(*[]byte)
	defer c.bufs.Put(b)
	return io.CopyBuffer(writerOnly{c.Conn}, r, *b)
}

// writerOnly hides every method of a Writer but Write, so that
// io.CopyBuffer uses the buffer given rather than a ReadFrom.
type writerOnly struct{ io.Writer }

// Client returns the client that every model client of the daemon is
// given: the same one on every call. It has no Timeout (see Pool).
func (p *Pool) Client() *http.Client { return p.client }

// IdlePerHost returns how many idle connections the pool keeps per model
// service.
func (p *Pool) IdlePerHost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.perHost
}

// Fit sizes the pool for desks desks: when it keeps too few idle
// connections per service for them, new calls go through a new transport
// that keeps max(desks, twice as many as before), and the old one's idle
// connections are closed (its calls under way finish on it). A pool never
// shrinks.
func (p *Pool) Fit(desks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if idlePerHost(desks) <= p.perHost {
		return
	}
	old := p.cur
	p.perHost = max(desks, 2*p.perHost)
	p.cur = p.transport(p.perHost)
	old.CloseIdleConnections()
}

// CloseIdleConnections closes the pool's idle connections.
func (p *Pool) CloseIdleConnections() {
	p.current().CloseIdleConnections()
}

func (p *Pool) current() *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// poolTransport is the RoundTripper of a Pool's client: the pool's
// current transport.
type poolTransport struct{ p *Pool }

// RoundTrip makes one request on the pool's current transport. An
// HTTP/1.x answer's body drains on Close (drainBody).
func (t poolTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.p.current().RoundTrip(req)
	if err == nil && resp.ProtoMajor == 1 && resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = &drainBody{ReadCloser: resp.Body}
	}
	return resp, err
}

// drainBody is the body of an HTTP/1.x answer that, when closed before its
// end, first reads what is left of it (up to drainMax bytes, for up to
// drainWait), so that its connection can go back to the pool. The clients
// stop reading a stream at its last event ([DONE], message_stop) and
// close it; the chunked body's last chunk often comes in a packet of its
// own, and an HTTP/1.1 connection whose body was not read to its end is
// closed, not reused: without the drain most calls opened a connection of
// their own. A body still streaming is not read for longer than
// drainWait: then the connection is closed, as before.
type drainBody struct {
	io.ReadCloser
	once sync.Once
	err  error
}

// Close drains the rest of the body, within its bounds, and closes it.
func (b *drainBody) Close() error {
	b.once.Do(func() {
		// Closing the body ends a read in progress: the transport closes
		// the connection.
		stop := time.AfterFunc(drainWait, func() { _ = b.ReadCloser.Close() })
		_, _ = io.CopyN(io.Discard, b.ReadCloser, drainMax)
		stop.Stop()
		b.err = b.ReadCloser.Close()
	})
	return b.err
}

// CloseIdleConnections closes the pool's idle connections
// (http.Client.CloseIdleConnections calls it).
func (t poolTransport) CloseIdleConnections() { t.p.CloseIdleConnections() }
