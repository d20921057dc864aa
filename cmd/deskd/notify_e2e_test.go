package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskd/deskd/desk/httpapi"
)

// e2eNotifySecret is the ops target's signing secret (32 bytes).
const e2eNotifySecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="

// webhookReceiver is a Standard Webhooks receiver: every request's
// signature and timestamp are verified with the reference library; it
// answers 503 while down, 204 while up.
type webhookReceiver struct {
	srv *httptest.Server
	wh  *standardwebhooks.Webhook

	mu      sync.Mutex
	up      bool
	bad     []string            // requests that did not verify
	copies  map[string][][]byte // the bodies received, by webhook-id
	taken   map[string]bool     // the ids answered 2xx
	changed chan struct{}
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	wh, err := standardwebhooks.NewWebhook(e2eNotifySecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &webhookReceiver{wh: wh, copies: map[string][][]byte{}, taken: map[string]bool{}, changed: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		defer func() { close(r.changed); r.changed = make(chan struct{}) }()
		if err := r.wh.Verify(body, req.Header); err != nil {
			r.bad = append(r.bad, fmt.Sprintf("%v: %s", err, body))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := req.Header.Get("webhook-id")
		r.copies[id] = append(r.copies[id], body)
		if !r.up {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.taken[id] = true
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *webhookReceiver) setUp(up bool) {
	r.mu.Lock()
	r.up = up
	r.mu.Unlock()
}

// answers waits until the receiver took a turn.answered notification of
// every trigger of ids and returns each one's webhook-id.
func (r *webhookReceiver) answers(t *testing.T, ids []string) map[string]string {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		found := map[string]string{}
		for id, bodies := range r.copies {
			if !r.taken[id] {
				continue
			}
			var b struct {
				Type string `json:"type"`
				Data struct {
					Trigger string `json:"trigger"`
				} `json:"data"`
			}
			if json.Unmarshal(bodies[0], &b) == nil && b.Type == "turn.answered" {
				found[b.Data.Trigger] = id
			}
		}
		changed := r.changed
		r.mu.Unlock()
		all := true
		for _, id := range ids {
			all = all && found[id] != ""
		}
		if all {
			return found
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("the receiver took answers of %v, want all of %v", found, ids)
		}
	}
}

// notifySetup is an e2e setup with the ops target at url (the answers of
// desk main) and console_url.
func notifySetup(t *testing.T, url string) e2eSetup {
	s := newE2ESetup(t, "")
	dir := filepath.Dir(s.Config)
	writeTestFile(t, dir, "ops.secret", e2eNotifySecret+"\n")
	appendTestFile(t, s.Config, fmt.Sprintf("console_url: https://deskd.example\nnotify:\n  ops:\n    url: %s/hooks/deskd\n    secret_file: ops.secret\n", url))
	appendTestFile(t, filepath.Join(dir, "desks.d", "main.yaml"), "notify: {answers: [ops]}\n")
	return s
}

func appendTestFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// health returns GET /healthz's notify detail.
func (d *deskdProc) notifyHealth(t *testing.T) []httpapi.NotifyStatus {
	t.Helper()
	code, text := d.call(t, http.MethodGet, "/healthz", "", "")
	var h httpapi.HealthResponse
	if err := json.Unmarshal([]byte(text), &h); err != nil || code != http.StatusOK {
		d.fail(t, "GET /healthz = %d %s (%v)", code, text, err)
	}
	return h.Notify
}

// waitNotifyHealth waits until cond holds of /healthz's notify detail.
func (d *deskdProc) waitNotifyHealth(t *testing.T, what string, cond func([]httpapi.NotifyStatus) bool) []httpapi.NotifyStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st := d.notifyHealth(t)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			d.fail(t, "/healthz notify %+v: never %s", st, what)
		}
		<-tick.C
	}
}

