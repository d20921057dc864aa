package main

// End-to-end tests of the trigger API: kill -9 at the worst moments,
// restart, and count how often each trigger's text reached the model, and
// the CLI over a unix socket with a token (the built binary); the spool
// folder across a restart (in process); and the event-to-model latency
// benchmark (the binary).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/router/routertest"
)

// newFakeLLM starts a local Chat Completions service that answers every
// request "noted", holding those whose last user message contains hold (if
// hold is set) until a value is sent on the returned channel or the client
// goes.
func newFakeLLM(tb testing.TB, hold string) (*routertest.Server, chan<- struct{}) {
	release := make(chan struct{}, 100)
	return routertest.New(tb, routertest.ChatCompletions, routertest.Options{Answer: func(r routertest.Request) routertest.Reply {
		reply := routertest.Reply{Text: "noted", Usage: routertest.Usage{Input: 10, Output: 1}}
		if hold != "" && strings.Contains(r.LastUser(), hold) {
			reply.Hold = release
		}
		return reply
	}}), release
}

// userCount returns how many of llm's requests carried text in their last
// user message.
func userCount(llm *routertest.Server, text string) int {
	return llm.CountWhere(routertest.UserContains(text))
}

// apiConfig writes deskd.yaml and desks.d/main.yaml into dir. model is
// the models block entry of "m"; extra goes into the main file.
func apiConfig(tb testing.TB, dir, model, extra, desk string) string {
	tb.Helper()
	files := map[string]string{
		"deskd.yaml": "state_dir: state\ntimezone: Asia/Kolkata\nlisten: 127.0.0.1:0\nlog: {level: info, format: json}\n" +
			"shutdown_timeout: 5s\nmodels:\n  m: " + model + "\n" + extra,
		"desks.d/main.yaml": "model: m\ninstructions: You run the main desk.\n" + desk,
	}
	writeTestFiles(tb, dir, files)
	return filepath.Join(dir, "deskd.yaml")
}

// openAIModel is the models entry of a fake model service.
func openAIModel(llm *routertest.Server) string {
	return fmt.Sprintf("{provider: openai, base_url: %q, model: fake, api_key_env: DESKD_E2E_KEY, timeout: 60s}", llm.BaseURL())
}

// apiStart is where the clock of the in-process daemons of these tests
// starts: a Monday morning, IST.
var apiStart = time.Date(2026, 3, 2, 10, 0, 5, 0, time.FixedZone("IST", 5*3600+1800))

// startAPIBinary runs the deskd binary on cfg (apiConfig; the fake model
// service's key in its environment) and waits for "deskd ready".
func startAPIBinary(tb testing.TB, name, cfg string) *deskdProc {
	tb.Helper()
	d := startDeskdEnv(tb, name, []string{"DESKD_E2E_KEY=test-key"}, "run", "--config", cfg)
	d.waitReady(tb)
	return d
}

// killNow ends the binary with SIGKILL and waits for it to go.
func killNow(t *testing.T, d *deskdProc) {
	t.Helper()
	if code := d.stop(t, syscall.SIGKILL, 30*time.Second); code != -1 {
		d.fail(t, "exit status %d after SIGKILL, want -1 (killed by the signal)", code)
	}
}

// TestAPIE2EKillAfterAcceptAndModelCall: the desk's turn for A is with the
// model when B is accepted (202) and deskd is killed at once. After the
// restart B runs exactly once, and A, whose model call was made, is not
// run again: it is interrupted, announced and shown in the status.
// The binary: SIGKILL.
func TestAPIE2EKillAfterAcceptAndModelCall(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	llm, _ := newFakeLLM(t, "HOLD")
	cfg := apiConfig(t, t.TempDir(), openAIModel(llm), "", "")

	d := startAPIBinary(t, "first deskd", cfg)
	if s, a := d.post(t, `{"text": "HOLD order check", "id": "a", "kind": "manual"}`); s != 202 || a.ID != "a" {
		t.Fatalf("POST a = %d %+v", s, a)
	}
	llm.Await(t, routertest.UserContains("HOLD order check"))
	if s, _ := d.post(t, `{"text": "NIFTY crossed 22000", "id": "b"}`); s != 202 {
		t.Fatalf("POST b = %d", s)
	}
	killNow(t, d)

	d = startAPIBinary(t, "second deskd", cfg)
	d.waitFor(t, time.Now().Add(60*time.Second), "turn.interrupted of a", isEvent("turn.interrupted", "trigger", "a"))
	b := d.trigger(t, "b")
	if b["state"] != "answered" || b["reply"] != "noted" || b["session"] == "" {
		t.Errorf("b after the restart = %v", b)
	}
	a := d.trigger(t, "a")
	if a["state"] != "interrupted" || a["model_called"] != true {
		t.Errorf("a after the restart = %v", a)
	}
	status, body := d.call(t, "GET", "/v1/desks", "", "")
	var st httpapi.DesksResponse
	_ = json.Unmarshal([]byte(body), &st)
	if status != 200 || len(st.Desks) != 1 || len(st.Desks[0].Interrupted) != 1 || st.Desks[0].Interrupted[0].ID != "a" {
		t.Errorf("status = %d %+v, want a listed as interrupted", status, st)
	}
	// The same ids again are known, not queued.
	if s, r := d.post(t, `{"text": "HOLD order check", "id": "a", "kind": "manual"}`); s != 200 || r.State != "interrupted" {
		t.Errorf("POST a again = %d %+v", s, r)
	}
	d.terminate(t)
	if n := userCount(llm, "HOLD order check"); n != 1 {
		t.Errorf("a's text reached the model %d times, want 1", n)
	}
	if n := userCount(llm, "NIFTY crossed 22000"); n != 1 {
		t.Errorf("b's text reached the model %d times, want 1", n)
	}
}

