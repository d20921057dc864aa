package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// everythingServer is where CI (npm install --prefix examples/mcp)
// installs the MCP reference server the README's example uses.
const everythingServer = "../../examples/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// TestMCPReferenceServerExample runs the README's MCP example as written:
// examples/mcp/ on the reference server @modelcontextprotocol/server-everything
// from npm. check-config --probe lists the server's tools; the desk calls
// echo at once, and get-sum once an operator approves it with deskd
// approve. With CI=true a missing server (or Node.js) fails the test.
func TestMCPReferenceServerExample(t *testing.T) {
	if _, err := os.Stat(everythingServer); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP reference server is not installed (npm install --prefix examples/mcp @modelcontextprotocol/server-everything): %v", err)
		}
		t.Skipf("the MCP reference server is not installed (npm install --prefix examples/mcp @modelcontextprotocol/server-everything): %v", err)
	}
	t.Parallel()
	const example = "../../examples/mcp/deskd.yaml"
	code, out := deskdCLI(t, "check-config", "--config", example, "--probe")
	if code != 0 || !strings.Contains(out, "mcp server everything (used by tools):") || !strings.Contains(out, "echo") || !strings.Contains(out, "get-sum") {
		t.Fatalf("check-config --probe = %d:\n%s", code, out)
	}

	cfg, err := loadConfig(example)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir, cfg.Listens, cfg.Log.Format = t.TempDir(), []string{"127.0.0.1:0"}, "json" // the test reads the JSON lines
	d := runInProcess(t, "deskd", cfg, apiStart)
	d.waitReady(t)
	d.waitFor(t, time.Now().Add(60*time.Second), "mcp.server.up", isEvent("mcp.server.up", "server", "everything"))

	call := func(id, text string) {
		t.Helper()
		body := fmt.Sprintf(`{"id": %q, "text": %q}`, id, text)
		if s, _ := d.call(t, http.MethodPost, "/v1/desks/tools/triggers", "", body); s != http.StatusAccepted {
			t.Fatalf("POST %s = %d", id, s)
		}
	}
	reply := func(id string) string {
		t.Helper()
		s, text := d.call(t, http.MethodGet, "/v1/desks/tools/triggers/"+id+"?wait=60s", "", "")
		if s != http.StatusOK || !strings.Contains(text, `"answered"`) {
			t.Fatalf("GET %s = %d %s", id, s, text)
		}
		return text
	}
	call("echo", `CALL: mcp__everything__echo {"message": "hello"}`)
	if r := reply("echo"); !strings.Contains(r, `Echo: hello`) {
		t.Fatalf("echo's reply: %s", r)
	}
	call("sum", `CALL: mcp__everything__get-sum {"a": 2, "b": 3}`)
	l := d.waitFor(t, time.Now().Add(60*time.Second), "approval.requested", isEvent("approval.requested", "tool", "mcp__everything__get-sum"))
	if code, out := deskdCLI(t, "approvals", "--addr", d.URL(t)); code != 0 || !strings.Contains(out, l.Str("id")) {
		t.Fatalf("deskd approvals = %d:\n%s", code, out)
	}
	if code, out := deskdCLI(t, "approve", "tools", l.Str("id"), "--addr", d.URL(t), "--by", "alice"); code != 0 || !strings.Contains(out, "approved") {
		t.Fatalf("deskd approve = %d:\n%s", code, out)
	}
	if r := reply("sum"); !strings.Contains(r, "5") || !strings.Contains(r, "get-sum answered") {
		t.Fatalf("get-sum's reply: %s", r)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "desks", "tools", "tool-limits.json")); err != nil {
		t.Fatalf("the day's count of get-sum was not kept: %v", err)
	}
}
