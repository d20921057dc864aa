package natsevents

import (
	"fmt"
	"strings"
)

// DaemonToken is the desk token of a daemon-wide event's subject.
const DaemonToken = "_"

// Subject returns the subject of an event of topic for desk under prefix:
// <prefix>.<desk>.<topic>, with DaemonToken for desk "" (a daemon-wide
// event). The topic's dots separate tokens, as in the topic itself. Every
// token is escaped for a subject: a byte other than an ASCII letter, digit,
// '-' or '_' becomes %XX (its hex), as does a desk named DaemonToken
// itself, so that no desk or topic can add a token, a wildcard or a space.
func Subject(prefix, desk, topic string) string {
	d := DaemonToken
	if desk != "" {
		d = escapeToken(desk)
		if d == DaemonToken {
			d = "%5F"
		}
	}
	parts := strings.Split(topic, ".")
	for i, p := range parts {
		parts[i] = escapeToken(p)
	}
	return prefix + "." + d + "." + strings.Join(parts, ".")
}

// escapeToken escapes one subject token; an empty one becomes "%".
func escapeToken(s string) string {
	if s == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safeByte(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// checkPrefix refuses a subject prefix that is not plain tokens.
func checkPrefix(subject string) error {
	if subject == "" {
		return fmt.Errorf("events subject is empty")
	}
	for _, tok := range strings.Split(subject, ".") {
		if tok == "" {
			return fmt.Errorf("events subject %q has an empty token", subject)
		}
		for i := 0; i < len(tok); i++ {
			if !safeByte(tok[i]) {
				return fmt.Errorf("events subject %q holds %q: use letters, digits, '-', '_' and dots between tokens", subject, tok[i])
			}
		}
	}
	return nil
}

// checkStream refuses a stream name NATS would refuse.
func checkStream(name string) error {
	if name == "" {
		return fmt.Errorf("events stream name is empty")
	}
	if strings.ContainsAny(name, ". *>\t\r\n/\\") {
		return fmt.Errorf("events stream name %q holds a dot, a wildcard, a space or a slash", name)
	}
	return nil
}
