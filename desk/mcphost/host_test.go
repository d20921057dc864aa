package mcphost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/mcptest"
)

var allTools = []string{"big", "crash", "echo", "fail", "place_order", "quote", "slow"}

func TestAllowList(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r := newRig(t)
			srv := tr.cfg(t)
			up := r.serve(srv)
			if up.Tools != len(allTools) || up.Restarts != 0 {
				t.Errorf("up event %+v, want %d tools, 0 restarts", up, len(allTools))
			}
			n := srv.Name
			tests := []struct {
				name  string
				tools []string
				want  []string
				notes []string
			}{
				{"some", []string{"quote", "echo"}, []string{mcphost.ToolName(n, "echo"), mcphost.ToolName(n, "quote")}, nil},
				{"all", []string{"*"}, prefixed(n, allTools), nil},
				{"missing", []string{"quote", "cancel_order"}, []string{mcphost.ToolName(n, "quote")},
					[]string{"MCP server " + n + " has no tool cancel_order: mcp__" + n + "__cancel_order is unavailable"}},
			}
			for _, tt := range tests {
				ts := r.toolset(n, tt.tools...)
				got := names(ts.Tools())
				slices.Sort(got)
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: tools %v, want %v", tt.name, got, tt.want)
				}
				if notes := ts.Notes(); !slices.Equal(notes, tt.notes) {
					t.Errorf("%s: notes %q, want %q", tt.name, notes, tt.notes)
				}
			}
			st := r.status(n)
			if st.State != mcphost.StateUp || st.Transport != tr.name || !slices.Equal(st.Tools, allTools) {
				t.Errorf("status %+v, want up over %s with tools %v", st, tr.name, allTools)
			}
			if (tr.name == "stdio") != (st.PID > 0) {
				t.Errorf("status PID %d over %s", st.PID, tr.name)
			}
		})
	}
}

func prefixed(server string, tools []string) []string {
	var out []string
	for _, t := range tools {
		out = append(out, mcphost.ToolName(server, t))
	}
	return out
}

func TestSchemasAndDescriptions(t *testing.T) {
	overTransports(t, func(t *testing.T, r *rig, srv *config.MCPServer) {
		srv.MaxResult = 1000
		r.serve(srv)
		ts := r.toolset(srv.Name)
		order := tool(t, ts, mcphost.ToolName(srv.Name, "place_order"))
		if order.Spec.Description != mcptest.OrderDescription || order.Server != srv.Name || order.MaxResult != 1000 {
			t.Errorf("place_order: description %q, server %q, max result %d; want %q, %q, 1000",
				order.Spec.Description, order.Server, order.MaxResult, mcptest.OrderDescription, srv.Name)
		}
		var schema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(order.Spec.Schema, &schema); err != nil {
			t.Fatalf("place_order's schema %s: %v", order.Spec.Schema, err)
		}
		if schema.Type != "object" || schema.Properties["qty"].Type != "integer" ||
			schema.Properties["side"].Description != "buy or sell" {
			t.Errorf("place_order's schema %s is not the server's", order.Spec.Schema)
		}
		if echo := tool(t, ts, mcphost.ToolName(srv.Name, "echo")); echo.Spec.Description != mcptest.EchoDescription {
			t.Errorf("echo's description %q, want %q", echo.Spec.Description, mcptest.EchoDescription)
		}
	})
}

func TestCalls(t *testing.T) {
	overTransports(t, func(t *testing.T, r *rig, srv *config.MCPServer) {
		r.serve(srv)
		ts := r.toolset(srv.Name)
		name := func(s string) string { return mcphost.ToolName(srv.Name, s) }
		if got := mustCall(t, tool(t, ts, name("echo")), map[string]any{"text": "hello desk"}); got != "hello desk" {
			t.Errorf("echo = %q", got)
		}
		if got := mustCall(t, tool(t, ts, name("quote")), map[string]any{"symbol": "INFY"}); got != "QUOTE INFY 101.25" {
			t.Errorf("quote = %q", got)
		}
		got := mustCall(t, tool(t, ts, name("place_order")), map[string]any{"symbol": "INFY", "qty": 5, "side": "buy"})
		if got != "ORDER 1 buy 5 INFY accepted" {
			t.Errorf("place_order = %q", got)
		}
		_, err := call(t, tool(t, ts, name("fail")), map[string]any{})
		if err == nil || err.Error() != mcptest.FailText {
			t.Errorf("fail: error %v, want %q", err, mcptest.FailText)
		}
		big := mustCall(t, tool(t, ts, name("big")), map[string]any{"bytes": 100000})
		if len(big) != 100000 {
			t.Errorf("big answered %d bytes, want all 100000 (the router cuts it)", len(big))
		}
	})
}

