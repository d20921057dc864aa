package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// This file reads the main file's nats section: where the NATS server is,
// how deskd authenticates to it, and the JetStream streams of trigger
// ingress (triggers) and event publication (events).
//
//	nats:
//	  url: nats://127.0.0.1:4222          # or a list of servers
//	  creds_file: /etc/deskd/nats.creds   # or token_file, or nkey_file
//	  tls: {ca_file: ca.pem, cert_file: client.pem, key_file: client-key.pem}
//	  triggers: {stream: MARKET, subject: "deskd.triggers.>", consumer: deskd}
//	  events: {stream: DESKD_EVENTS, subject: deskd.events, outbox_max_bytes: 67108864}

// Defaults of the nats section.
const (
	// DefaultNATSTriggersSubject is nats.triggers.subject when not set.
	DefaultNATSTriggersSubject = "deskd.triggers.>"
	// DefaultNATSConsumer is nats.triggers.consumer when not set.
	DefaultNATSConsumer = "deskd"
	// DefaultNATSEventsSubject is nats.events.subject when not set.
	DefaultNATSEventsSubject = "deskd.events"
	// DefaultNATSOutboxMaxBytes is nats.events.outbox_max_bytes when not set.
	DefaultNATSOutboxMaxBytes = 64 << 20
)

// NATS is the main file's nats section. Config.NATS is nil when the
// section is absent: NATS is off. The section is read at start only: a
// change takes effect after a restart.
type NATS struct {
	// URLs are the servers to connect to (url: one URL or a list;
	// required), each nats://, tls://, ws:// or wss://host:port.
	URLs []string
	// CredsFile is the absolute path of a credentials file (creds_file: a
	// user JWT and its NKey seed; resolved as auth_token_file).
	CredsFile string
	// TokenFile is the absolute path of a file holding a token on its
	// first line (token_file, resolved as auth_token_file).
	TokenFile string
	// NkeyFile is the absolute path of a file holding an NKey seed
	// (nkey_file, resolved as auth_token_file).
	NkeyFile string
	// TLS is the TLS settings (tls); zero: the URL's scheme decides.
	TLS NATSTLS
	// Triggers is the trigger ingress (triggers); nil: none.
	Triggers *NATSTriggers
	// Events is event publication (events); nil: none.
	Events *NATSEvents
}

// NATSTLS is the nats.tls settings: absolute paths, resolved against the
// main file's directory.
type NATSTLS struct {
	// CAFile holds the certificates that sign the server's (ca_file).
	CAFile string
	// CertFile and KeyFile are deskd's client certificate and its key
	// (cert_file, key_file: both or neither).
	CertFile string
	// KeyFile is the key of CertFile (key_file).
	KeyFile string
}

// NATSTriggers is nats.triggers: the stream a message on
// <prefix>.<desk> is a trigger for that desk from.
type NATSTriggers struct {
	// Stream is the JetStream stream (stream, required), created with
	// file storage if it does not exist.
	Stream string
	// Subject is the stream's subject (subject, default
	// "deskd.triggers.>"): a prefix followed by ".>".
	Subject string
	// Consumer is the durable consumer's name (consumer, default deskd).
	Consumer string
}

// Prefix is Subject without its final ".>": the desk's name is the
// subject's token after it.
func (t NATSTriggers) Prefix() string { return strings.TrimSuffix(t.Subject, ".>") }

// NATSEvents is nats.events: where deskd publishes its events.
type NATSEvents struct {
	// Stream is the JetStream stream (stream, required), created with
	// file storage if it does not exist.
	Stream string
	// Subject is the prefix of every event's subject (subject, default
	// deskd.events): <subject>.<desk>.<topic>.
	Subject string
	// OutboxMaxBytes bounds the durable outbox events wait in while NATS
	// is away (outbox_max_bytes, default 64 MiB).
	OutboxMaxBytes int64
}

