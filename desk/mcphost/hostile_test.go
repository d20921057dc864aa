package mcphost_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/logtest"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/mcptest"
	"github.com/rs/zerolog"
)

// all is a desk's entry that allows every tool of the hostile server.
var all = map[string]config.DeskMCP{"hostile": {Tools: []string{config.AllMCPTools}}}

// TestHostileToolList: a server whose tools/list has two tools of one
// name, names the model cannot take, schemas that are not object schemas,
// null, missing or huge, and descriptions with terminal escapes or a megabyte of
// text. The model gets each name once, object schemas only, bounded and
// clean descriptions; the notes say what was left out.
func TestHostileToolList(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "odd"))
	ts := r.host.Toolset("d", all)
	got := map[string]string{}
	for _, tl := range ts.Tools() {
		if _, dup := got[tl.Spec.Name]; dup {
			t.Errorf("tool %s is offered twice", tl.Spec.Name)
		}
		got[tl.Spec.Name] = tl.Spec.Description
		var schema struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(tl.Spec.Schema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("tool %s has schema %s, not an object schema", tl.Spec.Name, tl.Spec.Schema)
		}
		if len(tl.Spec.Schema) > 64<<10 {
			t.Errorf("tool %s has a schema of %d bytes", tl.Spec.Name, len(tl.Spec.Schema))
		}
		if len(tl.Spec.Description) > 8<<10 {
			t.Errorf("tool %s has a description of %d bytes", tl.Spec.Name, len(tl.Spec.Description))
		}
		for _, c := range tl.Spec.Description {
			if unicode.IsControl(c) && c != '\n' && c != '\t' || unicode.Is(unicode.Bidi_Control, c) {
				t.Errorf("tool %s's description %q has the control character %U", tl.Spec.Name, tl.Spec.Description, c)
				break
			}
		}
	}
	want := []string{"echo", "ctl", "longdesc", "fine", "refloop"}
	if len(got) != len(want) {
		t.Errorf("%d tools offered, want %v", len(got), want)
	}
	for _, name := range want {
		if _, ok := got[mcphost.ToolName("hostile", name)]; !ok {
			t.Errorf("tool %s is not offered", name)
		}
	}
	if d := got["mcp__hostile__echo"]; d != "first echo" {
		t.Errorf("echo's description %q, want the first echo's", d)
	}
	contains(t, "ctl's description", got["mcp__hostile__ctl"], "ok\nline two\ttab")
	if out := mustCall(t, tool(t, ts, "mcp__hostile__refloop"), map[string]any{"x": 1}); out != "ok" {
		t.Errorf("refloop = %q", out)
	}
	notes := strings.Join(ts.Notes(), "\n")
	for _, want := range []string{`"echo" of MCP server hostile is left out: the server lists it more than once`,
		`"nullschema" of MCP server hostile is left out: it has no input schema (null or missing)`,
		`"noschema" of MCP server hostile is left out: it has no input schema (null or missing)`,
		`"str" of MCP server hostile is left out: its input schema is not an object schema`,
		`"bigschema" of MCP server hostile is left out: its input schema is larger than`,
		`"a.b" of MCP server hostile is left out`, `"ünï" of MCP server hostile is left out`,
		`the tool "" of MCP server hostile is left out: it has no name`} {
		contains(t, "the notes", notes, want)
	}
}

// TestHostileManyTools: a server with 5,000 tools gives the model at most
// mcphost.MaxServerTools of them, and a note says so.
func TestHostileManyTools(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "many"))
	ts := r.host.Toolset("d", all)
	if n := len(ts.Tools()); n != mcphost.MaxServerTools {
		t.Errorf("%d tools offered, want the first %d", n, mcphost.MaxServerTools)
	}
	if n := len(r.status("hostile").Tools); n > mcphost.MaxServerTools {
		t.Errorf("the status lists %d tools", n)
	}
	contains(t, "the notes", strings.Join(ts.Notes(), "\n"),
		fmt.Sprintf("MCP server hostile lists more than %d tools: deskd takes the first %d", mcphost.MaxServerTools, mcphost.MaxServerTools))
}

