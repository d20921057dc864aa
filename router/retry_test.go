package router

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/router/routertest"
)

// scriptedCalls is a scripted f for RetryPolicy.Do: it answers with errs in turn,
// then succeeds, and counts its calls.
type scriptedCalls struct {
	mu   sync.Mutex
	errs []error
	n    int
}

func (c *scriptedCalls) f(ctx context.Context) (Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.n <= len(c.errs) {
		return Response{}, c.errs[c.n-1]
	}
	return Response{Text: "done"}, nil
}

func (c *scriptedCalls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func retryableErr(after time.Duration) error {
	return &APIError{Model: "m", Status: 429, Retryable: true, RetryAfter: after, Err: errors.New("slow down")}
}

type doResult struct {
	resp     Response
	attempts int
	err      error
}

// doRun is a RetryPolicy.Do running in a goroutine that the test waits for.
type doRun struct {
	out      chan doResult
	finished context.Context // done once Do has returned
}

func startDo(t *testing.T, ctx context.Context, p RetryPolicy, c clock.Clock, f func(context.Context) (Response, error)) *doRun {
	t.Helper()
	finished, done := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(ctx)
	run := &doRun{out: make(chan doResult, 1), finished: finished}
	go func() {
		defer done()
		resp, n, err := p.Do(ctx, c, f)
		run.out <- doResult{resp, n, err}
	}()
	t.Cleanup(func() { // a failed test may leave Do waiting
		stop()
		<-finished.Done()
	})
	return run
}

// result returns what Do returned, and fails t if Do waits again instead.
func (r *doRun) result(t *testing.T, fake *clock.Fake) doResult {
	t.Helper()
	if err := fake.WaitPending(r.finished, 1); err == nil {
		t.Fatalf("Do waits once more")
	}
	return <-r.out
}

// armed waits until Do has armed its timer, and fails t if Do returns first.
func (r *doRun) armed(t *testing.T, fake *clock.Fake) {
	t.Helper()
	if err := fake.WaitPending(r.finished, 1); err != nil {
		res := <-r.out
		t.Fatalf("Do returned %d, %v without waiting", res.attempts, res.err)
	}
}

// expectWait checks that Do waits exactly d on fake: the timer is still
// pending a nanosecond before d, and fires at d.
func (r *doRun) expectWait(t *testing.T, fake *clock.Fake, d time.Duration) {
	t.Helper()
	r.armed(t, fake)
	fake.Advance(d - time.Nanosecond)
	if fake.Pending() != 1 {
		t.Fatalf("the wait ended before %v", d)
	}
	// The wait ends now: the next attempt follows at once (what comes next,
	// another wait or the result, shows it). Pending() cannot tell here: the
	// next attempt may already have set its own timer.
	fake.Advance(time.Nanosecond)
}

// noWaitClock is a clock for calls of Do that must not wait: a timer fails t,
// and fires at once so that the test ends.
type noWaitClock struct{ t *testing.T }

func (c noWaitClock) Now() time.Time { return retryEpoch }

func (c noWaitClock) NewTimer(d time.Duration) clock.Timer {
	c.t.Errorf("Do waited %v, want no wait", d)
	return clock.NewFake(retryEpoch).NewTimer(0)
}

func noJitter(d time.Duration) time.Duration { return d }

var retryEpoch = time.Date(2026, 3, 2, 3, 45, 0, 0, time.UTC)

func TestRetryBacksOffExponentially(t *testing.T) {
	fake := clock.NewFake(retryEpoch)
	c := &scriptedCalls{errs: []error{retryableErr(0), retryableErr(0), retryableErr(0)}}
	p := RetryPolicy{Attempts: 4, Base: time.Second, Max: 3 * time.Second, Jitter: noJitter}
	run := startDo(t, t.Context(), p, fake, c.f)
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		run.expectWait(t, fake, d)
	}
	r := run.result(t, fake)
	if r.err != nil || r.resp.Text != "done" || r.attempts != 4 || c.count() != 4 {
		t.Errorf("Do = %+v, %d, %v after %d calls; want done after 4", r.resp, r.attempts, r.err, c.count())
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	fake := clock.NewFake(retryEpoch)
	c := &scriptedCalls{errs: []error{retryableErr(10 * time.Second), retryableErr(0)}}
	p := RetryPolicy{Base: time.Second, Jitter: noJitter}
	run := startDo(t, t.Context(), p, fake, c.f)
	run.expectWait(t, fake, 10*time.Second) // Retry-After beats the 1s backoff
	run.expectWait(t, fake, 2*time.Second)  // then the backoff again
	r := run.result(t, fake)
	if r.err != nil || r.attempts != 3 {
		t.Errorf("Do = %d, %v; want success on attempt 3", r.attempts, r.err)
	}
}

func TestRetryRetryAfterAboveMax(t *testing.T) {
	long := retryableErr(2 * time.Hour)
	c := &scriptedCalls{errs: []error{long}}
	_, n, err := RetryPolicy{}.Do(t.Context(), noWaitClock{t}, c.f)
	if n != 1 || !errors.Is(err, long) {
		t.Errorf("Do = %d, %v; want the error at once", n, err)
	}
}

func TestRetryGivesUpAfterAttempts(t *testing.T) {
	fake := clock.NewFake(retryEpoch)
	errs := []error{retryableErr(0), retryableErr(0), retryableErr(0), retryableErr(0)}
	c := &scriptedCalls{errs: errs}
	run := startDo(t, t.Context(), RetryPolicy{Jitter: noJitter}, fake, c.f) // 3 attempts by default
	run.expectWait(t, fake, DefaultRetryBase)
	run.expectWait(t, fake, 2*DefaultRetryBase)
	r := run.result(t, fake)
	if r.attempts != 3 || c.count() != 3 || !errors.Is(r.err, errs[2]) {
		t.Errorf("Do = %d, %v after %d calls; want the third error after 3", r.attempts, r.err, c.count())
	}
	if fake.Pending() != 0 {
		t.Errorf("a timer is left after the last attempt")
	}
}

func TestRetryStopsOnNonRetryable(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"400", &APIError{Model: "m", Status: 400, Err: errors.New("bad request")}},
		{"context overflow", &APIError{Model: "m", Status: 400, ContextOverflow: true, Err: errors.New("too long")}},
		{"not an APIError", errors.New("scripted fold: no fold input")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &scriptedCalls{errs: []error{tt.err, retryableErr(0)}}
			_, n, err := RetryPolicy{}.Do(t.Context(), noWaitClock{t}, c.f)
			if n != 1 || c.count() != 1 || !errors.Is(err, tt.err) {
				t.Errorf("Do = %d, %v after %d calls; want the error after 1", n, err, c.count())
			}
		})
	}
}