// TestNotifyE2E: through the binary, each answered turn's reply goes to
// the desk's target, signed (verified with the reference library). The
// receiver is down: the notifications wait, shown in /healthz and the
// metrics; deskd is SIGKILLed with them pending and restarted with the
// receiver up: every one arrives, each id at least once, every copy of an
// id the same bytes.
func TestNotifyE2E(t *testing.T) {
	rc := newWebhookReceiver(t)
	s := notifySetup(t, rc.srv.URL)
	d := startDeskd(t, "deskd", "run", "--config", s.Config)
	d.waitReady(t)

	ids := []string{"n1", "n2", "n3", "n4"}
	for _, id := range ids {
		if code, _ := d.post(t, fmt.Sprintf(`{"text": "Status %s?", "kind": "manual", "id": %q}`, id, id)); code != http.StatusAccepted {
			d.fail(t, "POST trigger %s = %d", id, code)
		}
	}
	for _, id := range ids {
		if st := d.trigger(t, id); st["state"] != "answered" {
			d.fail(t, "trigger %s: %v, want answered", id, st)
		}
	}
	st := d.waitNotifyHealth(t, "4 pending and failing", func(st []httpapi.NotifyStatus) bool {
		return len(st) == 1 && st[0].Pending == len(ids) && st[0].Failing
	})
	if st[0].Target != "ops" || st[0].Host != strings.TrimPrefix(rc.srv.URL, "http://") || !strings.Contains(st[0].LastError, "503") ||
		strings.Contains(st[0].LastError, "/hooks/deskd") {
		t.Errorf("/healthz notify %+v: want ops at the receiver's host, the 503, never the URL's path", st[0])
	}
	if _, text := d.call(t, http.MethodGet, "/metrics", "", ""); !strings.Contains(text, `deskd_notify_pending{target="ops"} 4`) ||
		!strings.Contains(text, `deskd_notify_failed_total{target="ops"} 0`) {
		t.Errorf("/metrics lacks the notify gauges:\n%s", grepLines(text, "deskd_notify"))
	}
	addr := strings.TrimPrefix(d.URL(t), "http://")
	if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 ||
		!strings.Contains(out, "notify ops ("+strings.TrimPrefix(rc.srv.URL, "http://")+"): failing since ") || !strings.Contains(out, "4 notifications pending") {
		t.Errorf("status = %d, want the failing target:\n%s", code, out)
	}
	outbox, err := os.ReadFile(filepath.Join(s.StateDir, "notify", "ops", "outbox.jsonl"))
	if err != nil || bytes.Contains(outbox, []byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")) {
		t.Errorf("the outbox (%v) holds the secret, or is not where documented:\n%s", err, outbox)
	}

	d.kill()
	d.wait(t, 30*time.Second)
	rc.setUp(true)
	d2 := startDeskd(t, "deskd-again", "run", "--config", s.Config)
	d2.waitReady(t)
	got := rc.answers(t, ids)

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Errorf("requests that did not verify: %v", rc.bad)
	}
	for trig, id := range got {
		copies := rc.copies[id]
		for i, c := range copies {
			if !bytes.Equal(c, copies[0]) {
				t.Errorf("copy %d of %s (trigger %s) differs:\n%s\n%s", i, id, trig, c, copies[0])
			}
		}
		var b struct {
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(copies[0], &b)
		if b.Data["desk"] != "main" || b.Data["kind"] != "manual" || b.Data["scripted"] != true || b.Data["text"] == "" ||
			b.Data["console_url"] != "https://deskd.example/#/desk/main" {
			t.Errorf("answer of %s: %v", trig, b.Data)
		}
	}
}

// grepLines returns the lines of text that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCheckConfigNotify: a bad target is refused by check-config naming
// the file, the field and the reason.
func TestCheckConfigNotify(t *testing.T) {
	s := newE2ESetup(t, "")
	appendTestFile(t, s.Config, "notify:\n  ops:\n    url: hooks.example/deskd\n    format: teams\n    events: [turn.exploded]\n")
	code, out := deskdCLI(t, "check-config", "--config", s.Config)
	for _, want := range []string{
		s.Config + ": notify.ops.url: not a URL such as https://hooks.example/deskd",
		s.Config + `: notify.ops.format: unknown format "teams": want standard or slack`,
		s.Config + `: notify.ops.events[0]: unknown event topic "turn.exploded"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config lacks %q:\n%s", want, out)
		}
	}
	if code != 2 {
		t.Errorf("check-config = %d, want 2:\n%s", code, out)
	}
}
