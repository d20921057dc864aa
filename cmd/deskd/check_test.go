package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/mcptest"
)

// TestCheckConfigDiffWithoutDaemon: check-config --diff says clearly that
// no deskd runs, and fails.
func TestCheckConfigDiffWithoutDaemon(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"check-config", "--diff", "--addr", "127.0.0.1:" + freePortString(t)}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no running deskd answered at http://127.0.0.1:") ||
		!strings.Contains(errb.String(), "without --diff checks the files alone") {
		t.Errorf("check-config --diff without a daemon = %d\n%s%s", code, out.String(), errb.String())
	}
}

// freePortString returns a TCP port on 127.0.0.1 that nothing listens on.
func freePortString(t *testing.T) string { return strconv.Itoa(pickFreePort(t)) }

// TestCheckConfigMCP: check-config names a desk's reference to an unknown
// MCP server and a misspelt key; with --probe it connects to each server,
// lists its tools and marks a tool a desk allows that the server lacks
// (exit 2), and says which server it could not reach.
func TestCheckConfigMCP(t *testing.T) {
	srv := mcptest.Stdio(t)
	servers := fmt.Sprintf("mcp_servers:\n  broker: {command: [%q], env: {%s: stdio}}\n", srv.Command[0], mcptest.EnvMode)

	cfg := apiConfig(t, t.TempDir(), "{provider: scripted}", servers, "mcp:\n  brokr: {tools: [quote]}\n  broker: {tools: [quote], aprove: [quote]}\n")
	code, out := deskdCLI(t, "check-config", "--config", cfg)
	if code != 2 || !strings.Contains(out, `mcp.brokr: unknown MCP server "brokr"; mcp_servers has broker`) || !strings.Contains(out, "aprove") {
		t.Errorf("check-config of a desk naming an unknown server and a misspelt key = %d:\n%s", code, out)
	}

	cfg = apiConfig(t, t.TempDir(), "{provider: scripted}", servers+"  gone: {url: \"http://127.0.0.1:"+freePortString(t)+"/mcp\", timeout: 5s}\n",
		"mcp:\n  broker: {tools: [quote, place_order, cancel_all]}\n  gone: {tools: [\"*\"]}\n")
	writeTestFile(t, filepath.Dir(cfg), "desks.d/fx.yaml", "model: m\ninstructions: fx\nmcp:\n  broker: {tools: [\"*\"], approve: [place-order], limits: {placeorder: 3}}\n")
	code, out = deskdCLI(t, "check-config", "--config", cfg, "--probe")
	for _, want := range []string{
		"mcp server broker (used by fx, main): 7 tools: ",
		"MISSING: desk main allows cancel_all, which server broker does not have",
		"mcp server gone (used by main): NOT REACHED: ",
		"MISSING: desk fx names in approve place-order, which server broker does not have",
		"MISSING: desk fx names in limits placeorder, which server broker does not have",
		"the MCP probe found 4 problems",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config --probe lacks %q:\n%s", want, out)
		}
	}
	if code != 2 || strings.Contains(out, "MISSING: desk main allows quote") {
		t.Errorf("check-config --probe = %d:\n%s", code, out)
	}
}
