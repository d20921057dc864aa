package config_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// TestDebugListen: debug_listen is off unless set, and takes a loopback
// host:port only; anything that could reach the network is refused, by
// field, with the reason.
func TestDebugListen(t *testing.T) {
	tests := []struct {
		name, line string // line is added to the main file ("" adds nothing)
		want       string // DebugListen when it loads
		reason     string // a problem with debug_listen holding this, when it does not
	}{
		{name: "absent: off"},
		{name: "empty: off", line: `debug_listen: ""`},
		{name: "IPv4 loopback", line: "debug_listen: 127.0.0.1:6060", want: "127.0.0.1:6060"},
		{name: "another 127/8 address", line: "debug_listen: 127.0.0.2:6060", want: "127.0.0.2:6060"},
		{name: "IPv6 loopback", line: `debug_listen: "[::1]:6060"`, want: "[::1]:6060"},
		{name: "localhost, any port", line: "debug_listen: localhost:0", want: "localhost:0"},
		{name: "LOCALHOST", line: "debug_listen: LOCALHOST:6060", want: "LOCALHOST:6060"},

		{name: "every interface, IPv4", line: "debug_listen: 0.0.0.0:6060", reason: "listens on every interface"},
		{name: "every interface, no host", line: `debug_listen: ":6060"`, reason: "listens on every interface"},
		{name: "every interface, IPv6", line: `debug_listen: "[::]:6060"`, reason: "listens on every interface"},
		{name: "a LAN address", line: "debug_listen: 192.168.1.20:6060", reason: "is not a loopback address"},
		{name: "a public IPv6 address", line: `debug_listen: "[2001:db8::1]:6060"`, reason: "is not a loopback address"},
		{name: "a host name", line: "debug_listen: desk-host.example.com:6060", reason: "may resolve to a non-loopback address"},
		{name: "a unix socket", line: "debug_listen: unix:/run/deskd/debug.sock", reason: "not a unix socket"},
		{name: "no port", line: "debug_listen: 127.0.0.1", reason: "is not host:port"},
		{name: "port out of range", line: "debug_listen: 127.0.0.1:70000", reason: "is not a number from 0 to 65535"},
		{name: "not a string", line: "debug_listen: 6060", reason: "want a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			main := baseMain
			if tt.line != "" {
				main += tt.line + "\n"
			}
			path := setup(t, main, nil)
			c, err := config.Load(path)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if c.DebugListen != tt.want {
					t.Errorf("DebugListen = %q, want %q", c.DebugListen, tt.want)
				}
				return
			}
			ps := problemsOf(t, err)
			if len(ps) != 1 || ps[0].Field != "debug_listen" || !strings.Contains(ps[0].Reason, tt.reason) {
				t.Fatalf("problems = %v, want one with debug_listen: ...%s...", ps, tt.reason)
			}
			if s := ps[0].String(); !strings.HasSuffix(ps[0].File, "deskd.yaml") ||
				!strings.Contains(s, "deskd.yaml: debug_listen: ") {
				t.Errorf("problem = %q, want it to name the file and the field", s)
			}
			if tt.reason != "want a string" && tt.reason != "is not host:port" && tt.reason != "is not a number from 0 to 65535" && tt.reason != "not a unix socket" &&
				!strings.Contains(ps[0].Reason, "must be loopback") {
				t.Errorf("reason %q does not say why: it must be loopback", ps[0].Reason)
			}
		})
	}
}