var (
	natsNameRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	natsTokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// loadNATS reads the nats section into c.NATS; absent leaves it nil.
func loadNATS(root node, c *Config, dir string) {
	n, st := root.mapping("nats")
	if st != set {
		return
	}
	n.only("creds_file", "events", "nkey_file", "tls", "token_file", "triggers", "url")
	c.NATS = &NATS{URLs: natsURLs(n)}
	nc := c.NATS
	nc.CredsFile = natsFile(n, dir, "creds_file", checkKeyFile)
	nc.TokenFile = natsFile(n, dir, "token_file", checkTokenFile)
	nc.NkeyFile = natsFile(n, dir, "nkey_file", checkKeyFile)
	auth := 0
	for _, f := range []string{nc.CredsFile, nc.TokenFile, nc.NkeyFile} {
		if f != "" {
			auth++
		}
	}
	if auth > 1 {
		n.problem("creds_file", "set only one of creds_file, token_file and nkey_file")
	}
	if t, st := n.mapping("tls"); st == set {
		t.only("ca_file", "cert_file", "key_file")
		nc.TLS = NATSTLS{
			CAFile:   natsFile(t, dir, "ca_file", checkPlainFile),
			CertFile: natsFile(t, dir, "cert_file", checkPlainFile),
			KeyFile:  natsFile(t, dir, "key_file", checkKeyFile),
		}
		if (nc.TLS.CertFile == "") != (nc.TLS.KeyFile == "") {
			if _, st1 := t.str("cert_file"); st1 != invalid {
				if _, st2 := t.str("key_file"); st2 != invalid {
					t.problem("cert_file", "set both cert_file and key_file, or neither")
				}
			}
		}
	}
	nc.Triggers = natsTriggers(n)
	nc.Events = natsEvents(n)
	if nc.Triggers != nil && nc.Events != nil && nc.Triggers.Stream == nc.Events.Stream && nc.Triggers.Stream != "" {
		n.problem("events.stream", "%q is also triggers.stream: give events a stream of their own", nc.Events.Stream)
	}
}

// natsURLs reads nats.url: one URL or a list.
func natsURLs(n node) []string {
	v, ok := n.get("url")
	if !ok {
		n.problem("url", "required: the NATS server, such as nats://127.0.0.1:4222")
		return nil
	}
	return n.oneOrList("url", v, oneOrList{one: "a URL", list: "a list of them", empty: "give at least one server"}, checkNATSURL)
}

// checkNATSURL checks one server URL: nats, tls, ws or wss, with a host.
// Credentials in the URL are refused: they belong in a file.
func checkNATSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL such as nats://127.0.0.1:4222", s)
	}
	if !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
		return fmt.Errorf("%q: scheme %q: want nats, tls, ws or wss", u.Redacted(), u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%q holds credentials: put them in creds_file, token_file or nkey_file", u.Redacted())
	}
	return nil
}

// natsFile reads a file setting of n (relative to dir, $VARIABLES
// expanded) and checks the file with check; "" when absent or bad.
func natsFile(n node, dir, key string, check func(string) error) string {
	f, st := n.str(key)
	if st != set {
		return ""
	}
	p, err := expandKeyFile(f)
	switch {
	case strings.TrimSpace(f) == "":
		n.problem(key, "must not be empty")
		return ""
	case err != nil:
		n.problem(key, "%v", err)
		return ""
	}
	p = resolve(dir, p)
	if err := check(p); err != nil {
		n.problem(key, "%v", err)
		return ""
	}
	return p
}

// checkPlainFile checks a certificate file as checkKeyFile checks a key
// file: a regular file, not empty. A certificate is no secret, but it
// is read the same safe way.
func checkPlainFile(p string) error { return checkKeyFile(p) }

// natsTriggers reads nats.triggers; nil when absent.
func natsTriggers(n node) *NATSTriggers {
	t, st := n.mapping("triggers")
	if st != set {
		return nil
	}
	t.only("consumer", "stream", "subject")
	tr := &NATSTriggers{Stream: natsName(t, "stream", ""), Subject: DefaultNATSTriggersSubject,
		Consumer: natsName(t, "consumer", DefaultNATSConsumer)}
	if s, st := t.str("subject"); st == set {
		tr.Subject = s
		prefix, ok := strings.CutSuffix(s, ".>")
		if !ok || checkSubjectPrefix(prefix) != nil {
			t.problem("subject", "%q: want a subject prefix followed by .>, such as %q: the desk's name is the token after the prefix", s, DefaultNATSTriggersSubject)
		}
	}
	return tr
}

// natsEvents reads nats.events; nil when absent.
func natsEvents(n node) *NATSEvents {
	e, st := n.mapping("events")
	if st != set {
		return nil
	}
	e.only("outbox_max_bytes", "stream", "subject")
	ev := &NATSEvents{Stream: natsName(e, "stream", ""), Subject: DefaultNATSEventsSubject, OutboxMaxBytes: DefaultNATSOutboxMaxBytes}
	if s, st := e.str("subject"); st == set {
		ev.Subject = s
		if err := checkSubjectPrefix(s); err != nil {
			e.problem("subject", "%q: %v; events are published on <subject>.<desk>.<topic>", s, err)
		}
	}
	if b, st := e.integer("outbox_max_bytes"); st == set {
		ev.OutboxMaxBytes = int64(b)
		if b < 1<<20 {
			e.problem("outbox_max_bytes", "%d is too small: want at least 1048576 (1 MiB; default %d)", b, DefaultNATSOutboxMaxBytes)
		}
	}
	return ev
}

// natsName reads a stream or consumer name; def "" makes it required.
func natsName(n node, key, def string) string {
	if def != "" {
		if _, st := n.str(key); st == absent {
			return def
		}
	}
	v, ok := n.requiredStr(key)
	if !ok {
		return ""
	}
	if !natsNameRE.MatchString(v) {
		n.problem(key, "%q: want 1 to 64 letters, digits, _ or -", v)
	}
	return v
}

// checkSubjectPrefix checks a subject without wildcards: dot-separated
// tokens of letters, digits, _ and -.
func checkSubjectPrefix(s string) error {
	for tok := range strings.SplitSeq(s, ".") {
		if !natsTokenRE.MatchString(tok) {
			return fmt.Errorf("want dot-separated tokens of letters, digits, _ or - (no wildcards, no spaces)")
		}
	}
	return nil
}
