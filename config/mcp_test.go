package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/router"
)

// The secrets of the MCP tests: each must never appear in a problem, a
// change or a snapshot.
const (
	mcpFileSecret   = "broker-key-from-file-7Hq2"
	mcpEnvSecret    = "broker-key-from-env-Zk81"
	mcpHeaderSecret = "Bearer header-secret-Pw45"
	mcpYAMLSecret   = "pasted-into-yaml-Qx09"
)

var mcpSecrets = []string{mcpFileSecret, mcpEnvSecret, mcpHeaderSecret, "header-secret-Pw45", mcpYAMLSecret}

// mcpFiles are the files of an MCP setup, relative to the main file: an
// executable server program, a key file and a headers file.
func mcpFiles() map[string]string {
	return map[string]string{
		"bin/srv":           "#!/bin/sh\nexit 0\n",
		"secrets/broker":    mcpFileSecret + "\nsecond line ignored\n",
		"broker.headers":    "# the broker's credentials\n\nAuthorization: " + mcpHeaderSecret + "\nx-desk-id:  deskd \n",
		"desks.d/main.yaml": baseDesk,
	}
}

const mcpServersYAML = `mcp_servers:
  everything:
    command: [./bin/srv, --stdio]
    env: {LOG_LEVEL: debug, http_proxy: "http://proxy:3128"}
    env_files: {BROKER_KEY: secrets/broker}
    pass_env: [DESKD_MCP_TEST_PASS]
    timeout: 20s
    max_result: 4096
  broker:
    url: "https://broker.example/mcp"
    headers_file: broker.headers
`

