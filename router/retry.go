package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// Defaults of a RetryPolicy.
const (
	DefaultRetryAttempts = 3
	DefaultRetryBase     = time.Second
	DefaultRetryMax      = 30 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After a policy waits out.
	DefaultMaxRetryAfter = 5 * time.Minute
)

// RetryPolicy retries a model call that failed for a passing reason: an
// *APIError with Retryable set (429, 5xx, 529, a timeout, a dropped
// connection). Between attempts it waits the longer of the service's
// Retry-After and an exponential backoff with jitter, on the injected clock.
// The zero value is the default policy.
type RetryPolicy struct {
	// Attempts is how many calls are made at most, the first included;
	// 0 means DefaultRetryAttempts.
	Attempts int
	// Base is the backoff before the second attempt; it doubles for each
	// later one. 0 means DefaultRetryBase.
	Base time.Duration
	// Max caps the backoff; 0 means DefaultRetryMax.
	Max time.Duration
	// MaxRetryAfter is the longest Retry-After that is waited out; a service
	// that asks for a longer wait gets no further attempt, so the router can
	// fall back to another model at once. 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Jitter turns the backoff d into the wait; nil means full jitter, a
	// uniformly random wait in [0, d].
	Jitter func(d time.Duration) time.Duration
}

// Do calls f until it succeeds, fails for a reason that is not passing, or
// has been called Attempts times, and returns the last answer, the number
// of calls made and the last error. It never calls f, nor waits, once ctx
// is done; a wait cut short by ctx returns an error that wraps both ctx's
// error and the last failure.
func (p RetryPolicy) Do(ctx context.Context, c clock.Clock, f func(ctx context.Context) (Response, error)) (Response, int, error) {
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultRetryAttempts
	}
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return Response{}, n - 1, err
		}
		resp, err := f(ctx)
		if err == nil {
			return resp, n, nil
		}
		var ae *APIError
		if !errors.As(err, &ae) || !ae.Retryable || n >= attempts || ctx.Err() != nil {
			return resp, n, err
		}
		wait, ok := p.wait(n, ae.RetryAfter)
		if !ok {
			return resp, n, err
		}
		if serr := clock.Sleep(ctx, c, wait); serr != nil {
			return resp, n, fmt.Errorf("retry abandoned: %w; last failure: %w", serr, err)
		}
	}
}

// wait returns how long to wait after the n-th failed attempt, and false
// when the service asked for a wait longer than the policy waits out.
func (p RetryPolicy) wait(n int, retryAfter time.Duration) (time.Duration, bool) {
	base, ceiling, maxAfter := p.Base, p.Max, p.MaxRetryAfter
	if base <= 0 {
		base = DefaultRetryBase
	}
	if ceiling <= 0 {
		ceiling = DefaultRetryMax
	}
	if maxAfter <= 0 {
		maxAfter = DefaultMaxRetryAfter
	}
	if retryAfter > maxAfter {
		return 0, false
	}
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	if p.Jitter != nil {
		d = p.Jitter(d)
	} else if d > 0 {
		d = rand.N(d + 1)
	}
	return max(d, retryAfter), true
}

// The rest of this file turns what a model service answered into an
// *APIError: which failures are passing, which say the prompt is too long,
// how long the service asked us to wait, and a short message that never
// holds the key.

// maxErrorBody is how much of a failed answer's body is read.
const maxErrorBody = 64 << 10

// answer is what the service answered to one HTTP request: the status, the
// headers and, for a failure (status >= 400), the start of the body.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// recorder keeps the answer of one call; its middleware sits between the
// client and the HTTP client. One recorder serves one call.
type recorder struct {
	mu sync.Mutex
	a  answer
	// limit caps the bytes read of a successful answer's body (0: no cap);
	// past it the body reads fail with errStreamCap and cut is set.
	limit int64
	cut   atomic.Bool
}

// errStreamCap is the read error of an answer's body past the recorder's
// limit.
var errStreamCap = errors.New("the answer passed deskd's cap on a streamed reply")

// cappedBody is a response body that ends in errStreamCap after a limit.
type cappedBody struct {
	io.ReadCloser
	left int64
	cut  *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.cut.Store(true)
		return 0, errStreamCap
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// middleware sends req with next, and keeps the answer.
func (r *recorder) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if res == nil {
		return res, err
	}
	a := answer{status: res.StatusCode, header: res.Header}
	if res.StatusCode >= 400 && res.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		a.body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
	} else if r.limit > 0 && res.Body != nil {
		res.Body = &cappedBody{ReadCloser: res.Body, left: r.limit, cut: &r.cut}
	}
	r.mu.Lock()
	r.a = a
	r.mu.Unlock()
	return res, err
}

