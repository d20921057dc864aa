// Package notify posts the bus's events that operators want to hear of to
// webhooks: Standard Webhooks (standardwebhooks.com), signed, or Slack's
// incoming-webhook format ({"text": ...}, which Mattermost and Rocket.Chat
// take too), through a bounded, durable outbox per target.
//
// A Notifier subscribes to the whole bus. On its bus goroutine each event
// a target names becomes that target's notification (its webhook-id, its
// type and the exact body) and is queued for the notifier's writer, which
// appends and fsyncs it to the target's outbox: only then does the event
// count as notified. The bus goroutine never waits for a disk, so a turn
// never waits for a notification and the bus's mailbox of the notifier
// does not fill; a queue past MaxQueued (a stalled disk) drops what comes,
// counted and announced as a full outbox's drops are. One
// sender goroutine per target posts its outbox's entries in order, one at
// a time; an entry leaves the outbox once the target answered 2xx. Any
// other answer, a timeout or a refused connection is retried with backoff
// (1s doubling to 5min, on the injected clock) until the entry is older
// than the target's give_up_after, when it is given up. A restart posts
// what waits again, the same bytes with the same webhook-id, so delivery
// is at least once and a receiver can drop copies by id.
//
// Failures are counted (Stats), announced (notify.failed: at the first
// failure of a streak, at a give-up, at the first notification an outbox
// could not keep), and never posted to the failing target itself.
// Secrets never reach a body, a log line or an outbox: a standard post is
// signed at each attempt, and the URL (a Slack URL holds Slack's secret)
// is shown by its host only.
package notify

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/broadcast"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/gate"
	"github.com/deskd/deskd/memory/durable"
)

// Formats of a target.
const (
	// Standard is a Standard Webhooks post, signed with the target's key.
	Standard = "standard"
	// Slack is {"text": ...}, not signed.
	Slack = "slack"
)

// Notification types beyond the catalogue's topics.
const (
	// TypeFallback is a turn.completed answered by a fallback model.
	TypeFallback = "turn.fallback"
	// TypeAnswered is a desk's answer, for the targets of its notify.answers.
	TypeAnswered = "turn.answered"
)

const (
	// DefaultMaxBytes bounds each target's outbox when Options.MaxBytes is 0.
	DefaultMaxBytes = 16 << 20
	// DefaultMaxQueued bounds the notifications not yet on disk when
	// Options.MaxQueued is 0.
	DefaultMaxQueued = 4096
	// DefaultTimeout bounds one post when Options.Timeout is 0.
	DefaultTimeout = 10 * time.Second
	// DefaultGiveUpAfter is a target's GiveUpAfter when 0.
	DefaultGiveUpAfter = 24 * time.Hour
	// FirstBackoff is the wait after a first failed post; it doubles at
	// each failure of the same notification.
	FirstBackoff = time.Second
	// MaxBackoff is the longest wait between two posts of a notification.
	MaxBackoff = 5 * time.Minute
)

// Target is one place notifications go.
type Target struct {
	// Name names the target (the key of the main file's notify).
	Name string
	// URL is where each notification is POSTed.
	URL string
	// Format is Standard or Slack.
	Format string
	// Key is the signing key of a Standard target (the secret's base64
	// after whsec_, decoded).
	Key []byte
	// Events are the topics posted (and TypeFallback).
	Events []string
	// GiveUpAfter is how long a notification is retried; 0 is
	// DefaultGiveUpAfter.
	GiveUpAfter time.Duration
}

// Trigger is what a desk's ledger knows of a trigger, for the approval
// and answer notifications.
type Trigger struct {
	// Kind is the trigger's kind (manual, market, schedule, ...).
	Kind string
	// Text is what the trigger asked.
	Text string
	// Reply is the desk's answer, once answered.
	Reply string
}

// Options are what a Notifier needs.
type Options struct {
	// Targets are the targets, each with its own outbox.
	Targets []Target
	// Dir is the notifications' folder (under state_dir): each target's
	// outbox is <Dir>/<target>/outbox.jsonl.
	Dir string
	// MaxBytes bounds each outbox's file, and its memory; 0 is
	// DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds one post, on Clock; 0 is DefaultTimeout.
	Timeout time.Duration
	// ConsoleURL is the console's address (console_url); "" adds no links.
	ConsoleURL string
	// Answers returns the targets that get desk's answers (the desk file's
	// notify.answers, as a reload leaves it); nil: none.
	Answers func(desk string) []string
	// Trigger looks a trigger up in its desk's ledger; nil, or false: the
	// notification goes without its text.
	Trigger func(desk, id string) (Trigger, bool)
	// Bus is where the events come from, and where notify.failed and
	// file.torn go.
	Bus *event.Bus
	// Clock times the backoff, the timeouts, give_up_after and the
	// webhook-timestamp.
	Clock clock.Clock
	// Client posts; nil is a client of its own (no timeout of its own:
	// Timeout bounds each post on Clock).
	Client *http.Client
	// Log receives the notifier's warnings.
	Log zerolog.Logger
	// MaxQueued bounds the notifications taken from the bus and not yet in
	// their outboxes (a slow disk); 0 is DefaultMaxQueued.
	MaxQueued int
	// FS is the outboxes' file system; nil is the operating system's.
	FS durable.FS
}

