package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// mcpConfig writes a config of desk main on the scripted model with the
// test MCP server over stdio as "broker" (this test binary, started again
// by deskd; its orders go to orders), quote free, place_order under
// approval (1 minute) and a limit of 2 a day.
func mcpConfig(t *testing.T, dir, orders string) string {
	t.Helper()
	desk := "mcp:\n  broker: {tools: [quote, place_order], approve: [place_order], approve_within: 1m, limits: {place_order: 2}}\n"
	return apiConfig(t, dir, "{provider: scripted}", stdioBroker(t, orders), desk)
}

// stdioBroker is the mcp_servers section of the test MCP server over
// stdio as "broker" (this test binary, started again by deskd), its
// orders written to orders.
func stdioBroker(t *testing.T, orders string) string {
	t.Helper()
	return fmt.Sprintf("mcp_servers:\n  broker: {command: [%q], env: {%s: stdio, %s: %q}, timeout: 20s}\n",
		mcptest.Stdio(t).Command[0], mcptest.EnvMode, mcptest.EnvOrders, orders)
}

// httpBroker starts the test MCP server over streamable HTTP and returns
// the mcp_servers section that reaches it as "broker", its headers file
// (in dir) carrying header (the server wants "Authorization: Bearer " +
// mcptest.Token).
func httpBroker(t *testing.T, dir, header string) (string, *mcptest.HTTPServer) {
	t.Helper()
	_, srv := mcptest.HTTP(t)
	headers := writeTestFile(t, dir, "broker.headers", "# the broker's credential\n"+header+"\n")
	return fmt.Sprintf("mcp_servers:\n  broker: {url: %q, headers_file: %q, timeout: 10s}\n", srv.URL, headers), srv
}

// brokerUp waits until d has announced the broker server up.
func brokerUp(t *testing.T, d *deskdProc) {
	t.Helper()
	d.waitFor(t, time.Now().Add(30*time.Second), "mcp.server.up", isEvent("mcp.server.up", "server", "broker"))
}

// mcpCall is a trigger whose text makes the scripted model call tool with args.
func mcpCall(id, tool, args string) string {
	body, _ := json.Marshal(map[string]string{"id": id, "text": "CALL: mcp__broker__" + tool + " " + args})
	return string(body)
}

// waitingCall posts a trigger calling place_order and returns the id of
// the approval it waits for, once deskd has announced it.
func waitingCall(t *testing.T, d *deskdProc, id, args string) string {
	t.Helper()
	if s, _ := d.post(t, mcpCall(id, "place_order", args)); s != http.StatusAccepted {
		d.fail(t, "POST %s = %d", id, s)
	}
	l := d.waitFor(t, time.Now().Add(30*time.Second), "approval.requested of "+id, isEvent("approval.requested", "trigger", id))
	return l.Str("id")
}

func orderLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestMCPApprovalE2E: a desk calls tools on a real MCP server (stdio,
// written with the official SDK) through deskd: a free tool runs at once;
// an acting one waits for an operator, and runs when approved, not when
// denied, expired or its desk paused; past the day's limit it is refused
// without asking anyone. Every decision is in the session and in the day's
// audit bundle; the desk's status lists its server and what waits.
func TestMCPApprovalE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orders := filepath.Join(dir, "orders")
	d := startInProcess(t, "deskd", mcpConfig(t, dir, orders), apiStart)
	d.waitReady(t)
	brokerUp(t, d)

	// A free tool.
	if s, _ := d.post(t, mcpCall("q1", "quote", `{"symbol":"INFY"}`)); s != http.StatusAccepted {
		t.Fatalf("POST q1 = %d", s)
	}
	if q := d.trigger(t, "q1"); q["state"] != "answered" || !strings.Contains(fmt.Sprint(q["reply"]), "QUOTE INFY "+mcptest.QuotePrice) {
		t.Fatalf("q1 = %v", q)
	}

	// Approved: it runs.
	id := waitingCall(t, d, "o1", `{"symbol":"INFY","qty":5,"side":"buy"}`)
	status, body := d.call(t, http.MethodGet, "/v1/desks/main/approvals", "", "")
	var list httpapi.ApprovalsResponse
	if err := json.Unmarshal([]byte(body), &list); err != nil || status != 200 || len(list.Approvals) != 1 || list.Approvals[0].ID != id ||
		list.Approvals[0].Tool != "mcp__broker__place_order" || !strings.Contains(string(list.Approvals[0].Arguments), "INFY") {
		t.Fatalf("GET approvals = %d %s", status, body)
	}
	_, desks := d.call(t, http.MethodGet, "/v1/desks", "", "")
	var st httpapi.DesksResponse
	if err := json.Unmarshal([]byte(desks), &st); err != nil || len(st.Desks[0].Approvals) != 1 || len(st.Desks[0].MCP) != 1 ||
		st.Desks[0].MCP[0].State != "up" || st.Desks[0].MCP[0].Name != "broker" {
		t.Fatalf("the desk's status does not list its server up and its waiting call: %s", desks)
	}
	// What the model is offered, and what not (the server has more tools).
	if m := st.Desks[0].MCP[0]; !slices.Equal(m.Tools, []string{"place_order", "quote"}) ||
		!slices.Contains(m.LeftOut, mcphost.LeftOut{Tool: "echo", Why: "the desk's file does not allow it"}) {
		t.Errorf("the desk's status lists the tools %q, left out %q; want place_order, quote (the server lists its tools by name), and echo not allowed", m.Tools, m.LeftOut)
	}
	if len(orderLines(t, orders)) != 0 {
		t.Fatal("the order ran before it was approved")
	}
	status, body = d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+id+"/approve", "", `{"by": "alice", "reason": "within limits"}`)
	if status != 200 || !strings.Contains(body, `"outcome": "approved"`) {
		t.Fatalf("approve = %d %s", status, body)
	}
	if o := d.trigger(t, "o1"); !strings.Contains(fmt.Sprint(o["reply"]), "accepted") {
		t.Fatalf("o1 = %v", o)
	}
	if n := len(orderLines(t, orders)); n != 1 {
		t.Fatalf("%d orders reached the broker, want 1", n)
	}

	// Denied: it does not run, and the model hears who denied it and why.
	id = waitingCall(t, d, "o2", `{"symbol":"TCS","qty":500,"side":"sell"}`)
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+id+"/deny", "", `{"by": "risk", "reason": "too big"}`); status != 200 {
		t.Fatalf("deny = %d %s", status, body)
	}
	if o := d.trigger(t, "o2"); !strings.Contains(fmt.Sprint(o["reply"]), "denied by risk: too big") {
		t.Fatalf("o2 = %v", o)
	}

	// Expired: nobody decides within approve_within, on deskd's clock.
	_ = waitingCall(t, d, "o3", `{"symbol":"HDFC","qty":1,"side":"buy"}`)
	d.advanceTo(t, d.Clock().Now().Add(time.Minute))
	if o := d.trigger(t, "o3"); !strings.Contains(fmt.Sprint(o["reply"]), "expired") {
		t.Fatalf("o3 = %v", o)
	}

	// Paused: the waiting call is denied by whoever paused the desk.
	_ = waitingCall(t, d, "o4", `{"symbol":"SBIN","qty":1,"side":"buy"}`)
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/pause", "", `{"by": "bob", "reason": "halt"}`); status != 200 {
		t.Fatalf("pause = %d %s", status, body)
	}
	d.waitFor(t, time.Now().Add(30*time.Second), "the paused desk's denial", isEvent("approval.decided", "trigger", "o4", "outcome", "denied", "by", "bob"))
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/resume", "", `{"by": "bob"}`); status != 200 {
		t.Fatalf("resume = %d %s", status, body)
	}
	if o := d.trigger(t, "o4"); !strings.Contains(fmt.Sprint(o["reply"]), "denied by bob") {
		t.Fatalf("o4 = %v", o)
	}

	// The day's limit: a second approved order runs, a third is refused
	// without asking anyone.
	id = waitingCall(t, d, "o5", `{"symbol":"INFY","qty":1,"side":"sell"}`)
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+id+"/approve", "", `{}`); status != 200 {
		t.Fatalf("approve o5 = %d %s", status, body)
	}
	d.trigger(t, "o5")
	if s, _ := d.post(t, mcpCall("o6", "place_order", `{"symbol":"INFY","qty":1,"side":"sell"}`)); s != http.StatusAccepted {
		t.Fatalf("POST o6 = %d", s)
	}
	if o := d.trigger(t, "o6"); !strings.Contains(fmt.Sprint(o["reply"]), "at most 2 times a trading day") {
		t.Fatalf("o6 = %v", o)
	}
	if n := d.count(isEvent("approval.requested", "trigger", "o6")); n != 0 {
		t.Fatal("a call over the day's limit was put to an operator")
	}
	if n := len(orderLines(t, orders)); n != 2 {
		t.Fatalf("%d orders reached the broker, want 2 (o1 and o5)", n)
	}

	// The session holds every decision, with who made it.
	dec := sessionDecisions(t, filepath.Join(dir, "state", "desks", "main"))
	want := []string{"approved alice", "denied risk", "expired deskd", "denied bob", "approved api"}
	if len(dec) != len(want) {
		t.Fatalf("the session holds %d decisions %v, want %v", len(dec), dec, want)
	}
	for i, w := range want {
		if got := dec[i].Outcome + " " + dec[i].By; got != w {
			t.Errorf("decision %d = %q, want %q", i, got, w)
		}
	}

	// So does the day's audit bundle.
	bundle := filepath.Join(dir, "audit.tar.gz")
	if code, out := deskdCLI(t, "audit", "main", "2026-03-02", "--config", filepath.Join(dir, "deskd.yaml"), "-o", bundle); code != 0 {
		t.Fatalf("deskd audit = %d: %s", code, out)
	}
	found := false
	for _, f := range readBundle(t, bundle) {
		if strings.HasSuffix(f.name, "/approvals.jsonl") {
			found = true
			if n := strings.Count(f.data, "\n"); n != len(want) || !strings.Contains(f.data, `"by":"alice"`) {
				t.Fatalf("the audit's approvals.jsonl has %d lines, want %d:\n%s", n, len(want), f.data)
			}
		}
	}
	if !found {
		t.Fatal("the audit bundle has no approvals.jsonl")
	}
}