func (r *recorder) answer() answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.a
}

// call is what a provider knows of one call when it fails.
type call struct {
	model   string        // the configured model's name
	key     string        // the API key, to scrub from any text
	timeout time.Duration // the per-request timeout
	ctx     context.Context
	callCtx context.Context // ctx with the per-request timeout
	rec     *recorder
	now     func() time.Time
}

// failure classifies err, the failure of c, as an *APIError. streamErr, if
// not nil, classifies an error event the service sent inside a stream
// (each client reads those in its own way); it returns nil for other errors.
func (c call) failure(err error, streamErr func(error) *APIError) *APIError {
	if cerr := c.ctx.Err(); cerr != nil {
		// The caller gave up: not the service's fault, and not worth a retry.
		return &APIError{Model: c.model, Err: fmt.Errorf("call abandoned: %w", cerr)}
	}
	if c.callCtx.Err() != nil {
		return &APIError{Model: c.model, Retryable: true,
			Err: fmt.Errorf("no complete answer within the timeout of %s", c.timeout)}
	}
	a := c.rec.answer()
	if a.status >= 400 {
		return c.statusError(a)
	}
	if streamErr != nil {
		if ae := streamErr(err); ae != nil {
			return ae
		}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.As(err, &typ):
		return &APIError{Model: c.model, Err: fmt.Errorf("malformed JSON from the service: %s", c.scrub(err.Error()))}
	case dropped(err):
		return &APIError{Model: c.model, Retryable: true, Err: c.transportError(err)}
	case a.status == 0:
		// No answer at all: the request never got through.
		return &APIError{Model: c.model, Retryable: true, Err: c.transportError(err)}
	default:
		return &APIError{Model: c.model, Err: errors.New(c.scrub(err.Error()))}
	}
}

// statusError is the failure of an answer with an error status.
func (c call) statusError(a answer) *APIError {
	msg := serviceMessage(a.body)
	if msg == "" {
		msg = http.StatusText(a.status)
	}
	ae := &APIError{
		Model:      c.model,
		Status:     a.status,
		Retryable:  retryableStatus(a.status),
		RetryAfter: retryAfter(a.header, c.now),
		Err:        errors.New(c.scrub(msg)),
	}
	if (a.status == http.StatusBadRequest || a.status == http.StatusRequestEntityTooLarge) &&
		(overflowText(msg) || overflowText(string(a.body))) {
		ae.ContextOverflow, ae.Retryable = true, false
	}
	return ae
}

// transportError describes a failure to reach the service or to read its
// answer, without the request's URL (which may carry a key in its query).
func (c call) transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("connection dropped before the answer was complete: %w", err)
	}
	return &scrubbed{msg: "connection failed: " + c.scrub(err.Error()), err: err}
}

// scrubbed is an error whose text has had the key removed, and which still
// unwraps to the original error for errors.Is.
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

// scrub removes the key (redactKey), and the value of any Authorization
// or x-api-key header echoed back, from s, and keeps it short.
func (c call) scrub(s string) string {
	s = redactKey(s, c.key)
	s = credentialText.ReplaceAllString(s, "${1}[redacted]")
	return shorten(s, 300)
}

// minKeyRun is the shortest run of a key's characters that redactKey
// removes: a service that echoes the key minus its last characters, or a
// masked middle ("sk-live-Hq7T****aE5u"), still leaks runs this long, and
// shorter ones are ordinary text.
const minKeyRun = 12

// redactKey replaces with "[redacted]" every run of at least minKeyRun
// characters of key found in s (the whole key, a prefix, an infix); a key
// shorter than minKeyRun only as a whole.
func redactKey(s, key string) string {
	w := min(minKeyRun, len(key))
	if w == 0 || len(s) < w {
		return s
	}
	runs := make(map[string]bool, len(key)-w+1)
	for i := 0; i+w <= len(key); i++ {
		runs[key[i:i+w]] = true
	}
	var b strings.Builder
	last, end := 0, -1 // end: where the run being covered ends
	for i := 0; i+w <= len(s); i++ {
		if !runs[s[i:i+w]] {
			continue
		}
		if i > end { // a new run starts
			if end >= 0 {
				b.WriteString("[redacted]")
			}
			b.WriteString(s[last:i])
		}
		end = i + w
		last = end
	}
	if end < 0 {
		return s
	}
	b.WriteString("[redacted]")
	b.WriteString(s[last:])
	return b.String()
}