// TestSilentServerTimesOut: a server that never answers initialize is
// down once its timeout has passed on the host's clock, with a clear
// error, and deskd tries again.
func TestSilentServerTimesOut(t *testing.T) {
	r := newRig(t)
	srv := hostile(t, "silent")
	srv.Timeout = 5 * time.Second
	r.host.Configure(map[string]*config.MCPServer{srv.Name: srv})
	r.host.Use("d", []string{srv.Name})
	r.expire(start.Add(5 * time.Second))
	down := r.waitDown("hostile")
	contains(t, "the down error", down.Error, "no answer within 5s")
	r.retry(down)
	r.expire(down.RetryAt.Add(5 * time.Second))
	contains(t, "the second down error", r.waitDown("hostile").Error, "no answer within 5s")
}

// expire moves the clock to a timer at at.
func (r *rig) expire(at time.Time) {
	r.t.Helper()
	ctx, cancel := contextWithWait(r.t)
	defer cancel()
	if err := r.clock.WaitTimerAt(ctx, at); err != nil {
		r.t.Fatalf("no timer at %s: %v; status %+v", at, err, r.host.Status())
	}
	r.clock.Set(at)
}

// TestCloseKillsAForkedChild: a stdio server that forks a child which
// keeps its stdout open, and exits: Close returns, and no process of the
// server's is left.
func TestCloseKillsAForkedChild(t *testing.T) {
	t.Parallel() // seconds of real time (the grace periods of a stop): run beside the others
	for _, scenario := range []string{"fork", "forkquiet"} {
		t.Run(scenario, func(t *testing.T) { closeKillsAForkedChild(t, scenario) })
	}
}

func closeKillsAForkedChild(t *testing.T, scenario string) {
	r := newRig(t)
	srv := hostile(t, scenario)
	r.serve(srv)
	child := pidIn(t, srv.Env[hostileFile])
	t.Cleanup(func() { killPID(child) })
	closed := make(chan error, 1)
	go func() { closed <- r.host.Close() }()
	if err := await(t, closed, "Close did not return"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := mcptest.WaitExit(child, 5*time.Second); err != nil {
		t.Errorf("the server's forked child %d is left after Close: %v", child, err)
	}
}

// TestToolListFloodIsThrottled: a server that sends tools/list_changed
// 50 times after each listing is listed again at once the first time,
// then at most once a second on the host's clock.
func TestToolListFloodIsThrottled(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "flood"))
	ts := r.host.Toolset("d", all)
	lists := func() int { return atoi(t, mustCall(t, tool(t, ts, "mcp__hostile__echo"), map[string]any{})) }
	for i, want := range []int{2, 3, 4} {
		at := start.Add(time.Duration(i+1) * time.Second)
		ctx, cancel := contextWithWait(t)
		err := r.clock.WaitTimerAt(ctx, at)
		cancel()
		if err != nil {
			t.Fatalf("no re-listing waits for %s: %v", at, err)
		}
		if n := lists(); n != want {
			t.Fatalf("listed %d times before %s, want %d", n, at, want)
		}
		r.clock.Set(at)
	}
}

// TestGarbageOnStdout: a server that writes a line that is not JSON-RPC
// is down with a clear error (its escapes cleaned), and retried.
func TestGarbageOnStdout(t *testing.T) {
	r := newRig(t)
	r.host.Configure(map[string]*config.MCPServer{"hostile": hostile(t, "garbage")})
	r.host.Use("d", []string{"hostile"})
	down := r.waitDown("hostile")
	if strings.ContainsRune(down.Error, '\x1b') {
		t.Errorf("the down error %q has an escape", down.Error)
	}
	r.retry(down)
	r.waitDown("hostile")
}

// TestStderrFlood: a server that writes 20 MB on stderr before serving
// comes up; deskd keeps only a bounded, cleaned tail of it.
func TestStderrFlood(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "stderr"))
	ts := r.host.Toolset("d", all)
	if got := mustCall(t, tool(t, ts, "mcp__hostile__echo"), map[string]any{}); got != "ok" {
		t.Errorf("echo = %q", got)
	}
}