func TestRetryStopsWhenCancelled(t *testing.T) {
	fake := clock.NewFake(retryEpoch)
	ctx, cancel := context.WithCancel(t.Context())
	first := retryableErr(0)
	c := &scriptedCalls{errs: []error{first, retryableErr(0)}}
	run := startDo(t, ctx, RetryPolicy{}, fake, c.f)
	run.armed(t, fake)
	cancel()
	r := <-run.out
	if r.attempts != 1 || c.count() != 1 {
		t.Errorf("Do made %d calls (reported %d) after a cancel, want 1", c.count(), r.attempts)
	}
	if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, first) {
		t.Errorf("Do = %v, want context.Canceled and the last failure", r.err)
	}
}

func TestRetryNeverCallsWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := &scriptedCalls{}
	_, n, err := RetryPolicy{}.Do(ctx, noWaitClock{t}, c.f)
	if n != 0 || c.count() != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %d, %v after %d calls; want context.Canceled and no call", n, err, c.count())
	}
}

func TestRetryNotAfterCallerCancelled(t *testing.T) {
	// f sees the caller give up while it runs: its error is retryable, but
	// the context is done, so there is no second call.
	ctx, cancel := context.WithCancel(t.Context())
	n := 0
	_, attempts, err := RetryPolicy{}.Do(ctx, noWaitClock{t}, func(context.Context) (Response, error) {
		n++
		cancel()
		return Response{}, retryableErr(0)
	})
	if n != 1 || attempts != 1 || err == nil {
		t.Errorf("Do = %d, %v after %d calls; want one call", attempts, err, n)
	}
}

func TestRetryFullJitter(t *testing.T) {
	p := RetryPolicy{Base: time.Second, Max: 8 * time.Second}
	seen := map[bool]bool{}
	for i := range 200 {
		n := i%5 + 1
		ceiling := min(time.Second<<(n-1), 8*time.Second)
		d, ok := p.wait(n, 0)
		if !ok || d < 0 || d > ceiling {
			t.Fatalf("wait(%d) = %v, %v; want within [0, %v]", n, d, ok, ceiling)
		}
		seen[d < ceiling/2] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("200 waits all fell in one half of the range: not jittered")
	}
	if d, _ := p.wait(1, 20*time.Second); d != 20*time.Second {
		t.Errorf("wait with Retry-After 20s = %v", d)
	}
}

// A provider and the policy together: a 429 with Retry-After, then a reply.
func TestRetryOpenAIRateLimit(t *testing.T) {
	p, _ := newTestProvider(t, routertest.ChatCompletions, time.Minute, routertest.Script(
		jsonError(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After", "4"),
		routertest.Reply{Events: []string{oaiDelta(`{"role":"assistant","content":"filled"}`, "stop"), oaiUsage, "data: [DONE]"}}))
	fake := clock.NewFake(retryEpoch)
	run := startDo(t, t.Context(), RetryPolicy{Jitter: noJitter}, fake, func(ctx context.Context) (Response, error) {
		return p.Complete(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "buy"}}})
	})
	run.expectWait(t, fake, 4*time.Second)
	r := run.result(t, fake)
	if r.err != nil || r.resp.Text != "filled" || r.attempts != 2 {
		t.Errorf("Do = %+v, %d, %v; want filled on attempt 2", r.resp, r.attempts, r.err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := func() time.Time { return retryEpoch }
	date := retryEpoch.Add(-time.Minute).Format(http.TimeFormat) // the server's clock is a minute behind
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "30"}, 30 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond},
		{"HTTP date", map[string]string{"Retry-After": retryEpoch.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"HTTP date against Date", map[string]string{"Retry-After": retryEpoch.Format(http.TimeFormat), "Date": date}, time.Minute},
		{"HTTP date past", map[string]string{"Retry-After": retryEpoch.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Errorf("retryAfter(%v) = %v, want %v", tt.headers, got, tt.want)
			}
		})
	}
}

func TestRetryScrubsCredentials(t *testing.T) {
	c := call{key: fakeAPIKey}
	for _, in := range []string{
		"bad key " + fakeAPIKey,
		"request had Authorization: Bearer sk-other-abcdefgh12345",
		`{"headers":{"x-api-key":"sk-ant-api03-abcdefghij"}}`,
	} {
		out := c.scrub(in)
		for _, secret := range []string{fakeAPIKey, "sk-other-abcdefgh12345", "sk-ant-api03-abcdefghij"} {
			if strings.Contains(out, secret) {
				t.Errorf("scrub(%q) = %q, still holds %q", in, out, secret)
			}
		}
	}
	if out := c.scrub("Invalid bearer token"); out != "Invalid bearer token" {
		t.Errorf("scrub changed a plain message: %q", out)
	}
}
