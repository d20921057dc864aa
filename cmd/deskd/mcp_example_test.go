package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// everythingServer is where CI (npm install --prefix examples/mcp)
// installs the MCP reference server docs/MCP.md's example uses.
const everythingServer = "../../examples/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// TestMCPReferenceServerExample runs docs/MCP.md's example as written:
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
	// Not parallel: the CLI finds the daemon through $DESKD_STATE_DIR, as
	// the example's lines do.
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

	// The example's lines, as an operator types them, against this daemon
	// (found, as there, through $DESKD_STATE_DIR's runtime file).
	t.Setenv("DESKD_STATE_DIR", cfg.StateDir)
	lines := docExample(t, "../../docs/MCP.md", "CALL: mcp__everything__echo")
	cli := func(line []string) string {
		t.Helper()
		code, out := deskdCLI(t, line...)
		if code != 0 {
			t.Fatalf("deskd %s = %d:\n%s", strings.Join(line, " "), code, out)
		}
		return out
	}
	var approvalID, sumTrigger string
	for _, line := range lines {
		switch line[0] {
		case "check-config", "run": // run above, the daemon in process
		case "trigger":
			out := cli(line)
			if strings.Contains(strings.Join(line, " "), "mcp__everything__echo") && !strings.Contains(out, `Echo: hello`) {
				t.Fatalf("the echo trigger's reply (%q) lacks the tool's answer:\n%s", line, out)
			}
		case "approvals":
			l := d.waitFor(t, time.Now().Add(60*time.Second), "approval.requested", isEvent("approval.requested", "tool", "mcp__everything__get-sum"))
			approvalID, sumTrigger = l.Str("id"), l.Str("trigger")
			if out := cli(line); !strings.Contains(out, approvalID) {
				t.Fatalf("deskd approvals does not list %s:\n%s", approvalID, out)
			}
		case "approve":
			if approvalID == "" {
				t.Fatal("docs/MCP.md approves before it lists the approvals")
			}
			line = slices.Clone(line)
			line[slices.Index(line, "ID")] = approvalID
			if out := cli(line); !strings.Contains(out, "approved") {
				t.Fatalf("deskd approve:\n%s", out)
			}
		default:
			t.Fatalf("docs/MCP.md's example runs deskd %s, which this test does not know", line[0])
		}
	}
	if approvalID == "" {
		t.Fatal("docs/MCP.md's example never asked for an approval")
	}
	s, reply := d.call(t, http.MethodGet, "/v1/desks/tools/triggers/"+sumTrigger+"?wait=60s", "", "")
	if s != http.StatusOK || !strings.Contains(reply, `"answered"`) || !strings.Contains(reply, "get-sum answered") || !strings.Contains(reply, "5") {
		t.Fatalf("GET the get-sum trigger = %d %s", s, reply)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "desks", "tools", "tool-limits.json")); err != nil {
		t.Fatalf("the day's count of get-sum was not kept: %v", err)
	}
}

// docExample returns the deskd command lines of the indented example of
// the page at path that holds marker, each split as the shell would (single quotes,
// $C as the example exports it, comments dropped), without "/tmp/deskd".
func docExample(t *testing.T, path, marker string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	for _, para := range strings.Split(string(b), "\n\n") {
		if strings.Contains(para, marker) {
			block = strings.Split(para, "\n")
			break
		}
	}
	vars := map[string]string{}
	var lines [][]string
	for _, l := range block {
		words := shellWords(strings.TrimSpace(l))
		switch {
		case len(words) > 1 && words[0] == "export":
			for _, w := range words[1:] {
				if k, v, ok := strings.Cut(w, "="); ok {
					vars[k] = v
				}
			}
		case len(words) > 1 && words[0] == "/tmp/deskd":
			for i, w := range words {
				if v, ok := vars[strings.TrimPrefix(w, "$")]; ok && strings.HasPrefix(w, "$") {
					words[i] = strings.Replace(v, "examples/", "../../examples/", 1)
				}
			}
			lines = append(lines, words[1:])
		}
	}
	if len(lines) < 3 {
		t.Fatalf("%s's example with %q has %d deskd lines, want the whole example", path, marker, len(lines))
	}
	return lines
}

// shellWords splits a line as sh would for the docs' examples: words
// at blanks, '...' quoted, "..." quoted without expansions, a trailing
// comment (after a blank and #) dropped; "&" at the end is dropped too.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for i, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in && (i == 0 || line[i-1] == ' '):
			return words
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case r == '&' && i == len(line)-1:
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
