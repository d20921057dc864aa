package termview_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
)

// TestStatusShowsEachDesksOwner: on a host of a cluster the status table
// has an OWNER column (host, epoch, since) for every desk, the desks this
// host stands by for are listed after it with where each runs, and a desk
// no host owns says so; without a cluster there is no OWNER column and no
// such list.
func TestStatusShowsEachDesksOwner(t *testing.T) {
	since := time.Date(2026, 12, 2, 5, 10, 0, 0, time.UTC)
	desks := []desk.Status{
		{Name: "alpha", State: desk.StateIdle, Session: "s-1", QueueLimit: 8, Owner: &desk.Owner{Host: "a", Epoch: 7, Since: since, Addr: "10.0.0.1:7317"}},
		{Name: "beta", State: desk.StateStandby, Owner: &desk.Owner{Host: "b", Epoch: 9, Since: since.Add(time.Minute), Addr: "10.0.0.2:7317"}},
		{Name: "gamma", State: desk.StateStandby},
		{Name: "delta", State: desk.StateStandby, Owner: &desk.Owner{Host: "c\x1b[31m", Epoch: 3, Since: since}},
	}
	var b strings.Builder
	termview.Status(&b, desks)
	out := b.String()
	lines := strings.Split(out, "\n")
	for _, want := range []string{"OWNER", "alpha", "beta", "gamma"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	row := func(name string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		t.Fatalf("status has no row of desk %s:\n%s", name, out)
		return ""
	}
	if !strings.HasSuffix(lines[0], "MODEL  OWNER") {
		t.Errorf("header = %q, want OWNER last", lines[0])
	}
	for name, want := range map[string]string{
		"alpha": "a (epoch 7, since 2026-12-02T05:10:00Z)",
		"beta":  "standby", "gamma": "none",
	} {
		if r := row(name); !strings.Contains(r, want) {
			t.Errorf("row of %s = %q, want %q in it", name, r, want)
		}
	}
	if r := row("beta"); !strings.HasSuffix(r, "b (epoch 9, since 2026-12-02T05:11:00Z)") {
		t.Errorf("row of beta = %q, want its owner b last", r)
	}
	for _, want := range []string{
		"\nthis host stands by for 3 desks",
		"\n  beta  runs on host b at 10.0.0.2:7317\n",
		"\n  gamma  no host owns it now",
		"\n  delta  runs on host c",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "alpha  runs on") || strings.Contains(out, "\x1b") {
		t.Errorf("status lists the desk this host owns as stood by for, or holds an escape:\n%s", out)
	}

	b.Reset()
	alone := desks[0]
	alone.Owner = nil
	termview.Status(&b, []desk.Status{alone})
	if out := b.String(); strings.Contains(out, "OWNER") || strings.Contains(out, "stands by") || !strings.HasSuffix(strings.Split(out, "\n")[0], "MODEL") {
		t.Errorf("status without a cluster:\n%s\nwant no OWNER column and no standby list", out)
	}
}
