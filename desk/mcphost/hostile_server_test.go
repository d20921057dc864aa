package mcphost_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/deskd/deskd/config"
)

// Hostile servers: the test binary re-executed as a raw JSON-RPC server
// on stdio that does what the SDK would not let a server do.
const (
	// hostileEnv names the scenario the server plays.
	hostileEnv = "DESKD_MCPHOST_HOSTILE"
	// hostileFile names a file the scenario writes to (a PID).
	hostileFile = "DESKD_MCPHOST_HOSTILE_FILE"
)

// hostile returns the config of a stdio server playing scenario.
func hostile(t *testing.T, scenario string) *config.MCPServer {
	t.Helper()
	return &config.MCPServer{Name: "hostile", Command: []string{os.Args[0]},
		Env:     map[string]string{hostileEnv: scenario, hostileFile: t.TempDir() + "/file"},
		Timeout: config.DefaultMCPTimeout}
}

// serveHostileIfAsked plays the scenario named by hostileEnv, and exits.
func serveHostileIfAsked() bool {
	scenario := os.Getenv(hostileEnv)
	if scenario == "" {
		return false
	}
	signal.Ignore(syscall.SIGPIPE)
	switch scenario {
	case "sleeper":
		select {}
	case "garbage":
		fmt.Println("\x1b[2Jthis is not JSON-RPC")
	case "stubborn":
		// Ignores SIGTERM, and keeps running once its stdin closes.
		signal.Ignore(syscall.SIGTERM)
		rawServe(scenario)
		select {}
	case "stderr":
		// Floods its stderr, then serves.
		line := strings.Repeat("e", 1000) + "\x1b]0;pwned\x07\n"
		for range 20000 {
			os.Stderr.WriteString(line)
		}
	case "leaks":
		// Prints its secret env on stderr, serves, and dies when asked.
		fmt.Fprintln(os.Stderr, "debug: my key is", os.Getenv("BROKER_KEY"))
	case "dies":
		os.Stderr.WriteString(strings.Repeat("e", 100) + "\x1b]0;pwned\x07\x1b[31m fatal: no licence\r\n")
		os.Exit(4)
	case "silentlater":
		// Serves its first start, and exits at its first call; every
		// later start is silent.
		if _, err := os.Stat(os.Getenv(hostileFile)); err == nil {
			scenario = "silent"
		} else {
			os.WriteFile(os.Getenv(hostileFile), []byte("started"), 0o600)
		}
	case "fork", "forkquiet":
		// A child that keeps the stdout pipe open after the server exits
		// (forkquiet: one that holds none of its pipes).
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{hostileEnv + "=sleeper"}
		if scenario == "fork" {
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "hostile: fork:", err)
			os.Exit(1)
		}
		os.WriteFile(os.Getenv(hostileFile), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600)
	}
	rawServe(scenario)
	os.Exit(0)
	return true
}

// rpcRequest is what the raw servers read of a JSON-RPC message: a
// request has an id, a notification none.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// rpcResult is the JSON-RPC answer to request id with result res.
func rpcResult(id json.RawMessage, res any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": res}
}

// rawServe answers JSON-RPC requests, line by line, until stdin closes.
func rawServe(scenario string) {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	lists := 0
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return
		}
		var req rpcRequest
		if json.Unmarshal(line, &req) != nil {
			continue
		}
		if req.ID == nil { // a notification
			continue
		}
		if scenario == "silent" {
			continue
		}
		res := rawResult(scenario, req.Method)
		if req.Method == "tools/list" {
			lists++
		}
		switch {
		case req.Method == "tools/list" && scenario == "pages":
			// Pages without end: each empty, each with a next cursor.
			res = map[string]any{"tools": []any{}, "nextCursor": fmt.Sprint("c", lists)}
		case req.Method == "tools/call" && scenario == "silentlater":
			os.Exit(3)
		case req.Method == "tools/call" && scenario == "deaf":
			// Reads 1 MiB of the next message (deskd is writing it, and
			// then blocks on the full pipe), says so by opening the FIFO
			// at hostileFile, and reads no more.
			io.CopyN(io.Discard, in, 1<<20)
			if f, err := os.OpenFile(os.Getenv(hostileFile), os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			select {}
		case req.Method == "tools/call" && scenario == "leaks":
			fmt.Fprintln(os.Stderr, "fatal: key", os.Getenv("BROKER_KEY"), "refused")
			os.Exit(5)
		case req.Method == "tools/call" && scenario == "badresult":
			res = map[string]any{"content": "not a list"}
			if req.Params.Name == "weird" {
				res = map[string]any{"content": []any{map[string]any{"type": "weird"}}}
			}
		case req.Method == "tools/call" && scenario == "flood":
			res = map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprint(lists)}}}
		}
		b, _ := json.Marshal(rpcResult(req.ID, res))
		out.Write(b)
		out.WriteByte('\n')
		if scenario == "flood" && req.Method == "tools/list" {
			// After each listing, it says its tools changed: a client
			// that re-lists at once loops.
			for range 50 {
				out.WriteString(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
			}
		}
		out.Flush()
	}
}

