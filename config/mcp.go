package config

import "time"

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