// TestAPIE2EKillStorm: many triggers accepted in a burst, deskd killed
// right after the last 202, restarted: every trigger ends answered or
// (its model call made) interrupted, and no text reached the model twice.
// The scripted model records each text it is sent in the session files.
// The binary: SIGKILL.
func TestAPIE2EKillStorm(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", "", "")
	d := startAPIBinary(t, "first deskd", cfg)
	const n = 40
	for i := range n {
		if s, _ := d.post(t, fmt.Sprintf(`{"text": "storm event %02d", "id": "s%02d"}`, i, i)); s != 202 {
			t.Fatalf("POST s%02d = %d", i, s)
		}
	}
	killNow(t, d)
	d = startAPIBinary(t, "second deskd", cfg)
	states, stateOf, _ := stormOutcomes(t, d, n)
	d.terminate(t)
	if states["answered"]+states["interrupted"] != n || states["interrupted"] > 1 {
		t.Errorf("states after the restart: %v; want all answered, but for at most one interrupted", states)
	}
	sentOnce(t, dir, stateOf)
	t.Logf("after the kill and restart: %v", states)
}

// stormOutcomes reads the triggers s00 to s<n-1> of desk main, the storm
// of "storm event NN" texts, and returns how many are in each state, each
// text's state, and the triggers.
func stormOutcomes(t *testing.T, d *deskdProc, n int) (states map[string]int, stateOf map[string]string, trs []map[string]any) {
	t.Helper()
	states, stateOf = map[string]int{}, map[string]string{}
	for i := range n {
		tr := d.trigger(t, fmt.Sprintf("s%02d", i))
		states[fmt.Sprint(tr["state"])]++
		stateOf[fmt.Sprintf("storm event %02d", i)] = fmt.Sprint(tr["state"])
		trs = append(trs, tr)
	}
	return states, stateOf, trs
}

// sentOnce checks, in the session files of desk main in the config folder
// dir, that each storm text (stateOf: its trigger's state) reached the
// model once if its trigger was answered, and at most once if interrupted
// (cut off between its "sent" record and the model's answer).
func sentOnce(t *testing.T, dir string, stateOf map[string]string) {
	t.Helper()
	sent := sessionUserTexts(t, filepath.Join(dir, "state", "desks", "main", "sessions"))
	for text, state := range stateOf {
		c := sent[text]
		if state == "answered" && c != 1 || state == "interrupted" && c > 1 {
			t.Errorf("%q (%s) was sent to the model %d times", text, state, c)
		}
	}
}

// sessionUserTexts counts, over every session file, the user messages
// that contain each "storm event NN".
func sessionUserTexts(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no session files in %s: %v", dir, err)
	}
	out := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var rec struct {
				Type, Role, Text string
			}
			if json.Unmarshal(line, &rec) != nil || rec.Role != "user" {
				continue
			}
			if i := strings.Index(rec.Text, "storm event "); i >= 0 && len(rec.Text) >= i+14 {
				out[rec.Text[i:i+14]]++
			}
		}
	}
	return out
}

// dropInbox puts a trigger file into an inbox as a feed does: written
// under a dot name, then renamed in.
func dropInbox(t *testing.T, inbox, name, body string) {
	t.Helper()
	tmp := filepath.Join(inbox, "."+name)
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, name)); err != nil {
		t.Fatal(err)
	}
}

