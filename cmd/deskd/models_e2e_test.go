package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// TestModelsE2ENoteToolWritesTodaysNotes: an openai model that calls the
// note tool leaves the line in today's notes file, and answers after the
// tool's result comes back.
func TestModelsE2ENoteToolWritesTodaysNotes(t *testing.T) {
	llm := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(r routertest.Request) routertest.Reply {
		usage := routertest.Usage{Input: 20, Output: 5, Cached: 4}
		if r.Last().Role == "tool" {
			return routertest.Reply{Text: "Noted the gap.", Usage: usage}
		}
		return routertest.Reply{ToolCalls: []routertest.ToolCall{{Name: "note", Args: `{"text":"RELIANCE gapped up 2% at the open"}`}}, Usage: usage}
	}})
	dir := t.TempDir()
	d, _ := startModelsDeskd(t, apiConfig(t, dir, openAIModel(llm), "", ""))
	if s, _ := d.post(t, `{"text": "RELIANCE opens", "id": "n1", "kind": "manual"}`); s != 202 {
		t.Fatalf("POST = %d", s)
	}
	got := d.trigger(t, "n1")
	if got["state"] != "answered" || got["reply"] != "Noted the gap." {
		t.Fatalf("trigger n1 = %v", got)
	}
	notes, _ := filepath.Glob(filepath.Join(dir, "state", "desks", "main", "notes", "*.md"))
	if len(notes) != 1 {
		t.Fatalf("notes files: %v", notes)
	}
	b, err := os.ReadFile(notes[0])
	if err != nil || string(b) != "RELIANCE gapped up 2% at the open\n" {
		t.Fatalf("%s = %q, %v", notes[0], b, err)
	}
	d.terminate(t)
	records := sessionRecords(t, dir)
	var tool, answered bool
	for _, r := range records {
		if r["type"] == "tool" && r["tool_name"] == "note" && strings.HasPrefix(fmt.Sprint(r["text"]), "noted in notes/") {
			tool = true
		}
		if r["role"] == "assistant" && r["text"] == "Noted the gap." {
			usage, _ := r["usage"].(map[string]any)
			answered = r["model"] == "m" && r["provider"] == "openai" && usage["input_tokens"] == 20.0 && usage["cached_tokens"] == 4.0
		}
	}
	if !tool || !answered {
		t.Fatalf("session records (tool %v, answer with model and usage %v):\n%v", tool, answered, records)
	}
}

// primaryRetryAfter is the Retry-After of failingPrimary's answers.
const primaryRetryAfter = 2 * time.Second

// failingPrimary is a Chat Completions service that answers every request
// 500 with Retry-After: 2 (primaryRetryAfter).
func failingPrimary(t *testing.T) *routertest.Server {
	return routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: routertest.Always(routertest.Reply{
		Status: http.StatusInternalServerError, Header: map[string]string{"Retry-After": "2"},
	})})
}

// postPastPrimary posts manual trigger f1 ("Check the tape") to desk main,
// whose primary model is a failingPrimary, moves deskd's clock through the
// router's two waits after the primary's first and second failures, and
// returns f1 once it is final. The router waits between attempts, on
// deskd's clock, the longer of a random backoff (up to 1s, then 2s) and
// the service's Retry-After: the primary asks for 2s, so that each wait
// ends at an instant the test knows and moves the clock to.
func (d *deskdProc) postPastPrimary(t *testing.T) map[string]any {
	t.Helper()
	if s, _ := d.post(t, `{"text": "Check the tape", "id": "f1", "kind": "manual"}`); s != 202 {
		t.Fatalf("POST = %d", s)
	}
	start := d.Clock().Now()
	d.advanceTo(t, start.Add(primaryRetryAfter))
	d.advanceTo(t, start.Add(2*primaryRetryAfter))
	return d.trigger(t, "f1")
}

// TestModelsE2EFallbackAfterThreeFailures: a model server that fails three
// times in a row makes the desk answer from its fallback, the session file
// names the fallback, and the API key never shows in a log line or a
// session file.
func TestModelsE2EFallbackAfterThreeFailures(t *testing.T) {
	primary := failingPrimary(t)
	fallback := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: routertest.Always(routertest.Reply{Text: "from the fallback"})})
	dir := t.TempDir()
	cfg := apiConfig(t, dir, openAIModel(primary), "  backup: "+openAIModel(fallback)+"\n", "fallbacks: [backup]\n")
	d, _ := startModelsDeskd(t, cfg)
	got := d.postPastPrimary(t)
	if got["state"] != "answered" || got["reply"] != "from the fallback" {
		t.Fatalf("trigger f1 = %v", got)
	}
	if n := primary.Count(); n != 3 {
		t.Errorf("the primary was called %d times, want 3 (then the fallback)", n)
	}
	// The log is written in publication order: once turn.completed is
	// there, every model.failed before it is too.
	d.waitFor(t, time.Now().Add(60*time.Second), "turn.completed", isEvent("turn.completed"))
	failures := 0
	lines, _ := d.stderr.snapshot()
	for _, l := range lines {
		if l.Event() == "model.failed" && strings.Contains(l.Raw, `"status":500`) {
			failures++
		}
		if strings.Contains(l.Raw, "test-key") {
			t.Errorf("a log line holds the API key: %s", l.Raw)
		}
	}
	if failures != 3 {
		t.Errorf("%d model.failed events with status 500, want 3", failures)
	}
	d.terminate(t)
	var answeredBy string
	for _, r := range sessionRecords(t, dir) {
		if r["role"] == "assistant" {
			answeredBy = fmt.Sprint(r["model"])
		}
	}
	if answeredBy != "backup" {
		t.Errorf("the session file says %q answered, want backup", answeredBy)
	}
	sessions, _ := filepath.Glob(filepath.Join(dir, "state", "desks", "main", "sessions", "*.jsonl"))
	for _, s := range sessions {
		if b, _ := os.ReadFile(s); strings.Contains(string(b), "test-key") {
			t.Errorf("%s holds the API key", s)
		}
	}
}

// startModelsDeskd runs the daemon of cfg (apiConfig) in process, on a
// fake clock reading 2026-03-02 10:00 IST, and returns it and its API's
// address once it is ready. The key of openAIModel's entries comes from
// the environment (DESKD_E2E_KEY), which the binary was given: it is set
// for the test, which cannot then be parallel.
func startModelsDeskd(t *testing.T, cfg string) (*deskdProc, string) {
	t.Helper()
	t.Setenv("DESKD_E2E_KEY", "test-key")
	d := startInProcess(t, "deskd", cfg, istTime(t, "2026-03-02T10:00:00+05:30"))
	ready := d.waitFor(t, time.Now().Add(60*time.Second), "deskd ready", logMessage("deskd ready"))
	return d, apiAddr(t, ready)
}

// sessionRecords returns every record of every session file of desk main.
func sessionRecords(t *testing.T, dir string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "state", "desks", "main", "sessions", "*.jsonl"))
	var out []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}
