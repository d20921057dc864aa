// Package router is a desk's model router: it owns the desk's current
// session (its id, trading date and exchanges, persisted so that a restart
// picks it up again), sends turns to the desk's model, and asks the model
// for the session's summary and the fold of the day's notes.
//
// It is the model router of the reference design, not an HTTP router.
package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// stateFile holds the desk's current session in the desk folder.
const stateFile = "state.json"

// state is what stateFile holds.
type state struct {
	Session string      `json:"session"`
	Date    memory.Date `json:"trading_date"`
	Parent  string      `json:"parent,omitempty"`
}

// Options configures a Router. Every field is required but Instructions.
type Options struct {
	// Desk is the desk's name.
	Desk string
	// Folder is the desk's folder on disk.
	Folder *memory.Folder
	// Clock is deskd's clock.
	Clock clock.Clock
	// Day maps instants to trading dates.
	Day memory.TradingDay
	// Bus receives the router's events (a torn session file).
	Bus *event.Bus
	// Route lists the models to try, the desk's model first, then its fallbacks.
	Route []Model
	// Instructions are the desk's standing instructions (the system prompt).
	Instructions string
}

// Reply is the outcome of one answered turn.
type Reply struct {
	Session  string
	Turn     int
	Text     string
	Model    string
	Provider string
	Scripted bool
	Usage    memory.Usage
	Duration time.Duration
}

// Router runs one desk's model calls in its current session. Its methods
// are safe for concurrent use; turns are expected one at a time.
type Router struct {
	desk   string
	folder *memory.Folder
	clock  clock.Clock
	day    memory.TradingDay
	bus    *event.Bus

	mu           sync.Mutex
	route        []Model
	instructions string
	cur          state
	log          *memory.SessionLog
	history      []Message
	exchanges    int
}

// New returns a router with no session; call RestoreSession first.
func New(o Options) (*Router, error) {
	if len(o.Route) == 0 {
		return nil, fmt.Errorf("router %s: no model", o.Desk)
	}
	return &Router{
		desk: o.Desk, folder: o.Folder, clock: o.Clock, day: o.Day, bus: o.Bus,
		route: o.Route, instructions: o.Instructions,
	}, nil
}

// Configure replaces the route and the instructions; the next call uses them.
func (r *Router) Configure(route []Model, instructions string) error {
	if len(route) == 0 {
		return fmt.Errorf("router %s: no model", r.desk)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.route, r.instructions = route, instructions
	return nil
}

// Primary returns the desk's own model, the first of its route.
func (r *Router) Primary() Model {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.route[0]
}

// SessionID returns the current session's id ("" before RestoreSession).
func (r *Router) SessionID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Session
}

// TradingDate returns the current session's trading date; ok is false
// before RestoreSession.
func (r *Router) TradingDate() (memory.Date, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Date, r.cur.Session != ""
}

// Exchanges returns how many turns of the current session were answered.
func (r *Router) Exchanges() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exchanges
}

// RestoreSession picks up the session saved before a restart and reports
// true, or starts the desk's first session and reports false.
func (r *Router) RestoreSession(ctx context.Context) (resumed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var st state
	ok, err := r.folder.ReadJSON(stateFile, &st)
	if err != nil {
		return false, fmt.Errorf("restore session of %s: %w", r.desk, err)
	}
	if !ok || st.Session == "" {
		return false, r.startLocked("")
	}
	if err := r.openLocked(st); err != nil {
		return false, fmt.Errorf("restore session %s of %s: %w", st.Session, r.desk, err)
	}
	return true, nil
}

// Reset closes the current session and starts a new one for today's
// trading date, linked to the old one as its parent.
func (r *Router) Reset(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startLocked(r.cur.Session)
}

// Close closes the current session file.
func (r *Router) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return nil
	}
	err := r.log.Close()
	r.log = nil
	return err
}

