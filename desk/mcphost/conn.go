package mcphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
)

// conn is one connection to a server: its session, its tools and, for a
// stdio server, its process.
type conn struct {
	sess  *mcp.ClientSession
	tools toolList
	proc  *process      // nil for an HTTP server
	http  *http.Client  // nil for a stdio server
	done  chan struct{} // closed when the connection has ended (fail)
	// changed gets a value when the server says its tools changed.
	changed chan struct{}

	once sync.Once
	err  error // why it ended, set before done is closed

	closeOnce sync.Once
	watchers  sync.WaitGroup
}

// dial starts or reaches the server, and lists its tools, within the
// server's timeout on clk. current returns the server's settings now: the
// connection reads its timeout from it at each request, so that a reload
// applies to the next one (nothing is captured at connect time).
func dial(ctx context.Context, clk clock.Clock, grace time.Duration, current func() *config.MCPServer) (*conn, error) {
	cfg := current()
	ctx, stop, timedOut := withTimeout(ctx, clk, timeout(cfg))
	defer stop()
	c, err := connect(ctx, clk, grace, cfg, current)
	if err == nil {
		err = c.listTools(ctx)
	}
	if err == nil {
		return c, nil
	}
	if c != nil {
		c.close()
	}
	if timedOut() {
		err = fmt.Errorf("no answer within %s", timeout(cfg))
	}
	if c != nil && c.proc != nil {
		err = c.proc.explain(err)
	}
	return nil, err
}

// connect starts the transport and the MCP session, of cfg; current
// returns the server's settings at each request (its timeout).
func connect(ctx context.Context, clk clock.Clock, grace time.Duration, cfg *config.MCPServer, current func() *config.MCPServer) (*conn, error) {
	c := &conn{done: make(chan struct{}), changed: make(chan struct{}, 1)}
	var t mcp.Transport
	if cfg.URL != "" {
		c.http = httpClient(cfg, clk, grace, func() time.Duration { return timeout(current()) })
		// No retries of its own: a broken stream ends the connection, and
		// the supervisor reconnects with its backoff, on the host's clock.
		// MaxEventSize given: the SDK's streamable client has no cap of
		// its own on an event (an application/json body is capped by
		// httpClient).
		t = &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: c.http, MaxRetries: -1, MaxEventSize: MaxMessage}
	} else {
		p, err := startProcess(cfg, grace)
		if err != nil {
			return nil, err
		}
		c.proc = p
		t = stdinTransport{Transport: &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: MaxMessage}, cut: c.cutInput, grace: grace}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "deskd", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default: // a re-listing is due already
			}
		},
	})
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		if c.proc != nil {
			c.proc.stop()
		}
		return c, fmt.Errorf("connect: %w", err)
	}
	c.sess = sess
	c.watch()
	return c, nil
}

// listTools reads every page of the server's tools into c.tools (before
// the connection is up).
func (c *conn) listTools(ctx context.Context) error {
	tools, err := c.list(ctx)
	c.tools = tools
	return err
}

// list reads the pages of the server's tools, up to MaxServerTools
// tools and maxToolPages pages: a server that lists more, or pages
// without end, is cut there.
func (c *conn) list(ctx context.Context) (toolList, error) {
	var tools []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxToolPages {
			l := newToolList(tools, false)
			l.pages = true
			return l, nil
		}
		res, err := c.sess.ListTools(ctx, params)
		if err != nil {
			return toolList{}, fmt.Errorf("list tools: %w", err)
		}
		for _, t := range res.Tools {
			if len(tools) == MaxServerTools {
				return newToolList(tools, true), nil
			}
			tools = append(tools, t)
		}
		if res.NextCursor == "" {
			return newToolList(tools, false), nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// watch ends the connection (fail) when the session ends or the process
// exits. A session that ends gives its process a moment to exit, so that
// the reason is the exit status.
func (c *conn) watch() {
	sessEnded := make(chan struct{})
	var sessErr error // set before sessEnded is closed
	c.watchers.Add(1)
	go func() {
		defer c.watchers.Done()
		sessErr = c.sess.Wait()
		close(sessEnded)
	}()
	c.watchers.Add(1)
	go func() {
		defer c.watchers.Done()
		if c.proc == nil {
			<-sessEnded
			if sessErr != nil {
				c.fail(fmt.Errorf("the connection closed: %w", sessErr))
			} else {
				c.fail(errors.New("the connection closed"))
			}
			return
		}
		select {
		case <-c.proc.exited:
		case <-sessEnded:
			grace := time.NewTimer(c.proc.grace)
			defer grace.Stop()
			select {
			case <-c.proc.exited:
			case <-grace.C:
				c.fail(c.proc.explain(errors.New("it closed its output")))
				return
			}
		}
		c.fail(c.proc.explain(nil))
	}()
}

// fail ends the connection for err (the first reason wins).
func (c *conn) fail(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
	})
}

// broke ends the connection after a call failed for err, and returns why
// it ended. A stdio server's process that is exiting is given its grace
// to do so, so that the reason is its exit rather than the broken pipe.
func (c *conn) broke(err error) error {
	if c.proc != nil {
		t := time.NewTimer(c.proc.grace)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
		}
	}
	c.fail(err)
	return c.failure()
}

