package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/deskd/deskd/router"
)

// This file reads the main file's mcp_servers section and a desk file's
// mcp section: the MCP (Model Context Protocol) servers deskd connects to,
// and which of their tools each desk may call.
//
//	mcp_servers:                       # main file
//	  everything: {command: [node, /opt/mcp/everything/dist/index.js, stdio], env: {LOG_LEVEL: info}}
//	  broker:     {url: "https://broker.example/mcp", headers_file: /etc/deskd/broker.headers, timeout: 20s}
//
//	mcp:                               # desk file
//	  everything: {tools: [echo]}      # or ["*"]
//	  broker:     {tools: [quote, place_order], approve: [place_order], approve_within: 2m, limits: {place_order: 20}}

// Defaults and bounds of the MCP settings.
const (
	// DefaultMCPTimeout bounds one tool call on a server (timeout).
	DefaultMCPTimeout = 30 * time.Second
	// MaxMCPTimeout is the longest timeout a server may have.
	MaxMCPTimeout = 10 * time.Minute
	// DefaultApproveWithin is how long a call waits for an operator's
	// decision (approve_within) before it expires.
	DefaultApproveWithin = 2 * time.Minute
	// MinApproveWithin and MaxApproveWithin bound approve_within.
	MinApproveWithin = 10 * time.Second
	MaxApproveWithin = time.Hour
	// AllMCPTools, alone in a desk's tools list, allows every tool of the
	// server.
	AllMCPTools = "*"
)

// MCPServer is one entry of the main file's mcp_servers: a server started
// by deskd and spoken to over stdio (Command), or one reached over
// streamable HTTP (URL). Exactly one of the two is set. Secrets never come
// from the YAML: a stdio server's come from EnvFiles and PassEnv, an HTTP
// server's from HeadersFile.
type MCPServer struct {
	// Name is the server's name (its key): lowercase letters, digits and
	// -, at most 32; the model sees its tools as mcp__<name>__<tool>.
	Name string
	// Command is the program and its arguments (command), run with no
	// shell; a relative program with a / is resolved against the main
	// file's directory.
	Command []string
	// Env is environment for the command (env): plain values, never
	// secrets (a name that looks like a secret's is refused: use
	// env_files or pass_env).
	Env map[string]string
	// EnvFiles names files (absolute, resolved against the main file's
	// directory) whose first line is the value of a variable (env_files:
	// {BROKER_KEY: /etc/deskd/broker.key}); read at start and at reload.
	EnvFiles map[string]string
	// PassEnv names variables of deskd's own environment given to the
	// command (pass_env); a missing one is a problem.
	PassEnv []string
	// URL is the streamable HTTP endpoint (url): http or https.
	URL string
	// HeadersFile is the absolute path of a file of HTTP headers sent
	// with every request to URL (headers_file), one "Name: value" a line
	// (blank lines and lines starting with # are skipped); read at start
	// and at reload.
	HeadersFile string
	// Timeout bounds one tool call (timeout, default DefaultMCPTimeout,
	// at most MaxMCPTimeout).
	Timeout time.Duration
	// MaxResult caps the bytes of a call's result given to the model
	// (max_result, default router.DefaultMaxToolResult, 1 to 1 MiB).
	MaxResult int

	// Secrets are what the load read of EnvFiles, PassEnv and HeadersFile:
	// never logged, never in a snapshot, a diff or a problem.
	Secrets MCPSecrets
}

// MCPSecrets is what an MCP server's secret settings hold, read at load.
type MCPSecrets struct {
	// Env is the values of EnvFiles and PassEnv, by variable.
	Env map[string]string
	// Headers is the headers of HeadersFile, by canonical name.
	Headers map[string][]string
	// Digest is a sha256 of all of it: a diff compares it, so that a
	// change of a secret file's content restarts the server.
	Digest string
}

// DeskMCP is one entry of a desk file's mcp section: which tools of one
// server the desk may call, and which of them act.
type DeskMCP struct {
	// Server is the server's name (the entry's key), one of mcp_servers.
	Server string
	// Tools are the tools the desk may call (tools, required): the
	// server's tool names, or AllMCPTools alone.
	Tools []string
	// Approve are the tools whose calls wait for an operator's decision
	// (approve); each is in Tools (or Tools is AllMCPTools), or Approve is
	// AllMCPTools alone: every call waits.
	Approve []string
	// ApproveWithin is how long a call waits for that decision before it
	// expires (approve_within, default DefaultApproveWithin).
	ApproveWithin time.Duration
	// Limits caps the calls of a tool in one trading day (limits:
	// {place_order: 20}); each tool is in Tools, each cap at least 1.
	Limits map[string]int
}