// TargetStats is what one target's sender has done so far.
type TargetStats struct {
	// Target is the target's name.
	Target string `json:"target"`
	// Host is the URL's host (never its path, which may hold a secret).
	Host string `json:"host"`
	// Format is Standard or Slack.
	Format string `json:"format"`
	// Pending is how many notifications wait in the outbox.
	Pending int `json:"pending"`
	// Bytes is the outbox file's size.
	Bytes int64 `json:"bytes"`
	// Delivered counts the notifications the target took (2xx) since New.
	Delivered int64 `json:"delivered"`
	// Failed counts the notifications the target will never get, since
	// New: given up after give_up_after, or not kept (outbox full, or its
	// disk refused the write).
	Failed int64 `json:"failed"`
	// Attempts counts the failed posts since New (each retry counts).
	Attempts int64 `json:"failed_attempts"`
	// Failing is true from a failed post until the next success;
	// LastError says how it failed and Since when the streak began.
	Failing   bool      `json:"failing"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since,omitzero"`
}

// Notifier posts the bus's events to the targets. Use New, then Start;
// Close stops it.
type Notifier struct {
	o       Options
	targets []*target

	// life: take enters it while it queues for the outboxes, so that
	// Close never closes a file under it.
	life gate.Gate

	mu      sync.Mutex
	changed broadcast.Signal // notified at every change of Stats

	// The notifications taken from the bus, waiting for the writer.
	qmu   sync.Mutex
	queue []note
	qwake chan struct{}
	wrote chan struct{} // closed when the writer has returned
	qstop chan struct{} // closed by Close: the writer drains and returns

	unsubscribe func()
	stop        context.CancelFunc
	wg          sync.WaitGroup
}

// target is one target's state.
type target struct {
	Target
	host   string
	events map[string]bool
	ob     *outbox
	scanOK bool // nothing torn or skipped at open
	torn   event.FileTorn

	// Guarded by Notifier.mu.
	delivered, failed, attempts int64
	failing                     bool
	lastError                   string
	since                       time.Time
	full                        bool // an entry was not kept; cleared when the outbox empties
}

var targetNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// New opens (creating them) the targets' outboxes in o.Dir and returns a
// notifier; nothing is posted before Start.
func New(o Options) (*Notifier, error) {
	if err := check(&o); err != nil {
		return nil, err
	}
	n := &Notifier{o: o, qwake: make(chan struct{}, 1)}
	for _, t := range o.Targets {
		if t.GiveUpAfter == 0 {
			t.GiveUpAfter = DefaultGiveUpAfter
		}
		tg := &target{Target: t, events: map[string]bool{}}
		if u, err := url.Parse(t.URL); err == nil {
			tg.host = u.Host
		}
		for _, e := range t.Events {
			tg.events[e] = true
		}
		ob, sc, err := openOutbox(o.FS, filepath.Join(o.Dir, t.Name), o.MaxBytes)
		if err != nil {
			_ = n.closeOutboxes()
			return nil, fmt.Errorf("notify target %s: %w", t.Name, err)
		}
		tg.ob = ob
		tg.scanOK = sc.Torn == nil && len(sc.Skipped) == 0
		if !tg.scanOK {
			tg.torn = event.FileTorn{Path: ob.Path(), Skipped: len(sc.Skipped)}
			if tt := sc.Torn; tt != nil {
				tg.torn.Offset, tg.torn.Bytes, tg.torn.SavedTo = tt.Offset, tt.Bytes, tt.SavedTo
			}
		}
		n.targets = append(n.targets, tg)
	}
	return n, nil
}

