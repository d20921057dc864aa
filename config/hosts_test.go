package config_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// TestAllowedHosts: allowed_hosts is none unless set, and takes bare host
// names (kept lower case, without a final dot); a scheme, a port, a path,
// a wildcard, an IP address or a malformed name is refused, by field,
// with the reason.
func TestAllowedHosts(t *testing.T) {
	tests := []struct {
		name, line string   // line is added to the main file ("" adds nothing)
		want       []string // AllowedHosts when it loads
		field      string   // the problem's field, when it does not
		reason     string   // a problem's reason holds this, when it does not
	}{
		{name: "absent: none"},
		{name: "empty list", line: "allowed_hosts: []"},
		{name: "one name", line: "allowed_hosts: [deskd.example.lan]", want: []string{"deskd.example.lan"}},
		{name: "a single string", line: "allowed_hosts: deskd", want: []string{"deskd"}},
		{name: "upper case and a final dot", line: "allowed_hosts: [DeskD.Example.LAN.]", want: []string{"deskd.example.lan"}},
		{name: "two names", line: "allowed_hosts: [a.lan, b-2.lan, under_score.lan]", want: []string{"a.lan", "b-2.lan", "under_score.lan"}},

		{name: "a URL", line: "allowed_hosts: [http://deskd.lan]", field: "allowed_hosts[0]", reason: "is a URL"},
		{name: "a port", line: "allowed_hosts: [deskd.lan:7317]", field: "allowed_hosts[0]", reason: "has a port"},
		{name: "a path", line: "allowed_hosts: [deskd.lan/console]", field: "allowed_hosts[0]", reason: "has a path"},
		{name: "a wildcard", line: `allowed_hosts: ["*.lan"]`, field: "allowed_hosts[0]", reason: "wildcards are not supported"},
		{name: "an IPv4 address", line: "allowed_hosts: [192.168.1.20]", field: "allowed_hosts[0]", reason: "is an IP address"},
		{name: "an IPv6 address", line: `allowed_hosts: ["[::1]"]`, field: "allowed_hosts[0]", reason: "is an IP address"},
		{name: "empty", line: `allowed_hosts: [ok.lan, ""]`, field: "allowed_hosts[1]", reason: "the name is empty"},
		{name: "two dots", line: "allowed_hosts: [deskd..lan]", field: "allowed_hosts[0]", reason: "an empty label"},
		{name: "a space", line: `allowed_hosts: ["desk d.lan"]`, field: "allowed_hosts[0]", reason: "want letters, digits"},
		{name: "a leading dash", line: "allowed_hosts: [-deskd.lan]", field: "allowed_hosts[0]", reason: "begins or ends with '-'"},
		{name: "a long label", line: "allowed_hosts: [" + strings.Repeat("a", 64) + ".lan]", field: "allowed_hosts[0]", reason: "longer than 63"},
		{name: "listed twice", line: "allowed_hosts: [deskd.lan, DESKD.lan]", field: "allowed_hosts[1]", reason: "listed twice"},
		{name: "not a string", line: "allowed_hosts: [7317]", field: "allowed_hosts[0]", reason: "want a host name, got"},
		{name: "a mapping", line: "allowed_hosts: {deskd: true}", field: "allowed_hosts", reason: "want a list of host names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			main := baseMain
			if tt.line != "" {
				main += tt.line + "\n"
			}
			c, err := config.Load(setup(t, main, nil))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if !slices.Equal(c.AllowedHosts, tt.want) {
					t.Errorf("AllowedHosts = %q, want %q", c.AllowedHosts, tt.want)
				}
				return
			}
			ps := problemsOf(t, err)
			if len(ps) != 1 || ps[0].Field != tt.field || !strings.Contains(ps[0].Reason, tt.reason) ||
				!strings.HasSuffix(ps[0].File, "deskd.yaml") {
				t.Fatalf("problems = %v, want one of deskd.yaml, field %s: ...%s...", ps, tt.field, tt.reason)
			}
		})
	}
}

// TestAllowedHostsReload: a change of allowed_hosts is applied by a
// reload (it is not one of the settings a restart takes), and the diff
// names it.
func TestAllowedHostsReload(t *testing.T) {
	path := setup(t, baseMain+"allowed_hosts: [old.lan]\n", nil)
	cur, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(baseMain+"allowed_hosts: [old.lan, new.lan]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plan := config.Plan(cur, next)
	if !slices.Equal(plan.Next.AllowedHosts, []string{"old.lan", "new.lan"}) {
		t.Errorf("the reload's config has AllowedHosts %q, want the new list", plan.Next.AllowedHosts)
	}
	var found bool
	for _, c := range plan.Changes {
		if c.Field == "allowed_hosts" {
			found = true
			if c.Restart || !strings.Contains(c.What, "new.lan") {
				t.Errorf("change %+v: want one applied at once, naming the new list", c)
			}
		}
	}
	if !found || len(plan.Pinned) != 0 {
		t.Errorf("changes %+v, pinned %+v: want allowed_hosts changed, nothing pinned", plan.Changes, plan.Pinned)
	}
}