// mcpSetup writes a main file with baseMain plus servers, a desk file
// with baseDesk plus deskMCP, and mcpFiles with files over them; it
// returns the main file's path.
func mcpSetup(t *testing.T, servers, deskMCP string, files map[string]string) string {
	t.Helper()
	all := mcpFiles()
	all["desks.d/main.yaml"] = baseDesk + deskMCP
	for k, v := range files {
		all[k] = v
	}
	path := setup(t, baseMain+servers, all)
	if err := os.Chmod(filepath.Join(filepath.Dir(path), "bin", "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMCPServerKeys: every key of mcp_servers is read, paths resolved
// against the main file, secrets read from their files and the
// environment at load, env names and tool names kept as spelt.
func TestMCPServerKeys(t *testing.T) {
	t.Setenv("DESKD_MCP_TEST_PASS", mcpEnvSecret)
	path := mcpSetup(t, mcpServersYAML, `mcp:
  everything: {tools: ["*"]}
  broker: {tools: [getQuote, place_order], approve: [place_order], approve_within: 30s, limits: {place_order: 20, getQuote: 500}}
`, nil)
	c := mustLoad(t, path)
	dir := filepath.Dir(path)

	ev := c.MCPServers["everything"]
	if ev == nil || c.MCPServers["broker"] == nil || len(c.MCPServers) != 2 {
		t.Fatalf("MCPServers = %v, want everything and broker", c.MCPServers)
	}
	wantEv := &config.MCPServer{
		Name:     "everything",
		Command:  []string{filepath.Join(dir, "bin", "srv"), "--stdio"},
		Env:      map[string]string{"LOG_LEVEL": "debug", "http_proxy": "http://proxy:3128"},
		EnvFiles: map[string]string{"BROKER_KEY": filepath.Join(dir, "secrets", "broker")},
		PassEnv:  []string{"DESKD_MCP_TEST_PASS"},
		Timeout:  20 * time.Second, MaxResult: 4096,
		Secrets: config.MCPSecrets{
			Env:    map[string]string{"BROKER_KEY": mcpFileSecret, "DESKD_MCP_TEST_PASS": mcpEnvSecret},
			Digest: ev.Secrets.Digest,
		},
	}
	if !reflect.DeepEqual(ev, wantEv) {
		t.Errorf("everything =\n%+v\nwant\n%+v", ev, wantEv)
	}
	br := c.MCPServers["broker"]
	wantBr := &config.MCPServer{
		Name: "broker", URL: "https://broker.example/mcp", HeadersFile: filepath.Join(dir, "broker.headers"),
		Timeout: config.DefaultMCPTimeout, MaxResult: router.DefaultMaxToolResult,
		Secrets: config.MCPSecrets{
			Headers: map[string][]string{"Authorization": {mcpHeaderSecret}, "X-Desk-Id": {"deskd"}},
			Digest:  br.Secrets.Digest,
		},
	}
	if !reflect.DeepEqual(br, wantBr) {
		t.Errorf("broker =\n%+v\nwant\n%+v", br, wantBr)
	}
	if len(ev.Secrets.Digest) != 64 || len(br.Secrets.Digest) != 64 || ev.Secrets.Digest == br.Secrets.Digest {
		t.Errorf("digests %q and %q: want two different sha256s in hex", ev.Secrets.Digest, br.Secrets.Digest)
	}

	d := c.Desks["main"]
	want := map[string]config.DeskMCP{
		"everything": {Server: "everything", Tools: []string{"*"}, ApproveWithin: config.DefaultApproveWithin},
		"broker": {Server: "broker", Tools: []string{"getQuote", "place_order"}, Approve: []string{"place_order"},
			ApproveWithin: 30 * time.Second, Limits: map[string]int{"place_order": 20, "getQuote": 500}},
	}
	if !reflect.DeepEqual(d.MCP, want) {
		t.Errorf("desk mcp =\n%+v\nwant\n%+v", d.MCP, want)
	}
	b := d.MCP["broker"]
	if !b.Allows("getQuote") || b.Allows("getquote") || b.Allows("cancel") || !b.NeedsApproval("place_order") || b.NeedsApproval("getQuote") {
		t.Errorf("broker entry allows or approves the wrong tools: %+v", b)
	}
	if e := d.MCP["everything"]; !e.Allows("anything") || e.NeedsApproval("anything") {
		t.Errorf("everything entry: want every tool allowed, none waiting: %+v", e)
	}
}

// TestMCPDigestFollowsSecrets: the digest changes when a secret file's
// content changes, and only then.
func TestMCPDigestFollowsSecrets(t *testing.T) {
	t.Setenv("DESKD_MCP_TEST_PASS", mcpEnvSecret)
	path := mcpSetup(t, mcpServersYAML, "", nil)
	first := mustLoad(t, path).MCPServers
	same := mustLoad(t, path).MCPServers
	for _, name := range []string{"everything", "broker"} {
		if first[name].Secrets.Digest != same[name].Secrets.Digest {
			t.Errorf("%s: two loads of the same files give digests %q and %q", name, first[name].Secrets.Digest, same[name].Secrets.Digest)
		}
	}
	writeFiles(t, filepath.Dir(path), map[string]string{"broker.headers": "Authorization: Bearer another\n"})
	t.Setenv("DESKD_MCP_TEST_PASS", "another-value")
	next := mustLoad(t, path).MCPServers
	for _, name := range []string{"everything", "broker"} {
		if first[name].Secrets.Digest == next[name].Secrets.Digest {
			t.Errorf("%s: the digest did not change with its secrets", name)
		}
	}
}

// TestMCPDefaults: a server's timeout and max_result, and an entry's
// approve_within, have their defaults; no mcp_servers is an empty map
// and no mcp a nil one.
func TestMCPDefaults(t *testing.T) {
	c := mustLoad(t, mcpSetup(t, "mcp_servers:\n  s: {url: \"http://127.0.0.1:9000/mcp\"}\n", "mcp:\n  s: {tools: [echo]}\n", nil))
	s := c.MCPServers["s"]
	if s.Timeout != 30*time.Second || s.MaxResult != router.DefaultMaxToolResult || s.Secrets.Env != nil || s.Secrets.Headers != nil {
		t.Errorf("server s = %+v, want timeout 30s, max_result %d, no secrets", s, router.DefaultMaxToolResult)
	}
	if m := c.Desks["main"].MCP["s"]; m.ApproveWithin != 2*time.Minute || m.Approve != nil || m.Limits != nil {
		t.Errorf("entry s = %+v, want approve_within 2m, nothing approved or limited", m)
	}
	plain := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	if plain.MCPServers == nil || len(plain.MCPServers) != 0 || plain.Desks["main"].MCP != nil {
		t.Errorf("no mcp settings: MCPServers = %v, desk MCP = %v", plain.MCPServers, plain.Desks["main"].MCP)
	}
}

// TestMCPProblems: each rule of mcp_servers and of a desk's mcp is one
// problem, naming the file, the field and the reason, never a secret.
func TestMCPProblems(t *testing.T) {
	const (
		mainFile = "deskd.yaml"
		deskFile = "main.yaml"
	)
	srv := func(entry string) string { return "mcp_servers:\n  s: " + entry + "\n" }
	stdio := func(more string) string { return srv("{command: [./bin/srv]" + more + "}") }
	web := func(more string) string { return srv("{url: \"https://broker.example/mcp\"" + more + "}") }
	desk := func(entry string) string { return "mcp:\n  s: " + entry + "\n" }
	tests := []struct {
		name    string
		servers string
		desk    string
		files   map[string]string
		env     map[string]string
		want    want
	}{
		{name: "server name with capitals", servers: "mcp_servers:\n  Broker: {url: \"https://b.example/mcp\"}\n",
			want: want{mainFile, "mcp_servers.broker", `bad MCP server name "Broker"`}},
		{name: "server name with _", servers: "mcp_servers:\n  my_broker: {url: \"https://b.example/mcp\"}\n",
			want: want{mainFile, "mcp_servers.my_broker", "no _"}},
		{name: "server name too long", servers: "mcp_servers:\n  " + strings.Repeat("a", 33) + ": {url: \"https://b.example/mcp\"}\n",
			want: want{mainFile, "mcp_servers." + strings.Repeat("a", 33), "bad MCP server name"}},
		{name: "server not a mapping", servers: srv("[a]"), want: want{mainFile, "mcp_servers.s", "want a mapping"}},
		{name: "misspelt server key", servers: stdio(", timout: 5s"), want: want{mainFile, "mcp_servers.s.timout", "unknown key"}},
		{name: "command and url", servers: stdio(", url: \"https://b.example/mcp\""),
			want: want{mainFile, "mcp_servers.s", "set only one of command"}},
		{name: "neither command nor url", servers: srv("{timeout: 5s}"), want: want{mainFile, "mcp_servers.s", "set command"}},
		{name: "empty command", servers: srv("{command: []}"), want: want{mainFile, "mcp_servers.s.command", "want the program"}},
		{name: "program not in PATH", servers: srv("{command: [deskd-no-such-program]}"),
			want: want{mainFile, "mcp_servers.s.command", "not found in PATH"}},
		{name: "program not executable", servers: srv("{command: [./secrets/broker]}"),
			want: want{mainFile, "mcp_servers.s.command", "not executable"}},
		{name: "url not http", servers: srv("{url: \"ftp://b.example/mcp\"}"), want: want{mainFile, "mcp_servers.s.url", "http:// or https://"}},
		{name: "url without host", servers: srv("{url: \"https:///mcp\"}"), want: want{mainFile, "mcp_servers.s.url", "with a host"}},
		{name: "url with a password", servers: srv("{url: \"https://u:" + mcpYAMLSecret + "@b.example/mcp\"}"),
			want: want{mainFile, "mcp_servers.s.url", "put the credentials in headers_file"}},
		{name: "a secret in env", servers: stdio(", env: {BROKER_API_KEY: " + mcpYAMLSecret + "}"),
			want: want{mainFile, "mcp_servers.s.env.broker_api_key", "use env_files or pass_env"}},
		{name: "a token in env", servers: stdio(", env: {AUTH: " + mcpYAMLSecret + "}"),
			want: want{mainFile, "mcp_servers.s.env.auth", "use env_files or pass_env"}},
		{name: "env value not a string", servers: stdio(", env: {PORT: 8080}"), want: want{mainFile, "mcp_servers.s.env.port", "want a string"}},
		{name: "env bad name", servers: stdio(", env: {1X: a}"), want: want{mainFile, "mcp_servers.s.env.1x", "not an environment variable name"}},
		{name: "env of an HTTP server", servers: web(", env: {A: b}"), want: want{mainFile, "mcp_servers.s.env", "only a server deskd runs"}},
		{name: "env_files of an HTTP server", servers: web(", env_files: {A: secrets/broker}"),
			want: want{mainFile, "mcp_servers.s.env_files", "only a server deskd runs"}},
		{name: "pass_env of an HTTP server", servers: web(", pass_env: [HOME]"),
			want: want{mainFile, "mcp_servers.s.pass_env", "only a server deskd runs"}},
		{name: "env file missing", servers: stdio(", env_files: {KEY: secrets/none}"),
			want: want{mainFile, "mcp_servers.s.env_files.key", "secrets/none: cannot read the file it names"}},
		{name: "env file empty first line", servers: stdio(", env_files: {KEY: secrets/blank}"),
			files: map[string]string{"secrets/blank": "\n" + mcpFileSecret + "\n"},
			want:  want{mainFile, "mcp_servers.s.env_files.key", "holds nothing on its first line"}},
		{name: "env file a folder", servers: stdio(", env_files: {KEY: secrets}"),
			want: want{mainFile, "mcp_servers.s.env_files.key", "not a regular file"}},
		{name: "env file not a string", servers: stdio(", env_files: {KEY: 5}"),
			want: want{mainFile, "mcp_servers.s.env_files.key", "want the path of a file"}},
		{name: "variable set twice", servers: stdio(", env: {LEVEL_ID: a}, env_files: {LEVEL_ID: secrets/broker}"),
			want: want{mainFile, "mcp_servers.s.env_files.level_id", "LEVEL_ID is also set by mcp_servers.s.env"}},
		{name: "pass_env not set", servers: stdio(", pass_env: [DESKD_MCP_TEST_UNSET]"),
			want: want{mainFile, "mcp_servers.s.pass_env[0]", "the environment variable it names, DESKD_MCP_TEST_UNSET, is not set"}},
		{name: "pass_env not a name", servers: stdio(", pass_env: [\"" + mcpYAMLSecret + "\"]"),
			want: want{mainFile, "mcp_servers.s.pass_env[0]", "not an environment variable name"}},
		{name: "headers_file of a stdio server", servers: stdio(", headers_file: broker.headers"),
			want: want{mainFile, "mcp_servers.s.headers_file", "only an HTTP server"}},
		{name: "headers_file missing", servers: web(", headers_file: none.headers"),
			want: want{mainFile, "mcp_servers.s.headers_file", "none.headers: cannot read the file it names"}},
		{name: "headers_file bad line", servers: web(", headers_file: bad.headers"),
			files: map[string]string{"bad.headers": "# creds\nAuthorization: " + mcpHeaderSecret + "\n" + mcpFileSecret + "\n"},
			want:  want{mainFile, "mcp_servers.s.headers_file", "line 3 is not a header"}},
		{name: "headers_file bad name", servers: web(", headers_file: bad.headers"),
			files: map[string]string{"bad.headers": "Bad Name: " + mcpHeaderSecret + "\n"},
			want:  want{mainFile, "mcp_servers.s.headers_file", "line 1 is not a header"}},
		{name: "headers_file no header", servers: web(", headers_file: empty.headers"),
			files: map[string]string{"empty.headers": "# nothing yet\n\n"},
			want:  want{mainFile, "mcp_servers.s.headers_file", "holds no header"}},
		{name: "timeout zero", servers: web(", timeout: 0s"), want: want{mainFile, "mcp_servers.s.timeout", "want more than 0 and at most 10m"}},
		{name: "timeout too long", servers: web(", timeout: 11m"), want: want{mainFile, "mcp_servers.s.timeout", "at most 10m"}},
		{name: "max_result zero", servers: web(", max_result: 0"), want: want{mainFile, "mcp_servers.s.max_result", "want 1 to 1048576"}},
		{name: "max_result too large", servers: web(", max_result: 2097152"), want: want{mainFile, "mcp_servers.s.max_result", "want 1 to 1048576"}},

		{name: "unknown server", servers: web("") + "  t: {url: \"https://t.example/mcp\"}\n", desk: "mcp:\n  brokr: {tools: [quote]}\n",
			want: want{deskFile, "mcp.brokr", `unknown MCP server "brokr"; mcp_servers has s, t`}},
		{name: "no servers", desk: "mcp:\n  broker: {tools: [quote]}\n",
			want: want{deskFile, "mcp.broker", `unknown MCP server "broker"; mcp_servers is empty`}},
		{name: "misspelt entry key", servers: web(""), desk: desk("{tools: [quote], aprove: [quote]}"),
			want: want{deskFile, "mcp.s.aprove", "unknown key"}},
		{name: "mcp not a mapping", servers: web(""), desk: "mcp: [s]\n", want: want{deskFile, "mcp", "want a mapping"}},
		{name: "tools missing", servers: web(""), desk: desk("{approve: [quote]}"), want: want{deskFile, "mcp.s.tools", "required"}},
		{name: "tools empty", servers: web(""), desk: desk("{tools: []}"), want: want{deskFile, "mcp.s.tools", "the list is empty"}},
		{name: "tools not a list", servers: web(""), desk: desk("{tools: quote}"), want: want{deskFile, "mcp.s.tools", "want a list"}},
		{name: "star with others", servers: web(""), desk: desk(`{tools: ["*", quote]}`), want: want{deskFile, "mcp.s.tools[0]", "give it alone"}},
		{name: "tool listed twice", servers: web(""), desk: desk("{tools: [quote, quote]}"), want: want{deskFile, "mcp.s.tools[1]", `"quote" is listed twice`}},
		{name: "tool not a string", servers: web(""), desk: desk("{tools: [1]}"), want: want{deskFile, "mcp.s.tools[0]", "want a tool's name"}},
		{name: "tool a model cannot take", servers: web(""), desk: desk(`{tools: ["get quote"]}`),
			want: want{deskFile, "mcp.s.tools[0]", "cannot be offered to a model"}},
		{name: "approve not in tools", servers: web(""), desk: desk("{tools: [quote], approve: [place_order]}"),
			want: want{deskFile, "mcp.s.approve[0]", `"place_order" is not in tools`}},
		{name: "approve empty", servers: web(""), desk: desk("{tools: [quote], approve: []}"),
			want: want{deskFile, "mcp.s.approve", "the list is empty"}},
		{name: "approve_within too short", servers: web(""), desk: desk("{tools: [quote], approve_within: 5s}"),
			want: want{deskFile, "mcp.s.approve_within", "want 10s to 1h0m0s"}},
		{name: "approve_within too long", servers: web(""), desk: desk("{tools: [quote], approve_within: 2h}"),
			want: want{deskFile, "mcp.s.approve_within", "want 10s to 1h0m0s"}},
		{name: "limit below 1", servers: web(""), desk: desk("{tools: [quote], limits: {quote: 0}}"),
			want: want{deskFile, "mcp.s.limits.quote", "want 1 or more"}},
		{name: "limit not a number", servers: web(""), desk: desk("{tools: [quote], limits: {quote: many}}"),
			want: want{deskFile, "mcp.s.limits.quote", "want an integer"}},
		{name: "limit of a tool not in tools", servers: web(""), desk: desk("{tools: [quote], limits: {Place_Order: 3}}"),
			want: want{deskFile, "mcp.s.limits.place_order", `"Place_Order" is not in tools [quote]`}},
		{name: "limit of every tool", servers: web(""), desk: desk(`{tools: ["*"], limits: {"*": 3}}`),
			want: want{deskFile, "mcp.s.limits.*", "name a tool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := config.Load(mcpSetup(t, tt.servers, tt.desk, tt.files))
			if c != nil {
				t.Errorf("Load returned a config with problems")
			}
			oneProblem(t, err, tt.want)
			for _, s := range mcpSecrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("a problem holds a secret (%s): %v", s, err)
				}
			}
		})
	}
}

// TestMCPAcceptedForms: what the rules allow: approve ["*"] beside named
// tools, approve and limits of any tool when tools is ["*"], a tool
// name of capitals and dots... within what a model takes.
func TestMCPAcceptedForms(t *testing.T) {
	c := mustLoad(t, mcpSetup(t, "mcp_servers:\n  s: {url: \"https://b.example/mcp\"}\n  t: {url: \"http://[::1]:8080/mcp\"}\n", `mcp:
  s: {tools: [quote, place_order], approve: ["*"]}
  t: {tools: ["*"], approve: [place_order], limits: {Place_Order: 2}, approve_within: 1h}
`, nil))
	s, tt := c.Desks["main"].MCP["s"], c.Desks["main"].MCP["t"]
	if !s.NeedsApproval("quote") || !s.NeedsApproval("place_order") {
		t.Errorf("approve [*]: %+v, want every call to wait", s)
	}
	if !tt.NeedsApproval("place_order") || tt.NeedsApproval("quote") || tt.Limits["Place_Order"] != 2 || tt.ApproveWithin != time.Hour {
		t.Errorf("tools [*]: %+v", tt)
	}
}

// TestMCPSecretsNeverShown: no secret value (of env_files, pass_env,
// headers_file, or a secret pasted into env) appears in a problem, a
// change or a snapshot; the paths of the files do.
func TestMCPSecretsNeverShown(t *testing.T) {
	t.Setenv("DESKD_MCP_TEST_PASS", mcpEnvSecret)
	bad := strings.Replace(mcpServersYAML, "env: {LOG_LEVEL: debug,", "env: {BROKER_SECRET: "+mcpYAMLSecret+", LOG_LEVEL: debug,", 1)
	bad = strings.Replace(bad, "timeout: 20s", "timeout: 20", 1)
	_, err := config.Load(mcpSetup(t, bad, "", nil))
	ps := problemsOf(t, err)
	if len(ps) != 2 {
		t.Errorf("problems:\n%v\nwant the secret in env and the timeout", ps)
	}
	checkNoSecret(t, "problems", ps.Error())

	path := mcpSetup(t, mcpServersYAML, "mcp:\n  broker: {tools: [quote]}\n", nil)
	old := mustLoad(t, path)
	snap, err := config.WriteSnapshot(old, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), "start")
	if err != nil || snap == "" {
		t.Fatalf("WriteSnapshot = %q, %v", snap, err)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	checkNoSecret(t, "the snapshot", string(b))
	dir := filepath.Dir(path)
	for _, want := range []string{`"mcp_servers"`, filepath.Join(dir, "broker.headers"), filepath.Join(dir, "secrets", "broker"),
		"DESKD_MCP_TEST_PASS", `"LOG_LEVEL": "debug"`, "https://broker.example/mcp", `"max_result": 4096`, `"approve_within": "2m0s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the snapshot lacks %s:\n%s", want, b)
		}
	}

	writeFiles(t, dir, map[string]string{
		"secrets/broker": "rotated-" + mcpFileSecret + "\n",
		"broker.headers": "Authorization: Bearer rotated-" + mcpHeaderSecret + "\n",
	})
	t.Setenv("DESKD_MCP_TEST_PASS", "rotated-"+mcpEnvSecret)
	changes := config.Diff(old, mustLoad(t, path))
	text := changeLines(changes)
	want := "mcp_servers.broker changed: headers_file contents changed\n" +
		"mcp_servers.everything changed: env_files contents changed, pass_env values changed"
	if text != want {
		t.Errorf("changes:\n%s\nwant\n%s", text, want)
	}
	checkNoSecret(t, "the changes", text)
	for _, c := range changes {
		if c.Restart {
			t.Errorf("%s needs a restart; want mcp_servers reloadable", c)
		}
	}
	if next, err := config.WriteSnapshot(mustLoad(t, path), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), "reload"); err != nil || next != "" {
		t.Errorf("a snapshot after secrets alone changed = %q, %v; want none (it shows no secret, so it is the same)", next, err)
	}
}

func checkNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range append(mcpSecrets, "rotated-") {
		if strings.Contains(text, s) {
			t.Errorf("%s hold a secret (%s):\n%s", what, s, text)
		}
	}
}

// changeLines is every change's String, one a line.
func changeLines(cs []config.Change) string {
	lines := make([]string, len(cs))
	for i, c := range cs {
		lines[i] = c.String()
	}
	return strings.Join(lines, "\n")
}

// TestMCPDiff: a reload names a server added, removed or changed (by its
// settings' keys) and a desk's changed mcp entry; none needs a restart,
// and the desk is reconfigured.
func TestMCPDiff(t *testing.T) {
	t.Setenv("DESKD_MCP_TEST_PASS", mcpEnvSecret)
	path := mcpSetup(t, mcpServersYAML, "mcp:\n  broker: {tools: [quote, place_order]}\n", nil)
	old := mustLoad(t, path)
	edited := strings.Replace(mcpServersYAML, "https://broker.example/mcp", "https://broker2.example/mcp", 1)
	edited = strings.Replace(edited, "timeout: 20s", "timeout: 25s", 1)
	edited += "  quotes: {url: \"https://quotes.example/mcp\"}\n"
	writeFiles(t, filepath.Dir(path), map[string]string{
		"deskd.yaml":        baseMain + edited,
		"desks.d/main.yaml": baseDesk + "mcp:\n  broker: {tools: [quote, place_order], approve: [place_order], limits: {place_order: 5}}\n",
	})
	next := mustLoad(t, path)
	want := "mcp_servers.broker changed: url\n" +
		"mcp_servers.everything changed: timeout\n" +
		"mcp_servers.quotes added\n" +
		"desk main: mcp.broker changed: approve, limits"
	if got := changeLines(config.Diff(old, next)); got != want {
		t.Errorf("changes:\n%s\nwant\n%s", got, want)
	}
	r := config.Plan(old, next)
	if len(r.Pinned) != 0 || !slices.Equal(r.Reconfigure, []string{"main"}) || r.Next.MCPServers["broker"].URL != "https://broker2.example/mcp" {
		t.Errorf("Plan: pinned %v, reconfigure %v, next broker %+v; want nothing pinned, main reconfigured, the new url",
			r.Pinned, r.Reconfigure, r.Next.MCPServers["broker"])
	}

	writeFiles(t, filepath.Dir(path), map[string]string{"deskd.yaml": baseMain + "mcp_servers:\n  broker: {url: \"https://broker.example/mcp\"}\n",
		"desks.d/main.yaml": baseDesk})
	gone := mustLoad(t, path)
	want = "mcp_servers.everything removed\ndesk main: mcp.broker removed"
	if got := changeLines(config.Diff(old, gone)); !strings.HasPrefix(got, "mcp_servers.broker changed: headers_file") || !strings.HasSuffix(got, want) {
		t.Errorf("changes:\n%s\nwant the broker's headers_file, then\n%s", got, want)
	}
}

// TestMCPKeptDeskNeedsItsServer: a desk whose file is refused stays on its
// last good config only while the MCP servers it uses are still there.
func TestMCPKeptDeskNeedsItsServer(t *testing.T) {
	path := mcpSetup(t, "mcp_servers:\n  broker: {url: \"https://broker.example/mcp\"}\n", "mcp:\n  broker: {tools: [quote]}\n", nil)
	last := mustLoad(t, path)
	writeFiles(t, filepath.Dir(path), map[string]string{
		"deskd.yaml":        baseMain + "mcp_servers:\n  other: {url: \"https://other.example/mcp\"}\n",
		"desks.d/main.yaml": baseDesk + "modle: typo\n",
	})
	_, err := config.LoadKeeping(path, last)
	if err == nil || !strings.Contains(err.Error(), `it uses MCP server "broker", which mcp_servers no longer has`) {
		t.Errorf("LoadKeeping = %v; want the kept desk's missing MCP server named", err)
	}
}
