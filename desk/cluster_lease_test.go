package desk_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/desk/natstest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router/routertest"
)

// rolloverSummary is the summary the model of
// TestClusterLeaseLostDuringARollover gives.
const rolloverSummary = "SUMMARY: the tape was checked."

// TestClusterLeaseLostDuringARollover: the lease lost while the owner's
// rollover waits for the model's fold (the summary already recorded):
// the old owner records nothing more, in its WAL or its folder; the new
// owner resumes the rollover at the fold, the first step not recorded
// (the summary not asked for again, the fold asked once more), starts the
// new session once, and its next turn runs in it with the summary.
func TestClusterLeaseLostDuringARollover(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	release := make(chan struct{})
	var summaries, folds atomic.Int32
	api := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(r routertest.Request) routertest.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case strings.HasPrefix(last.Text, "Summarise this session"):
			summaries.Add(1)
			return routertest.Reply{Text: rolloverSummary}
		case strings.HasPrefix(last.Text, "Fold the notes below"):
			if folds.Add(1) == 1 {
				return routertest.Reply{Text: "- NIFTY gapped up.\n", Hold: release}
			}
			return routertest.Reply{Text: "- NIFTY gapped up.\n"}
		case last.Role == "user" && strings.Contains(last.Text, "Check the tape."):
			return routertest.Reply{ToolCalls: []routertest.ToolCall{{Name: "note", Args: `{"text":"NIFTY gapped up."}`}}}
		}
		return routertest.Reply{Text: "ok"}
	}})
	defer close(release)
	// The trading day starts at 10:01 IST, a minute after the clocks'
	// start: the hosts' clocks reach it a renewal at a time.
	models := "  fast: {provider: openai, base_url: " + api.URL() + "/v1, model: gpt-test, api_key_env: " + clusterKeyEnv + "}\nrollover_at: \"10:01\"\n"
	boundary := desktest.At("2026-03-02T04:31:00Z")
	desks := map[string]string{"main": daemonDesk("fast")}
	_, js := c.Client()
	a := startClusterHostMain(t, c.URLs(), "a", "10.0.0.1:7317", desks, models, false)
	expectAcquired(a, "main")
	a.turn("main", "t1") // its note is what the fold takes in
	old := running(a, "main").Session
	advanceRenewing(t, a, js, "main", boundary) // the desk rolls over at the boundary
	expectEvent(a, func(e event.SessionSummarized) bool { return e.Session == old })
	api.Await(t, func(r routertest.Request) bool {
		return strings.HasPrefix(r.Messages[len(r.Messages)-1].Text, "Fold the notes below")
	})

	lost := loseMain(t, js, a)
	if e := seenEvent(a, func(e event.SessionStarted) bool { return e.Previous == old }); e != nil {
		t.Errorf("the old owner started a new session after the lease was lost: %+v", e)
	}
	lost.expectNothingWritten(t, "the lease was lost")

	// x never renews: b takes the desk a lease later and resumes the
	// rollover at the fold.
	b := startClusterHostMain(t, c.URLs(), "b", "10.0.0.2:7317", desks, models, false)
	expectAcquired(b, "main")
	advanceRenewing(t, b, js, "main", boundary) // b's desk is due at the boundary
	started := seenOrNext(b, func(e event.SessionStarted) bool { return e.Previous == old })
	if n := summaries.Load(); n != 1 {
		t.Errorf("the model was asked for %d summaries, want 1: the summary was recorded before the loss", n)
	}
	if n := folds.Load(); n != 2 {
		t.Errorf("the model was asked for %d folds, want 2: the old owner's, cut short, and the new owner's", n)
	}
	if e := seenEvent(b, func(e event.SessionSummarized) bool { return e.Session == old }); e != nil {
		t.Errorf("the new owner summarised the old session again: %+v", e)
	}
	b.turn("main", "t2")
	if st := running(b, "main"); st.Session != started.Session {
		t.Errorf("t2 ran in session %s, want the new one %s", st.Session, started.Session)
	}
	reqs := api.Requests()
	var text strings.Builder
	for _, m := range reqs[len(reqs)-1].Messages {
		text.WriteString(m.Text)
	}
	if n := strings.Count(text.String(), rolloverSummary); n != 1 {
		t.Errorf("t2's request holds the summary %d times, want once:\n%s", n, text.String())
	}
	dir := b.d.Config().StateDir + "/desks/main"
	f, err := memory.OpenFolder(dir, "main", b.clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	j, ok, err := f.ReadRollover()
	if err != nil || !ok || j.Session != old || !j.Summarised || !j.Folded || !j.Done || j.NewSession != started.Session {
		t.Errorf("the new owner's rollover journal = %+v, %v, %v; want %s summarised, folded, done, new session %s", j, ok, err, old, started.Session)
	}
	if mem, err := os.ReadFile(filepath.Join(dir, memory.MemoryFile)); err != nil || !strings.Contains(string(mem), "NIFTY gapped up.") {
		t.Errorf("Memory.md after the resumed fold = %q, %v; want the folded note", mem, err)
	}
	var news []event.SessionStarted
	for _, e := range seenEvents[event.SessionStarted](b) {
		if e.Previous == old {
			news = append(news, e)
		}
	}
	if len(news) != 1 {
		t.Errorf("the new owner started %d sessions after %s, want 1: %+v", len(news), old, news)
	}

}

