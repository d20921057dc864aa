package main

// deskd trigger and the other client commands in front of a host of a
// cluster that stands by for the desk (httpapitest.Standby, answering 421
// as deskd's standby does), with the owner a real server (httpapitest).

import (
	"bytes"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestTriggerFollowsOwner: deskd trigger --wait sent to a standby is sent
// on to the owner the 421 names, which answers it; stderr says which host
// took it, stdout has the reply, and the owner took the trigger once.
func TestTriggerFollowsOwner(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	addr := httpapitest.HostPort(h.URL())
	sb := httpapitest.StartStandby(t, "a", &addr)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"trigger", "main", "plan?", "--id", "o1", "--wait", "--addr", sb.URL}, &out, &errb)
	if code != 0 || !strings.Contains(errb.String(), "its owner is host a: sent to "+h.URL()) ||
		!strings.Contains(errb.String(), "trigger o1 taken by host a at "+h.URL()) || !strings.Contains(out.String(), "answered") {
		t.Fatalf("trigger --wait through a standby = %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if st := h.Desk.Status(); st.Exchanges != 1 {
		t.Errorf("the owner took %d turns, want 1", st.Exchanges)
	}
	out.Reset()
	errb.Reset()
	if code := run(t.Context(), []string{"trigger", "main", "plan?", "--id", "o1", "--addr", sb.URL}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "o1: already known, answered") {
		t.Errorf("the same id again through the standby = %d %s%s, want already known", code, out.String(), errb.String())
	}
}

// TestTriggerLoopOf421sNamesBothHosts: two standbys that each name the
// other as the owner: deskd trigger ends with exit 1 and an error naming
// both hosts.
func TestTriggerLoopOf421sNamesBothHosts(t *testing.T) {
	var addrA, addrB string
	a, b := httpapitest.StartStandby(t, "b", &addrB), httpapitest.StartStandby(t, "a", &addrA)
	addrA, addrB = httpapitest.HostPort(a.URL), httpapitest.HostPort(b.URL)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"trigger", "main", "plan?", "--addr", a.URL}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "loop of 421s") || !strings.Contains(errb.String(), "host a ("+a.URL+")") ||
		!strings.Contains(errb.String(), "host b ("+b.URL+")") {
		t.Errorf("trigger between two standbys = %d\nstderr: %s\nwant exit 1 naming host a at %s and host b at %s", code, errb.String(), a.URL, b.URL)
	}
}

// TestWritesToAStandbyNameTheOwner: pause and ack sent to a standby are
// not sent on; each says which host owns the desk and where it serves,
// and the owner's desk is not paused.
func TestWritesToAStandbyNameTheOwner(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	addr := httpapitest.HostPort(h.URL())
	sb := httpapitest.StartStandby(t, "a", &addr)
	for _, args := range [][]string{{"pause", "main", "--reason", "lunch"}, {"ack", "main", "t-1"}} {
		var out, errb bytes.Buffer
		code := run(t.Context(), append(args, "--addr", sb.URL), &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), `desk "main" runs on host a`) ||
			!strings.Contains(errb.String(), "the owner, host a, serves at "+addr) {
			t.Errorf("%s through a standby = %d\nstderr: %s\nwant exit 1 naming host a at %s", args[0], code, errb.String(), addr)
		}
	}
	if p := h.Desk.Status().Paused; p != nil {
		t.Errorf("the owner's desk is paused (%+v): a write was sent on", p)
	}
	if n := len(sb.Requests()); n != 2 {
		t.Errorf("the standby got %d requests, want 2", n)
	}
}