// alive reports whether the server answers a ping within d on clk: after
// a call failed otherwise than by the server's refusal, it tells a bad
// answer (the connection goes on) from a broken connection.
func (c *conn) alive(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	pctx, stop, _ := withTimeout(ctx, clk, d)
	defer stop()
	return c.sess.Ping(pctx, nil) == nil
}

func (c *conn) failure() error {
	<-c.done
	return c.err
}

// close ends the session and stops the process; it waits for both.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		if c.proc != nil {
			// The session's Close waits for its writes; one blocked on a
			// server that does not read its stdin ends only when the pipe
			// closes.
			c.proc.closeInput()
		}
		if c.sess != nil {
			c.sess.Close()
		}
		if c.proc != nil {
			c.proc.stop()
		}
		if c.http != nil {
			c.http.CloseIdleConnections()
		}
		c.watchers.Wait()
		c.fail(errors.New("closed by deskd"))
	})
}

func (c *conn) stderr() string {
	if c.proc == nil {
		return ""
	}
	return c.proc.stderr.String()
}

// httpClient sends the server's secret headers with every request to the
// server's own origin (scheme, host and port of its url), and never
// anywhere else: a redirect to another origin is not followed. A POST
// (a call, a listing) and its answer end after twice the server's timeout
// (as timeoutNow reads it when the POST starts) on clk, whatever the SDK
// does with a call given up on.
func httpClient(cfg *config.MCPServer, clk clock.Clock, grace time.Duration, timeoutNow func() time.Duration) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	origin := originOf(cfg.URL)
	return &http.Client{
		// Twice the call's timeout: a backstop behind the call's own
		// (which ends its request), never racing it. Read at each POST:
		// a reload's new timeout applies to the next request.
		Transport: headers{base: base, h: cfg.Secrets.Headers, origin: origin, server: cfg.Name, clock: clk, grace: grace,
			timeout: func() time.Duration { return 2 * timeoutNow() }},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if originOf(req.URL.String()) != origin {
				return fmt.Errorf("MCP server %s redirected to another host (%s); deskd does not follow it", cfg.Name, req.URL.Host)
			}
			if len(via) >= 10 {
				return fmt.Errorf("MCP server %s redirected %d times", cfg.Name, len(via))
			}
			return nil
		},
	}
}

// originOf is a URL's scheme and host (with its port), lower-cased; ""
// for a URL that does not parse.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// headers is the RoundTripper of an HTTP server's client: it adds the
// secret headers (to the server's origin only) and caps each answer that
// is not an event stream at MaxMessage bytes.
type headers struct {
	base   http.RoundTripper
	h      map[string][]string
	origin string
	server string
	clock  clock.Clock
	// timeout returns how long a POST and its answer may take, now.
	timeout func() time.Duration
	// grace bounds a DELETE (the session's end, sent as the connection
	// closes) on the wall clock, as a stdio server's exit is bounded.
	grace time.Duration
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	var release func()
	switch r.Method {
	case http.MethodPost:
		r, release = t.bounded(r)
	case http.MethodDelete: // a server that never answers it holds no Close
		ctx, cancel := context.WithTimeout(r.Context(), t.grace)
		r, release = r.WithContext(ctx), cancel
	}
	resp, err := t.send(r)
	if err != nil {
		if release != nil {
			release()
		}
		return nil, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		resp.Body = &cappedBody{body: resp.Body, left: MaxMessage, server: t.server}
	}
	if release != nil {
		resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	}
	return resp, nil
}

// bounded returns r under a context that ends after t.timeout() on the
// host's clock (a server that answers a call slowly, or never, is
// not held past it), and the func that ends it once the answer is read.
func (t headers) bounded(r *http.Request) (*http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	timer := t.clock.NewTimer(t.timeout())
	done := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			cancel()
		case <-done:
		}
	}()
	var once sync.Once
	return r.WithContext(ctx), func() {
		once.Do(func() {
			timer.Stop()
			close(done)
			cancel()
		})
	}
}

// releasingBody calls release when the answer's body is closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

func (t headers) send(r *http.Request) (*http.Response, error) {
	if len(t.h) == 0 || originOf(r.URL.String()) != t.origin {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for name, values := range t.h {
		r.Header.Del(name)
		for _, v := range values {
			r.Header.Add(name, v)
		}
	}
	return t.base.RoundTrip(r)
}

// cappedBody fails a read past its cap: deskd never holds more of one
// answer than MaxMessage bytes.
type cappedBody struct {
	body   io.ReadCloser
	left   int64
	server string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	return n, err
}

func (b *cappedBody) tooLarge() error {
	return fmt.Errorf("an answer of MCP server %s is larger than %d bytes", b.server, MaxMessage)
}

func (b *cappedBody) Close() error { return b.body.Close() }

func (t headers) CloseIdleConnections() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func timeout(cfg *config.MCPServer) time.Duration {
	if cfg.Timeout > 0 {
		return cfg.Timeout
	}
	return config.DefaultMCPTimeout
}

// withTimeout is context.WithTimeout on clk: the returned context ends
// when d has passed on clk; timedOut reports whether that is why it ended.
// stop releases the timer and must be called.
func withTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (_ context.Context, stop func(), timedOut func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	t := clk.NewTimer(d)
	var fired atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-t.C():
			fired.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { t.Stop(); cancel(); <-done }, fired.Load
}