// startLocked makes a new session current. The state file is written first
// and the session file made after, so a crash between the two leaves a
// state that openLocked completes, never an orphan session file.
func (r *Router) startLocked(parent string) error {
	now := r.clock.Now()
	st := state{Session: newSessionID(now), Date: r.day.DateOf(now), Parent: parent}
	if err := r.folder.WriteJSON(stateFile, st); err != nil {
		return fmt.Errorf("start session of %s: %w", r.desk, err)
	}
	if r.log != nil {
		if err := r.log.Close(); err != nil {
			return fmt.Errorf("close session %s of %s: %w", r.cur.Session, r.desk, err)
		}
		r.log = nil
	}
	if err := r.openLocked(st); err != nil {
		return fmt.Errorf("start session %s of %s: %w", st.Session, r.desk, err)
	}
	return nil
}

// openLocked opens st's session file, creating it with its header if it
// does not exist yet, and loads its exchanges.
func (r *Router) openLocked(st state) error {
	log, records, torn, err := r.folder.OpenSession(st.Session)
	if errors.Is(err, fs.ErrNotExist) {
		log, err = r.folder.CreateSession(memory.Record{
			At: r.clock.Now(), Session: st.Session, Desk: r.desk, Date: st.Date.String(), Parent: st.Parent,
		})
	}
	if err != nil {
		return err
	}
	if torn != nil {
		event.Publish(r.bus, event.SessionTorn{
			Header:  event.Header{At: r.clock.Now(), Desk: r.desk},
			Session: st.Session, Path: torn.Path, Offset: torn.Offset, Bytes: torn.Bytes, SavedTo: torn.SavedTo,
		})
	}
	r.cur, r.log = st, log
	r.history, r.exchanges = conversation(records)
	return nil
}

// conversation rebuilds the answered exchanges of a session from its
// records: each user message followed by its reply. A message that got no
// reply (a failed turn) stays in the file but is not sent again.
func conversation(records []memory.Record) (history []Message, exchanges int) {
	var pending *memory.Record
	for i := range records {
		rec := &records[i]
		if rec.Type != memory.RecordMessage {
			continue
		}
		switch rec.Role {
		case "user":
			pending = rec
		case "assistant":
			if pending == nil || pending.Trigger != rec.Trigger {
				continue
			}
			history = append(history, Message{Role: "user", Text: pending.Text}, Message{Role: "assistant", Text: rec.Text})
			exchanges++
			pending = nil
		}
	}
	return history, exchanges
}

// Send runs one turn: it records the trigger's text as the user's message,
// asks the desk's model (then its fallbacks), and records the reply.
func (r *Router) Send(ctx context.Context, t triggers.Trigger) (Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return Reply{}, fmt.Errorf("send %s to %s: no session", t.ID, r.desk)
	}
	if err := r.log.Append(memory.Record{
		Type: memory.RecordMessage, At: r.clock.Now(), Role: "user", Text: t.Text, Trigger: t.ID, Kind: string(t.Kind),
	}); err != nil {
		return Reply{}, fmt.Errorf("record trigger %s of %s: %w", t.ID, r.desk, err)
	}
	msgs := append(append([]Message(nil), r.history...), Message{Role: "user", Text: t.Text})
	start := r.clock.Now()
	resp, model, err := r.completeLocked(ctx, Request{Task: TaskTurn, System: r.systemLocked(), Messages: msgs})
	if err != nil {
		r.recordFailureLocked(t.ID, err)
		return Reply{}, fmt.Errorf("turn %s of %s in session %s: %w", t.ID, r.desk, r.cur.Session, err)
	}
	elapsed := r.clock.Now().Sub(start)
	usage := resp.Usage
	if err := r.log.Append(memory.Record{
		Type: memory.RecordMessage, At: r.clock.Now(), Role: "assistant", Text: resp.Text, Trigger: t.ID,
		Model: model.Name, Provider: model.Provider, Scripted: model.Scripted(), Usage: &usage, DurationMS: elapsed.Milliseconds(),
	}); err != nil {
		return Reply{}, fmt.Errorf("record reply to %s of %s: %w", t.ID, r.desk, err)
	}
	r.history = append(msgs, Message{Role: "assistant", Text: resp.Text})
	r.exchanges++
	return Reply{
		Session: r.cur.Session, Turn: r.exchanges, Text: resp.Text, Model: model.Name, Provider: model.Provider,
		Scripted: model.Scripted(), Usage: usage, Duration: elapsed,
	}, nil
}