func TestOrdersReachTheServer(t *testing.T) {
	r := newRig(t)
	stdio := mcptest.Stdio(t)
	httpSrv, h := mcptest.HTTP(t)
	r.host.Configure(map[string]*config.MCPServer{"stdio": stdio, "http": httpSrv})
	r.host.Use("d", []string{"stdio", "http"})
	r.waitUp("stdio")
	r.waitUp("http")
	ts := r.host.Toolset("d", map[string]config.DeskMCP{
		"stdio": {Server: "stdio", Tools: []string{"place_order"}},
		"http":  {Server: "http", Tools: []string{"place_order"}},
	})
	for _, n := range []string{"stdio", "http", "http"} {
		mustCall(t, tool(t, ts, mcphost.ToolName(n, "place_order")), map[string]any{"symbol": "TCS", "qty": 1, "side": "sell"})
	}
	if got := mcptest.StdioOrders(t, stdio); !slices.Equal(got, []string{"ORDER 1 sell 1 TCS accepted"}) {
		t.Errorf("stdio orders %q", got)
	}
	if h.Orders() != 2 {
		t.Errorf("http orders %d, want 2", h.Orders())
	}
}

func TestTimeoutOnTheHostClock(t *testing.T) {
	overTransports(t, func(t *testing.T, r *rig, srv *config.MCPServer) {
		srv.Timeout = 5 * time.Second
		r.serve(srv)
		ts := r.toolset(srv.Name)
		r.timesOut(tool(t, ts, mcphost.ToolName(srv.Name, "slow")), 5*time.Second)
		if got := mustCall(t, tool(t, ts, mcphost.ToolName(srv.Name, "echo")), map[string]any{"text": "still here"}); got != "still here" {
			t.Errorf("echo after a timeout = %q", got)
		}
	})
}

func TestStdioCrashRestarts(t *testing.T) {
	r, _ := serveStdio(t)
	first := r.status("stdio").PID
	ts := r.toolset("stdio")
	_, err := call(t, tool(t, ts, "mcp__stdio__crash"), map[string]any{})
	if err == nil {
		t.Fatal("crash answered")
	}
	contains(t, "crash's error", err.Error(), "exit status 3")
	down := r.waitDown("stdio")
	contains(t, "the down event's error", down.Error, "exit status 3")
	contains(t, "the down event's error", down.Error, "mcptest: serving on stdio") // the stderr tail
	if want := start.Add(mcphost.DefaultBackoff); !down.RetryAt.Equal(want) {
		t.Errorf("retry at %s, want %s", down.RetryAt, want)
	}
	st := r.status("stdio")
	if st.State != mcphost.StateDown || st.Error != down.Error || !st.RetryAt.Equal(down.RetryAt) || st.PID != 0 {
		t.Errorf("status while down %+v", st)
	}
	if len(ts.Tools()) != 0 {
		t.Errorf("tools offered while down: %v", names(ts.Tools()))
	}
	notes := ts.Notes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "the tools of MCP server stdio (mcp__stdio__*) are unavailable: ") ||
		!strings.HasSuffix(notes[0], "; deskd is retrying") {
		t.Errorf("notes while down %q", notes)
	}
	if !gone(first) {
		t.Errorf("the crashed server's process %d is still there", first)
	}
	r.retry(down)
	up := r.waitUp("stdio")
	if up.Restarts != 1 {
		t.Errorf("up event after the crash %+v, want 1 restart", up)
	}
	if st := r.status("stdio"); st.PID == first || st.PID == 0 || st.Restarts != 1 {
		t.Errorf("status after the restart %+v (first PID %d)", st, first)
	}
	if got := mustCall(t, tool(t, ts, "mcp__stdio__echo"), map[string]any{"text": "back"}); got != "back" {
		t.Errorf("echo after the restart = %q", got)
	}
}

func TestBackoffDoubles(t *testing.T) {
	r := newRig(t)
	r.configure(&config.MCPServer{Name: "bad", Command: []string{"/nonexistent/mcp-server"}})
	at := start
	for _, wait := range []time.Duration{1, 2, 4, 8, 16, 32, 60, 60} {
		down := r.waitDown("bad")
		contains(t, "the down error", down.Error, "/nonexistent/mcp-server")
		if want := at.Add(wait * time.Second); !down.RetryAt.Equal(want) {
			t.Fatalf("retry at %s, want %s", down.RetryAt, want)
		}
		r.retry(down)
		at = down.RetryAt
	}
	ts := r.toolset("bad", "quote")
	if len(ts.Tools()) != 0 || len(ts.Notes()) != 1 {
		t.Errorf("a server that cannot start: tools %v, notes %q", names(ts.Tools()), ts.Notes())
	}
}