// TestAPIE2ESpoolAcrossRestart: a file put in the inbox while deskd is
// down is taken at the next start; one dropped in while it runs is taken
// at once. In process: the spool hears of a file through fsnotify, not
// the clock.
func TestAPIE2ESpoolAcrossRestart(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", "", "")
	d := startInProcess(t, "first deskd", cfg, apiStart)
	d.waitReady(t)
	inbox := filepath.Join(dir, "state", "inbox", "main")
	dropInbox(t, inbox, "live.json", `{"text": "from the feed", "id": "feed-1"}`)
	d.waitFor(t, deadline, "trigger.queued of feed-1", isEvent("trigger.queued", "trigger", "feed-1"))
	if tr := d.trigger(t, "feed-1"); tr["state"] != "answered" || tr["source"] != "inbox:live.json" {
		t.Errorf("feed-1 = %v", tr)
	}
	d.terminate(t)
	dropInbox(t, inbox, "offline.json", `{"text": "written while deskd was down", "id": "feed-2"}`)
	dropInbox(t, inbox, "broken.json", `{"text": `)
	dropInbox(t, inbox, "bad.json", `{"txt": "typo"}`)
	d = startInProcess(t, "second deskd", cfg, apiStart.Add(time.Minute))
	d.waitReady(t)
	if tr := d.trigger(t, "feed-2"); tr["state"] != "answered" {
		t.Errorf("feed-2 = %v", tr)
	}
	d.waitFor(t, deadline, "inbox.rejected of bad.json", isEvent("inbox.rejected", "file", "bad.json"))
	d.terminate(t)
	for _, p := range []string{"processed/live.json", "processed/offline.json", "rejected/bad.json", "rejected/bad.json.reason", "broken.json"} {
		if _, err := os.Stat(filepath.Join(inbox, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestAPIE2EUnixSocketAndCLI: the CLI finds the daemon through the config
// (a unix socket, the token file) and drives it; mutations without the
// token are refused. The binary: the CLI is the built binary, a process
// of its own, as an operator runs it.
func TestAPIE2EUnixSocketAndCLI(t *testing.T) {
	bin := deskdBinary(t)
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("e2e-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := apiConfig(t, dir, "{provider: scripted}", "auth_token_file: token\n", "")
	text, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, bytes.Replace(text, []byte("listen: 127.0.0.1:0"), []byte(`listen: ["127.0.0.1:0", "unix:`+sock+`"]`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startAPIBinary(t, "deskd", cfg)
	cli := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append(args, "--config", cfg)...).CombinedOutput()
		return string(out), err
	}
	out, err := cli("trigger", "main", "Morning brief, please.", "--id", "brief-1", "--wait", "--timeout", "30s")
	if err != nil || !strings.Contains(out, "brief-1: answered") || !strings.Contains(out, "[scripted]") {
		t.Errorf("deskd trigger --wait: %v\n%s", err, out)
	}
	out, err = cli("status")
	if err != nil || !strings.Contains(out, "main") || !strings.Contains(out, "idle") {
		t.Errorf("deskd status: %v\n%s", err, out)
	}
	out, err = cli("rollover", "main")
	if err != nil || !strings.Contains(out, "desk main: session") {
		t.Errorf("deskd rollover: %v\n%s", err, out)
	}
	out, err = cli("events")
	if err != nil || !strings.Contains(out, `"topic":"session.started"`) || !strings.Contains(out, `"reason":"manual_rollover"`) {
		t.Errorf("deskd events: %v\n%s", err, out)
	}
	if s, _ := d.post(t, `{"text": "no token"}`); s != http.StatusUnauthorized {
		t.Errorf("POST without the token = %d, want 401", s)
	}
	d.terminate(t)
	if _, err := os.Stat(sock); err == nil {
		t.Error("the unix socket is left behind after a clean stop")
	}
}

// BenchmarkEventToModel measures the time from POST accepted (202) to the
// request arriving at a local model server, through the ledger's fsyncs,
// in the built binary.
func BenchmarkEventToModel(b *testing.B) {
	llm, _ := newFakeLLM(b, "")
	d := startAPIBinary(b, "deskd", apiConfig(b, b.TempDir(), openAIModel(llm), "", "queue_limit: 100000\n"))
	url := d.URL(b) + "/v1/desks/main/triggers"
	client := &http.Client{}
	seq := 0 // unique over every round of the sub-benchmark
	b.Run("post-to-request", func(b *testing.B) {
		var accept, total time.Duration
		i := 0
		for b.Loop() {
			i++
			seq++
			text := fmt.Sprintf("bench event %d", seq)
			start := time.Now()
			resp, err := client.Post(url, "application/json",
				strings.NewReader(fmt.Sprintf(`{"text": %q, "id": "b%d"}`, text, seq)))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 202 {
				b.Fatalf("POST = %d", resp.StatusCode)
			}
			accepted := time.Now()
			llm.Await(b, routertest.UserContains(text))
			accept += accepted.Sub(start)
			total += time.Since(start)
		}
		b.ReportMetric(float64(accept.Microseconds())/float64(i), "µs-to-202/op")
		b.ReportMetric(float64((total-accept).Microseconds())/float64(i), "µs-202-to-model/op")
	})
	d.stopCleanly(b, syscall.SIGTERM)
}
