package desk_test

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The import rules of deskd's packages: the arrows that are allowed, so
// that a new one fails TestImportRules with a message naming it. They
// hold for each package's own files (its tests may import more). A
// package listed here that does not exist (yet) is skipped; a package
// that exists and is not listed fails the test, so that every new package
// gets its rule.

// modulePath is the module's path; packages below are named relative to it.
const modulePath = "github.com/deskd/deskd"

// anyPkg allows every project package but cmd/... (which nothing imports).
const anyPkg = "*"

// allowedImports lists, for each package, the project packages it may
// import directly.
var allowedImports = map[string][]string{
	// The binary knows every package.
	"cmd/deskd": {anyPkg},

	// The bench runs the built deskd and writes today's file formats itself.
	"cmd/deskbench": {},

	// The docs generator parses desk/event's sources, and asks the API
	// for its OpenAPI document.
	"cmd/docgen": {"desk/httpapi"},

	// Leaves.
	"desk/subreaper": {},
	"desk/buildinfo": {},
	"desk/clock":     {},
	// Wakes the goroutines that wait for a change of some state.
	"desk/broadcast": {},
	"desk/event":     {},
	"desk/gate":      {}, // keeps a component's work and its Close apart
	"desk/termsafe":  {},
	// The web console's page, script and style, embedded.
	"desk/console":    {},
	"memory/durable":  {},
	"memory/jsonline": {},

	// The domain.
	"memory":   {"memory/durable", "memory/jsonline"},
	"triggers": {"desk/clock", "desk/event", "memory", "memory/durable", "memory/jsonline"},
	"router":   {"desk/clock", "desk/event", "memory", "memory/durable", "triggers"},
	"curator":  {"memory", "memory/durable"},
	"keeper":   {"desk/clock", "desk/event", "memory", "memory/durable", "triggers"},
	// config applies the defaults and parses into the types of the
	// packages that own each setting; it checks notify's topics against
	// the event catalogue (a leaf).
	"config": {"curator", "desk/clock", "desk/event", "keeper", "memory", "memory/durable", "router", "triggers"},
	// desk runs one desk and the set of desks, on a config plan; in a
	// cluster, each desk only while it holds the desk's lease.
	"desk": {"config", "curator", "desk/approval", "desk/calllimit", "desk/clock", "desk/cluster", "desk/event", "desk/mcphost", "desk/termsafe", "keeper",
		"memory", "memory/durable", "router", "triggers"},
	// A desk's tools that act: MCP servers (started, supervised, their
	// tools offered), the calls that wait for an operator, and the day's
	// limits on calls.
	"desk/mcphost":   {"config", "desk/clock", "desk/event", "router"},
	"desk/approval":  {"desk/clock", "desk/event", "router"},
	"desk/calllimit": {"memory", "memory/durable"},
	// sd_notify: readiness, reloads, status, watchdog.
	"systemd": {"desk/clock"},

	// What a person reads of a session: its records (memory) in the
	// router's roles and tool-call format, its triggers' kinds.
	"memory/transcript": {"desk/termsafe", "memory", "memory/durable", "router", "triggers"},
	// The diff of two texts.
	"memory/diff": {},

	// Adapters below desk: only cmd imports them.
	"desk/httpapi": {"config", "curator", "desk", "desk/approval", "desk/audit", "desk/clock", "desk/mcphost", "desk/natsconn", "desk/notify", "desk/event", "desk/replay", "desk/termsafe", "desk/termview", "keeper", "memory",
		"memory/diff", "memory/durable", "memory/transcript", "router", "triggers"},
	"desk/metrics": {"desk", "desk/clock", "desk/event", "memory", "router", "triggers"},
	// The bus's events out to NATS JetStream through a durable outbox.
	"desk/natsevents": {"desk/broadcast", "desk/clock", "desk/event", "desk/gate", "memory/durable"},
	// The bus's events out to webhooks (Standard Webhooks, Slack) through
	// a durable outbox per target.
	"desk/notify": {"config", "desk/broadcast", "desk/clock", "desk/event", "desk/gate", "memory/durable"},
	// NATS: the connection (its state for status), and the trigger ingress.
	"desk/natsconn": {"config", "desk/clock"},
	"desk/natsfeed": {"config", "desk", "desk/clock", "desk/event", "triggers"},
	// A cluster of hosts: the desks' leases, their WAL and snapshots on
	// JetStream, the rebuild of a desk folder, and the file layer that
	// replicates a desk's durable writes (over memory/durable's FS).
	"desk/cluster": {"desk/clock", "memory/durable"},
	// Text renderings of the API's answers for a terminal.
	"desk/termview": {"curator", "desk", "desk/approval", "desk/mcphost", "desk/termsafe", "memory", "memory/transcript", "router", "triggers"},
	// A trading day replayed against a candidate desk, in a sandbox.
	"desk/replay": {"config", "desk", "desk/clock", "desk/event", "desk/mcphost", "memory", "router", "triggers"},
	"desk/audit": {"config", "curator", "desk", "desk/clock", "desk/event", "desk/termsafe", "keeper", "memory",
		"memory/diff", "memory/durable", "memory/transcript", "router", "triggers"},

	// Test helpers: only tests and other test helpers import them.
	"desk/event/eventtest":   {"desk/clock", "desk/event"},
	"memory/durable/faultfs": {"memory/durable"},
	"desk/httpapi/httpapitest": {"desk", "desk/approval", "desk/clock", "desk/desktest", "desk/event", "desk/httpapi", "desk/metrics",
		"memory/durable", "router", "triggers"},
	"desk/metrics/metricstest": {},
	"desk/natstest":            {"desk/testport"},
	"desk/testtmp":             {}, // the scratch folders of a test binary
	"desk/testport":            {}, // a port a test's server restarts on
	"desk/logtest":             {}, // a buffer that several goroutines write
	// A real MCP server, built with the official SDK, over stdio and HTTP.
	"desk/mcptest":      {"config"},
	"memory/memorytest": {"config", "desk/clock", "desk/event", "keeper", "memory", "memory/durable", "router", "triggers"},
	"router/routertest": {"desk/clock", "memory", "router", "triggers"},
	"desk/desktest": {"config", "curator", "desk", "desk/clock", "desk/event", "desk/event/eventtest", "keeper", "memory",
		"memory/durable", "router", "router/routertest", "triggers"},
}

