package mcphost_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/desk/testtmp"
	"github.com/deskd/deskd/router"
)

func TestMain(m *testing.M) {
	if mcptest.ServeStdioIfAsked() || serveHostileIfAsked() {
		return
	}
	if os.Getenv(parentEnv) != "" {
		runParent()
		return
	}
	// The parallel tests wait out real time (stop grace periods, the MCP
	// SDK's own timeouts), not the CPU: more of them at once than -parallel's
	// default, the cores, costs nothing. A -parallel given to go test wins,
	// as m.Run parses the command line after this.
	if err := flag.Set("test.parallel", "8"); err != nil {
		panic(err)
	}
	os.Exit(testtmp.Run(m)) // the scratch folders on a tmpfs
}

// wait bounds every wait of a test on the host's goroutines and processes.
const wait = 30 * time.Second

// grace is the hosts' Options.Grace in the tests: shorter than the
// default, as the tests that wait it out (a server that ignores its
// stdin's end, or SIGTERM, or stops reading) wait real time; long enough
// for a server that does exit on its stdin's end, on a loaded machine.
const grace = 500 * time.Millisecond

var start = time.Date(2026, 12, 1, 9, 15, 0, 0, time.UTC)

// rig is a Host on a fake clock, with its events collected.
type rig struct {
	t     *testing.T
	clock *clock.Fake
	bus   *event.Bus
	host  *mcphost.Host
	up    chan event.MCPServerUp
	down  chan event.MCPServerDown
	// early are up events of other servers than the one waited for.
	early []event.MCPServerUp
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, clock: clock.NewFake(start), bus: event.New(),
		up: make(chan event.MCPServerUp, 64), down: make(chan event.MCPServerDown, 64)}
	t.Cleanup(r.bus.Close)
	cancelUp := event.Subscribe(r.bus, func(e event.MCPServerUp) { r.up <- e })
	cancelDown := event.Subscribe(r.bus, func(e event.MCPServerDown) { r.down <- e })
	t.Cleanup(cancelUp)
	t.Cleanup(cancelDown)
	r.host = mcphost.New(mcphost.Options{Clock: r.clock, Bus: r.bus, Log: zerolog.New(zerolog.NewTestWriter(t)), Grace: grace})
	t.Cleanup(func() {
		if err := r.host.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// configure configures srv alone and has desk "d" use it.
func (r *rig) configure(srv *config.MCPServer) {
	r.host.Configure(map[string]*config.MCPServer{srv.Name: srv})
	r.host.Use("d", []string{srv.Name})
}

// serve configures srv, has desk "d" use it, and waits for it to be up.
func (r *rig) serve(srv *config.MCPServer) event.MCPServerUp {
	r.t.Helper()
	r.configure(srv)
	return r.waitUp(srv.Name)
}

// serveStdio is a rig serving the stdio test server, up.
func serveStdio(t *testing.T) (*rig, *config.MCPServer) {
	t.Helper()
	r := newRig(t)
	srv := mcptest.Stdio(t)
	r.serve(srv)
	return r, srv
}

// toolset is desk "d"'s toolset allowing tools of server; with none
// named, every tool.
func (r *rig) toolset(server string, tools ...string) router.Toolset {
	if len(tools) == 0 {
		tools = []string{config.AllMCPTools}
	}
	return r.host.Toolset("d", map[string]config.DeskMCP{server: {Server: server, Tools: tools}})
}

// closeEnds closes the host, and fails the test unless Close succeeds
// and the process pid (a server's) is gone after it.
func (r *rig) closeEnds(pid int) {
	r.t.Helper()
	if err := r.host.Close(); err != nil {
		r.t.Fatalf("Close: %v", err)
	}
	if !gone(pid) {
		r.t.Errorf("process %d is left after Close", pid)
	}
}

func (r *rig) waitUp(server string) event.MCPServerUp {
	r.t.Helper()
	for i, e := range r.early {
		if e.Server == server {
			r.early = slices.Delete(r.early, i, i+1)
			return e
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case e := <-r.up:
			if e.Server == server {
				return e
			}
			r.early = append(r.early, e)
		case e := <-r.down:
			r.t.Fatalf("MCP server %s went down while the test waited for it to be up: %s", e.Server, e.Error)
		case <-timer.C:
			r.t.Fatalf("MCP server %s did not come up within %s; status %+v", server, wait, r.host.Status())
		}
	}
}

func (r *rig) waitDown(server string) event.MCPServerDown {
	r.t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case e := <-r.down:
			if e.Server == server {
				return e
			}
		case <-timer.C:
			r.t.Fatalf("MCP server %s did not go down within %s; status %+v", server, wait, r.host.Status())
		}
	}
}

