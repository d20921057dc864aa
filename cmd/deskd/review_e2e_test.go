package main

// Review of issue 21 item 1 (a reviewer's attacks): allowed_hosts reloaded
// both ways, through the daemon.

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReviewAllowedHostRemovalEndsOpenStreamsE2E: a page under a name of
// allowed_hosts follows GET /v1/events; the operator removes the name
// and reloads. New requests naming it get 421 (that holds), but the
// stream the page opened before must not go on carrying the desks'
// events (triggers, turns, approvals with their arguments): a removal
// must take effect on what that name already holds open too: the stream
// ends before its next event.
func TestReviewAllowedHostRemovalEndsOpenStreamsE2E(t *testing.T) {
	t.Parallel()
	d, cfg, base, port := hostRuleDaemon(t, "allowed_hosts: [desk-box.example.lan]\n")
	name := "desk-box.example.lan:" + port

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = name
	req.Header.Set("Origin", "http://"+name)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events by an allowed name = %d, want 200", resp.StatusCode)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	removed := strings.Replace(string(text), "allowed_hosts: [desk-box.example.lan]\n", "", 1)
	if removed == string(text) {
		t.Fatalf("the config does not hold the allowed_hosts line:\n%s", text)
	}
	if err := os.WriteFile(cfg, []byte(removed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rel := d.waitFor(t, time.Now().Add(30*time.Second), "config.reloaded", isEvent("config.reloaded"))
	if !strings.Contains(rel.Raw, "allowed_hosts changed from [desk-box.example.lan] to none") {
		t.Fatalf("the reload does not say allowed_hosts changed: %s", rel.Raw)
	}
	if status, body := hostCall(t, "GET", base, "/v1/desks", name, "", true); status != http.StatusMisdirectedRequest {
		t.Errorf("GET /v1/desks by the removed name = %d %.200s, want 421", status, body)
	}

	// An event after the removal: a manual trigger, by 127.0.0.1.
	if status, a := d.post(t, `{"text": "Buy 10 NIFTY.", "kind": "manual", "id": "after-removal"}`); status != 202 || a.ID != "after-removal" {
		t.Fatalf("POST trigger = %d %+v", status, a)
	}
	d.trigger(t, "after-removal") // answered: its events are out
	timeout := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return // the stream was ended: the removal took effect
			}
			if strings.HasPrefix(l, "data:") && strings.Contains(l, "after-removal") {
				cancel()
				d.terminate(t)
				t.Fatalf("the stream opened by %s, removed from allowed_hosts and reloaded, still carries the events after it: %s", name, l)
			}
		case <-timeout:
			cancel()
			d.terminate(t)
			return // nothing of the later events reached the page
		}
	}
}