// orderTool is the test MCP server's order tool, as deskd names it.
const orderTool = "mcp__broker__place_order"

// TestClusterLeaseLostWhileAToolCallWaitsForApproval: the lease lost
// while the turn's order waits for an operator's approval: the old owner
// never runs the order, not even when the approval reaches it afterwards,
// and records nothing more; the new owner shows the trigger interrupted,
// the call named, and does not run the order or ask for it again.
func TestClusterLeaseLostWhileAToolCallWaitsForApproval(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	_, broker := mcptest.HTTP(t)
	headers := filepath.Join(t.TempDir(), "broker.headers")
	if err := os.WriteFile(headers, []byte("Authorization: Bearer "+mcptest.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(r routertest.Request) routertest.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "user" && strings.Contains(last.Text, "Check the tape.") {
			return routertest.Reply{ToolCalls: []routertest.ToolCall{{ID: "call_order_1", Name: orderTool, Args: `{"symbol":"NIFTY","qty":1,"side":"buy"}`}}}
		}
		return routertest.Reply{Text: "ok"}
	}})
	models := "  fast: {provider: openai, base_url: " + api.URL() + "/v1, model: gpt-test, api_key_env: " + clusterKeyEnv + "}\n" +
		fmt.Sprintf("mcp_servers:\n  broker: {url: %q, headers_file: %q, timeout: 10s}\n", broker.URL, headers)
	desks := map[string]string{"main": daemonDesk("fast") + "mcp:\n  broker: {tools: [place_order], approve: [place_order]}\n"}
	_, js := c.Client()
	a := startClusterHostMain(t, c.URLs(), "a", "10.0.0.1:7317", desks, models, false)
	expectAcquired(a, "main")
	seenOrNext(a, func(e event.MCPServerUp) bool { return e.Server == "broker" })
	a.submit("main", "t1", "Check the tape.")
	asked := expectEvent(a, func(e event.ApprovalRequested) bool { return e.Trigger == "t1" })
	if asked.Tool != orderTool || asked.Call != "call_order_1" {
		t.Fatalf("approval.requested = %+v, want the order call call_order_1", asked)
	}

	lost := loseMain(t, js, a)
	if dec, err := a.d.Approvals().Decide("main", asked.ID, true, "risk", "go ahead"); err == nil {
		t.Errorf("the old owner took an approval after its lease was lost: %+v", dec)
	}
	if code, body := postApproval(t, a, asked.ID); code == http.StatusOK {
		t.Errorf("the old owner's API approved the call after the lease was lost: %d %s", code, body)
	}
	if n := broker.Orders(); n != 0 {
		t.Errorf("the broker had %d orders after the lease was lost, want 0", n)
	}
	if e := seenEvent(a, func(e event.ToolCalled) bool { return e.Tool == orderTool && e.Outcome == "ok" }); e != nil {
		t.Errorf("the old owner ran the order: %+v", e)
	}
	lost.expectNothingWritten(t, "the approval reached the old owner")

	// x never renews: b takes the desk a lease later and shows t1
	// interrupted, its order call named; it neither runs the order nor
	// asks for its approval again.
	b := startClusterHostMain(t, c.URLs(), "b", "10.0.0.2:7317", desks, models, false)
	expectAcquired(b, "main")
	st := running(b, "main")
	if len(st.Interrupted) != 1 || st.Interrupted[0].ID != "t1" {
		t.Fatalf("the new owner's interrupted triggers = %+v, want t1", st.Interrupted)
	}
	if r := st.Interrupted[0].Reason; !strings.Contains(r, orderTool) || !strings.Contains(r, "call_order_1") {
		t.Errorf("t1's reason on the new owner = %q, want the order call (%s, call_order_1) named", r, orderTool)
	}
	if p := b.d.Approvals().Pending("main"); len(p) != 0 {
		t.Errorf("the new owner waits for approvals %+v, want none", p)
	}
	if e := seenEvent(b, func(e event.ApprovalRequested) bool { return true }); e != nil {
		t.Errorf("the new owner asked for an approval again: %+v", e)
	}
	if n := broker.Orders(); n != 0 {
		t.Errorf("the broker had %d orders, want 0: the order never ran", n)
	}
	if n := len(api.Requests()); n != 1 {
		t.Errorf("the model had %d requests, want 1: t1 is not run again", n)
	}
}

