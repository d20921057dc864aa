package natsconn_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/natsconn"
	"github.com/deskd/deskd/desk/natstest"
)

// waitState waits until c's state is want, failing after 20s.
func waitState(t *testing.T, c *natsconn.Conn, want string) natsconn.Status {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		ch := c.Changed()
		if st := c.State(); st.State == want {
			return st
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("state %+v after 20s, want %s", c.State(), want)
		}
	}
}

// freePort is a port nothing listens on (now).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConnectWhileDown: with no server, Connect succeeds and says
// connecting, with the error; the connection is made once a server
// comes, lost (reconnecting) when it goes, and made again when it comes
// back. Each state says since when, on deskd's clock.
func TestConnectWhileDown(t *testing.T) {
	port := freePort(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC))
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	c, err := natsconn.Connect(&config.NATS{URLs: []string{url}}, zerolog.New(zerolog.NewTestWriter(t)), clk)
	if err != nil {
		t.Fatalf("Connect with the server down: %v, want a connection that keeps trying", err)
	}
	defer c.Close()
	if st := c.State(); st.Connected || st.State != natsconn.StateConnecting || !st.Since.Equal(clk.Now()) {
		t.Errorf("state with the server down = %+v, want connecting since %v", st, clk.Now())
	}
	clk.Advance(time.Minute)
	srv := natstest.StartAt(t, port)
	st := waitState(t, c, natsconn.StateConnected)
	if !st.Connected || st.Server != url || st.Error != "" || !st.Since.Equal(clk.Now()) {
		t.Errorf("connected: %+v, want connected to %s since %v", st, url, clk.Now())
	}
	srv.Down()
	st = waitState(t, c, natsconn.StateReconnecting)
	if st.Connected || st.Error == "" {
		t.Errorf("server gone: %+v, want reconnecting with the error", st)
	}
	srv.Up()
	waitState(t, c, natsconn.StateConnected)
	c.Close()
	if st := c.State(); st.State != natsconn.StateClosed || st.Connected {
		t.Errorf("after Close: %+v, want closed", st)
	}
}

// TestConnectRefusesBadSettings: an unreadable token file is an error
// of Connect that names the setting.
func TestConnectRefusesBadSettings(t *testing.T) {
	_, err := natsconn.Connect(&config.NATS{URLs: []string{"nats://127.0.0.1:1"}, TokenFile: t.TempDir() + "/none"},
		zerolog.Nop(), clock.Real())
	if err == nil || !strings.Contains(err.Error(), "token_file") {
		t.Errorf("Connect with a missing token file: %v, want an error naming token_file", err)
	}
}
