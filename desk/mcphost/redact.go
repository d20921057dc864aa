package mcphost

import (
	"errors"
	"sort"
	"strings"

	"github.com/deskd/deskd/config"
)

// hiddenSecret stands for a secret a server echoed back.
const hiddenSecret = "[secret]"

// minSecret is the shortest value hidden: shorter ones would hide common
// words.
const minSecret = 6

// authScheme reports whether w names an HTTP authentication scheme a
// header's value may start with ("Bearer <token>").
func authScheme(w string) bool {
	switch strings.ToLower(w) {
	case "bearer", "basic", "token", "digest", "apikey", "api-key":
		return true
	}
	return false
}

// secretsOf returns the values a server must never get into a log, a
// status or the model's prompt: its secret headers' values (and the
// credential of one that names its scheme, such as a bearer's token) and
// its secret env values,
// longest first.
func secretsOf(cfg *config.MCPServer) []string {
	seen := map[string]bool{}
	add := func(v string) {
		if len(v) >= minSecret {
			seen[v] = true
		}
	}
	for _, values := range cfg.Secrets.Headers {
		for _, v := range values {
			add(v)
			// "Bearer <token>": the token alone is a secret too, not the
			// scheme's name (nor the words of any other header's value).
			if f := strings.Fields(v); len(f) == 2 && authScheme(f[0]) {
				add(f[1])
			}
		}
	}
	for _, v := range cfg.Secrets.Env {
		add(v)
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// hide replaces every secret of cfg in s: a server may echo them back,
// in an error or a result.
func hide(cfg *config.MCPServer, s string) string {
	for _, v := range secretsOf(cfg) {
		s = strings.ReplaceAll(s, v, hiddenSecret)
	}
	return s
}

// hideErr is hide for an error's text.
func hideErr(cfg *config.MCPServer, err error) error {
	if err == nil {
		return nil
	}
	if text := err.Error(); hide(cfg, text) != text {
		return errors.New(hide(cfg, text))
	}
	return err
}
