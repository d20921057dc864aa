package httpapi

// The client's side of a cluster (config cluster): a host that stands by
// for a desk answers its requests 421 with the owner and the owner's API
// address (MisdirectedResponse); the client follows that answer for reads
// and, through OnOwner, for the requests that may be sent again (a
// trigger).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxHops is how many 421s one request follows: from the host asked to
// the owner it names, and on from there while the cluster settles. A
// fourth 421, or a host named twice (two hosts that each say the other
// owns the desk), ends the request with an error naming the hosts.
const MaxHops = 3

// Hop is one 421 the client followed.
type Hop struct {
	// From is the base URL of the host that answered 421.
	From string
	// Owner is the host it named as the desk's owner (its cluster.host).
	Owner string
	// To is the base URL the request was sent on to: the owner's API.
	To string
}

// Misdirected reports whether err is a 421 of a host of a cluster that
// does not run the desk, and returns it: its Owner and Addr say where the
// desk runs (both empty while no host owns it).
func Misdirected(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusMisdirectedRequest {
		return e, true
	}
	return nil, false
}

// clientError is answerError with, for a 421, the owner and address its
// body names.
func clientError(status int, body []byte) *Error {
	e := answerError(status, body)
	if status == http.StatusMisdirectedRequest {
		var m MisdirectedResponse
		if json.Unmarshal(body, &m) == nil {
			e.Owner, e.Addr = m.Owner, m.Addr
		}
	}
	return e
}

// OwnerURL is the base URL of the owner's API address addr that a 421
// named, reached from a host whose base URL is from: an http:// or
// https:// URL of a host and port and nothing else, or a host:port, which
// is reached with from's scheme (http over a unix socket). Anything else
// (a unix socket, credentials, a path, a query, a host that is a
// wildcard) is refused: the client sends its token there.
func OwnerURL(from, addr string) (string, error) {
	scheme := "http"
	if strings.HasPrefix(from, "https://") {
		scheme = "https"
	}
	raw := addr
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", fmt.Errorf("owner address %q: want http(s)://host:port or host:port", addr)
		}
		raw = scheme + "://" + addr
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("owner address %q: %w", addr, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("owner address %q: scheme %q, want http or https", addr, u.Scheme)
	case u.User != nil:
		return "", fmt.Errorf("owner address %q holds credentials: refused", addr)
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("owner address %q has a path, query or fragment: want http(s)://host:port", addr)
	case u.Port() == "" || u.Port() == "0":
		return "", fmt.Errorf("owner address %q names no port: want http(s)://host:port", addr)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("owner address %q names no host (a wildcard): the owner must listen on an address the other hosts can reach", addr)
	}
	return u.Scheme + "://" + u.Host, nil
}

// at is a client of the same token and clock at base, the API of host
// owner: its own connections (a unix socket's dialer is not carried).
func (c *Client) at(base, owner string) *Client {
	return &Client{Token: c.Token, Now: c.Now, OnHop: c.OnHop, Found: "the owner of the desk, host " + owner + ", as a 421 named it",
		base: base, hc: &http.Client{}}
}

// OnOwner runs do against c and, while it fails with a 421 that names the
// desk's owner and its address, against a client of that address with
// the same token (OnHop told of each hop), at most MaxHops hops. It
// returns the client do last ran against (the one to ask about the desk
// from then on) and do's error. A 421 that names no owner (the hosts
// contend for the desk) is returned as it is; a loop of 421s between
// hosts, more than MaxHops, or an owner address OwnerURL refuses end it
// with an error that names the hosts.
//
// do must be safe to run again after a 421: a host that answers 421 has
// done nothing with the request (a trigger is sent again with the same
// id, so no retry makes two).
func (c *Client) OnOwner(do func(*Client) error) (*Client, error) {
	cur := c
	name := map[string]string{c.base: ""} // the base URLs asked, and the host each is
	var path []string
	for {
		err := do(cur)
		e, ok := Misdirected(err)
		if !ok || e.Addr == "" {
			return cur, err
		}
		here := hostAt(name[cur.base], cur.base)
		to, aerr := OwnerURL(cur.base, e.Addr)
		if aerr != nil {
			return cur, fmt.Errorf("%s: the host at %s says host %s owns the desk, at an address not followed: %w", e.Message, cur.base, e.Owner, aerr)
		}
		path = append(path, hostAt(e.Owner, to))
		if _, asked := name[to]; asked {
			name[to] = e.Owner
			return cur, fmt.Errorf("%s (HTTP 421): a loop of 421s: %s says host %s (%s) owns the desk, which was asked already (%s); the hosts disagree on its owner: try again once the cluster settles",
				e.Message, here, e.Owner, to, strings.Join(append([]string{hostAt(name[c.base], c.base)}, path...), " -> "))
		}
		if len(path) > MaxHops {
			return cur, fmt.Errorf("%s (HTTP 421): still sent on after %d hops (%s): try again once the cluster settles",
				e.Message, MaxHops, strings.Join(append([]string{hostAt(name[c.base], c.base)}, path...), " -> "))
		}
		name[to] = e.Owner
		if c.OnHop != nil {
			c.OnHop(Hop{From: cur.base, Owner: e.Owner, To: to})
		}
		cur = cur.at(to, e.Owner)
	}
}

// hostAt names a host by its cluster name, when known, and base URL.
func hostAt(host, base string) string {
	if host == "" {
		return base
	}
	return "host " + host + " (" + base + ")"
}
