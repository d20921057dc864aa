package mcphost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdinTransport is a stdio server's transport, whose writes end when
// their request is given up on. The SDK's own write ignores its context
// once it has begun, and holds a lock that every later message waits
// for: a server that stops reading its stdin would hold the call being
// written, every later one and the session's Close until the pipe closed.
// Here a write whose context ends returns at once; the message goes on
// being written, the next waits for it, and if it is not taken in within
// grace (Options.Grace: the operating system's time, a pipe's reader, on
// the wall clock), cut ends the connection (closing the pipe).
type stdinTransport struct {
	mcp.Transport
	cut   func(why error)
	grace time.Duration
}

func (t stdinTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdinConn{Connection: c, cut: t.cut, grace: t.grace, turn: make(chan struct{}, 1)}, nil
}

type stdinConn struct {
	mcp.Connection
	cut   func(why error)
	grace time.Duration
	turn  chan struct{} // holds a token while a message is being written

	mu      sync.Mutex
	writing string        // the message being written (or the last one)
	wrote   chan struct{} // closed once it is written
}

func (c *stdinConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err // never begun: a request given up on is not sent
	}
	name := messageName(msg)
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		c.gaveUp(name)
		return ctx.Err()
	}
	wrote := make(chan struct{})
	c.mu.Lock()
	c.writing, c.wrote = name, wrote
	c.mu.Unlock()
	var err error
	go func() {
		err = c.Connection.Write(ctx, msg)
		close(wrote)
		<-c.turn
	}()
	select {
	case <-wrote:
		return err
	case <-ctx.Done():
		c.gaveUp(name)
		return ctx.Err()
	}
}

// gaveUp gives the message being written its grace to be taken in, after
// who was given up on, and cuts the connection if it is not.
func (c *stdinConn) gaveUp(who string) {
	c.mu.Lock()
	writing, wrote := c.writing, c.wrote
	c.mu.Unlock()
	if wrote == nil {
		return
	}
	go func() {
		t := time.NewTimer(c.grace)
		defer t.Stop()
		select {
		case <-wrote:
		case <-t.C:
			c.cut(fmt.Errorf("it stopped reading its stdin: %s, which deskd was writing to it, was still not taken in %s after %s was given up on",
				writing, c.grace, who))
		}
	}()
}

// messageName names a message in an error: "the request tools/call".
func messageName(msg jsonrpc.Message) string {
	if r, ok := msg.(*jsonrpc.Request); ok {
		if r.IsCall() {
			return "the request " + r.Method
		}
		return "the notification " + r.Method
	}
	return "a response"
}

// cutInput ends the connection for why, and closes the server's stdin:
// the write blocked on it ends.
func (c *conn) cutInput(why error) {
	c.fail(c.proc.explain(why))
	c.proc.closeInput()
}