func rawResult(scenario, method string) any {
	switch method {
	case "initialize":
		return map[string]any{"protocolVersion": "2025-06-18", "serverInfo": map[string]any{"name": "hostile", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}}
	case "tools/list":
		return map[string]any{"tools": hostileTools(scenario)}
	case "tools/call":
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}
	}
	return map[string]any{}
}

var object = map[string]any{"type": "object"}

// Tools of the scenarios.
func hostileTools(scenario string) []any {
	tool := func(name, desc string, schema any) any {
		return map[string]any{"name": name, "description": desc, "inputSchema": schema}
	}
	switch scenario {
	case "odd":
		return []any{
			tool("echo", "first echo", object),
			tool("echo", "second echo", object),
			tool("a.b", "dots", object),
			tool("a/b", "slashes", object),
			tool("ünï", "unicode", object),
			tool("str", "a string schema", map[string]any{"type": "string"}),
			tool("arr", "an array schema", map[string]any{"type": "array"}),
			tool("ctl", "\x1b[31mred\x1b[0m\x07 and \x1b]0;title\x07 ok\r\nline two\ttab \u202egnp.exe\u2066", object),
			tool("longdesc", strings.Repeat("d", 1<<20), object),
			tool("bigschema", "a huge schema", map[string]any{"type": "object", "description": strings.Repeat("s", 1<<20)}),
			tool("fine", "a fine tool", object),
			tool("nullschema", "a null schema", nil),
			map[string]any{"name": "noschema", "description": "no schema"},
			tool("", "no name", object),
			tool("refloop", "a schema that refers to itself", map[string]any{"type": "object", "$ref": "#",
				"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/a"}},
				"$defs":      map[string]any{"a": map[string]any{"$ref": "#/$defs/b"}, "b": map[string]any{"$ref": "#/$defs/a"}}}),
		}
	case "repeats":
		// 256 tools of 9 names, one empty and one invalid, one with a
		// null input schema and one with none.
		names := []string{"quote", "place_order", "", "bad name/../x", "nullschema", "noschema", "echo", "fail", "big"}
		var out []any
		for i := range 256 {
			name := names[i%len(names)]
			switch name {
			case "nullschema":
				out = append(out, tool(name, "a null schema", nil))
			case "noschema":
				out = append(out, map[string]any{"name": name, "description": "no schema"})
			default:
				out = append(out, tool(name, name+" it", object))
			}
		}
		return out
	case "longnames":
		out := []any{tool("fine", "a fine tool", object)}
		for i := range 200 {
			out = append(out, tool(fmt.Sprintf("%d%s", i, strings.Repeat("n", 10<<10)), "long", object))
		}
		return out
	case "badresult":
		return []any{tool("echo", "echo", object), tool("weird", "weird content", object)}
	case "fat":
		var out []any
		for i := range 40 {
			out = append(out, tool(fmt.Sprintf("t%d", i), strings.Repeat("d", 2000),
				map[string]any{"type": "object", "description": strings.Repeat("s", 28<<10)}))
		}
		return out
	case "many":
		var out []any
		for i := range 5000 {
			out = append(out, tool(fmt.Sprintf("t%d", i), strings.Repeat("d", 100), object))
		}
		return out
	}
	return []any{tool("echo", "echo", object), tool("fail", "fail", object)}
}