// Summarise asks the desk's model, in the current session, for a summary
// of the session of trading date date. It makes one call; the caller retries.
func (r *Router) Summarise(ctx context.Context, date memory.Date) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prompt := fmt.Sprintf("Summarise this session of %s for your next session: what happened, what you decided, "+
		"what is still open. Plain Markdown, at most 300 words.", date)
	msgs := append(append([]Message(nil), r.history...), Message{Role: "user", Text: prompt})
	resp, model, err := r.completeLocked(ctx, Request{Task: TaskSummary, System: r.systemLocked(), Messages: msgs})
	if err != nil {
		return "", fmt.Errorf("summarise session %s of %s: %w", r.cur.Session, r.desk, err)
	}
	r.recordEventLocked("session.summary", resp.Text, model)
	return resp.Text, nil
}

// Digest returns the mechanical summary of the current session, made
// without a model: one line for each exchange.
func (r *Router) Digest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Digest(r.history)
}

// Fold asks the desk's model to fold notes into the text of Memory.md and
// returns the new text. It makes one call; the caller decides what to keep.
func (r *Router) Fold(ctx context.Context, date memory.Date, memoryText, notes string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prompt := fmt.Sprintf("Fold the notes below into your Memory.md. Keep every lasting lesson already there; add what "+
		"the notes teach that will matter on later days; drop what was only true on %s. Answer with the whole new "+
		"Memory.md and nothing else.\n\n<memory>\n%s\n</memory>\n\n<notes>\n%s\n</notes>", date, memoryText, notes)
	msgs := append(append([]Message(nil), r.history...), Message{Role: "user", Text: prompt})
	resp, model, err := r.completeLocked(ctx, Request{
		Task: TaskFold, System: r.systemLocked(), Messages: msgs,
		Fold: &FoldInput{Date: date, Memory: memoryText, Notes: notes},
	})
	if err != nil {
		return "", fmt.Errorf("fold notes of %s for %s: %w", date, r.desk, err)
	}
	r.recordEventLocked("memory.fold", fmt.Sprintf("folded notes of %s (%d bytes of Memory.md)", date, len(resp.Text)), model)
	return resp.Text, nil
}

// completeLocked tries each model of the route in turn and returns the
// first answer.
func (r *Router) completeLocked(ctx context.Context, req Request) (Response, Model, error) {
	var errs []error
	for _, m := range r.route {
		resp, err := m.Client.Complete(ctx, req)
		if err == nil {
			return resp, m, nil
		}
		errs = append(errs, fmt.Errorf("model %s: %w", m.Name, err))
		if ctx.Err() != nil {
			break
		}
	}
	return Response{}, Model{}, errors.Join(errs...)
}

func (r *Router) systemLocked() string {
	var b strings.Builder
	b.WriteString(r.instructions)
	if mem, err := r.folder.ReadMemory(); err == nil && strings.TrimSpace(mem) != "" {
		b.WriteString("\n\n## Memory.md (your lasting lessons)\n\n")
		b.WriteString(mem)
	}
	return b.String()
}

func (r *Router) recordFailureLocked(trigger string, cause error) {
	// The failure is also announced by the desk; a record that cannot be
	// written here changes nothing the caller does.
	_ = r.log.Append(memory.Record{
		Type: memory.RecordEvent, At: r.clock.Now(), Kind: "turn.failed", Trigger: trigger, Text: cause.Error(),
	})
}

func (r *Router) recordEventLocked(kind, text string, m Model) {
	_ = r.log.Append(memory.Record{
		Type: memory.RecordEvent, At: r.clock.Now(), Kind: kind, Text: text,
		Model: m.Name, Provider: m.Provider, Scripted: m.Scripted(),
	})
}

// newSessionID returns a sortable, unique session id: the UTC start time
// and eight random hex digits.
func newSessionID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go 1.24+ panics instead of erroring)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
