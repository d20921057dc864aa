package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// TestWatchTriggerWithoutTheEventStream: a proxy refuses the event stream;
// WatchTrigger follows the trigger by polling, reporting each change once:
// queued behind a running turn, running at the model, answered.
func TestWatchTriggerWithoutTheEventStream(t *testing.T) {
	g := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: g})
	target, err := url.Parse(h.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/events" {
			http.Error(w, `{"error":"no events here"}`, http.StatusNotFound)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	c := httpapitest.Dial(t, front.URL, "")
	if _, err := c.PostTrigger(t.Context(), "main", triggers.Request{Text: "first", ID: "w1"}); err != nil {
		t.Fatal(err)
	}
	g.Expect(t, "first")
	if _, err := c.PostTrigger(t.Context(), "main", triggers.Request{Text: "second", ID: "w2"}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var seen []string
	changed := make(chan string, 100)
	done := make(chan desk.TriggerStatus, 1)
	go func() {
		s, err := c.WatchTrigger(t.Context(), "main", "w2", 30*time.Second, func(p desk.TriggerProgress) {
			line := string(p.Trigger.State) + " " + string(p.Phase)
			if p.Trigger.Position > 0 {
				line += " " + strings.Repeat("#", p.Trigger.Position)
			}
			mu.Lock()
			seen = append(seen, line)
			mu.Unlock()
			changed <- line
		})
		if err != nil {
			t.Errorf("WatchTrigger: %v", err)
		}
		done <- s
	}()
	take := func(want string) string {
		t.Helper()
		return receive(t, changed, fmt.Sprintf("no progress within 10s, want %q", want))
	}
	next := func(want string) {
		t.Helper()
		got := take(want)
		for strings.HasPrefix(got, "running ") && got != want && want == "running model" {
			got = take(want) // a poll may catch the turn before its model call
		}
		if got != want {
			t.Fatalf("progress %q, want %q", got, want)
		}
	}
	next("queued  #")
	g.Release <- struct{}{}
	g.Expect(t, "second")
	next("running model")
	g.Release <- struct{}{}
	next("answered ")
	if s := receive(t, done, "WatchTrigger did not return within 10s"); s.State != triggers.StateAnswered || s.Reply != "answered" {
		t.Errorf("WatchTrigger returned %+v, want answered", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 || seen[0] != "queued  #" || seen[len(seen)-2] != "running model" || seen[len(seen)-1] != "answered " {
		t.Errorf("progress reported %q, want queued, running, answered", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			t.Errorf("progress reported %q twice in a row: %q", seen[i], seen)
		}
	}
}