// check validates o and applies the defaults.
func check(o *Options) error {
	switch {
	case o.Bus == nil:
		return errors.New("notify: no bus")
	case o.Dir == "":
		return errors.New("notify: no outbox folder")
	case o.MaxBytes < 0:
		return fmt.Errorf("notify: outbox max bytes %d is negative", o.MaxBytes)
	case o.MaxQueued < 0:
		return fmt.Errorf("notify: max queued %d is negative", o.MaxQueued)
	case o.Timeout < 0:
		return fmt.Errorf("notify: timeout %s is negative", o.Timeout)
	}
	seen := map[string]bool{}
	for _, t := range o.Targets {
		switch {
		case !targetNameRE.MatchString(t.Name):
			return fmt.Errorf("notify: bad target name %q: want %s", t.Name, targetNameRE)
		case seen[t.Name]:
			return fmt.Errorf("notify: target %s is named twice", t.Name)
		case t.Format != Standard && t.Format != Slack:
			return fmt.Errorf("notify target %s: unknown format %q: want %s or %s", t.Name, t.Format, Standard, Slack)
		case t.Format == Standard && len(t.Key) == 0:
			return fmt.Errorf("notify target %s: a standard target needs its signing key", t.Name)
		case t.GiveUpAfter < 0:
			return fmt.Errorf("notify target %s: give_up_after %s is negative", t.Name, t.GiveUpAfter)
		}
		if u, err := url.Parse(t.URL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("notify target %s: the URL is not an http or https URL", t.Name)
		}
		seen[t.Name] = true
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// A redirect would carry a signed body elsewhere: a receiver's
			// 3xx is a failure, retried like any other.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return nil
}

// Start subscribes to the bus, announces the damage New found in the
// outboxes (file.torn), and starts posting what waits in them. Call it
// once, before the desks start, so that their first events are kept.
func (n *Notifier) Start() {
	ctx, stop := context.WithCancel(context.Background())
	n.stop = stop
	n.qstop, n.wrote = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(n.wrote)
		n.write(n.qstop)
	}()
	n.unsubscribe = event.SubscribeAll(n.o.Bus, n.take)
	for _, t := range n.targets {
		if !t.scanOK {
			ev := t.torn
			ev.Header = event.Header{At: n.o.Clock.Now()}
			event.Publish(n.o.Bus, ev) // deskd's log has it from the bus
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.send(ctx, t)
		}()
	}
}

// Close stops taking events and posting them, and closes the outboxes;
// what waits in them is posted by the next notifier on the same folder.
// Call it after the bus is closed (the daemon's shutdown closes it), so
// that every event the bus delivered is kept.
func (n *Notifier) Close() error {
	if !n.life.Shut() {
		return nil
	}
	if n.unsubscribe != nil {
		n.unsubscribe()
		close(n.qstop) // what was taken reaches the outboxes first
		<-n.wrote
		n.stop()
		n.wg.Wait()
	}
	return n.closeOutboxes()
}

// closeOutboxes closes every outbox opened.
func (n *Notifier) closeOutboxes() error {
	var errs []error
	for _, t := range n.targets {
		if t.ob != nil {
			errs = append(errs, t.ob.Close())
		}
	}
	return errors.Join(errs...)
}

// Stats returns what each target's sender has done so far, by target name.
func (n *Notifier) Stats() []TargetStats {
	out := make([]TargetStats, 0, len(n.targets))
	for _, t := range n.targets {
		waiting, size := t.ob.Counts()
		n.mu.Lock()
		out = append(out, TargetStats{Target: t.Name, Host: t.host, Format: t.Format, Pending: waiting, Bytes: size,
			Delivered: t.delivered, Failed: t.failed, Attempts: t.attempts, Failing: t.failing, LastError: t.lastError, Since: t.since})
		n.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b TargetStats) int {
		if a.Target < b.Target {
			return -1
		}
		if a.Target > b.Target {
			return 1
		}
		return 0
	})
	return out
}

// WaitStats returns once cond holds of the notifier's Stats, or ctx's
// error when it ends first.
func (n *Notifier) WaitStats(ctx context.Context, cond func([]TargetStats) bool) error {
	if err := n.changed.Wait(ctx, func() bool { return cond(n.Stats()) }); err != nil {
		return fmt.Errorf("wait for the notifier (%+v): %w", n.Stats(), err)
	}
	return nil
}

// webhookID is a notification's webhook-id: for an event with an id of
// its own (a rollover's steps), or an answer, derived from it, so that a
// copy announced again after a crash has the same id; otherwise random.
// Either way the outbox keeps it with the notification.
func webhookID(desk, own string) string {
	if own == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		return "msg_" + hex.EncodeToString(b[:])
	}
	sum := sha256.Sum256([]byte(desk + "\x00" + own))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// signature is the webhook-signature of a Standard post: v1, and the
// base64 HMAC-SHA256 of id.timestamp.body.
func signature(key []byte, id string, ts int64, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(sign(key, id, ts, body))
}

// NotifyCounts returns each target's name, pending and failed counts
// (Stats), for the metrics read at scrape.
func (n *Notifier) NotifyCounts() (targets []string, pending, failed []int64) {
	for _, s := range n.Stats() {
		targets = append(targets, s.Target)
		pending = append(pending, int64(s.Pending))
		failed = append(failed, s.Failed)
	}
	return targets, pending, failed
}

// TargetsOf returns the targets of the main file's notify section, sorted
// by name, each standard one with its signing key read from its
// secret_file.
func TargetsOf(cfg map[string]*config.NotifyTarget) ([]Target, error) {
	var targets []Target
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		t := cfg[name]
		nt := Target{Name: name, URL: t.URL, Format: t.Format, Events: t.Events, GiveUpAfter: t.GiveUpAfter}
		if t.Format == config.NotifyStandard {
			key, err := config.ReadNotifyKey(t.SecretFile)
			if err != nil {
				return nil, fmt.Errorf("notify.%s.secret_file: %w", name, err)
			}
			nt.Key = key
		}
		targets = append(targets, nt)
	}
	return targets, nil
}
