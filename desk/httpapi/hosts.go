package httpapi

// The Host rule, against DNS rebinding: a page of any site may have its
// name re-resolve to 127.0.0.1 and then reach deskd as its own origin
// (its Origin and Host match, so CrossOriginProtection lets it through,
// and an open API gives it the operator's trust). The one thing such a
// request cannot hide is its name, in Host: so every request over TCP
// must name deskd as deskd knows itself, or it is refused (421) before
// anything else is looked at.

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/deskd/deskd/config"
)

// hostRule says which Host headers a TCP listener accepts: any IP
// address (a page cannot rebind an address, only a name), localhost, the
// host names of the listen addresses, and the names of allowed_hosts.
// Over a unix socket, Host is not looked at: a browser cannot open one.
type hostRule struct {
	// names are the listen addresses' host names, lower case.
	names []string
	// allowed, if set, returns allowed_hosts as now configured (lower
	// case, no final dot), so that a reload takes effect at once.
	allowed func() []string
}

// newHostRule returns the rule of the listen addresses listens (as
// configured: host:port or unix:PATH) and allowed_hosts.
func newHostRule(listens []string, allowed func() []string) hostRule {
	h := hostRule{allowed: allowed}
	for _, a := range listens {
		if strings.HasPrefix(a, config.UnixPrefix) {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			continue
		}
		if _, err := netip.ParseAddr(host); err == nil {
			continue // an address: every address is accepted
		}
		h.names = append(h.names, normalHost(host))
	}
	return h
}

// normalHost is a host name as the rule compares it: lower case, without
// a final dot.
func normalHost(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// hostOf returns the host of a Host header, without its port and, for an
// IPv6 address, its brackets; ok is false when it is not one.
func hostOf(hostport string) (host string, ok bool) {
	if rest, found := strings.CutPrefix(hostport, "["); found {
		addr, port, found := strings.Cut(rest, "]")
		if !found || (port != "" && (port[0] != ':' || !isPort(port[1:]))) {
			return "", false
		}
		return addr, true
	}
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && strings.Count(hostport, ":") == 1 {
		if !isPort(hostport[i+1:]) {
			return "", false
		}
		hostport = hostport[:i]
	}
	return hostport, hostport != ""
}

// isPort reports whether s is a port's digits.
func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// allows reports whether a request over TCP that names hostport in its
// Host header is let through.
func (h hostRule) allows(hostport string) bool {
	if hostport == "" {
		return true // no name at all (an HTTP/1.0 probe): a browser always sends one
	}
	host, ok := hostOf(hostport)
	if !ok {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	name := normalHost(host)
	if name == "localhost" || slices.Contains(h.names, name) {
		return true
	}
	return h.allowed != nil && slices.Contains(h.allowed(), name)
}

// admits reports whether the rule lets r through now: over a unix socket
// always, over TCP when its Host is one of deskd's names. A request that
// lives on (the event stream, a long poll) asks again before it writes
// what it waited for, so that a reload that takes a name out of
// allowed_hosts ends what was let in under it.
func (h hostRule) admits(r *http.Request) bool {
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && addr.Network() == "unix" {
		return true
	}
	return h.allows(r.Host)
}

// check lets r through, or answers 421 Misdirected Request naming the
// Host refused and how to allow it. It reports whether r may go on.
func (h hostRule) check(w http.ResponseWriter, r *http.Request) bool {
	if h.admits(r) {
		return true
	}
	writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not a name of this deskd: refused, since a web page can rename 127.0.0.1 "+
		"(DNS rebinding). Use an IP address or localhost, or add the name to allowed_hosts in the main config file", r.Host))
	return false
}

// wrap refuses, before next sees them, the requests check refuses.
func (h hostRule) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.check(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}
