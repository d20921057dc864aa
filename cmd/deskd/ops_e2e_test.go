package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestEventRingHoldsStart: right after "deskd ready", the ring's backlog
// (GET /v1/events?backlog=1&follow=0) holds the start of every desk:
// desk.started and session.started come first.
func TestEventRingHoldsStart(t *testing.T) {
	s := newE2ESetup(t, "")
	writeTestFile(t, s.StateDir+"/..", "desks.d/fx.yaml", "model: offline\ninstructions: You run the fx desk.\n")
	d := startInProcess(t, "deskd", s.Config, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	d.waitReady(t)
	status, body := d.call(t, http.MethodGet, "/v1/events?backlog=1&follow=0", "", "")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/events = %d %s", status, body)
	}
	var topics []string
	var desks []string
	_ = httpapi.ReadEvents(strings.NewReader(body), func(e httpapi.Event) {
		topics = append(topics, e.Topic)
		if e.Topic == "desk.started" {
			desks = append(desks, deskOf(e.Data))
		}
	}, func(string) {})
	if len(topics) < 4 {
		t.Fatalf("backlog right after ready = %v, want desk.started and session.started of main and fx", topics)
	}
	counts := map[string]int{}
	for _, tp := range topics[:4] {
		counts[tp]++
	}
	if counts["desk.started"] != 2 || counts["session.started"] != 2 {
		t.Errorf("the backlog opens with %v, want desk.started and session.started of each desk (all: %v)", topics[:4], topics)
	}
	if strings.Join(desks, ",") != "fx,main" && strings.Join(desks, ",") != "main,fx" {
		t.Errorf("desk.started of %v, want fx and main", desks)
	}
}

// deskOf returns the "desk" field of an event's JSON.
func deskOf(data string) string {
	_, rest, ok := strings.Cut(data, `"desk":"`)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, `"`)
	return name
}

// TestEventsUnknownDesk: deskd events --desk nope says which desks there
// are, in words (not deskd's JSON body), and exits 2; so does any other
// command that names an unknown desk.
func TestEventsUnknownDesk(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok"})
	cli := cliWithToken(t, h.URL(), "tok")
	for _, args := range [][]string{{"events", "--desk", "nope"}, {"events", "--desk", "nope", "--follow"}, {"rollover", "nope"}, {"pause", "nope"}} {
		code, out, errs := cli(args...)
		if code != 2 || errs != "deskd: unknown desk \"nope\" (desks: main) (HTTP 404)\n" || out != "" {
			t.Errorf("%v = %d, stdout %q, stderr %q; want 2 and the message alone", args, code, out, errs)
		}
	}
}
