package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// Client is a client of the API of a running deskd.
type Client struct {
	// Token, if not empty, is sent as the bearer token of every request.
	Token string
	// Now returns the time WaitTrigger measures its timeout on; nil:
	// time.Now (the client's own clock, not deskd's).
	Now func() time.Time

	// Found, if set, says how the address was found ("from the runtime
	// file ..."): the error when nothing answers tells it.
	Found string
	// OnHop, if set, is told of each 421 the client follows to the owner
	// of a desk (a read, or a request OnOwner sends again).
	OnHop func(Hop)

	base string
	hc   *http.Client
}

// Error is an answer of the API that is not a success: its status and the
// message of its {"error": "..."} body (the body itself when it is not
// one).
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is what deskd said.
	Message string
	// Owner and Addr are, for a 421 of a host of a cluster that does not
	// run the desk, the host that owns it and its API address (empty
	// while no host owns it).
	Owner, Addr string
	// Epoch is, for such a 421, the owner's epoch of the desk (0 when the
	// host did not say).
	Epoch uint64
}

// Error returns the message with the status and, for a 421, the owner's
// address.
func (e *Error) Error() string {
	if e.Addr != "" {
		return fmt.Sprintf("%s (HTTP %d; the owner, host %s, serves at %s)", e.Message, e.Status, e.Owner, e.Addr)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// Dial makes a client of addr: host:port, unix:PATH, or an http(s):// URL.
// A wildcard host (0.0.0.0, ::) is reached on loopback. Nothing is sent
// until a request is made. The client keeps connections of its own (not
// http.DefaultTransport's): one kept open to a daemon that has stopped is
// never handed to a request meant for the next on its address, where a
// POST on it would fail with EOF.
func Dial(addr string) (*Client, error) {
	c := &Client{hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	switch {
	case strings.HasPrefix(addr, config.UnixPrefix):
		path := strings.TrimPrefix(addr, config.UnixPrefix)
		c.base = "http://deskd"
		c.hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
	case strings.HasPrefix(addr, "http://"), strings.HasPrefix(addr, "https://"):
		c.base = strings.TrimRight(addr, "/")
	default:
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("daemon address %q: want host:port, unix:PATH or a URL", addr)
		}
		if port == "0" {
			return nil, fmt.Errorf("daemon address %q has port 0 (the system chose one): give --addr as printed in the \"deskd ready\" line", addr)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		c.base = "http://" + net.JoinHostPort(host, port)
	}
	return c, nil
}

// URL returns the base URL of the requests: http://deskd over a unix
// socket.
func (c *Client) URL() string { return c.base }

// Desks returns the status of every desk (GET /v1/desks).
func (c *Client) Desks(ctx context.Context) (DesksResponse, error) {
	var out DesksResponse
	err := c.do(ctx, http.MethodGet, "/v1/desks", nil, &out)
	return out, err
}

// PostTrigger queues a trigger on a desk (POST /v1/desks/{desk}/triggers).
// The answer's Duplicate says the id was known and nothing was queued.
func (c *Client) PostTrigger(ctx context.Context, deskName string, r triggers.Request) (TriggerResponse, error) {
	var out TriggerResponse
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "triggers"), r, &out)
	return out, err
}

// PostTriggerWait queues a trigger as PostTrigger does and asks deskd to
// answer once its turn ends (POST ...?wait=): one exchange. final is true
// when it ended within wait (on deskd's clock, at most 5 minutes): st is
// then the trigger's final status, as WaitTrigger returns it (a feed's
// token reads no reply). Otherwise acc is the accepted trigger (its state
// then, Duplicate for a known id) and st is zero: watch it from there.
func (c *Client) PostTriggerWait(ctx context.Context, deskName string, r triggers.Request, wait time.Duration) (acc TriggerResponse, st desk.TriggerStatus, final bool, err error) {
	if wait = wait.Round(time.Millisecond); wait <= 0 {
		acc, err := c.PostTrigger(ctx, deskName, r) // no wait: a duplicate's 200 is not its final status
		return acc, st, false, err
	}
	path := deskPath(deskName, "triggers") + "?wait=" + url.QueryEscape(wait.String())
	status, data, err := c.send(ctx, http.MethodPost, path, r)
	if err != nil {
		return acc, st, false, err
	}
	if status == http.StatusOK {
		if err := json.Unmarshal(data, &st); err != nil {
			return acc, st, false, fmt.Errorf("decode deskd's answer: %w", err)
		}
		return TriggerResponse{ID: st.ID, State: st.State}, st, st.Final(), nil
	}
	if err := json.Unmarshal(data, &acc); err != nil {
		return acc, st, false, fmt.Errorf("decode deskd's answer: %w", err)
	}
	return acc, desk.TriggerStatus{}, false, nil
}

// WaitTrigger long-polls a trigger (GET /v1/desks/{desk}/triggers/{id}
// ?wait=) until it is final or timeout passes on the client's clock; the
// status returned is not Final when the timeout passed first.
func (c *Client) WaitTrigger(ctx context.Context, deskName, id string, timeout time.Duration) (desk.TriggerStatus, error) {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	deadline := now().Add(timeout)
	path := deskPath(deskName, "triggers") + "/" + url.PathEscape(id)
	for {
		left := deadline.Sub(now())
		poll := min(max(left, 0), time.Minute)
		var s desk.TriggerStatus
		if err := c.do(ctx, http.MethodGet, path+"?wait="+poll.Round(time.Millisecond).String(), nil, &s); err != nil {
			return s, err
		}
		if s.Final() || !deadline.After(now()) {
			return s, nil
		}
	}
}

// RollOver rolls a desk over to a new session now
// (POST /v1/desks/{desk}/rollover).
func (c *Client) RollOver(ctx context.Context, deskName string) (SessionResponse, error) {
	var out SessionResponse
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "rollover"), struct{}{}, &out)
	return out, err
}

