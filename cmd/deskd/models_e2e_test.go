package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// chatServer is a local server that speaks OpenAI's streamed Chat
// Completions as the real service does. answer decides each reply from the
// request's messages; it returns the assistant text, or a tool call, or an
// HTTP status to fail with.
type chatServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	calls  int
	answer func(n int, msgs []chatMessage) (text string, tool *chatTool, status int)
}

type chatMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
}

type chatTool struct{ name, args string }

func newChatServer(t *testing.T, answer func(n int, msgs []chatMessage) (string, *chatTool, int)) *chatServer {
	c := &chatServer{answer: answer}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(func() { c.srv.CloseClientConnections(); c.srv.Close() })
	return c
}

func (c *chatServer) model() string {
	return fmt.Sprintf("{provider: openai, base_url: %q, model: fake, api_key_env: DESKD_E2E_KEY, timeout: 20s}", c.srv.URL+"/v1")
}

func (c *chatServer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []chatMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.mu.Unlock()
	text, tool, status := c.answer(n, req.Messages)
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"injected failure %d","type":"server_error"}}`, n)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices, usage string) {
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[%s],\"usage\":%s}\n\n", n, choices, usage)
	}
	if tool != nil {
		args, _ := json.Marshal(tool.args)
		chunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}`, n, tool.name, args), "null")
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`, "null")
	} else {
		content, _ := json.Marshal(text)
		chunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":%s},"finish_reason":null}`, content), "null")
		chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`, "null")
	}
	chunk(``, `{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":4}}`)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestModelsE2ENoteToolWritesTodaysNotes: an openai model that calls the
// note tool leaves the line in today's notes file, and answers after the
// tool's result comes back.
func TestModelsE2ENoteToolWritesTodaysNotes(t *testing.T) {
	bin := deskdBinary(t)
	llm := newChatServer(t, func(n int, msgs []chatMessage) (string, *chatTool, int) {
		if last := msgs[len(msgs)-1]; last.Role == "tool" {
			return "Noted the gap.", nil, 0
		}
		return "", &chatTool{"note", `{"text":"RELIANCE gapped up 2% at the open"}`}, 0
	})
	dir := t.TempDir()
	d := startAPIDeskd(t, bin, apiConfig(t, dir, llm.model(), "", ""))
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
	d.stop(t)
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

// TestModelsE2EFallbackAfterThreeFailures: a model server that fails three
// times in a row makes the desk answer from its fallback, the session file
// names the fallback, and the API key never shows in a log line or a
// session file.
func TestModelsE2EFallbackAfterThreeFailures(t *testing.T) {
	bin := deskdBinary(t)
	primary := newChatServer(t, func(int, []chatMessage) (string, *chatTool, int) { return "", nil, http.StatusInternalServerError })
	fallback := newChatServer(t, func(int, []chatMessage) (string, *chatTool, int) { return "from the fallback", nil, 0 })
	dir := t.TempDir()
	cfg := apiConfig(t, dir, primary.model(), "  backup: "+fallback.model()+"\n", "fallbacks: [backup]\n")
	d := startAPIDeskd(t, bin, cfg)
	if s, _ := d.post(t, `{"text": "Check the tape", "id": "f1", "kind": "manual"}`); s != 202 {
		t.Fatalf("POST = %d", s)
	}
	got := d.trigger(t, "f1")
	if got["state"] != "answered" || got["reply"] != "from the fallback" {
		t.Fatalf("trigger f1 = %v", got)
	}
	if n := primary.count(); n != 3 {
		t.Errorf("the primary was called %d times, want 3 (then the fallback)", n)
	}
	// The log is written in publication order: once turn.completed is
	// there, every model.failed before it is too.
	d.waitLine(t, func(m map[string]any) bool { return m["event"] == "turn.completed" }, "turn.completed")
	failures := 0
	for _, l := range d.snapshot() {
		if strings.Contains(l, `"event":"model.failed"`) && strings.Contains(l, `"status":500`) {
			failures++
		}
		if strings.Contains(l, "test-key") {
			t.Errorf("a log line holds the API key: %s", l)
		}
	}
	if failures != 3 {
		t.Errorf("%d model.failed events with status 500, want 3", failures)
	}
	d.stop(t)
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

// snapshot returns the log lines deskd has written so far.
func (p *apiProc) snapshot() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}