// scrubError is the one place every error of a provider's Complete passes
// on its way out: its text loses every run of the key (redactKey),
// whichever path made it. An *APIError stays one, with a scrubbed Err.
func scrubError(err error, key string) error {
	if err == nil || key == "" {
		return err
	}
	if ae, ok := err.(*APIError); ok {
		if ae.Err == nil {
			return ae
		}
		if msg := ae.Err.Error(); redactKey(msg, key) != msg {
			out := *ae
			out.Err = &scrubbed{msg: redactKey(msg, key), err: ae.Err}
			return &out
		}
		return ae
	}
	if msg := err.Error(); redactKey(msg, key) != msg {
		return &scrubbed{msg: redactKey(msg, key), err: err}
	}
	return err
}

// credentialText matches a credential echoed in an error text: a header
// line, or a bearer token of some length.
var credentialText = regexp.MustCompile(`(?i)((?:authorization|x-api-key|api-key)"?\s*[:=]\s*"?(?:bearer\s+)?|bearer\s+)[^\s"',;})\]]{8,}`)

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// dropped reports whether err is a connection that broke while the answer
// was being read.
func dropped(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// retryableStatus reports whether a call that got status may succeed if it
// is made again: rate limits, conflicts, timeouts and the service's own
// faults (including Anthropic's 529 "overloaded").
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// overflowText reports whether a service's message says the prompt does not
// fit the model's context window, as OpenAI, vLLM, llama.cpp and Anthropic
// word it.
func overflowText(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{
		"context length", "context_length", "context window", "context size",
		"context limit", "prompt is too long", "exceed_context_size",
	} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// serviceMessage finds the service's own explanation in an error body:
// {"error":{"message":...}} (OpenAI, Anthropic, vLLM), {"error":"..."}
// (Ollama), {"message":...} or {"detail":...}; else the body's first line.
func serviceMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var e struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &e) == nil && e.Message != "":
			if e.Type != "" && !strings.Contains(e.Message, e.Type) {
				return e.Type + ": " + e.Message
			}
			return e.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		case v.Detail != nil:
			if s, ok := v.Detail.(string); ok {
				return s
			}
			b, _ := json.Marshal(v.Detail)
			return string(b)
		}
	}
	line, _, _ := bytes.Cut(body, []byte("\n"))
	return string(line)
}

// retryAfter reads the wait a service asked for: retry-after-ms
// (milliseconds, as OpenAI sends it), or Retry-After in seconds or as an
// HTTP date. An HTTP date is measured from the answer's Date header when
// there is one, so that the two clocks' skew does not count.
func retryAfter(h http.Header, now func() time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || s > 1e9 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	ref := now()
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		ref = d
	}
	return max(at.Sub(ref), 0)
}

// toolArguments makes a model's tool-call arguments valid JSON: empty
// becomes {}, and text that is not JSON is kept as a JSON string, so that
// the tool loop reports the fault to the model (argumentsFault) instead of
// the session record failing to encode.
func toolArguments(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// argumentsFault says what is wrong with a tool call's arguments that are
// not a JSON object, as the tool's error result for the model: text that
// is not JSON at all (kept by toolArguments as a JSON string) gets its
// parse error, so that the model can mend what it sent. ok is false for
// arguments that are empty or an object: the tool's own checks apply.
func argumentsFault(c ToolCall) (fault string, ok bool) {
	args := bytes.TrimSpace(c.Arguments)
	if len(args) == 0 || args[0] == '{' {
		return "", false
	}
	const mend = "; send them again as one JSON object that matches the tool's schema"
	var text string
	if json.Unmarshal(args, &text) == nil {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return fmt.Sprintf("error: the arguments of %s are not valid JSON (%s)%s", c.Name, syntaxFault(err), mend), true
		}
		return fmt.Sprintf("error: the arguments of %s are a string that holds JSON, not a JSON object%s", c.Name, mend), true
	}
	var what string
	switch args[0] {
	case '[':
		what = "a JSON array"
	case 't', 'f':
		what = "true or false"
	case 'n':
		what = "null"
	default:
		what = "a number"
	}
	return fmt.Sprintf("error: the arguments of %s are %s, not a JSON object%s", c.Name, what, mend), true
}

// syntaxFault words a JSON parse error with where it is.
func syntaxFault(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return fmt.Sprintf("%s, at byte %d", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