// postApproval approves call id of desk main through an API on r's set
// and queue, and returns the status and the body.
func postApproval(t *testing.T, r *daemonRun, id string) (int, string) {
	t.Helper()
	api := httpapi.New(httpapi.Options{Desks: r.d.Set(), Approvals: r.d.Approvals()})
	req := httptest.NewRequest(http.MethodPost, "/v1/desks/main/approvals/"+id+"/approve", strings.NewReader(`{"by":"risk"}`))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// seenEvents returns every event of type E r has had so far.
func seenEvents[E event.Event](r *daemonRun) []E {
	seenEvent(r, func(E) bool { return false })
	var out []E
	for _, e := range r.seen {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// seenOrNext is the first event of type E that ok accepts among those r
// has had, or the next one (expectEvent) if none.
func seenOrNext[E event.Event](r *daemonRun, ok func(E) bool) E {
	r.t.Helper()
	if e := seenEvent(r, ok); e != nil {
		return *e
	}
	for _, e := range r.seen {
		r.t.Logf("seen %T %+v", e, e)
	}
	return expectEvent(r, ok)
}

// advanceRenewing moves r's clock on a third of a lease at a time until
// it reaches at, each step once r has renewed desk name's lease (an
// update of its key), so that r keeps the desk however far the clock
// goes; the test fails if a renewal takes more than 10s.
func advanceRenewing(t *testing.T, r *daemonRun, js jetstream.JetStream, name string, at time.Time) {
	t.Helper()
	kv, err := js.KeyValue(t.Context(), cluster.OwnersBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(t.Context(), cluster.Key(name), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for r.clk.Now().Before(at) {
		r.clk.Advance(clusterLease / 3)
		select {
		case <-w.Updates():
		case <-time.After(10 * time.Second):
			t.Fatalf("desk %s's lease was not renewed within 10s of the clock's move to %s\n%s", name, r.clk.Now(), r.log)
		}
	}
}