// sessionDecisions reads the decisions of the desk's sessions.
func sessionDecisions(t *testing.T, deskDir string) []router.Decision {
	t.Helper()
	f, err := memory.OpenFolder(deskDir, "main", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := f.ListSessions()
	if err != nil {
		t.Fatal(err)
	}
	var out []router.Decision
	for _, info := range infos {
		recs, err := f.ReadSession(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == router.RecordApproval {
				var d router.Decision
				if err := json.Unmarshal(r.Data, &d); err != nil {
					t.Fatal(err)
				}
				out = append(out, d)
			}
		}
	}
	return out
}

// startStdioBrokerBinary runs the deskd binary (startAPIBinary) on a config
// in dir whose desk main may call every tool of "broker", the test MCP
// server that deskd starts on stdio (this test binary, mcptest's EnvMode
// stdio) with the more env entries given (YAML "NAME: value"), and returns
// once the broker is up.
func startStdioBrokerBinary(t *testing.T, dir, env string) *deskdProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("mcp_servers:\n  broker: {command: [%q], env: {%s: stdio, %s}}\n", exe, mcptest.EnvMode, env)
	cfg := apiConfig(t, dir, "{provider: scripted}", extra, "mcp:\n  broker: {tools: [\"*\"]}\n")
	d := startAPIBinary(t, "deskd", cfg)
	brokerUp(t, d)
	return d
}

// TestMCPServerDiesWithDeskdE2E: the stdio MCP server deskd started dies
// with deskd, also when deskd is killed with SIGKILL and has no chance to
// stop it; the server here does not even stop when its stdin closes. The
// binary: SIGKILL.
func TestMCPServerDiesWithDeskdE2E(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	d := startStdioBrokerBinary(t, t.TempDir(), fmt.Sprintf(`%s: "1"`, mcptest.EnvLinger))
	_, body := d.call(t, http.MethodGet, "/v1/desks", "", "")
	var st httpapi.DesksResponse
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Desks) != 1 || len(st.Desks[0].MCP) != 1 || st.Desks[0].MCP[0].PID == 0 {
		t.Fatalf("the status names no server process: %s", body)
	}
	pid := st.Desks[0].MCP[0].PID
	killNow(t, d)
	if err := mcptest.WaitExit(pid, 30*time.Second); err != nil {
		t.Fatalf("the MCP server outlived the deskd that was killed: %v", err)
	}
}