func TestHTTPServerDiesAndComesBack(t *testing.T) {
	r := newRig(t)
	srv, h := mcptest.HTTP(t)
	r.serve(srv)
	ts := r.toolset("http", "echo")
	echo := tool(t, ts, "mcp__http__echo")
	h.Stop()
	if _, err := call(t, echo, map[string]any{"text": "anyone?"}); err == nil {
		t.Fatal("echo answered with its server stopped")
	}
	down := r.waitDown("http")
	if st := r.status("http"); st.State != mcphost.StateDown {
		t.Errorf("status with the server stopped %+v", st)
	}
	if _, err := call(t, echo, map[string]any{"text": "anyone?"}); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("echo while down: %v, want it unavailable", err)
	}
	if err := h.Start(); err != nil {
		t.Fatalf("start the server again: %v", err)
	}
	r.retry(down)
	if up := r.waitUp("http"); up.Restarts != 1 {
		t.Errorf("up event %+v, want 1 restart", up)
	}
	if got := mustCall(t, tool(t, ts, "mcp__http__echo"), map[string]any{"text": "back"}); got != "back" {
		t.Errorf("echo after the server came back = %q", got)
	}
}

func TestHTTPHeadersAreSent(t *testing.T) {
	r := newRig(t)
	srv, _ := mcptest.HTTP(t)
	srv.Secrets.Headers = map[string][]string{"Authorization": {"Bearer wrong-secret"}}
	r.configure(srv)
	down := r.waitDown("http")
	if strings.Contains(down.Error, "wrong-secret") {
		t.Errorf("the down error %q shows the secret header", down.Error)
	}
	// The right header, as a reload with a changed headers file gives it.
	fixed := *srv
	fixed.Secrets = config.MCPSecrets{Headers: map[string][]string{"Authorization": {"Bearer " + mcptest.Token}}, Digest: "fixed"}
	r.host.Configure(map[string]*config.MCPServer{"http": &fixed})
	r.waitUp("http")
}

func TestCloseLeavesNoProcess(t *testing.T) {
	r, _ := serveStdio(t)
	pid := r.status("stdio").PID
	if gone(pid) {
		t.Fatalf("the server's process %d is not there while up", pid)
	}
	r.closeEnds(pid)
	if st := r.status("stdio"); st.State != mcphost.StateStopped || st.PID != 0 {
		t.Errorf("status after Close %+v", st)
	}
	r.host.Use("d2", []string{"stdio"})
	if st := r.status("stdio"); st.State != mcphost.StateStopped {
		t.Errorf("Use after Close started the server: %+v", st)
	}
}

// TestCloseKillsALingeringServer: a server that does not exit when its
// stdin closes gets SIGTERM (its process group) after the grace period.
func TestCloseKillsALingeringServer(t *testing.T) {
	t.Parallel() // seconds of real time (the grace periods of a stop): run beside the others
	r := newRig(t)
	srv := mcptest.Stdio(t)
	srv.Env[mcptest.EnvLinger] = "1"
	r.serve(srv)
	r.closeEnds(r.status("stdio").PID)
}

func TestUseStartsAndStops(t *testing.T) {
	r := newRig(t)
	srv := mcptest.Stdio(t)
	r.host.Configure(map[string]*config.MCPServer{"stdio": srv})
	if st := r.status("stdio"); st.State != mcphost.StateStopped || st.Transport != mcphost.TransportStdio {
		t.Errorf("status before any desk uses it %+v", st)
	}
	r.host.Use("d1", []string{"stdio"})
	r.waitUp("stdio")
	pid := r.status("stdio").PID
	r.host.Use("d2", []string{"stdio"})
	r.host.Use("d1", nil)
	if st := r.status("stdio"); st.State != mcphost.StateUp || st.PID != pid {
		t.Errorf("status while d2 still uses it %+v, want up with PID %d", st, pid)
	}
	r.host.Use("d2", nil)
	if st := r.status("stdio"); st.State != mcphost.StateStopped || !gone(pid) {
		t.Errorf("status when no desk uses it %+v (process %d gone: %v)", st, pid, gone(pid))
	}
}