// Allows reports whether the entry lets the desk call tool.
func (m DeskMCP) Allows(tool string) bool {
	for _, t := range m.Tools {
		if t == AllMCPTools || t == tool {
			return true
		}
	}
	return false
}

// NeedsApproval reports whether a call of tool waits for an operator
// (approve names it, or is AllMCPTools alone).
func (m DeskMCP) NeedsApproval(tool string) bool {
	for _, t := range m.Approve {
		if t == AllMCPTools || t == tool {
			return true
		}
	}
	return false
}

var (
	mcpServerNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	// mcpFullNameRE is what a model accepts as a tool's name: the tool of
	// a desk's tools must fit it as mcp__<server>__<tool>.
	mcpFullNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// headerNameRE is an HTTP header name (RFC 9110 token).
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// loadMCPServers reads mcp_servers into c.MCPServers. A server with
// problems is kept, so that a desk naming it is not also reported.
func loadMCPServers(root node, c *Config, dir string) {
	c.MCPServers = map[string]*MCPServer{}
	ms, st := root.mapping("mcp_servers")
	if st != set {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(ms.m)) {
		c.MCPServers[name] = loadMCPServer(ms, name, dir)
	}
}

// loadMCPServer reads mcp_servers.<name>.
func loadMCPServer(ms node, name, dir string) *MCPServer {
	srv := &MCPServer{Name: name, Timeout: DefaultMCPTimeout, MaxResult: router.DefaultMaxToolResult}
	field := ms.field(name)
	if spelt := ms.spelt(name); !mcpServerNameRE.MatchString(spelt) {
		ms.s.add(ms.file, field, "bad MCP server name %q: want %s (lower case; no _, which splits mcp__<server>__<tool>)", spelt, mcpServerNameRE)
	}
	raw, _ := ms.get(name)
	n, ok := ms.asMapping(field, raw)
	if !ok {
		return srv
	}
	n.only("command", "env", "env_files", "headers_file", "max_result", "pass_env", "timeout", "url")
	_, hasCmd := n.get("command")
	_, hasURL := n.get("url")
	switch {
	case hasCmd && hasURL:
		ms.s.add(ms.file, field, "set only one of command (a server deskd runs, over stdio) and url (a streamable HTTP server)")
	case !hasCmd && !hasURL:
		ms.s.add(ms.file, field, "set command (a server deskd runs, over stdio) or url (a streamable HTTP server)")
	}
	if hasCmd {
		srv.Command = loadMCPCommand(n, dir)
	}
	if hasURL {
		srv.URL = loadMCPURL(n)
	}
	loadMCPEnv(n, srv, dir, hasURL && !hasCmd)
	loadMCPHeaders(n, srv, dir, hasCmd && !hasURL)
	srv.Secrets.Digest = secretsDigest(srv.Secrets)

	if d, st := n.duration("timeout"); st == set {
		srv.Timeout = d
		if d <= 0 || d > MaxMCPTimeout {
			n.problem("timeout", "%v: want more than 0 and at most %v", d, MaxMCPTimeout)
		}
	}
	if v, st := n.integer("max_result"); st == set {
		srv.MaxResult = v
		if v < 1 || v > 1<<20 {
			n.problem("max_result", "%d: want 1 to 1048576 bytes", v)
		}
	}
	return srv
}

// loadMCPCommand reads a stdio server's command, checked as a command
// tool's is; a relative program with a / is relative to dir, the main
// file's folder.
func loadMCPCommand(n node, dir string) []string {
	cmd, _ := loadCommand(n, dir, "", "[node, /opt/mcp/server.js, stdio]")
	return cmd
}

// loadCommand reads the command key of n: the program and its
// arguments, each a string that is not blank. A relative program with a /
// is relative to dir. A program deskd cannot run is a problem, whose
// reason starts with owner ("tool quote: ", or ""). An empty list is a
// problem, whose message shows example. st says whether the key was set
// at all.
func loadCommand(n node, dir, owner, example string) (cmd []string, st state) {
	argv, st := n.list("command")
	if st != set {
		return nil, st
	}
	for i, a := range argv {
		s, ok := a.(string)
		switch {
		case !ok:
			n.problem(fmt.Sprintf("command[%d]", i), "want a string, got %s", kind(a))
			continue
		case strings.TrimSpace(s) == "":
			n.problem(fmt.Sprintf("command[%d]", i), "must not be empty")
			continue
		}
		cmd = append(cmd, s)
	}
	if len(cmd) == 0 {
		n.problem("command", "want the program and its arguments, such as %s", example)
		return nil, st
	}
	if prog := cmd[0]; strings.ContainsRune(prog, '/') && !filepath.IsAbs(prog) {
		cmd[0] = filepath.Join(dir, prog)
	}
	if err := checkProgram(cmd[0]); err != nil {
		n.problem("command", "%s%v", owner, err)
	}
	return cmd, st
}

// loadMCPURL reads an HTTP server's url: http or https, with a host, and
// no user or password (credentials go in headers_file). The URL is not
// quoted: it may hold a credential by mistake.
func loadMCPURL(n node) string {
	raw, st := n.str("url")
	if st != set {
		return ""
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		n.problem("url", "want an http:// or https:// URL with a host, such as https://broker.example/mcp")
	case u.User != nil:
		n.problem("url", "must not hold a user or password: put the credentials in headers_file")
		return ""
	}
	return raw
}

// loadMCPEnv reads a stdio server's env, env_files and pass_env; httpOnly
// is true for a server with a url alone, which takes none of them.
func loadMCPEnv(n node, srv *MCPServer, dir string, httpOnly bool) {
	seen := map[string]string{} // variable -> the key that set it
	name := func(parent node, key string) (string, bool) {
		v := parent.spelt(key)
		field := parent.field(key)
		switch {
		case !envNameRE.MatchString(v):
			parent.s.add(parent.file, field, "not an environment variable name (letters, digits and _, not starting with a digit)")
			return "", false
		case seen[v] != "":
			parent.s.add(parent.file, field, "%s is also set by %s", v, seen[v])
			return "", false
		}
		seen[v] = parent.path
		return v, true
	}
	if en, st := n.mapping("env"); st == set {
		if httpOnly {
			n.problem("env", "only a server deskd runs (command) has an environment")
		}
		for _, k := range slices.Sorted(maps.Keys(en.m)) {
			v, st := en.str(k) // a secret-looking name's value is hidden from every problem
			vn, ok := name(en, k)
			if st != set || !ok {
				continue
			}
			if secretField(vn) {
				en.problem(k, "%s looks like a secret's name; a secret must not be in the YAML: use env_files or pass_env", vn)
				continue
			}
			if srv.Env == nil {
				srv.Env = map[string]string{}
			}
			srv.Env[vn] = v
		}
	}
	if fn, st := n.mapping("env_files"); st == set {
		if httpOnly {
			n.problem("env_files", "only a server deskd runs (command) has an environment")
		}
		for _, k := range slices.Sorted(maps.Keys(fn.m)) {
			raw, _ := fn.get(k)
			p, isStr := raw.(string)
			vn, ok := name(fn, k)
			switch {
			case raw == nil || !isStr:
				fn.problem(k, "want the path of a file, got %s", kind(raw))
				continue
			case !ok:
				continue
			}
			path, val, ok := readEnvFile(fn, k, p, dir)
			if !ok {
				continue
			}
			if srv.EnvFiles == nil {
				srv.EnvFiles = map[string]string{}
			}
			srv.EnvFiles[vn] = path
			setSecretEnv(srv, vn, val)
			n.s.hide(val)
		}
	}
	if pl, st := n.list("pass_env"); st == set {
		if httpOnly {
			n.problem("pass_env", "only a server deskd runs (command) has an environment")
		}
		n.eachString("pass_env", pl, "a variable's name", func(field, v string) bool {
			switch {
			case !envNameRE.MatchString(v):
				// not quoted: it may be a secret pasted here by mistake
				n.s.add(n.file, field, "not an environment variable name (letters, digits and _, not starting with a digit); "+
					"if it is the secret itself, put it in the environment or a file: pass_env names the variable")
				return false
			case seen[v] != "":
				n.s.add(n.file, field, "%s is also set by %s", v, seen[v])
				return false
			}
			seen[v] = field
			val := os.Getenv(v)
			if val == "" {
				n.s.add(n.file, field, "%s", unsetEnvReason(v, "deskd's environment"))
				return false
			}
			srv.PassEnv = append(srv.PassEnv, v)
			setSecretEnv(srv, v, val)
			n.s.hide(val)
			return true
		})
	}
}

// readEnvFile reads one env_files entry: the value is the file's first
// line, trimmed. Problems name the file, never its content.
func readEnvFile(fn node, key, p, dir string) (path, val string, ok bool) {
	if strings.TrimSpace(p) == "" {
		fn.problem(key, "must not be empty")
		return "", "", false
	}
	exp, err := expandKeyFile(p)
	if err != nil {
		fn.problem(key, "%v", err)
		return "", "", false
	}
	path = resolve(dir, exp)
	b, err := readSecretFile(path)
	if err != nil {
		fn.problem(key, "%s: %v", path, err)
		return "", "", false
	}
	val = firstLineToken(b)
	if val == "" {
		fn.problem(key, "%s holds nothing on its first line, where the value is read from", path)
		return "", "", false
	}
	return path, val, true
}

func setSecretEnv(srv *MCPServer, name, val string) {
	if srv.Secrets.Env == nil {
		srv.Secrets.Env = map[string]string{}
	}
	srv.Secrets.Env[name] = val
}

// loadMCPHeaders reads an HTTP server's headers_file; stdioOnly is true
// for a server with a command alone, which takes none.
func loadMCPHeaders(n node, srv *MCPServer, dir string, stdioOnly bool) {
	p, st := n.str("headers_file")
	if st != set {
		return
	}
	if stdioOnly {
		n.problem("headers_file", "only an HTTP server (url) has headers; a server deskd runs takes env_files or pass_env")
		return
	}
	if strings.TrimSpace(p) == "" {
		n.problem("headers_file", "must not be empty: leave it out for none")
		return
	}
	exp, err := expandKeyFile(p)
	if err != nil {
		n.problem("headers_file", "%v", err)
		return
	}
	srv.HeadersFile = resolve(dir, exp)
	b, err := readSecretFile(srv.HeadersFile)
	if err != nil {
		n.problem("headers_file", "%s: %v", srv.HeadersFile, err)
		return
	}
	h, bad := parseHeaders(b)
	for _, v := range h {
		for _, x := range v {
			n.s.hide(x)
		}
	}
	for _, line := range bad {
		n.problem("headers_file", "%s: line %d is not a header (want \"Name: value\"; # starts a comment)", srv.HeadersFile, line)
	}
	if len(bad) == 0 && len(h) == 0 {
		n.problem("headers_file", "%s holds no header (want \"Name: value\" lines)", srv.HeadersFile)
	}
	if len(h) > 0 {
		srv.Secrets.Headers = h
	}
}

// parseHeaders reads a headers file: one "Name: value" a line, blank
// lines and lines starting with # skipped. It returns the headers by
// canonical name and the numbers of the lines that are not headers.
func parseHeaders(b []byte) (http.Header, []int) {
	h := http.Header{}
	var bad []int
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, ":")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || !headerNameRE.MatchString(name) || val == "" || !validHeaderValue(val) {
			bad = append(bad, i+1)
			continue
		}
		h.Add(name, val)
	}
	return h, bad
}