// TestMCPDetachedChildEndsWithDeskdE2E: a child a stdio MCP server
// detaches (setsid: outside the server's process group, so not killed
// with it) does not outlive deskd's clean stop: deskd, its subreaper,
// adopts it when the server exits and ends it. The binary: SIGTERM.
func TestMCPDetachedChildEndsWithDeskdE2E(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "detached.pid")
	d := startStdioBrokerBinary(t, dir, fmt.Sprintf("%s: %q", mcptest.EnvDetached, pidFile))
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the detached child's PID: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	d.terminate(t)
	if err := mcptest.WaitExit(pid, 30*time.Second); err != nil {
		t.Fatalf("the MCP server's detached child outlived deskd's stop: %v", err)
	}
}

// TestMCPHTTPServerGoesAndComesBackE2E: a desk calls a tool on an MCP
// server over streamable HTTP, with the bearer token of its headers_file.
// When the server dies, deskd announces it down, the desk's status says
// so, and the desk goes on answering without its tools; when the server is
// back, deskd reconnects (on its clock's backoff) and the tools work
// again.
func TestMCPHTTPServerGoesAndComesBackE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	extra, srv := httpBroker(t, dir, "Authorization: Bearer "+mcptest.Token)
	d := startInProcess(t, "deskd", apiConfig(t, dir, "{provider: scripted}", extra, "mcp:\n  broker: {tools: [quote]}\n"), apiStart)
	d.waitReady(t)
	brokerUp(t, d)
	quote := func(id string) string {
		t.Helper()
		if s, _ := d.post(t, mcpCall(id, "quote", `{"symbol":"INFY"}`)); s != http.StatusAccepted {
			t.Fatalf("POST %s = %d", id, s)
		}
		tr := d.trigger(t, id)
		if tr["state"] != "answered" {
			t.Fatalf("%s = %v", id, tr)
		}
		return fmt.Sprint(tr["reply"])
	}
	if r := quote("q1"); !strings.Contains(r, "QUOTE INFY") {
		t.Fatalf("q1's reply %q has no quote", r)
	}

	srv.Stop()
	down := d.waitFor(t, time.Now().Add(30*time.Second), "mcp.server.down", isEvent("mcp.server.down", "server", "broker"))
	if strings.Contains(down.Raw, mcptest.Token) {
		t.Fatalf("the down event carries the secret token: %s", down.Raw)
	}
	_, body := d.call(t, http.MethodGet, "/v1/desks", "", "")
	var st httpapi.DesksResponse
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Desks[0].MCP) != 1 || st.Desks[0].MCP[0].State == "up" ||
		st.Desks[0].MCP[0].Error == "" {
		t.Fatalf("the status does not say the server is down: %s", body)
	}
	if r := quote("q2"); strings.Contains(r, "QUOTE INFY") || !strings.Contains(r, "Received") {
		t.Fatalf("q2's reply %q: the desk should answer without the tool", r)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	retry := parseTimeField(t, down, "retry_at")
	d.advanceTo(t, retry)
	d.waitFor(t, time.Now().Add(30*time.Second), "mcp.server.up again", isEvent("mcp.server.up", "server", "broker"))
	if r := quote("q3"); !strings.Contains(r, "QUOTE INFY") {
		t.Fatalf("q3's reply %q has no quote: the server is back", r)
	}
}

// TestMCPHeadersFileReadAtReloadE2E: a headers file with the wrong token
// leaves the server down (401), never quoting the token; once the file is
// mended, a reload (SIGHUP) reads it again, reports that its contents
// changed without showing them, and the server comes up.
func TestMCPHeadersFileReadAtReloadE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	extra, _ := httpBroker(t, dir, "Authorization: Bearer wrong-secret-0123456789")
	d := startInProcess(t, "deskd", apiConfig(t, dir, "{provider: scripted}", extra, "mcp:\n  broker: {tools: [quote]}\n"), apiStart)
	d.waitReady(t)
	down := d.waitFor(t, time.Now().Add(30*time.Second), "mcp.server.down", isEvent("mcp.server.down", "server", "broker"))
	if !strings.Contains(down.Str("error"), "Unauthorized") {
		t.Errorf("the down event does not say the server refused the credential: %s", down.Raw)
	}

	writeTestFile(t, dir, "broker.headers", "Authorization: Bearer "+mcptest.Token+"\n")
	if err := d.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rel := d.waitFor(t, time.Now().Add(30*time.Second), "config.reloaded", isEvent("config.reloaded"))
	if !strings.Contains(rel.Raw, "headers_file contents changed") {
		t.Errorf("the reload does not say the headers file changed: %s", rel.Raw)
	}
	brokerUp(t, d)
	if all := d.stderr.String(); strings.Contains(all, "wrong-secret") || strings.Contains(all, mcptest.Token) {
		t.Fatalf("the log carries a secret of the headers file:\n%s", all)
	}
}