// retry moves the clock to a down server's retry.
func (r *rig) retry(e event.MCPServerDown) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), wait)
	defer cancel()
	if err := r.clock.WaitTimerAt(ctx, e.RetryAt); err != nil {
		r.t.Fatalf("no retry timer at %s for MCP server %s: %v", e.RetryAt, e.Server, err)
	}
	r.clock.Set(e.RetryAt)
}

// timesOut runs tl, a call that never answers, and checks that it ends
// "deskd timed out after d", of unknown outcome, when the fake clock
// reaches d after start, and not before.
func (r *rig) timesOut(tl router.Tool, d time.Duration) {
	r.t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := tl.Run(r.t.Context(), json.RawMessage(`{}`))
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(r.t.Context(), wait)
	defer cancel()
	if err := r.clock.WaitTimerAt(ctx, start.Add(d)); err != nil {
		r.t.Fatalf("the call armed no %s timer: %v", d, err)
	}
	select {
	case err := <-errc:
		r.t.Fatalf("%s answered before its timeout: %v", tl.Spec.Name, err)
	default:
	}
	r.clock.Set(start.Add(d))
	select {
	case err := <-errc:
		server, name, _ := mcphost.SplitToolName(tl.Spec.Name)
		want := fmt.Sprintf("deskd timed out after %s waiting for MCP server %s's answer to %s; "+
			"the call's outcome is unknown (the server may still have run it)", d, server, name)
		if err == nil || err.Error() != want || !errors.Is(err, mcphost.ErrOutcomeUnknown) {
			r.t.Errorf("%s: error %v, want %q", tl.Spec.Name, err, want)
		}
	case <-ctx.Done():
		r.t.Fatalf("%s did not end at its timeout", tl.Spec.Name)
	}
}

func (r *rig) status(server string) mcphost.ServerStatus {
	r.t.Helper()
	for _, s := range r.host.Status() {
		if s.Name == server {
			return s
		}
	}
	r.t.Fatalf("MCP server %s is not in the status %+v", server, r.host.Status())
	return mcphost.ServerStatus{}
}

// tool finds a tool by its full name.
func tool(t *testing.T, ts router.Toolset, name string) router.Tool {
	t.Helper()
	for _, tl := range ts.Tools() {
		if tl.Spec.Name == name {
			return tl
		}
	}
	t.Fatalf("tool %s is not offered; tools %v, notes %q", name, names(ts.Tools()), ts.Notes())
	return router.Tool{}
}

func names(tools []router.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Spec.Name)
	}
	return out
}

// call runs a tool with args given as a Go value.
func call(t *testing.T, tl router.Tool, args any) (string, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	return tl.Run(ctx, b)
}

func mustCall(t *testing.T, tl router.Tool, args any) string {
	t.Helper()
	out, err := call(t, tl, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", tl.Spec.Name, args, err)
	}
	return out
}

// transports are the two ways to reach the test server.
var transports = []struct {
	name string
	cfg  func(t *testing.T) *config.MCPServer
}{
	{"stdio", func(t *testing.T) *config.MCPServer { return mcptest.Stdio(t) }},
	{"http", func(t *testing.T) *config.MCPServer { srv, _ := mcptest.HTTP(t); return srv }},
}

// overTransports runs test once over each transport, as a subtest of
// its name, with a new rig and the test server's config, not yet served.
func overTransports(t *testing.T, test func(t *testing.T, r *rig, srv *config.MCPServer)) {
	t.Helper()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { test(t, newRig(t), tr.cfg(t)) })
	}
}

// await is what c gives within wait; it fails the test, saying what did
// not happen in time, otherwise.
func await[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatalf("%s within %s", what, wait)
	}
	var zero T
	return zero
}

// pidIn is the PID a process wrote to the file at path.
func pidIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the PID in %s: %v", path, err)
	}
	return atoi(t, strings.TrimSpace(string(b)))
}

// gone reports whether no process has that PID.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// The parent process of TestStdioServerDiesWithItsParent.
const parentEnv = "DESKD_MCPHOST_TEST_PARENT"

// runParent starts a host with one stdio server, prints the server's PID
// and waits to be killed. The server lingers after its stdin closes, so
// that only its parent-death signal can end it.
func runParent() {
	bus := event.New()
	upc := make(chan struct{}, 1)
	event.Subscribe(bus, func(event.MCPServerUp) { upc <- struct{}{} })
	h := mcphost.New(mcphost.Options{Clock: clock.Real(), Bus: bus, Log: zerolog.Nop()})
	srv := &config.MCPServer{Name: "child", Command: []string{os.Args[0]}, Env: map[string]string{mcptest.EnvMode: "stdio", mcptest.EnvLinger: "1"}}
	h.Configure(map[string]*config.MCPServer{"child": srv})
	h.Use("d", []string{"child"})
	<-upc
	fmt.Printf("pid %d\n", h.Status()[0].PID)
	select {}
}

func contains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s = %q, want it to contain %q", what, got, want)
	}
}
