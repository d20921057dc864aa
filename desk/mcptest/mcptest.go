// Package mcptest is a real MCP (Model Context Protocol) server, built with
// the official SDK, for the tests of every package: deskd speaks to it over
// stdio (the test binary re-executed as the server) and over streamable
// HTTP (an in-process server that can die and come back).
//
// Its tools:
//
//	echo        {text}              → the text
//	quote       {symbol}            → "QUOTE <symbol> 101.25"
//	place_order {symbol, qty, side} → "ORDER <id> <side> <qty> <symbol> accepted" (counted)
//	fail        {}                  → a tool error "broker refused: market closed"
//	slow        {}                  → blocks until the call's context ends
//	crash       {}                  → the server goes away (a stdio server exits 3)
//	big         {bytes}             → that many bytes of text
package mcptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env names.
const (
	// EnvMode, set to "stdio", makes ServeStdioIfAsked serve.
	EnvMode = "DESKD_MCPTEST"
	// EnvOrders names a file a stdio server appends a line to for each
	// order placed.
	EnvOrders = "DESKD_MCPTEST_ORDERS"
	// EnvChild names a file a stdio server writes the PID of a child to,
	// which it starts in its process group and leaves running (a server's
	// helper process, or a wrapper's).
	EnvChild = "DESKD_MCPTEST_CHILD"
	// EnvDetached names a file a stdio server writes the PID of a child
	// to, which it starts in a session of its own (setsid: outside the
	// server's process group) and leaves running: a server that detaches
	// a helper.
	EnvDetached = "DESKD_MCPTEST_DETACHED"
	// EnvLinger, set to anything, makes a stdio server keep running once
	// its stdin has closed, until a signal kills it: a server that does
	// not notice its client has gone.
	EnvLinger = "DESKD_MCPTEST_LINGER"
)

// Texts of the tools' answers.
const (
	// FailText is the fail tool's error.
	FailText = "broker refused: market closed"
	// QuotePrice is the price every quote answers.
	QuotePrice = "101.25"
)

// Options says how a server counts orders and crashes.
type Options struct {
	// OnOrder, when set, is called with each order's line ("ORDER 1 buy 5
	// INFY accepted") before the call answers.
	OnOrder func(line string)
	// Crash is what the crash tool does (a stdio server exits, an HTTP
	// one closes); nil: crash answers a tool error.
	Crash func()
}

// EchoArgs are the echo tool's arguments.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

// QuoteArgs are the quote tool's arguments.
type QuoteArgs struct {
	Symbol string `json:"symbol" jsonschema:"the instrument's symbol"`
}

// OrderArgs are the place_order tool's arguments.
type OrderArgs struct {
	Symbol string `json:"symbol" jsonschema:"the instrument's symbol"`
	Qty    int    `json:"qty" jsonschema:"how many to buy or sell"`
	Side   string `json:"side" jsonschema:"buy or sell"`
}

// BigArgs are the big tool's arguments.
type BigArgs struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to answer"`
}

// Descriptions of the tools, as the server gives them.
const (
	EchoDescription  = "Echo the text back."
	QuoteDescription = "Quote an instrument's last price."
	OrderDescription = "Place an order with the broker."
)

// NewServer returns the test server with its tools.
func NewServer(o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "deskd-mcptest", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: EchoDescription},
		func(_ context.Context, _ *mcp.CallToolRequest, a EchoArgs) (*mcp.CallToolResult, any, error) {
			return text(a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "quote", Description: QuoteDescription},
		func(_ context.Context, _ *mcp.CallToolRequest, a QuoteArgs) (*mcp.CallToolResult, any, error) {
			return text("QUOTE " + a.Symbol + " " + QuotePrice), nil, nil
		})
	var mu sync.Mutex
	orders := 0
	mcp.AddTool(s, &mcp.Tool{Name: "place_order", Description: OrderDescription},
		func(_ context.Context, _ *mcp.CallToolRequest, a OrderArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			orders++
			line := fmt.Sprintf("ORDER %d %s %d %s accepted", orders, a.Side, a.Qty, a.Symbol)
			if o.OnOrder != nil {
				o.OnOrder(line)
			}
			return text(line), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("%s", FailText)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Never answers: blocks until the call is cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "The server goes away."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			if o.Crash == nil {
				return nil, nil, fmt.Errorf("this server cannot crash")
			}
			o.Crash()
			return text("crashed"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer that many bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a BigArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", max(a.Bytes, 0))), nil, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// ServeStdioIfAsked is for a test package's TestMain: when EnvMode is
// "stdio" it serves the test server on stdin and stdout and exits when
// stdin closes (it never returns then); otherwise it returns false.
func ServeStdioIfAsked() bool {
	if os.Getenv(EnvMode) != "stdio" {
		return false
	}
	o := Options{Crash: func() { os.Exit(3) }}
	if path := os.Getenv(EnvOrders); path != "" {
		o.OnOrder = func(line string) { appendLine(path, line) }
	}
	if path := os.Getenv(EnvChild); path != "" {
		startChild(path, false)
	}
	if path := os.Getenv(EnvDetached); path != "" {
		startChild(path, true)
	}
	fmt.Fprintln(os.Stderr, "mcptest: serving on stdio")
	if err := NewServer(o).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
	}
	if os.Getenv(EnvLinger) != "" {
		// Its stderr may be a pipe whose reader has died: a write must not
		// end it by SIGPIPE.
		signal.Ignore(syscall.SIGPIPE)
		fmt.Fprintln(os.Stderr, "mcptest: stdin closed; lingering until a signal")
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGUSR1) // never sent: SIGTERM and SIGKILL end the wait
		<-c
	}
	os.Exit(0)
	return true
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest: orders file:", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// startChild starts a child that sleeps an hour, with none of its pipes,
// in the server's process group (or, detached, in a session of its own),
// and writes its PID to path.
func startChild(path string, detached bool) {
	cmd := exec.Command("sleep", "3600")
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest: start the child:", err)
		return
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest: child's PID file:", err)
	}
}