// onlyImportedBy lists packages that only the packages named (or a
// package below one of them) may import.
var onlyImportedBy = map[string][]string{
	"desk/httpapi":             {"cmd", "desk/httpapi"}, // its test helper below it
	"desk/metrics":             {"cmd", "desk/metrics", "desk/httpapi/httpapitest"},
	"desk/audit":               {"cmd", "desk/httpapi"},
	"desk/replay":              {"cmd", "desk/httpapi"},
	"desk/termview":            {"cmd", "desk/httpapi"}, // httpapi: the sessions' rows (SessionRow)
	"desk/console":             {"cmd"},
	"desk/natsevents":          {"cmd"},
	"desk/notify":              {"cmd", "desk/httpapi"}, // httpapi: the targets' state (NotifyStatuses)
	"systemd":                  {"cmd"},
	"desk/mcptest":             {},
	"desk/event/eventtest":     {"desk/desktest"},
	"router/routertest":        {"desk/desktest"},
	"desk/desktest":            {"desk/httpapi/httpapitest"},
	"memory/durable/faultfs":   {},
	"memory/memorytest":        {},
	"desk/httpapi/httpapitest": {},
	"desk/metrics/metricstest": {},
	"desk/natstest":            {},
	"desk/logtest":             {},
}

// violations returns every import of graph (a package's direct project
// imports, by package, relative to the module) that the rules do not
// allow, one message each, sorted.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		allowed, known := allowedImports[pkg]
		if !known {
			out = append(out, "package "+pkg+" has no import rule: add it to allowedImports in desk/importrules_test.go")
			continue
		}
		for _, imp := range imports {
			switch {
			case under(imp, "cmd"):
				out = append(out, pkg+" imports "+imp+": nothing imports cmd")
			case !slices.Contains(allowed, imp) && !slices.Contains(allowed, anyPkg):
				out = append(out, pkg+" imports "+imp+": not an allowed arrow (allowed: "+strings.Join(allowed, ", ")+")")
			}
			if by, ok := onlyImportedBy[imp]; ok && !slices.ContainsFunc(by, func(b string) bool { return under(pkg, b) }) {
				out = append(out, pkg+" imports "+imp+": only "+orNone(by)+" may import "+imp)
			}
		}
	}
	sort.Strings(out)
	return out
}