// TestMCPDamagedLimitsFileRefusesLimitedCallsE2E: a desk whose count of
// the day's limited calls cannot be read refuses every call of a limited
// tool, saying which file and why, rather than risk passing its limit;
// its other tools work. The file is left as it was.
func TestMCPDamagedLimitsFileRefusesLimitedCallsE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orders := filepath.Join(dir, "orders")
	damaged := writeTestFile(t, filepath.Join(dir, "state", "desks", "main"), "tool-limits.json", `{"date":"2026-03-02","calls":{"mcp__broker__pla`)
	d := startInProcess(t, "deskd", mcpConfig(t, dir, orders), apiStart)
	d.waitFor(t, time.Now().Add(30*time.Second), "the error naming the damaged file",
		func(l stderrLine) bool {
			return l.Str("level") == "error" && strings.Contains(l.Str("error"), "tool-limits.json")
		})
	d.waitReady(t)
	brokerUp(t, d)
	if s, _ := d.post(t, mcpCall("o1", "place_order", `{"symbol":"INFY","qty":5,"side":"buy"}`)); s != http.StatusAccepted {
		t.Fatalf("POST o1 = %d", s)
	}
	if r := fmt.Sprint(d.trigger(t, "o1")["reply"]); !strings.Contains(r, "tool-limits.json") {
		t.Fatalf("o1's reply %q does not name the damaged file", r)
	}
	if n := d.count(isEvent("approval.requested", "trigger", "o1")); n != 0 || len(orderLines(t, orders)) != 0 {
		t.Fatal("a limited call ran, or was put to an operator, with its day's count unreadable")
	}
	if s, _ := d.post(t, mcpCall("q1", "quote", `{"symbol":"INFY"}`)); s != http.StatusAccepted {
		t.Fatalf("POST q1 = %d", s)
	}
	if r := fmt.Sprint(d.trigger(t, "q1")["reply"]); !strings.Contains(r, "QUOTE INFY") {
		t.Fatalf("q1's reply %q: a tool without a limit should work", r)
	}
	if b, err := os.ReadFile(damaged); err != nil || !strings.HasSuffix(string(b), "pla") {
		t.Fatalf("the damaged file was changed: %q, %v", b, err)
	}

	// Mended, it is taken up at the next call, without a restart.
	writeTestFile(t, filepath.Join(dir, "state", "desks", "main"), "tool-limits.json", `{"date":"2026-03-02","calls":{"mcp__broker__place_order":1}}`)
	id := waitingCall(t, d, "o2", `{"symbol":"INFY","qty":5,"side":"buy"}`)
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+id+"/approve", "", `{}`); status != 200 {
		t.Fatalf("approve o2 = %d %s", status, body)
	}
	if r := fmt.Sprint(d.trigger(t, "o2")["reply"]); !strings.Contains(r, "accepted") {
		t.Fatalf("o2's reply %q: the mended file allows one more call", r)
	}
	if s, _ := d.post(t, mcpCall("o3", "place_order", `{"symbol":"INFY","qty":5,"side":"buy"}`)); s != http.StatusAccepted {
		t.Fatalf("POST o3 = %d", s)
	}
	if r := fmt.Sprint(d.trigger(t, "o3")["reply"]); !strings.Contains(r, "at most 2 times a trading day; 2 calls were made on 2026-03-02") {
		t.Fatalf("o3's reply %q: the mended file's count was not kept", r)
	}
}

