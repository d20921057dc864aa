package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/desk/replay"
)

// countedBroker serves the test MCP server over streamable HTTP and counts
// the tool calls it is sent.
type countedBroker struct {
	url   string
	calls atomic.Int64
}

func startCountedBroker(t *testing.T) *countedBroker {
	t.Helper()
	b := &countedBroker{}
	srv := mcptest.NewServer(mcptest.Options{})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			b.calls.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	b.url = "http://" + ln.Addr().String() + "/mcp"
	return b
}

// treeHashes returns the SHA-256 of every file below dir, and every
// folder, by path.
func treeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p] = "folder"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTreeUnchanged fails the test for each file or folder below dir
// that changed, went or appeared since before (treeHashes of dir then);
// during names what ran meanwhile.
func checkTreeUnchanged(t *testing.T, dir string, before map[string]string, during string) {
	t.Helper()
	after := treeHashes(t, dir)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed during %s", p, during)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared during %s", p, during)
		}
	}
}

// answered waits until trigger id of desk main is final and returns it.
func answered(t *testing.T, d *deskdProc, id string) map[string]any {
	t.Helper()
	for range 20 {
		tr := d.trigger(t, id)
		if s, _ := tr["state"].(string); s != "queued" && s != "running" && s != "sent" {
			return tr
		}
	}
	d.fail(t, "trigger %s is not final", id)
	return nil
}

// replayDay runs 20 triggers through a deskd binary on the scripted model,
// with the test MCP server as broker (quote free, place_order under
// approve), a rollover after the tenth, and returns the daemon, its
// config, the broker and the ledger's replies by trigger.
func replayDay(t *testing.T) (*deskdProc, string, *countedBroker, []string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	broker := startCountedBroker(t)
	extra := "  other: {provider: scripted, prices: {input: 1000, output: 1000}}\n" +
		fmt.Sprintf("mcp_servers:\n  broker: {url: %q, timeout: 10s}\n", broker.url)
	cfg := apiConfig(t, dir, "{provider: scripted}", extra, "mcp:\n  broker: {tools: [quote, place_order], approve: [place_order]}\n")
	d := startDeskd(t, "deskd", "run", "--config", cfg, "--clock-start", "2026-12-01T04:00:00Z")
	d.waitReady(t)
	brokerUp(t, d)
	var ids []string
	replies := map[string]string{}
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("r%02d", i)
		ids = append(ids, id)
		switch {
		case i == 7:
			aid := waitingCall(t, d, id, `{"symbol":"INFY","qty":5,"side":"buy"}`)
			if s, body := d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+aid+"/approve", "", `{"by": "alice"}`); s != 200 {
				d.fail(t, "approve = %d %s", s, body)
			}
		case i%5 == 0:
			if s, _ := d.post(t, mcpCall(id, "quote", `{"symbol":"INFY"}`)); s != http.StatusAccepted {
				d.fail(t, "POST %s = %d", id, s)
			}
		default:
			body, _ := json.Marshal(map[string]string{"id": id, "text": fmt.Sprintf("Check <b>tape %d</b> & <script>x()</script>", i)})
			if s, _ := d.post(t, string(body)); s != http.StatusAccepted {
				d.fail(t, "POST %s = %d", id, s)
			}
		}
		tr := answered(t, d, id)
		if tr["state"] != "answered" {
			d.fail(t, "%s = %v", id, tr)
		}
		replies[id], _ = tr["reply"].(string)
		if i == 10 {
			if s, body := d.call(t, http.MethodPost, "/v1/desks/main/rollover", "", ""); s != 200 && s != 202 {
				d.fail(t, "rollover = %d %s", s, body)
			}
		}
	}
	return d, cfg, broker, ids, replies
}

// runReplay runs the deskd binary's replay command.
func runReplay(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runReplayEnv(t, nil, args...)
}