// under reports whether pkg is dir or a package below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func orNone(names []string) string {
	if len(names) == 0 {
		return "tests"
	}
	return strings.Join(names, ", ")
}

// TestImportRules checks every package of the module against the rules.
func TestImportRules(t *testing.T) {
	graph, err := projectImports()
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"cmd/deskd", "config", "desk", "keeper", "router", "curator", "memory", "triggers"} {
		if _, ok := graph[must]; !ok {
			t.Fatalf("package %s not found: the walk of the module is broken (found %d packages)", must, len(graph))
		}
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestImportRulesRefuse shows that the rules refuse the arrows they forbid.
func TestImportRulesRefuse(t *testing.T) {
	tests := []struct {
		name  string
		graph map[string][]string
		want  string
	}{
		{"curator imports keeper", map[string][]string{"curator": {"memory", "keeper"}},
			"curator imports keeper: not an allowed arrow (allowed: memory, memory/durable)"},
		{"config imports desk", map[string][]string{"config": {"desk"}}, "config imports desk: not an allowed arrow"},
		{"the event bus imports a project package", map[string][]string{"desk/event": {"desk/clock"}},
			"desk/event imports desk/clock: not an allowed arrow"},
		{"triggers imports router", map[string][]string{"triggers": {"router"}}, "triggers imports router: not an allowed arrow"},
		{"below cmd imports cmd", map[string][]string{"desk": {"cmd/deskd"}}, "desk imports cmd/deskd: nothing imports cmd"},
		{"cmd imports cmd", map[string][]string{"cmd/deskd": {"cmd/other"}}, "cmd/deskd imports cmd/other: nothing imports cmd"},
		{"desk imports an adapter", map[string][]string{"desk": {"desk/httpapi"}},
			"desk imports desk/httpapi: only cmd, desk/httpapi may import desk/httpapi"},
		{"an adapter imports another", map[string][]string{"desk/audit": {"desk/metrics"}},
			"desk/audit imports desk/metrics: not an allowed arrow"},
		{"code imports a test helper", map[string][]string{"router": {"router/routertest"}},
			"router imports router/routertest: only desk/desktest may import router/routertest"},
		{"a package without a rule", map[string][]string{"desk/newthing": {}},
			"package desk/newthing has no import rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.graph)
			if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, tt.want) }) {
				t.Errorf("violations(%v) = %q, want one starting %q", tt.graph, got, tt.want)
			}
		})
	}
	if got := violations(map[string][]string{"cmd/deskd": {"desk/httpapi", "desk"}, "desk": {"keeper", "config"}}); len(got) != 0 {
		t.Errorf("violations of allowed arrows = %q, want none", got)
	}
}

// projectImports returns the direct project imports of every package of
// the module (the packages' own files, for this platform), by package
// relative to the module.
func projectImports() (map[string][]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	graph := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		if name := e.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		imports := []string{}
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				imports = append(imports, r)
			}
		}
		graph[pkg] = imports
		return nil
	})
	return graph, err
}

// moduleRoot is the folder of go.mod, above the test's folder.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's folder")
		}
		dir = parent
	}
}