// TestMCPLimitAcrossRestartAndDayE2E: a day's limit holds across a
// restart of deskd (the count is on disk before the call runs) and starts
// again on the next trading date in Asia/Kolkata.
func TestMCPLimitAcrossRestartAndDayE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orders := filepath.Join(dir, "orders")
	cfg := apiConfig(t, dir, "{provider: scripted}", stdioBroker(t, orders), "mcp:\n  broker: {tools: [place_order], limits: {place_order: 1}}\n")
	order := func(d *deskdProc, id string) string {
		t.Helper()
		if s, _ := d.post(t, mcpCall(id, "place_order", `{"symbol":"INFY","qty":1,"side":"buy"}`)); s != http.StatusAccepted {
			t.Fatalf("POST %s = %d", id, s)
		}
		return fmt.Sprint(d.trigger(t, id)["reply"])
	}
	const over = "at most 1 time a trading day; 1 call was made on 2026-03-02"

	d := startInProcess(t, "first deskd", cfg, apiStart)
	brokerUp(t, d)
	if r := order(d, "o1"); !strings.Contains(r, "accepted") {
		t.Fatalf("o1: %q", r)
	}
	if r := order(d, "o2"); !strings.Contains(r, over) {
		t.Fatalf("o2: %q", r)
	}
	d.terminate(t)

	d = startInProcess(t, "second deskd", cfg, apiStart.Add(time.Hour))
	brokerUp(t, d)
	if r := order(d, "o3"); !strings.Contains(r, over) {
		t.Fatalf("o3 after the restart: %q", r)
	}
	d.at(t, "2026-03-03T00:00:00+05:30") // the next trading date begins
	if r := order(d, "o4"); !strings.Contains(r, "accepted") {
		t.Fatalf("o4 on the next trading date: %q", r)
	}
	if n := len(orderLines(t, orders)); n != 2 {
		t.Fatalf("%d orders reached the broker, want 2 (o1, o4)", n)
	}
}

// TestMCPApprovedCallToADownServerIsGivenBackE2E: a call approved while
// its server is down is not sent (the model hears so) and does not use up
// the day's limit: once the server is back, the next call may run.
func TestMCPApprovedCallToADownServerIsGivenBackE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	extra, srv := httpBroker(t, dir, "Authorization: Bearer "+mcptest.Token)
	desk := "mcp:\n  broker: {tools: [place_order], approve: [place_order], limits: {place_order: 1}}\n"
	d := startInProcess(t, "deskd", apiConfig(t, dir, "{provider: scripted}", extra, desk), apiStart)
	brokerUp(t, d)

	id := waitingCall(t, d, "o1", `{"symbol":"INFY","qty":1,"side":"buy"}`)
	srv.Stop()
	down := d.waitFor(t, time.Now().Add(30*time.Second), "mcp.server.down", isEvent("mcp.server.down", "server", "broker"))
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+id+"/approve", "", `{}`); status != 200 {
		t.Fatalf("approve o1 = %d %s", status, body)
	}
	if r := fmt.Sprint(d.trigger(t, "o1")["reply"]); !strings.Contains(r, "is unavailable: MCP server broker is not connected") {
		t.Fatalf("o1's reply %q: the model should hear the call was not sent", r)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	d.advanceTo(t, parseTimeField(t, down, "retry_at"))
	d.waitFor(t, time.Now().Add(30*time.Second), "mcp.server.up again", isEvent("mcp.server.up", "server", "broker"))
	id = waitingCall(t, d, "o2", `{"symbol":"INFY","qty":1,"side":"buy"}`)
	if status, body := d.call(t, http.MethodPost, "/v1/desks/main/approvals/"+id+"/approve", "", `{}`); status != 200 {
		t.Fatalf("approve o2 = %d %s", status, body)
	}
	if r := fmt.Sprint(d.trigger(t, "o2")["reply"]); !strings.Contains(r, "accepted") {
		t.Fatalf("o2's reply %q: the call o1 never sent should not count against the limit", r)
	}
	if n := srv.Orders(); n != 1 {
		t.Fatalf("%d orders reached the broker, want 1", n)
	}
}

// startWaitingOrder runs deskd in process on mcpConfig (the broker's
// orders in dir/orders, dir a new folder) and returns once trigger o1's
// place_order call waits for an operator, with the daemon and dir.
func startWaitingOrder(t *testing.T) (*deskdProc, string) {
	t.Helper()
	dir := t.TempDir()
	d := startInProcess(t, "deskd", mcpConfig(t, dir, filepath.Join(dir, "orders")), apiStart)
	brokerUp(t, d)
	_ = waitingCall(t, d, "o1", `{"symbol":"INFY","qty":5,"side":"buy"}`)
	return d, dir
}