// validHeaderValue reports whether v has no control character but tab.
func validHeaderValue(v string) bool {
	for _, r := range v {
		if r < ' ' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// secretsDigest is a sha256 over every secret value of s, in a fixed
// order, as hex.
func secretsDigest(s MCPSecrets) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		fmt.Fprintf(h, "env\x00%s\x00%s\x00", k, s.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		for _, v := range s.Headers[k] {
			fmt.Fprintf(h, "header\x00%s\x00%s\x00", k, v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// loadDeskMCP reads a desk's mcp: for each server of mcp_servers, the
// tools the desk may call, which wait for an operator (approve, within
// approve_within) and the day's limits.
func loadDeskMCP(root node, d *Desk, c *Config) {
	mn, st := root.mapping("mcp")
	if st != set {
		return
	}
	d.MCP = map[string]DeskMCP{}
	for _, name := range slices.Sorted(maps.Keys(mn.m)) {
		checkMCPServerRef(mn, name, c.MCPServers)
		raw, _ := mn.get(name)
		en, ok := mn.asMapping(mn.field(name), raw)
		if !ok {
			continue
		}
		d.MCP[name] = loadDeskMCPEntry(en, name)
	}
}

// checkMCPServerRef adds a problem if name is not a key of servers.
func checkMCPServerRef(mn node, name string, servers map[string]*MCPServer) {
	if _, ok := servers[name]; ok {
		return
	}
	reason := fmt.Sprintf("unknown MCP server %q", mn.spelt(name))
	if len(servers) == 0 {
		reason += "; mcp_servers is empty"
	} else {
		reason += "; mcp_servers has " + strings.Join(slices.Sorted(maps.Keys(servers)), ", ")
	}
	mn.s.add(mn.file, mn.field(name), "%s", reason)
}

// loadDeskMCPEntry reads mcp.<server> of a desk file.
func loadDeskMCPEntry(en node, server string) DeskMCP {
	en.only("approve", "approve_within", "limits", "tools")
	m := DeskMCP{Server: server, ApproveWithin: DefaultApproveWithin}
	switch l, st := en.list("tools"); {
	case st == absent:
		en.problem("tools", "required: the tools of %s the desk may call, or [\"*\"] for every one", server)
	case st == set && len(l) == 0:
		en.problem("tools", "the list is empty: name the tools the desk may call, or [\"*\"]; leave the entry out for none")
	case st == set:
		m.Tools = mcpToolList(en, "tools", server, l, nil)
	}
	// Without a good tools list, approve and limits are checked alone.
	all := m.Tools == nil || slices.Equal(m.Tools, []string{AllMCPTools})
	inTools := func(t string) bool { return all || slices.Contains(m.Tools, t) }
	switch l, st := en.list("approve"); {
	case st == set && len(l) == 0:
		en.problem("approve", "the list is empty: leave approve out when no call waits for an operator")
	case st == set:
		m.Approve = mcpToolList(en, "approve", server, l, inTools)
	}
	if d, st := en.duration("approve_within"); st == set {
		m.ApproveWithin = d
		if d < MinApproveWithin || d > MaxApproveWithin {
			en.problem("approve_within", "%v: want %v to %v", d, MinApproveWithin, MaxApproveWithin)
		}
	}
	if ln, st := en.mapping("limits"); st == set {
		for _, k := range slices.Sorted(maps.Keys(ln.m)) {
			tool := ln.spelt(k)
			v, st := ln.integer(k)
			if st != set {
				if st == absent {
					ln.problem(k, "want a number of calls a trading day, got null")
				}
				continue
			}
			switch {
			case tool == AllMCPTools:
				ln.problem(k, "name a tool: a limit counts the calls of one tool")
				continue
			case !inTools(tool):
				ln.problem(k, "%q is not in tools %s: a limit needs a tool the desk may call", tool, list(m.Tools))
				continue
			case v < 1:
				ln.problem(k, "%d: want 1 or more calls a trading day (leave the tool out for no limit)", v)
				continue
			}
			if m.Limits == nil {
				m.Limits = map[string]int{}
			}
			m.Limits[tool] = v
		}
	}
	return m
}

// mcpToolList reads l, a list of tool names (tools or approve): strings,
// no duplicates, "*" alone or names whose full name a model accepts. A
// name must pass ok, when given (approve's tools are in tools).
func mcpToolList(en node, key, server string, l []any, ok func(string) bool) []string {
	var out []string
	en.eachString(key, l, "a tool's name", func(field, t string) bool {
		switch {
		case t == AllMCPTools && len(l) > 1:
			en.s.add(en.file, field, "%q means every tool: give it alone", AllMCPTools)
			return false
		case t == AllMCPTools:
		case !mcpFullNameRE.MatchString("mcp__" + server + "__" + t):
			en.s.add(en.file, field, "%q cannot be offered to a model: mcp__%s__<tool> must be letters, digits, _ and -, at most 64 characters", t, server)
			return false
		case slices.Contains(out, t):
			en.s.add(en.file, field, "%q is listed twice", t)
			return false
		case ok != nil && !ok(t):
			en.s.add(en.file, field, "%q is not in tools: the desk may not call it", t)
			return false
		}
		out = append(out, t)
		return true
	})
	return out
}
