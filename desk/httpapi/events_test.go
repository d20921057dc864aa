package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// sseEvent is one event of a stream.
type sseEvent struct{ id, topic, data string }

// openStream opens GET /v1/events and returns its events on a channel.
func openStream(t *testing.T, h *httpapitest.Harness, ctx context.Context, query, lastID string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", h.URL()+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 1000)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && e.topic != "":
				out <- e
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.topic = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return out
}

func nextOf(t *testing.T, ch <-chan sseEvent, topic string) sseEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before a %s event", topic)
			}
			if e.topic == topic {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event within 10s", topic)
		}
	}
}

// TestAPIEvents: the stream carries ids; a client that reconnects with
// Last-Event-ID gets exactly what it missed.
func TestAPIEvents(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	stream := openStream(t, h, ctx, "", "")
	h.Call("POST", "/v1/desks/main/triggers", `{"text": "one", "id": "one"}`)
	first := nextOf(t, stream, "turn.completed")
	if !strings.Contains(first.data, `"topic":"turn.completed"`) || !strings.Contains(first.data, `"trigger":"one"`) ||
		!strings.Contains(first.data, `"desk":"main"`) || first.id == "" {
		t.Errorf("turn.completed = %+v", first)
	}
	cancel() // the client goes away

	// A second client follows, so that the test knows when the ring holds
	// the turns (the ledger answers before the event reaches the ring).
	watch := openStream(t, h, t.Context(), "", "")
	h.Call("POST", "/v1/desks/main/triggers", `{"text": "two", "id": "two"}`)
	h.Call("GET", "/v1/desks/main/triggers/two?wait=10s", "")
	h.Call("POST", "/v1/desks/main/triggers", `{"text": "three", "id": "three"}`)
	h.Call("GET", "/v1/desks/main/triggers/three?wait=10s", "")
	nextOf(t, watch, "turn.completed")
	nextOf(t, watch, "turn.completed")

	again := openStream(t, h, t.Context(), "?follow=0", first.id)
	var topics, triggersSeen []string
	for e := range again {
		topics = append(topics, e.topic)
		var payload struct {
			Trigger string `json:"trigger"`
		}
		_ = json.Unmarshal([]byte(e.data), &payload)
		if e.topic == "trigger.queued" {
			triggersSeen = append(triggersSeen, payload.Trigger)
		}
		if e.id == first.id {
			t.Errorf("the replay repeats event %s", first.id)
		}
	}
	if got := strings.Join(triggersSeen, ","); got != "two,three" {
		t.Errorf("replayed trigger.queued of %s, want two,three (topics %v)", got, topics)
	}
	if n := strings.Count(strings.Join(topics, " "), "turn.completed"); n != 2 {
		t.Errorf("replayed %d turn.completed, want 2: %v", n, topics)
	}

	// An id from another deskd process: everything held is replayed.
	all := openStream(t, h, t.Context(), "?follow=0", "otherepoch-5")
	n := 0
	for range all {
		n++
	}
	if n < 9 {
		t.Errorf("a stale Last-Event-ID replayed %d events, want the whole ring", n)
	}
}

// TestAPIEventsRingKeepsTheNewest: a full ring keeps its newest events, in
// order, around its wrap; a client that reconnects after an event still held
// gets what came after it, one whose event fell out gets everything held.
func TestAPIEventsRingKeepsTheNewest(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{RingSize: 4})
	watch := openStream(t, h, t.Context(), "", "")
	ids := map[int]string{}
	for turn := 1; turn <= 10; turn++ {
		event.Publish(h.Bus, event.TurnStarted{Header: event.Header{At: h.Clock.Now(), Desk: httpapitest.DeskName}, Turn: turn})
		ids[turn] = nextOf(t, watch, "turn.started").id
	}
	turns := func(query, lastID string) []int {
		var got []int
		for e := range openStream(t, h, t.Context(), query, lastID) {
			var payload struct {
				Turn int `json:"turn"`
			}
			if err := json.Unmarshal([]byte(e.data), &payload); err != nil || e.topic != "turn.started" {
				t.Fatalf("event %+v: %v", e, err)
			}
			got = append(got, payload.Turn)
		}
		return got
	}
	for _, c := range []struct {
		query, lastID string
		want          []int
	}{
		{"?follow=0&backlog=1", "", []int{7, 8, 9, 10}},
		{"?follow=0", ids[8], []int{9, 10}},
		{"?follow=0", ids[10], nil},
		{"?follow=0", ids[2], []int{7, 8, 9, 10}},
	} {
		if got := turns(c.query, c.lastID); !slices.Equal(got, c.want) {
			t.Errorf("GET /v1/events%s after %q: turns %v, want %v", c.query, c.lastID, got, c.want)
		}
	}
}

// TestAPIEventsHoldsWhatCameBeforeTheRequest: an event is in the ring as
// soon as it is published, so a request right after a burst replays all
// of it, in order (the ring was a bus subscriber, whose mailbox could
// still hold the burst when the request came: `deskd events` right after
// `deskd rollover` missed the rollover's session.started).
func TestAPIEventsHoldsWhatCameBeforeTheRequest(t *testing.T) {
	const n = 500
	h := httpapitest.Start(t, httpapitest.Options{RingSize: n})
	for turn := 1; turn <= n; turn++ {
		event.Publish(h.Bus, event.TurnStarted{Header: event.Header{At: h.Clock.Now(), Desk: httpapitest.DeskName}, Turn: turn})
	}
	var got []int
	for e := range openStream(t, h, t.Context(), "?follow=0&backlog=1", "") {
		var payload struct {
			Turn int `json:"turn"`
		}
		if err := json.Unmarshal([]byte(e.data), &payload); err == nil && e.topic == "turn.started" {
			got = append(got, payload.Turn)
		}
	}
	if len(got) != n || !slices.IsSorted(got) || got[0] != 1 {
		t.Errorf("GET /v1/events?backlog=1 right after %d events: %d of them (first %v), want all in order", n, len(got), got[:min(len(got), 3)])
	}
}