// deniedByDeskd waits (30s) for deskd itself to deny o1's waiting call,
// then for o1's turn to complete with that answer. The wait for the denial
// runs in around if one is given (d.debounced: while the clock moves).
func (d *deskdProc) deniedByDeskd(t *testing.T, around func(t *testing.T, wait func())) {
	t.Helper()
	wait := func() {
		d.waitFor(t, time.Now().Add(30*time.Second), "the denial", isEvent("approval.decided", "trigger", "o1", "outcome", "denied", "by", "deskd"))
	}
	if around == nil {
		wait()
	} else {
		around(t, wait)
	}
	d.waitFor(t, time.Now().Add(30*time.Second), "o1's answer", isEvent("turn.completed", "trigger", "o1"))
}

// TestMCPShutdownDeniesWaitingCallsE2E: a call waiting for an operator
// when deskd is told to stop is denied at once ("deskd is stopping"), so
// that its turn ends with its answer rather than being cut off at the
// shutdown timeout; the denial is in the session.
func TestMCPShutdownDeniesWaitingCallsE2E(t *testing.T) {
	t.Parallel()
	d, dir := startWaitingOrder(t)
	if err := d.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.deniedByDeskd(t, nil)
	if code := d.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("deskd exited %d", code)
	}
	dec := sessionDecisions(t, filepath.Join(dir, "state", "desks", "main"))
	if len(dec) != 1 || dec[0].Outcome != "denied" || dec[0].Reason != "deskd is stopping" {
		t.Fatalf("the session's decisions: %+v", dec)
	}
}

// TestMCPDeskStopDeniesWaitingCallsE2E: a call waiting for an operator on
// a desk whose file is removed is denied as the desk stops (rather than
// left undecidable until the stop times out).
func TestMCPDeskStopDeniesWaitingCallsE2E(t *testing.T) {
	t.Parallel()
	d, dir := startWaitingOrder(t)
	if err := os.Rename(filepath.Join(dir, "desks.d", "main.yaml"), filepath.Join(dir, "main.yaml.off")); err != nil {
		t.Fatal(err)
	}
	d.deniedByDeskd(t, d.debounced)
	d.waitFor(t, time.Now().Add(30*time.Second), "desk.stopped", isEvent("desk.stopped", "desk", "main"))
	if n := d.count(isEvent("turn.interrupted", "trigger", "o1")); n != 0 {
		t.Fatal("o1's turn was cut off")
	}
}

// TestMCPTimedOutCallStaysCountedE2E: a limited call deskd gave up on (its
// server's timeout passed on deskd's clock) tells the model, and the
// session, that deskd timed out and that the call may have run, not that
// the server refused it; and it stays counted against the day's limit (a
// cut place_order may still execute), so the next call is refused.
func TestMCPTimedOutCallStaysCountedE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", stdioBroker(t, filepath.Join(dir, "orders")),
		"mcp:\n  broker: {tools: [slow], limits: {slow: 1}}\n")
	d := startInProcess(t, "deskd", cfg, apiStart)
	brokerUp(t, d)
	if s, _ := d.post(t, mcpCall("s1", "slow", `{}`)); s != http.StatusAccepted {
		t.Fatalf("POST s1 = %d", s)
	}
	d.advanceTo(t, d.in.clk.Now().Add(20*time.Second)) // the broker's timeout: 20s
	const want = "deskd timed out after 20s waiting for MCP server broker's answer to slow; " +
		"the call's outcome is unknown (the server may still have run it)"
	if r := fmt.Sprint(d.trigger(t, "s1")["reply"]); !strings.Contains(r, want) || strings.Contains(r, "refused") {
		t.Fatalf("s1's reply %q, want it to say %q", r, want)
	}
	sessions, err := filepath.Glob(filepath.Join(dir, "state", "desks", "main", "sessions", "*.jsonl"))
	if err != nil || len(sessions) != 1 {
		t.Fatalf("the desk's sessions: %v, %v", sessions, err)
	}
	if _, raw := readSessionRecords(t, sessions[0]); !strings.Contains(string(raw), want) {
		t.Errorf("the session does not record the tool's error %q", want)
	}
	if s, _ := d.post(t, mcpCall("s2", "slow", `{}`)); s != http.StatusAccepted {
		t.Fatalf("POST s2 = %d", s)
	}
	if r := fmt.Sprint(d.trigger(t, "s2")["reply"]); !strings.Contains(r, "at most 1 time a trading day; 1 call was made on 2026-03-02") {
		t.Fatalf("s2's reply %q: the timed-out call was given back to the day's limit", r)
	}
}