// TestStderrTailIsCleaned: the last line of a dead server's stderr, in
// the down error (logs, status, the model's note), has no escapes.
func TestStderrTailIsCleaned(t *testing.T) {
	r := newRig(t)
	r.host.Configure(map[string]*config.MCPServer{"hostile": hostile(t, "dies")})
	r.host.Use("d", []string{"hostile"})
	down := r.waitDown("hostile")
	contains(t, "the down error", down.Error, "exit status 4")
	contains(t, "the down error", down.Error, "]0;pwned[31m fatal: no licence")
	for _, c := range down.Error {
		if unicode.IsControl(c) {
			t.Errorf("the down error %q has the control character %U", down.Error, c)
			break
		}
	}
}

// TestCloseKillsAServerIgnoringSIGTERM: a server that ignores SIGTERM and
// its stdin closing is killed by Close, which returns.
func TestCloseKillsAServerIgnoringSIGTERM(t *testing.T) {
	t.Parallel() // seconds of real time (the grace periods of a stop): run beside the others
	r := newRig(t)
	r.serve(hostile(t, "stubborn"))
	r.closeEnds(r.status("hostile").PID)
}

// TestHostileToolNamesStayShort: 200 tools with names of 10 KB put a few
// short notes in the model's prompt, not megabytes, and the status shows
// the names cut.
func TestHostileToolNamesStayShort(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "longnames"))
	ts := r.host.Toolset("d", all)
	if got := names(ts.Tools()); len(got) != 1 || got[0] != "mcp__hostile__fine" {
		t.Errorf("tools %v, want only fine", got)
	}
	notes := ts.Notes()
	if n := len(strings.Join(notes, "\n")); n > 4<<10 || len(notes) > 11 {
		t.Errorf("%d notes of %d bytes in all", len(notes), n)
	}
	contains(t, "the last note", notes[len(notes)-1], "and 190 more tools of MCP server hostile are left out")
	for _, name := range r.status("hostile").Tools {
		if len(name) > 100 {
			t.Errorf("the status shows a name of %d bytes", len(name))
			break
		}
	}
}

// TestUndecodableResult: a call whose result does not decode is a failed
// call, not a broken connection: the server stays up (no other desk's
// call in flight is cut), and the next call goes through.
func TestUndecodableResult(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "badresult"))
	ts := r.host.Toolset("d", all)
	pid := r.status("hostile").PID
	for _, name := range []string{"echo", "weird", "echo"} {
		_, err := call(t, tool(t, ts, "mcp__hostile__"+name), map[string]any{})
		if err == nil {
			t.Fatalf("%s: an undecodable result was taken", name)
		}
		contains(t, name+"'s error", err.Error(), "MCP server hostile answered the call of "+name+" with a result that is not valid MCP")
	}
	if st := r.status("hostile"); st.State != mcphost.StateUp || st.PID != pid || st.Restarts != 0 {
		t.Errorf("status after the calls %+v, want up, PID %d", st, pid)
	}
}

// TestEndlessToolPages: a server whose tools/list pages never end (empty
// pages, each with a next cursor) is read up to a bound, and comes up.
func TestEndlessToolPages(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "pages"))
	ts := r.host.Toolset("d", all)
	contains(t, "the notes", strings.Join(ts.Notes(), "\n"), "MCP server hostile lists its tools in more than")
}

