package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
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

// TestStatusFindsRunningDeskd: after an edit of listen (applied at the
// next restart), deskd status still finds the running deskd by its
// runtime file and says so; the file goes at a clean stop, and then the
// error says where the CLI looked.
func TestStatusFindsRunningDeskd(t *testing.T) {
	s := newE2ESetup(t, "")
	d := startInProcess(t, "deskd", s.Config, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	served := strings.TrimPrefix(d.waitReady(t), "http://")
	rt, err := httpapi.ReadRuntime(s.StateDir)
	if err != nil || rt.PID != os.Getpid() || len(rt.Listen) != 1 || rt.Listen[0] != served || rt.Config != s.Config {
		t.Fatalf("runtime file = %+v, %v; want this process serving %s on %s", rt, err, served, s.Config)
	}
	other := fmt.Sprintf("127.0.0.1:%d", pickFreePort(t))
	replaceInFile(t, s.Config, "listen: "+served, "listen: "+other)
	code, out := deskdCLI(t, "status", "--config", s.Config)
	note := fmt.Sprintf("note: the running deskd (pid %d) serves %s; the config's listen %s takes effect at its next restart", os.Getpid(), served, other)
	if code != 0 || !strings.Contains(out, note) || !strings.Contains(out, "main") {
		t.Fatalf("status after the listen edit = %d\n%s\nwant the desks and %q", code, out, note)
	}
	d.terminate(t)
	if _, err := os.Stat(httpapi.RuntimePath(s.StateDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("runtime file after a clean stop: %v, want none", err)
	}
	code, out = deskdCLI(t, "status", "--config", s.Config)
	if code == 0 || !strings.Contains(out, other) || !strings.Contains(out, httpapi.RuntimePath(s.StateDir)) {
		t.Errorf("status with no deskd = %d %s, want the address tried and where the CLI looked", code, out)
	}
}

// TestClockStartBeforeClaimedSlots: deskd started with its clock before
// slots its schedules fired already says so at start, one warn line per
// schedule, and on the ready line.
func TestClockStartBeforeClaimedSlots(t *testing.T) {
	s := newE2ESetup(t, everyMinuteSchedule)
	d1 := startInProcess(t, "deskd-1", s.Config, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	d1.waitReady(t)
	l := d1.waitFor(t, time.Now().Add(30*time.Second), "deskd ready", logMessage("deskd ready"))
	if ahead, ok := l.Fields["schedules_ahead"].([]any); !ok || len(ahead) != 0 {
		t.Errorf("ready line of a fresh state folder: %s, want no schedules_ahead", l.Raw)
	}
	d1.at(t, "2026-03-02T10:01:00Z")
	d1.waitFor(t, time.Now().Add(30*time.Second), "turn.completed", isEvent("turn.completed"))
	d1.terminate(t)

	d2 := startInProcess(t, "deskd-2", s.Config, time.Date(2026, 3, 2, 9, 58, 58, 0, time.UTC))
	d2.waitReady(t)
	warn := d2.waitFor(t, time.Now().Add(30*time.Second), "the claimed-slot warning", func(l stderrLine) bool {
		return l.Str("level") == "warn" && l.Str("schedule") == "every-minute"
	})
	want := "desk main: schedule every-minute has already fired every slot up to 2026-03-02T15:31:00+05:30 (state in " + s.DeskDir() +
		"); with deskd's clock at 2026-03-02T15:28:58+05:30 (--clock-start) it fires nothing until then"
	if warn.Str("message") != want {
		t.Errorf("warning = %q\nwant      %q", warn.Str("message"), want)
	}
	ready := d2.waitFor(t, time.Now().Add(30*time.Second), "deskd ready", logMessage("deskd ready"))
	if ahead, _ := ready.Fields["schedules_ahead"].([]any); len(ahead) != 1 || ahead[0] != "main/every-minute" {
		t.Errorf("ready line = %s, want schedules_ahead [main/every-minute]", ready.Raw)
	}
}