// Fork starts a new session of a desk that carries the current one's
// context (POST /v1/desks/{desk}/fork).
func (c *Client) Fork(ctx context.Context, deskName string) (SessionResponse, error) {
	var out SessionResponse
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "fork"), struct{}{}, &out)
	return out, err
}

// Pause pauses a desk (POST /v1/desks/{desk}/pause).
func (c *Client) Pause(ctx context.Context, deskName string, req PauseRequest) (PauseResponse, error) {
	var out PauseResponse
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "pause"), req, &out)
	return out, err
}

// Resume resumes a paused desk (POST /v1/desks/{desk}/resume); only
// req.By counts.
func (c *Client) Resume(ctx context.Context, deskName string, req PauseRequest) (ResumeResponse, error) {
	var out ResumeResponse
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "resume"), req, &out)
	return out, err
}

// Acknowledge acknowledges an interrupted trigger
// (POST /v1/desks/{desk}/triggers/{id}/ack) and returns its status, with
// the acknowledgement (the first one, when it had one already).
func (c *Client) Acknowledge(ctx context.Context, deskName, id string, req AckRequest) (desk.TriggerStatus, error) {
	var out desk.TriggerStatus
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "triggers")+"/"+url.PathEscape(id)+"/ack", req, &out)
	return out, err
}

// ConfigDiff asks what a reload of the config files would change
// (GET /v1/config/diff).
func (c *Client) ConfigDiff(ctx context.Context) (desk.ConfigCheck, error) {
	var out desk.ConfigCheck
	err := c.do(ctx, http.MethodGet, "/v1/config/diff", nil, &out)
	return out, err
}

// deskPath is the path of a desk's endpoint.
func deskPath(deskName, endpoint string) string {
	return "/v1/desks/" + url.PathEscape(deskName) + "/" + endpoint
}

// do sends a request with a JSON body (unless nil) and decodes a 2xx
// answer into out (unless nil). Other answers are *Error.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, data, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode deskd's answer: %w", err)
		}
	}
	return nil
}