// TestStderrSecretsAreHidden: a stdio server that prints its secret env
// on stderr does not get it into the down error or deskd's log (the
// stderr tail is logged at debug level).
func TestStderrSecretsAreHidden(t *testing.T) {
	var logs logtest.Buffer
	r := newRig(t)
	r.host = mcphost.New(mcphost.Options{Clock: r.clock, Bus: r.bus, Log: zerolog.New(&logs).Level(zerolog.DebugLevel), Grace: grace})
	t.Cleanup(func() { r.host.Close() })
	srv := hostile(t, "leaks")
	srv.Secrets.Env = map[string]string{"BROKER_KEY": "env-s3cret-9"}
	r.serve(srv)
	ts := r.host.Toolset("d", all)
	if _, err := call(t, tool(t, ts, "mcp__hostile__echo"), map[string]any{}); err == nil {
		t.Fatal("the call that kills the server answered")
	} else if strings.Contains(err.Error(), "env-s3cret-9") {
		t.Errorf("the call's error shows the secret: %v", err)
	}
	down := r.waitDown("hostile")
	contains(t, "the down error", down.Error, "exit status 5")
	if strings.Contains(down.Error, "env-s3cret-9") {
		t.Errorf("the down error shows the secret: %q", down.Error)
	}
	r.host.Close()
	if strings.Contains(logs.String(), "env-s3cret-9") {
		t.Errorf("the log shows the secret:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "MCP server's stderr") {
		t.Errorf("the stderr tail is not logged:\n%s", logs.String())
	}
}

// TestFatToolsAreBounded: 40 tools of 30 KB of description and schema
// each are not all put in the model's prompt: at most
// mcphost.MaxServerSpecBytes of them, and a note counts the rest.
func TestFatToolsAreBounded(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "fat"))
	ts := r.host.Toolset("d", all)
	size := 0
	for _, tl := range ts.Tools() {
		size += len(tl.Spec.Name) + len(tl.Spec.Description) + len(tl.Spec.Schema)
	}
	if n := len(ts.Tools()); n == 0 || size > mcphost.MaxServerSpecBytes+1024 {
		t.Errorf("%d tools of %d bytes offered", n, size)
	}
	contains(t, "the notes", strings.Join(ts.Notes(), "\n"),
		fmt.Sprintf("%d tools of MCP server hostile are left out: with them", 40-len(ts.Tools())))
	// A desk that allows only the last one gets it.
	last := r.toolset("hostile", "t39")
	if got := names(last.Tools()); len(got) != 1 {
		t.Errorf("tools %v, want t39", got)
	}
}

// TestDeafServerTimesOut: a server that stops reading its stdin while
// deskd writes a large call to it (the write blocks on the full pipe)
// does not hold the calls: each ends at its timeout on the host's clock,
// the connection is then closed with a clear reason, and Close returns.
func TestDeafServerTimesOut(t *testing.T) {
	t.Parallel() // seconds of real time (the read grace, then a stop's grace periods): run beside the others
	r := newRig(t)
	srv := hostile(t, "deaf")
	srv.Timeout = 5 * time.Second
	heard := fifoOpened(t, srv.Env[hostileFile])
	r.serve(srv)
	ts := r.host.Toolset("d", all)
	echo := tool(t, ts, "mcp__hostile__echo")
	big := map[string]any{"text": strings.Repeat("x", 4<<20)}
	errc := make(chan error, 2)
	for range 2 {
		go func() { _, err := call(t, echo, big); errc <- err }()
	}
	// The server has read one call and 1 MiB of the other: that one's
	// write has begun, and cannot end (3 MiB are left, the pipe holds 64 KiB).
	if err := await(t, heard, "the deaf server did not get a call and a part of the next"); err != nil {
		t.Fatalf("the deaf server's signal: %v", err)
	}
	select {
	case err := <-errc:
		t.Fatalf("a call ended before its timeout: %v", err)
	default:
	}
	ctx, cancel := contextWithWait(t)
	defer cancel()
	if err := r.clock.WaitPending(ctx, 2); err != nil { // armed before either call was written
		t.Fatalf("the calls armed no timers: %v", err)
	}
	r.clock.Set(start.Add(5 * time.Second))
	for range 2 {
		err := await(t, errc, "a call to a deaf server did not end at its timeout")
		contains(t, "the call's error", fmt.Sprint(err), "timed out after 5s")
	}
	contains(t, "the down error", r.waitDown("hostile").Error,
		"it stopped reading its stdin: the request tools/call, which deskd was writing to it, was still not taken in "+grace.String()+" after the request tools/call was given up on")
}

// fifoOpened makes a FIFO at path, and returns a channel that gets nil
// once a process has opened it to write and closed it again.
func fifoOpened(t *testing.T, path string) <-chan error {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
	opened := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(path) // opening blocks until a writer opens it
		opened <- err
	}()
	t.Cleanup(func() {
		// A reader still waiting (the test failed first) is let go.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return opened
}
