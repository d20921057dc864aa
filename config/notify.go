package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/deskd/deskd/desk/event"
)

// This file reads the main file's notify section (where deskd posts the
// events operators want to hear of) and console_url, and a desk file's
// notify (the targets that also get each of its answers).
//
//	console_url: https://deskd.example/       # links in notifications
//	notify:
//	  ops:                                     # a target's name
//	    url: https://hooks.example/deskd       # POST, JSON
//	    secret_file: notify-ops.secret         # whsec_<base64>: signs standard posts
//	    format: standard                       # standard (default) | slack
//	    events: [approval.requested, turn.failed]   # default: DefaultNotifyEvents
//	    give_up_after: 24h                     # default
//
// and in a desk file:
//
//	notify: {answers: [ops]}

// Notification formats (notify.<target>.format).
const (
	// NotifyStandard is a Standard Webhooks post (standardwebhooks.com),
	// signed with the target's secret.
	NotifyStandard = "standard"
	// NotifySlack is {"text": ...}, as Slack, Mattermost and Rocket.Chat
	// incoming webhooks take it; not signed.
	NotifySlack = "slack"
)

// TopicTurnFallback is the notification topic of a turn.completed
// answered by a fallback model (its fallback field true).
const TopicTurnFallback = "turn.fallback"

// DefaultNotifyGiveUpAfter is notify.<target>.give_up_after when not set.
const DefaultNotifyGiveUpAfter = 24 * time.Hour

// Bounds of a target's signing key (Standard Webhooks: 24 to 64 bytes).
const (
	minNotifyKey = 24
	maxNotifyKey = 64
)

// notifySecretPrefix begins a Standard Webhooks secret.
const notifySecretPrefix = "whsec_"

// DefaultNotifyEvents is notify.<target>.events when not set.
func DefaultNotifyEvents() []string {
	return []string{"approval.requested", "turn.interrupted", "turn.failed", TopicTurnFallback, "storage.failed",
		"rollover.failed", "memory.unreadable", "config.rejected", "calendar.ending", "schedule.missed",
		"budget.exceeded", "mcp.server.down"}
}

// NotifyTarget is one entry of the main file's notify section: where and
// how deskd posts the events it names. It names the secret's file but
// never holds the secret (ReadNotifyKey reads it). The section is read at
// start only: a change takes effect after a restart.
type NotifyTarget struct {
	// Name is the entry's key in notify.
	Name string
	// URL is where each notification is POSTed (url, required): http or
	// https. For a Slack target it holds Slack's secret, so deskd never
	// logs or shows more of it than its host.
	URL string
	// SecretFile is the absolute path of the file holding the signing
	// secret, whsec_ followed by the base64 of 24 to 64 bytes (secret_file,
	// resolved as auth_token_file; required for format standard).
	SecretFile string
	// Format is NotifyStandard (default) or NotifySlack (format).
	Format string
	// Events are the topics posted (events, default DefaultNotifyEvents):
	// topics of the event catalogue, and TopicTurnFallback.
	Events []string
	// GiveUpAfter is how long a notification is retried before it is
	// given up (give_up_after, default 24h).
	GiveUpAfter time.Duration
}

// Host is the target URL's host, which logs and status may show.
func (t NotifyTarget) Host() string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

var notifyNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// loadNotify reads console_url and the notify section into c.
func loadNotify(root node, c *Config, dir string) {
	if s, st := root.str("console_url"); st == set {
		u, err := url.Parse(strings.TrimSpace(s))
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
			root.problem("console_url", "%q is not an http or https URL such as https://deskd.example/", s)
		case u.User != nil:
			root.problem("console_url", "%q holds credentials: a link in a notification must not", u.Redacted())
		default:
			c.ConsoleURL = strings.TrimRight(u.String(), "/")
		}
	}
	n, st := root.mapping("notify")
	if st != set {
		return
	}
	names := make([]string, 0, len(n.m))
	for k := range n.m {
		names = append(names, k)
	}
	slices.Sort(names)
	c.Notify = map[string]*NotifyTarget{}
	for _, name := range names {
		if !notifyNameRE.MatchString(name) {
			n.problem(name, "bad target name %q: want %s", name, notifyNameRE)
			continue
		}
		tn, ok := n.asMapping(n.field(name), n.m[name])
		if !ok {
			continue
		}
		if t := loadNotifyTarget(tn, name, dir); t != nil {
			c.Notify[name] = t
		}
	}
}