func TestConfigureRestartsChangedAndStopsRemoved(t *testing.T) {
	r, srv := serveStdio(t)
	pid := r.status("stdio").PID

	same := *srv
	r.host.Configure(map[string]*config.MCPServer{"stdio": &same})
	if st := r.status("stdio"); st.PID != pid || st.Restarts != 0 {
		t.Errorf("an unchanged server restarted: %+v", st)
	}

	changed := *srv
	changed.Secrets.Digest = "another secret"
	r.host.Configure(map[string]*config.MCPServer{"stdio": &changed})
	if up := r.waitUp("stdio"); up.Restarts != 1 {
		t.Errorf("up event after a changed secret %+v, want 1 restart", up)
	}
	if st := r.status("stdio"); st.PID == pid || !gone(pid) {
		t.Errorf("a changed server kept its process %d: %+v", pid, st)
	}
	pid = r.status("stdio").PID

	r.host.Configure(nil)
	if st := r.host.Status(); len(st) != 0 || !gone(pid) {
		t.Errorf("a removed server: status %+v, process %d gone: %v", st, pid, gone(pid))
	}
}

func TestStdioEnvironmentIsClean(t *testing.T) {
	t.Setenv("DESKD_TEST_API_KEY", "must-not-leak")
	r := newRig(t)
	srv := mcptest.Stdio(t)
	srv.Env["PLAIN"] = "plain-value"
	srv.Secrets.Env = map[string]string{"BROKER_KEY": "from-a-file"}
	r.serve(srv)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(r.status("stdio").PID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	for _, want := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TZ=UTC", "PLAIN=plain-value", "BROKER_KEY=from-a-file"} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment %q lacks %s", env, want)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "must-not-leak") {
			t.Errorf("deskd's environment leaked into the server's: %s", kv)
		}
	}
}

func TestProbe(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			srv := tr.cfg(t)
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			tools, err := mcphost.Probe(ctx, srv)
			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			var got []string
			for _, tl := range tools {
				got = append(got, tl.Name)
				if tl.Name == "quote" && (tl.Description != mcptest.QuoteDescription || !strings.Contains(string(tl.InputSchema), `"symbol"`)) {
					t.Errorf("quote probed as %+v", tl)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, allTools) {
				t.Errorf("probed tools %v, want %v", got, allTools)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		_, err := mcphost.Probe(t.Context(), &config.MCPServer{Name: "gone", Command: []string{"/nonexistent/server"}})
		if err == nil || !strings.Contains(err.Error(), "probe MCP server gone") || !strings.Contains(err.Error(), "/nonexistent/server") {
			t.Errorf("Probe of a missing program: %v", err)
		}
	})
}

func TestToolNames(t *testing.T) {
	if got := mcphost.ToolName("broker", "place_order"); got != "mcp__broker__place_order" {
		t.Errorf("ToolName = %q", got)
	}
	tests := []struct {
		name, server, tool string
		ok                 bool
	}{
		{"mcp__broker__place_order", "broker", "place_order", true},
		{"mcp__broker__with__underscores", "broker", "with__underscores", true},
		{"mcp__broker__", "", "", false},
		{"mcp____quote", "", "", false},
		{"note", "", "", false},
		{"mcp_broker_quote", "", "", false},
	}
	for _, tt := range tests {
		s, tl, ok := mcphost.SplitToolName(tt.name)
		if s != tt.server || tl != tt.tool || ok != tt.ok {
			t.Errorf("SplitToolName(%q) = %q, %q, %v; want %q, %q, %v", tt.name, s, tl, ok, tt.server, tt.tool, tt.ok)
		}
	}
}

// TestStdioServerDiesWithItsParent kills (SIGKILL) a process that runs a
// host with a stdio server, and waits for the server to die too.
func TestStdioServerDiesWithItsParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	var pid int
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case line := <-lines:
		pid = atoi(t, strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	case <-timer.C:
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the parent did not start its server")
	}
	if gone(pid) {
		t.Fatalf("the server %d is not running", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := mcptest.WaitExit(pid, wait); err != nil {
		t.Errorf("the server %d outlived its SIGKILLed parent: %v", pid, err)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestToolListChanges: a server that says its tools changed is listed
// again, and the new tool is offered.
func TestToolListChanges(t *testing.T) {
	r := newRig(t)
	srv, h := mcptest.HTTP(t)
	r.serve(srv)
	ts := r.toolset("http")
	mcp.AddTool(h.MCP(), &mcp.Tool{Name: "cancel_order", Description: "Cancel an order."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cancelled"}}}, nil, nil
		})
	if up := r.waitUp("http"); up.Tools != len(allTools)+1 {
		t.Errorf("up event after the change %+v, want %d tools", up, len(allTools)+1)
	}
	if got := mustCall(t, tool(t, ts, "mcp__http__cancel_order"), map[string]any{}); got != "cancelled" {
		t.Errorf("cancel_order = %q", got)
	}
}
