package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// maxHostName is the longest host name (RFC 1035), without its final dot.
const maxHostName = 253

// loadAllowedHosts reads allowed_hosts: the host names, beyond localhost,
// the listen addresses' own and every IP address, that a request over
// TCP may name in its Host header (the API's rule against DNS
// rebinding). One name or a list; each a bare host name, no scheme, port,
// path or wildcard. They are kept lower case, without a final dot.
func loadAllowedHosts(root node, c *Config) {
	v, ok := root.get("allowed_hosts")
	if !ok {
		return
	}
	var items []any
	switch v := v.(type) {
	case string:
		items = []any{v}
	case []any:
		items = v
	default:
		root.problem("allowed_hosts", "want a list of host names, such as [deskd.example.lan], got %s", kind(v))
		return
	}
	for i, x := range items {
		field := root.field("allowed_hosts")
		if _, isList := v.([]any); isList {
			field = fmt.Sprintf("%s[%d]", field, i)
		}
		s, ok := x.(string)
		if !ok {
			root.s.add(root.file, field, "want a host name, got %s", kind(x))
			continue
		}
		name, err := checkHostName(s)
		if err != nil {
			root.s.add(root.file, field, "%v", err)
			continue
		}
		if slices.Contains(c.AllowedHosts, name) {
			root.s.add(root.file, field, "%q is listed twice", s)
			continue
		}
		c.AllowedHosts = append(c.AllowedHosts, name)
	}
}

// checkHostName checks one name of allowed_hosts and returns it as the
// API compares it: lower case, without a final dot. It must be a host
// name alone (labels of letters, digits, '-' and '_', separated by dots),
// with no scheme, port, path or wildcard; an IP address is refused as
// needless, since every IP address is accepted already.
func checkHostName(s string) (string, error) {
	const want = "want a host name alone, such as deskd.example.lan"
	switch {
	case s == "":
		return "", fmt.Errorf("the name is empty: %s", want)
	case strings.Contains(s, "://"):
		return "", fmt.Errorf("%q is a URL: %s (no scheme, port or path)", s, want)
	case strings.Contains(s, "*"):
		return "", fmt.Errorf("%q: wildcards are not supported: list each name", s)
	case strings.Contains(s, "/"):
		return "", fmt.Errorf("%q has a path: %s", s, want)
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return "", fmt.Errorf("%q is an IP address: every IP address is accepted already; allowed_hosts lists names only", s)
	}
	if strings.Contains(s, ":") {
		return "", fmt.Errorf("%q has a port: %s (the Host rule ignores the port)", s, want)
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if len(name) > maxHostName {
		return "", fmt.Errorf("%q is longer than %d characters: %s", s, maxHostName, want)
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return "", fmt.Errorf("%q: %v: %s", s, err, want)
		}
	}
	return name, nil
}

// checkLabel checks one label of a host name.
func checkLabel(l string) error {
	switch {
	case l == "":
		return fmt.Errorf("an empty label (two dots, or a leading dot)")
	case len(l) > 63:
		return fmt.Errorf("label %q is longer than 63 characters", l)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Errorf("label %q begins or ends with '-'", l)
	}
	for _, r := range l {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return fmt.Errorf("label %q holds %q: want letters, digits, '-' or '_'", l, r)
		}
	}
	return nil
}