// runReplayEnv is runReplay with more environment variables for the
// command (NAME=value).
func runReplayEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(deskdBinary(t), append([]string{"replay"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// TestReplayE2E: a day of 20 triggers with tool calls (a free MCP tool
// and one under approval), crossing a rollover, replayed through the
// binary while the daemon runs, with another model and with other
// instructions: the live desk folder is byte for byte the same, the MCP
// server gets no call, the report's original side is the ledger's
// replies, --max-cost stops early (and without it, the candidate's
// budgets.day_cost), and the HTML shows both sides with the
// replies' markup as text (in Chromium, when it is installed).
func TestReplayE2E(t *testing.T) {
	d, cfg, broker, ids, replies := replayDay(t)
	deskDir := filepath.Join(filepath.Dir(cfg), "state", "desks", "main")
	before := treeHashes(t, deskDir)
	calls := broker.calls.Load()

	// Another model.
	out := filepath.Join(t.TempDir(), "other-model")
	stdout, stderr, code := runReplay(t, "main", "--config", cfg, "--date", "2026-12-01", "--model", "other", "--out", out, "--max-cost", "0")
	if code != 0 || !strings.Contains(stdout, "replayed 20 of 20 triggers of main 2026-12-01") || !strings.Contains(stderr, "20/20 triggers") {
		t.Fatalf("deskd replay --model other = %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	rep, err := replay.ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Triggers) != 20 {
		t.Fatalf("report has %d triggers, want 20", len(rep.Triggers))
	}
	for i, row := range rep.Triggers {
		if row.ID != ids[i] || row.Original.Reply != replies[row.ID] {
			t.Errorf("row %d: %s original %q; want %s with the ledger's reply %q", i, row.ID, row.Original.Reply, ids[i], replies[ids[i]])
		}
		if row.Candidate == nil || row.Candidate.Model != "other" {
			t.Errorf("%s: candidate %+v, want model other", row.ID, row.Candidate)
		}
	}
	if !strings.Contains(rep.Triggers[10].Text, "[This is the first message of a new session.") {
		t.Errorf("r11's text %q: want the summary the rollover put in front of it", rep.Triggers[10].Text)
	}
	q := rep.Triggers[4].Candidate.ToolCalls
	if len(q) != 1 || q[0].Outcome != replay.CallReplayed || !strings.Contains(q[0].Result, "QUOTE INFY") {
		t.Errorf("r05's candidate calls %+v: want the quote replayed from the record", q)
	}
	if len(rep.Approvals) != 1 || rep.Approvals[0].Tool != "mcp__broker__place_order" {
		t.Errorf("approvals %+v: want r07's place_order listed", rep.Approvals)
	}

	// Other instructions, bounded by --max-cost.
	cand := writeTestFile(t, t.TempDir(), "candidate.yaml", "model: other\ninstructions: You are the CANDIDATE.\nmcp:\n  broker: {tools: [quote, place_order], approve: [place_order]}\n")
	out2 := filepath.Join(t.TempDir(), "capped")
	stdout, stderr, code = runReplay(t, "main", "--config", cfg, "--date", "2026-12-01", "--with", cand, "--out", out2, "--max-cost", "0.000001", "--json")
	var capped replay.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &capped) != nil {
		t.Fatalf("deskd replay --with --max-cost --json = %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if capped.Stopped == "" || capped.Totals.Replayed != 1 || capped.Candidate.Source != "--with "+cand {
		t.Errorf("capped: stopped %q, replayed %d, source %q; want stopped after the first", capped.Stopped, capped.Totals.Replayed, capped.Candidate.Source)
	}

	// Without --max-cost, the bound is the candidate's budgets.day_cost.
	budgeted := writeTestFile(t, t.TempDir(), "main.yaml", "model: other\ninstructions: You are the CANDIDATE.\nbudgets: {day_cost: 0.05}\n"+
		"mcp:\n  broker: {tools: [quote, place_order], approve: [place_order]}\n")
	stdout, stderr, code = runReplay(t, "main", "--config", cfg, "--date", "2026-12-01", "--with", budgeted, "--out", filepath.Join(t.TempDir(), "budgeted"), "--json")
	var bounded replay.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &bounded) != nil {
		t.Fatalf("deskd replay --with a budgeted candidate = %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if bounded.MaxCost != 0.05 || bounded.Stopped == "" || bounded.Totals.Replayed != 1 || bounded.Triggers[1].Candidate != nil {
		t.Errorf("budgeted: max cost %v, stopped %q, replayed %d; want the candidate's day_cost 0.05, stopped after the first (about 0.1 a turn)",
			bounded.MaxCost, bounded.Stopped, bounded.Totals.Replayed)
	}

	// Bad input.
	if _, stderr, code := runReplay(t, "main", "--config", cfg, "--date", "2026-13-01"); code != 2 || !strings.Contains(stderr, "--date") {
		t.Errorf("a bad date = %d %s", code, stderr)
	}
	if _, stderr, code := runReplay(t, "main", "--config", cfg, "--date", "2026-12-01", "--out", filepath.Join(deskDir, "replay")); code != 2 || !strings.Contains(stderr, "inside the desk's folder") {
		t.Errorf("an output folder inside the desk's = %d %s", code, stderr)
	}

	// A tool under approve named in --allow-tools still never runs: the
	// replay warns, answers r07's call from the record (an operator
	// approved it that day), runs nothing (the broker's count below) and
	// queues nothing for an operator.
	out3 := filepath.Join(t.TempDir(), "allow-order")
	if _, stderr, code := runReplay(t, "main", "--config", cfg, "--date", "2026-12-01", "--allow-tools", "mcp__broker__place_order", "--out", out3); code != 0 || !strings.Contains(stderr, "under approve") {
		t.Errorf("allowing a tool under approve = %d %s; want the replay run, with a warning", code, stderr)
	} else if allowed, err := replay.ReadReport(out3); err != nil || len(allowed.Approvals) != 1 || allowed.Approvals[0].Tool != "mcp__broker__place_order" ||
		allowed.Approvals[0].Outcome != replay.CallReplayed || len(allowed.Candidate.AllowTools) != 0 {
		t.Errorf("allowing a tool under approve: report %+v (%v); want r07's place_order listed, answered from the record, nothing allowed to run", allowed, err)
	}
	var waiting struct{ Approvals []json.RawMessage }
	if s, body := d.call(t, http.MethodGet, "/v1/desks/main/approvals", "", ""); s != 200 || json.Unmarshal([]byte(body), &waiting) != nil || len(waiting.Approvals) != 0 {
		t.Errorf("the daemon's approvals after the replays = %d %s; want none waiting", s, body)
	}

	// Nothing of the live desk changed, the daemon ran throughout, and the
	// MCP server got no call.
	checkTreeUnchanged(t, deskDir, before, "the replays")
	if n := broker.calls.Load(); n != calls {
		t.Errorf("the MCP server got %d tool calls during the replays", n-calls)
	}
	if s, _ := d.call(t, http.MethodGet, "/healthz", "", ""); s != 200 {
		t.Errorf("the daemon does not answer after the replays: %d", s)
	}

	// The page, in Chromium: both sides shown, the markup as text.
	t.Run("html in chromium", func(t *testing.T) {
		p := openConsole(t, 1280, 900)
		p.do(t, "open the report", chromedp.Navigate("file://"+filepath.Join(out, replay.ReportHTML)))
		p.waitTrue(t, "the report shows", `document.querySelectorAll("section.trigger").length === 20`)
		if n := evalJS[int](t, p, `document.querySelectorAll("section.trigger .side.original").length + document.querySelectorAll("section.trigger .side.candidate").length`); n != 40 {
			t.Errorf("the page shows %d sides, want 40 (both sides of each trigger)", n)
		}
		if n := evalJS[int](t, p, `document.querySelectorAll(".reply b, .reply script, .text script").length`); n != 0 {
			t.Errorf("the page made %d elements of the replies' markup", n)
		}
		if txt := evalJS[string](t, p, `document.querySelector("#t-r01 .side.original .reply").textContent`); !strings.Contains(txt, "<b>tape 1</b>") {
			t.Errorf("r01's original reply shows %q; want its markup as text", txt)
		}
		if txt := evalJS[string](t, p, `document.getElementById("totals").textContent`); !strings.Contains(txt, "triggers 20") {
			t.Errorf("totals %q", txt)
		}
	})
}