// send sends a request with a JSON body (unless nil) and returns a 2xx
// answer's status and body. Other answers are *Error. A read (GET)
// follows the 421s of a cluster to the desk's owner (OnOwner); other
// requests do not.
func (c *Client) send(ctx context.Context, method, path string, body any) (int, []byte, error) {
	if method != http.MethodGet {
		return c.sendOnce(ctx, method, path, body)
	}
	var status int
	var data []byte
	_, err := c.OnOwner(func(at *Client) (err error) {
		status, data, err = at.sendOnce(ctx, method, path, body)
		return err
	})
	return status, data, err
}

// sendOnce is send without following a 421.
func (c *Client) sendOnce(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, c.unreachable(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read deskd's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return 0, nil, clientError(resp.StatusCode, data)
	}
	return resp.StatusCode, data, nil
}

// unreachable is the error of a request that reached no deskd: where it
// was sent, and how that address was found.
func (c *Client) unreachable(err error) error {
	if c.Found != "" {
		return fmt.Errorf("reach deskd at %s (%s): %w", c.base, c.Found, err)
	}
	return fmt.Errorf("reach deskd at %s: %w", c.base, err)
}

func (c *Client) authorize(req *http.Request) {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
}

// EventQuery chooses what an event stream (GET /v1/events) carries.
type EventQuery struct {
	// Desk keeps one desk's events; empty: every desk's.
	Desk string
	// Backlog starts with every event deskd's ring holds.
	Backlog bool
	// Follow keeps the stream open for new events; false: it ends after
	// the backlog.
	Follow bool
	// LastID, if set, resumes after that event (Last-Event-ID).
	LastID string
}

// Event is one event of the stream.
type Event struct {
	// ID is the event's id, to resume after it (EventQuery.LastID).
	ID string
	// Topic is its topic (turn.completed, ...).
	Topic string
	// Data is its JSON.
	Data string
}

// Follow reads the event stream as Events does and, with q.Follow, keeps
// reading it across dropped connections, a second apart, from the last
// event seen (Last-Event-ID), telling onDrop of each. It returns nil when
// ctx ends or a backlog-only read (no q.Follow) reaches its end, and the
// error when deskd refuses the stream (*Error) or a backlog-only read
// fails.
func (c *Client) Follow(ctx context.Context, q EventQuery, onEvent func(Event), onComment func(string), onDrop func(error)) error {
	for {
		err := c.Events(ctx, q, func(e Event) {
			q.LastID = e.ID
			onEvent(e)
		}, onComment)
		if ctx.Err() != nil {
			return nil
		}
		if !q.Follow {
			if errors.Is(err, io.EOF) {
				return nil // the backlog is all there was
			}
			return err
		}
		var refused *Error
		if errors.As(err, &refused) {
			return err
		}
		onDrop(err)
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Events reads one connection of the event stream, calling onEvent for
// each event and onComment for each comment line (deskd's notes: events
// missed, a restart, keepalive pings). It returns io.EOF when deskd ends
// the stream, ctx's error or the connection's when they end it first, and
// *Error when deskd refuses it.
func (c *Client) Events(ctx context.Context, q EventQuery, onEvent func(Event), onComment func(string)) error {
	v := url.Values{}
	if q.Backlog {
		v.Set("backlog", "1")
	}
	if !q.Follow {
		v.Set("follow", "0")
	}
	if q.Desk != "" {
		v.Set("desk", q.Desk)
	}
	path := "/v1/events"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if q.LastID != "" {
		req.Header.Set("Last-Event-ID", q.LastID)
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return answerError(resp.StatusCode, b)
	}
	return ReadEvents(resp.Body, onEvent, onComment)
}

// ReadEvents reads a Server-Sent Events stream of deskd's (the body of
// GET /v1/events), calling onEvent for each event and onComment for each
// comment line. It returns io.EOF at the stream's end, or the reader's
// error.
func ReadEvents(r io.Reader, onEvent func(Event), onComment func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var e Event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				e.Data = strings.Join(data, "\n")
				onEvent(e)
			}
			e, data = Event{ID: e.ID}, nil
		case strings.HasPrefix(line, ":"):
			onComment(strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "id:"):
			e.ID = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			e.Topic = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[5:], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err // as the connection said: the CLI says "event stream ended (...)"
	}
	return io.EOF
}