// loadNotifyTarget reads notify.<name>; nil when it cannot serve.
func loadNotifyTarget(n node, name, dir string) *NotifyTarget {
	n.only("events", "format", "give_up_after", "secret_file", "url")
	t := &NotifyTarget{Name: name, Format: NotifyStandard, GiveUpAfter: DefaultNotifyGiveUpAfter, Events: DefaultNotifyEvents()}
	good := true
	if s, ok := n.requiredStr("url"); ok {
		if err := checkNotifyURL(s); err != nil {
			n.problem("url", "%v", err)
			good = false
		}
		t.URL = s
	} else {
		good = false
	}
	if f, st := n.str("format"); st == set {
		switch f {
		case NotifyStandard, NotifySlack:
			t.Format = f
		default:
			n.problem("format", "unknown format %q: want %s or %s", f, NotifyStandard, NotifySlack)
			good = false
		}
	} else if st == invalid {
		good = false
	}
	_, secretSt := n.str("secret_file")
	switch {
	case t.Format == NotifySlack && secretSt != absent:
		n.problem("secret_file", "a slack target's posts are not signed: leave secret_file out")
		good = false
	case t.Format == NotifyStandard && secretSt == absent:
		n.problem("secret_file", "required for format standard: the file of the signing secret, whsec_ followed by base64")
		good = false
	case t.Format == NotifyStandard:
		t.SecretFile = natsFile(n, dir, "secret_file", func(p string) error { _, err := ReadNotifyKey(p); return err })
		good = good && t.SecretFile != ""
	}
	if evs, st := n.list("events"); st == set {
		t.Events = nil
		known := append(event.Topics(), TopicTurnFallback)
		good = n.eachString("events", evs, "an event topic", func(field, s string) bool {
			switch {
			case !slices.Contains(known, s):
				n.s.add(n.file, field, "unknown event topic %q: want a topic of the event catalogue (docs/EVENTS.md) or %s", s, TopicTurnFallback)
			case slices.Contains(t.Events, s):
				n.s.add(n.file, field, "%q is listed twice", s)
			default:
				t.Events = append(t.Events, s)
				return true
			}
			return false
		}) && good
		if len(evs) == 0 {
			n.problem("events", "the list is empty: leave it out for the default list, or name at least one topic")
			good = false
		}
	} else if st == invalid {
		good = false
	}
	if d, st := n.duration("give_up_after"); st == set {
		if d < time.Second {
			n.problem("give_up_after", "%s is too short: want at least 1s (default %s)", d, DefaultNotifyGiveUpAfter)
			good = false
		}
		t.GiveUpAfter = d
	} else if st == invalid {
		good = false
	}
	if !good {
		return nil
	}
	return t
}

// checkNotifyURL checks a target's URL: http or https, with a host, and
// no credentials (a receiver authenticates deskd by the signature).
func checkNotifyURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("not a URL such as https://hooks.example/deskd")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil {
		return errors.New("it holds credentials (user:password@): standard targets are authenticated by their signature; leave them out")
	}
	return nil
}

// ReadNotifyKey reads the signing key of a standard target from its
// secret file: the first line, whsec_ followed by the standard base64 of
// 24 to 64 bytes. Its errors never quote the file's content.
func ReadNotifyKey(path string) ([]byte, error) {
	b, err := readSecretFile(path)
	if err != nil {
		return nil, err
	}
	line := firstLineToken(b)
	enc, ok := strings.CutPrefix(line, notifySecretPrefix)
	switch {
	case line == "":
		return nil, errors.New("the file it names holds no secret on its first line")
	case !ok:
		return nil, errors.New("the secret in the file it names does not begin with whsec_: want whsec_ followed by the base64 of 24 to 64 random bytes (openssl rand -base64 32)")
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	switch {
	case err != nil:
		return nil, errors.New("the secret in the file it names is not whsec_ followed by standard base64")
	case len(key) < minNotifyKey || len(key) > maxNotifyKey:
		return nil, fmt.Errorf("the secret in the file it names is %d bytes: want %d to %d", len(key), minNotifyKey, maxNotifyKey)
	}
	return key, nil
}

// loadDeskNotify reads a desk's notify: answers, the targets of the main
// file's notify that get each of the desk's answers.
func loadDeskNotify(root node, d *Desk, c *Config) {
	n, st := root.mapping("notify")
	if st != set {
		return
	}
	n.only("answers")
	as, st := n.list("answers")
	if st != set {
		return
	}
	n.eachString("answers", as, "a target of the main file's notify", func(field, s string) bool {
		switch {
		case c.Notify[s] == nil:
			known := make([]string, 0, len(c.Notify))
			for k := range c.Notify {
				known = append(known, k)
			}
			slices.Sort(known)
			reason := fmt.Sprintf("unknown notify target %q", s)
			if len(known) == 0 {
				reason += "; the main file has no valid notify target"
			} else {
				reason += "; notify has " + strings.Join(known, ", ")
			}
			n.s.add(n.file, field, "%s", reason)
		case slices.Contains(d.NotifyAnswers, s):
			n.s.add(n.file, field, "%q is listed twice", s)
		default:
			d.NotifyAnswers = append(d.NotifyAnswers, s)
		}
		return true
	})
}
