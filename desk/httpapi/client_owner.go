package httpapi

// The client's side of a cluster (config cluster): a host that stands by
// for a desk answers its requests 421 with the owner and the owner's API
// address (MisdirectedResponse); the client follows that answer for reads
// and, through OnOwner, for the requests that may be sent again (a
// trigger).

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
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
			e.Owner, e.Addr, e.Epoch = m.Owner, m.Addr, m.Epoch
		}
	}
	return e
}

// OwnerURL is the base URL of the owner's API address addr that a 421
// named, reached from a host whose base URL is from: an http:// or
// https:// URL of a host and port and nothing else, or a host:port, which
// is reached with from's scheme (http over a unix socket). Anything else
// (a unix socket, credentials, a path, a query, a host that is a
// wildcard, http:// from an https:// host) is refused: the client sends
// its token there.
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
	case scheme == "https" && u.Scheme != "https":
		return "", fmt.Errorf("owner address %q is http, reached from the https host %s: refused, the token would go there in cleartext", addr, from)
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
// With a token, its first request that carries it waits for the host's
// proof that it holds the same token (proving): only a 421, whose
// address any writer of the KV bucket DESKD_OWNERS sets, vouches for
// base.
func (c *Client) at(base, owner string) *Client {
	hc := &http.Client{}
	if c.Token != "" {
		hc.Transport = &proving{next: http.DefaultTransport, base: base, owner: owner, token: c.Token}
	}
	return &Client{Token: c.Token, Now: c.Now, OnHop: c.OnHop, Found: "the owner of the desk, host " + owner + ", as a 421 named it",
		base: base, hc: hc}
}

// proving is the transport of a client at a host reached through a 421:
// before the first request that carries a token, it asks the host for
// its proof (GET /v1/proof) with a fresh nonce and the token's id, and
// sends the request only when the proof is the token's for that nonce
// and for the host the 421 named; otherwise the request fails, and the
// token is never sent.
type proving struct {
	next               http.RoundTripper
	base, owner, token string

	mu     sync.Mutex
	proven bool
}

// RoundTrip sends req once the host has proved it holds the token (a
// request without an Authorization header is sent as it is).
func (p *proving) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		if err := p.once(req.Context()); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
	}
	return p.next.RoundTrip(req)
}

// once asks for the proof until one succeeds.
func (p *proving) once(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proven {
		return nil
	}
	if err := p.prove(ctx); err != nil {
		return fmt.Errorf("host %s at %s, as a 421 named it, does not prove it holds this client's token: not following the 421: %w", p.owner, p.base, err)
	}
	p.proven = true
	return nil
}

// prove asks the host for its proof of a fresh nonce and checks it.
func (p *proving) prove(ctx context.Context) error {
	var raw [ProofNonceLen / 2]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("make a nonce: %w", err)
	}
	nonce := hex.EncodeToString(raw[:])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+PathProof+"?nonce="+nonce, nil)
	if err != nil {
		return fmt.Errorf("ask for its proof: %w", err)
	}
	req.Header.Set(HeaderTokenID, TokenID(p.token))
	resp, err := p.next.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("ask for its proof (GET %s): %w", PathProof, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("GET %s answered %d: %s", PathProof, resp.StatusCode, answerError(resp.StatusCode, msg).Message) // not wrapped: no caller may take it for the request's answer
	}
	var pr ProofResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&pr); err != nil {
		return fmt.Errorf("its answer to GET %s is not a proof: %w", PathProof, err)
	}
	if pr.Host != p.owner {
		return fmt.Errorf("it proves for host %q, not for host %q that the 421 named", pr.Host, p.owner)
	}
	if got, err := hex.DecodeString(pr.Proof); err != nil || !hmac.Equal(got, proofMAC(p.token, nonce, p.owner)) {
		return errors.New("its proof is not this token's for the nonce sent")
	}
	return nil
}

// OnOwner runs do against c and, while it fails with a 421 that names the
// desk's owner and its address, against a client of that address with
// the same token (OnHop told of each hop), at most MaxHops hops. It
// returns the client do last ran against (the one to ask about the desk
// from then on) and do's error. A 421 that names no owner (the hosts
// contend for the desk) is returned as it is; a loop of 421s between
// hosts (a host asked already named again, at no later epoch than any
// 421 so far: a desk that moved back is followed), more than MaxHops, or
// an owner address OwnerURL refuses end it with an error that names the
// hosts.
//
// do must be safe to run again after a 421: a host that answers 421 has
// done nothing with the request (a trigger is sent again with the same
// id, so no retry makes two).
func (c *Client) OnOwner(do func(*Client) error) (*Client, error) {
	cur := c
	name := map[string]string{c.base: ""} // the base URLs asked, and the host each is
	var path []string
	var epoch uint64 // the highest epoch a 421 named
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
		moved := e.Epoch > epoch // a later owner than any 421 so far named: the desk moved, not a loop
		epoch = max(epoch, e.Epoch)
		if _, asked := name[to]; asked && !moved {
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
