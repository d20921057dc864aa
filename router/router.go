// Package router is a desk's model router: it owns the desk's current
// session (its id, trading date and exchanges, persisted so that a restart
// picks it up again), runs turns against the desk's model with the tool
// loop, retries and falls back across the desk's models, keeps the desk
// within its budgets, compacts a session that outgrows the model's context
// window, and asks the model for the session's summary and the fold of the
// day's notes.
//
// It is the model router of the reference design, not an HTTP router.
package router

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/triggers"
)

// stateFile holds the desk's current session in the desk folder.
const stateFile = memory.StateFile

// state is what stateFile holds: the session memory.State names, the
// router's spend, and the point of the session file the spend is as of.
//
// The state file is not rewritten after every model call: each record of
// a call carries its usage and cost, so the spend (and the session's
// exchanges, and the date of its last turn) is the state's, as of Mark,
// plus what the records after Mark add (see turns.add and Spend.add). The
// router writes the state when a session starts (a rollover, a fork),
// when it closes cleanly, before the first turn of a new trading date,
// when the records after the mark pass markTail, and when a call's record
// could not be written. A crash at any point leaves the state and the
// session file that together give the spend the router had, call for
// call, when its last record was written.
type state struct {
	memory.State
	// Spend is the spend as of Mark; in a state file without a Mark
	// (written by a deskd that rewrote it after every model call), as of
	// the end of the session file.
	Spend Spend `json:"spend"`
	// Mark is the point of the session file that Spend and the counts
	// are as of; nil in a state file of an older deskd.
	Mark *mark `json:"as_of,omitempty"`
}

// mark is a point of a session file, and what the records before it say
// of the session's turns.
type mark struct {
	// Offset is where in the session file: the state counts every record
	// that begins before it.
	Offset int64 `json:"offset"`
	// Exchanges counts the answered turns before Offset, as Rebuild
	// counts them.
	Exchanges int `json:"exchanges"`
	// LastTurn is the trading date of the last turn's message before
	// Offset (nil when there is none).
	LastTurn *memory.Date `json:"last_turn,omitempty"`
	// Open is true when the last turn's message before Offset has no
	// answer before it (a turn under way, or one that failed); Trigger is
	// that turn's trigger, whose answer after Offset completes it.
	Open    bool   `json:"open,omitempty"`
	Trigger string `json:"trigger,omitempty"`
	// Compacted is true when a compaction checkpoint is before Offset: the
	// session's first use then decodes only the records from the latest
	// one's turn on (see historyStart).
	Compacted bool `json:"compacted,omitempty"`
	// Answer is the last answer before Offset, or of the session before
	// (nil when there is none).
	Answer *Answer `json:"answer,omitempty"`
}

// markTail is how many bytes of records after the state's mark the
// router lets build up before it moves the mark on (at the start of a
// turn), so that a restore reads and decodes little more than this much
// of a session (the records of one turn, or of the calls between turns,
// come on top).
const markTail = 1 << 20

// turns is what a session's records say of its turns, counted as Rebuild
// counts them: it is what a mark holds, and add moves it past one record.
type turns struct {
	exchanges int
	lastTurn  memory.Date
	open      bool
	trigger   string
	compacted bool    // a checkpoint was seen
	answer    *Answer // the last answer seen
}

// add counts rec as Rebuild would: a turn's message opens a turn, the
// answer without tool calls of that turn's trigger closes it, and silent
// records (the flush before a compaction) are not turns.
func (t *turns) add(day memory.TradingDay, rec memory.Record) {
	if rec.Silent {
		return
	}
	if rec.Type == memory.RecordCheckpoint {
		t.compacted = true
	}
	if rec.Type != memory.RecordMessage {
		return
	}
	if a, ok := answerOf(rec); ok {
		t.answer = &a
	}
	switch rec.Role {
	case RoleUser:
		t.open, t.trigger, t.lastTurn = true, rec.Trigger, day.DateOf(rec.At)
	case RoleAssistant:
		if t.open && rec.Trigger == t.trigger && len(decodeCalls(rec.ToolCalls)) == 0 {
			t.exchanges++
			t.open = false
		}
	}
}

// markOf returns the mark at offset with t's counts.
func markOf(offset int64, t turns) mark {
	m := mark{Offset: offset, Exchanges: t.exchanges, Open: t.open, Compacted: t.compacted, Answer: t.answer}
	if t.open {
		m.Trigger = t.trigger
	}
	if !t.lastTurn.IsZero() {
		d := t.lastTurn
		m.LastTurn = &d
	}
	return m
}

// turnsOf returns the counts a mark holds.
func turnsOf(m mark) turns {
	t := turns{exchanges: m.Exchanges, open: m.Open, trigger: m.Trigger, compacted: m.Compacted, answer: m.Answer}
	if m.LastTurn != nil {
		t.lastTurn = *m.LastTurn
	}
	return t
}

// DefaultCompactShare is the share of a model's context window a request
// may fill before the session is compacted (compact_share).
const DefaultCompactShare = 0.8

// Settings are a desk's router settings that a config reload may change.
type Settings struct {
	// Route lists the models to try, the desk's model first, then its fallbacks.
	Route []Model
	// Instructions are the desk's standing instructions (the system prompt).
	Instructions string
	// Tools are the tools the desk's model may call (see BuiltinTools).
	Tools []Tool
	// Toolsets are tools that may change between turns (an MCP server's):
	// each turn offers Tools and what each Toolset gives at its start.
	Toolsets []Toolset
	// MaxToolRounds bounds the tool rounds of one turn (default
	// DefaultMaxToolRounds).
	MaxToolRounds int
	// MaxToolCalls bounds the tool calls of one answer that are run
	// (default DefaultMaxToolCalls); each call past it is answered with an
	// error result saying it was not run, and why.
	MaxToolCalls int
	// Budgets bound what the desk may spend.
	Budgets Budgets
	// CompactShare is the share of the context window that triggers a
	// compaction (default DefaultCompactShare).
	CompactShare float64
	// CompactAtTokens is the estimated size, in tokens, of a request at
	// which the session is compacted, whatever the context window (0:
	// CompactShare alone decides); the smaller bound wins.
	CompactAtTokens int
	// Retry retries each model of the route before the next is tried; nil
	// makes one attempt per model.
	Retry Retrier
}

// Retrier retries the calls to one model (RetryPolicy is deskd's).
type Retrier interface {
	Do(ctx context.Context, c clock.Clock, f func(ctx context.Context) (Response, error)) (Response, int, error)
}

// Options configures a Router.
type Options struct {
	// Desk is the desk's name.
	Desk string
	// Folder is the desk's folder on disk.
	Folder *memory.Folder
	// Clock is deskd's clock.
	Clock clock.Clock
	// Day maps instants to trading dates.
	Day memory.TradingDay
	// Bus receives the router's events.
	Bus *event.Bus
	// Log receives the router's debug lines (each model request, each
	// session record written); the zero Logger writes none.
	Log zerolog.Logger
	Settings
}

// Reply is the outcome of one answered turn.
type Reply struct {
	Session  string
	Turn     int
	Text     string
	Model    string
	Provider ProviderName
	Scripted bool
	// Usage adds up every model call of the turn.
	Usage memory.Usage
	// Cost is the turn's cost where the models have prices.
	Cost     float64
	Duration time.Duration
	// ToolCalls counts the tools the turn ran.
	ToolCalls int
	// Truncated is true when the model's answer passed deskd's cap on a
	// reply (ReplyCap) and was cut there; Text then ends with a line that
	// says so, and the answer's tool calls were not run.
	Truncated bool
	// ToolRoundsExceeded is true when the model still called tools after
	// the turn's last tool round (max_tool_rounds): those calls were not
	// run, and Text ends with a line that says so.
	ToolRoundsExceeded bool
	// Fallback is true when Model is not the first of the route: Primary
	// names that model and PrimaryError says how its call failed.
	Fallback     bool
	Primary      string
	PrimaryError string
}

// Router runs one desk's model calls in its current session. Its methods
// are safe for concurrent use; turns run one at a time.
type Router struct {
	desk   string
	folder *memory.Folder
	clock  clock.Clock
	day    memory.TradingDay
	bus    *event.Bus
	logger zerolog.Logger

	mu  sync.Mutex
	set Settings
	cur state // Mark is always nil here: see mark
	// current is true while a session is current: from RestoreSession
	// (or a start) to Close.
	current bool
	// unwritten is true while the current session is a desk's first (or
	// one that followed it to a new trading date with nothing written),
	// chosen and not written yet: no session file, no state file. Its
	// first use writes both (writeFirstLocked).
	unwritten bool
	// log is the open session file; nil until the session's first use
	// (loadLocked): a restored desk holds no session file open until then.
	log     *memory.SessionLog
	history []Message // what the next request carries, after the checkpoint; read at first use
	// seen is how much of history's array (from its start) some request
	// carried: those elements are never written again (conversationLocked).
	// Each new history is a new array, whose seen starts at 0.
	seen int
	// historyTokens keeps the estimate of the history that requests
	// carried (requestTokensWith).
	historyTokens prefixTokens
	checkpoint    string // the latest checkpoint's text; read at first use
	exchanges     int
	lastTurn      memory.Date // the trading date of the session's last turn
	open          bool        // the last turn's message has no answer yet
	trigger       string      // the last turn's trigger
	starting      *turnStart  // the running turn's start, until it returns
	compacted     bool        // the session has a checkpoint
	answer        *Answer     // the last turn's answer (of this session, or kept from the one before)
	// mark is the mark of the state file as last written, and marked is
	// true when the state file holds one for the current session. Until it
	// does (an older state file that could not be rewritten), the state is
	// rewritten after every model call, as an older deskd did.
	mark     mark
	marked   bool
	markDate memory.Date // the date of the spend the state file holds

	// unreadable is what the last prompt could not read (Memory.md, a
	// skill), by path. It has a lock of its own, so that a desk's status
	// can ask while a turn holds mu.
	unreadableMu sync.Mutex
	unreadable   map[string]unreadableFile

	// tools are the tools of the current turn (refreshToolsLocked), and
	// toolNotes what the system prompt says of the unavailable ones.
	tools     []Tool
	toolNotes []string

	// system is the last system prompt systemLocked built, and what it
	// was built of: the next one of the same parts (the two or three of a
	// turn) is the same text, not joined again.
	system builtSystem
}

// builtSystem is a system prompt and its parts: the instructions, the
// market note, Memory.md, the skills' index, the unavailable tools'
// notes and the checkpoint, as systemLocked read them.
type builtSystem struct {
	parts [6]string
	text  string
}

// New returns a router with no session; call RestoreSession first.
func New(o Options) (*Router, error) {
	r := &Router{desk: o.Desk, folder: o.Folder, clock: o.Clock, day: o.Day, bus: o.Bus, logger: o.Log}
	if err := r.Configure(o.Settings); err != nil {
		return nil, err
	}
	return r, nil
}

// Configure replaces the desk's settings; the next call uses them.
func (r *Router) Configure(s Settings) error {
	if len(s.Route) == 0 {
		return fmt.Errorf("router %s: no model", r.desk)
	}
	if s.MaxToolRounds <= 0 {
		s.MaxToolRounds = DefaultMaxToolRounds
	}
	if s.MaxToolCalls <= 0 {
		s.MaxToolCalls = DefaultMaxToolCalls
	}
	if s.CompactShare <= 0 || s.CompactShare > 1 {
		s.CompactShare = DefaultCompactShare
	}
	// The cache's prices default to the provider's shares of Input.
	s.Route = append([]Model(nil), s.Route...)
	for i := range s.Route {
		s.Route[i].Prices = s.Route[i].Prices.WithDefaults(s.Route[i].Provider)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.set = s
	r.refreshToolsLocked()
	return nil
}

// refreshToolsLocked takes the tools of the next turn: the settings' own,
// and what each toolset offers now, with its notes for the system prompt.
func (r *Router) refreshToolsLocked() {
	tools := append([]Tool(nil), r.set.Tools...)
	var notes []string
	for _, ts := range r.set.Toolsets {
		tools = append(tools, ts.Tools()...)
		notes = append(notes, ts.Notes()...)
	}
	r.tools, r.toolNotes = tools, notes
}

// Primary returns the desk's own model, the first of its route.
func (r *Router) Primary() Model {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set.Route[0]
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

// Spend returns what the desk has spent in this session and trading date.
func (r *Router) Spend() Spend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spendLocked()
}

// RestoreSession picks up the session saved before a restart and reports
// true, or starts the desk's first session and reports false.
//
// A resumed session is not read whole: the state file gives its spend,
// exchanges and last turn as of a mark, and only the records after the
// mark are read, so that SessionID, TradingDate, Exchanges and Spend are
// right at once. The session file is opened, and its history read, at
// the session's first use (Send, Summarise, Fold, Ask, Digest, Fork,
// Context); until then the desk holds no file open. A desk's first
// session (no state file) is chosen and not written: its file and the
// state file naming it are written at its first use, so that an idle
// desk's start writes nothing (and needs no folder). Its id is that of its
// desk and trading date (firstSessionID), so that a restart before that
// use names the same session. When the records
// after the mark end in a torn line, the file is opened at once, so that
// the torn tail is cut off and announced (session.torn) as the desk
// starts. A state file written by an older deskd (no mark) has its
// session read whole here, once, and is rewritten with a mark.
func (r *Router) RestoreSession(ctx context.Context) (resumed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var st state
	ok, err := r.folder.ReadJSON(stateFile, &st)
	if err != nil {
		return false, fmt.Errorf("restore session of %s: %w", r.desk, err)
	}
	if !ok || st.Session == "" {
		return r.firstLocked(r.clock.Now())
	}
	if err := r.resumeLocked(st); err != nil {
		return false, fmt.Errorf("restore session %s of %s: %w", st.Session, r.desk, err)
	}
	return true, nil
}

// resumeLocked makes st's session current without reading more of its
// file than the records after st's mark (see RestoreSession).
func (r *Router) resumeLocked(st state) error {
	if r.log != nil {
		_ = r.log.Close() // appends only; every record was written (all but notes fsynced)
		r.log = nil
	}
	m := st.Mark
	st.Mark = nil
	r.cur, r.current, r.marked = st, true, false
	r.history, r.checkpoint, r.seen = nil, "", 0
	r.setTurnsLocked(turns{})
	if m != nil {
		t, spend := turnsOf(*m), st.Spend
		tail, ok, err := r.folder.ReadSessionBrief(st.Session, m.Offset, func(rec memory.Record) {
			t.add(r.day, rec)
			spend = spend.add(r.day, rec)
		})
		switch {
		case err == nil && ok:
			r.cur.Spend, r.mark, r.marked, r.markDate = spend, *m, true, st.Spend.Date
			r.setTurnsLocked(t)
			if tail.Clean {
				return nil
			}
			// A torn tail: mend it and announce it now, not at the
			// first turn.
			_, err := r.loadLocked(false)
			return err
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		}
		// The file is missing (it is created with its header), or is not
		// the one the mark was taken of (it was replaced): read it whole,
		// and keep the state's spend as it is.
	} else if done, err := r.upgradeLocked(); done || err != nil {
		return err
	}
	records, err := r.loadLocked(true)
	if err != nil {
		return err
	}
	// A state file of an older deskd was rewritten after every model call,
	// before the call's record was appended: its spend is as of the end of
	// the session file, and every record of the file is counted.
	var t turns
	for _, rec := range records {
		t.add(r.day, rec)
	}
	r.setTurnsLocked(t)
	// If the mark cannot be written, the state goes on being rewritten
	// after every model call (marked stays false): nothing is lost.
	_ = r.saveMarkLocked()
	return nil
}

// upgradeLocked resumes the current session of a state file an older
// deskd wrote (no mark): it counts the session's turns in one pass over
// its records, without their texts and without keeping them, and writes
// the state with a mark at the file's end, so that the session's file is
// opened and its history read at its first use, as after any restart,
// and the next start reads nothing. The state's spend stays as it is
// (see resumeLocked). done is false when the file is to be read whole
// (it is missing, or ends in a torn tail to mend): resumeLocked does it.
func (r *Router) upgradeLocked() (done bool, err error) {
	var t turns
	tail, ok, err := r.folder.ReadSessionBrief(r.cur.Session, 0, func(rec memory.Record) { t.add(r.day, rec) })
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !ok || !tail.Clean:
		return false, nil
	}
	r.setTurnsLocked(t)
	// If the mark cannot be written, the next start upgrades again, and
	// the state goes on being rewritten after every model call (marked
	// stays false): nothing is lost.
	_ = r.writeMarkLocked(markOf(tail.End, r.turnsLocked()))
	return true, nil
}

// setTurnsLocked sets the counts of the session's turns.
func (r *Router) setTurnsLocked(t turns) {
	r.exchanges, r.lastTurn, r.open, r.trigger, r.compacted = t.exchanges, t.lastTurn, t.open, t.trigger, t.compacted
	if t.answer != nil {
		r.answer = t.answer
	}
}

// turnsLocked returns the counts of the session's turns.
func (r *Router) turnsLocked() turns {
	return turns{exchanges: r.exchanges, lastTurn: r.lastTurn, open: r.open, trigger: r.trigger, compacted: r.compacted, answer: r.answer}
}

// saveMarkLocked writes the state file with a mark at the end of the open
// session file: the spend and counts as they are now.
func (r *Router) saveMarkLocked() error {
	if r.log == nil {
		return fmt.Errorf("save state of %s: the session file is not open", r.desk)
	}
	return r.writeMarkLocked(markOf(r.log.Size(), r.turnsLocked()))
}

// writeMarkLocked writes the state file with mark m: the spend and counts
// as they are now, as of m's offset.
func (r *Router) writeMarkLocked(m mark) error {
	st := r.cur
	st.Mark = &m
	if err := r.folder.WriteJSON(stateFile, st); err != nil {
		return err
	}
	r.mark, r.marked, r.markDate = m, true, st.Spend.Date
	return nil
}

// moveMarkLocked moves the state's mark to the end of the session file
// before a turn at now when the turn is the first of a new (later) trading date,
// or the records after the mark have grown past markTail: so a restore
// reads at most a day's records, and not many of them. It also marks a
// state file that holds no mark yet (see marked). A failed write changes
// nothing: the older state is still right.
func (r *Router) moveMarkLocked(now time.Time) {
	if r.log == nil {
		return
	}
	if !r.marked || r.markDate.Before(r.day.DateOf(now)) || r.log.Size()-r.mark.Offset > markTail {
		_ = r.saveMarkLocked()
	}
}

// unrecordedLocked keeps a call's charge whose record could not be
// written (the session file refused it): the state file is written with
// the spend as it is now, or, if even that fails, is rewritten after
// every later call until it can be.
func (r *Router) unrecordedLocked() {
	if err := r.saveMarkLocked(); err != nil {
		r.marked = false
	}
}

// ensureLocked opens the current session's file and reads its history,
// if that was not done yet: the session's first use since it was
// restored.
func (r *Router) ensureLocked() error {
	if !r.current {
		return errors.New("no session")
	}
	if r.log != nil {
		return nil
	}
	if r.unwritten {
		return r.writeFirstLocked()
	}
	_, err := r.loadLocked(false)
	return err
}

// Reset closes the current session and starts a new one for today's
// trading date (the old one's while deskd's clock is behind it), linked to
// the old one as its parent. The session's spend
// starts again at zero.
func (r *Router) Reset(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unwritten {
		// Nothing of the old session was written: the new one has no
		// parent, and on a new trading date (the boundary's rollover of
		// an idle desk) is not written either.
		now := r.clock.Now()
		if date := r.newDateLocked(now); date != r.cur.Date {
			_, err := r.firstLocked(now)
			return err
		}
		return r.startLocked("")
	}
	return r.startLocked(r.cur.Session)
}

// Fork starts a new session for today (as Reset dates it) that carries
// the current session's context, linked to the current session as its parent, and returns the new
// id. Every record of the current session but its header is copied into the
// new file as it was written (its time, trigger and kind, model, provider,
// scripted mark, usage, tool calls, ...), with ForkedFrom naming the
// session it was first written in, so that the new session rebuilds to the
// same conversation, after a restart too. The new header names the current
// session as its Parent and ForkedFrom. The new file is whole before the
// state names it: a crash in between leaves the old session current (and
// an unused copy). The old session file is left as it is.
func (r *Router) Fork(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ensureLocked(); err != nil {
		return "", fmt.Errorf("fork session of %s: %w", r.desk, err)
	}
	parent := r.cur.Session
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("fork session %s of %s: %w", parent, r.desk, err)
	}
	records, err := r.folder.ReadSession(parent)
	if err != nil {
		return fail(err)
	}
	now := r.clock.Now()
	spend := r.spendLocked()
	spend.SessionTokens = 0
	st := state{State: memory.State{Session: newSessionID(now), Date: r.newDateLocked(now), Parent: parent}, Spend: spend}
	log, err := r.folder.CreateSession(memory.Record{
		At: now, Session: st.Session, Desk: r.desk, Date: st.Date.String(), Parent: parent, ForkedFrom: parent,
	})
	if err != nil {
		return fail(err)
	}
	for _, rec := range records {
		if rec.Type == memory.RecordHeader {
			continue
		}
		if rec.ForkedFrom == "" {
			rec.ForkedFrom = parent
		}
		if err := log.Append(rec); err != nil {
			_ = log.Close()
			return fail(err)
		}
	}
	size := log.Size()
	if err := log.Close(); err != nil {
		return fail(err)
	}
	var t turns
	for _, rec := range records {
		if rec.Type != memory.RecordHeader {
			t.add(r.day, rec)
		}
	}
	m := markOf(size, t)
	st.Mark = &m
	if err := r.folder.WriteJSON(stateFile, st); err != nil {
		return fail(err)
	}
	st.Mark = nil
	// The old session is done with: every record of it was fsynced as it
	// was appended, so a failure to close it loses nothing.
	_ = r.log.Close()
	r.log = nil
	r.cur, r.mark, r.marked, r.markDate = st, m, true, st.Spend.Date
	r.setTurnsLocked(t)
	if _, err := r.loadLocked(false); err != nil {
		return fail(err)
	}
	return r.cur.Session, nil
}

// Close writes the state file with a mark at the end of the session file
// (so the next restore reads nothing after it), and closes the session
// file. A failure to write the state is not an error: nothing is lost, as
// the next restore reads the records after the older mark.
func (r *Router) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current = false
	if r.log == nil {
		return nil
	}
	if !r.marked || r.log.Size() != r.mark.Offset {
		_ = r.saveMarkLocked()
	}
	err := r.log.Close()
	r.log = nil
	return err
}

// newDateLocked returns the trading date of a session started at now:
// today's, or the current session's while deskd's clock is behind it (a
// clock started before it or stepped back), so that no session is dated
// before the one it follows.
func (r *Router) newDateLocked(now time.Time) memory.Date {
	if today := r.day.DateOf(now); !today.Before(r.cur.Date) {
		return today
	}
	return r.cur.Date
}

// startLocked makes a new session current. The new session's file is
// created (and fsynced) first, then the state file names it, and only then
// is the old session closed: a write that fails on the way (a full disk)
// leaves the old session current and open, so that the rollover can be
// tried again, and a crash in between leaves at worst an unused session
// file holding only its header, which the failure path removes. The new
// file is closed once the state names it: it is opened at the session's
// first use (ensureLocked), like a restored session's.
func (r *Router) startLocked(parent string) error {
	now := r.clock.Now()
	spend := r.spendLocked()
	spend.SessionTokens = 0
	st := state{State: memory.State{Session: newSessionID(now), Date: r.newDateLocked(now), Parent: parent}, Spend: spend}
	log, err := r.folder.CreateSession(memory.Record{
		At: now, Session: st.Session, Desk: r.desk, Date: st.Date.String(), Parent: st.Parent,
	})
	if err != nil {
		return fmt.Errorf("start session of %s: %w", r.desk, err)
	}
	m := markOf(log.Size(), turns{answer: r.answer}) // the last answer outlives its session
	st.Mark = &m
	if err := r.folder.WriteJSON(stateFile, st); err != nil {
		_ = log.Close()
		_ = r.folder.DiscardSession(st.Session)
		return fmt.Errorf("start session of %s: %w", r.desk, err)
	}
	st.Mark = nil
	if r.log != nil {
		_ = r.log.Close() // appends only; every record was fsynced
	}
	// The new file holds only its header, fsynced, and the state names
	// it: it is closed now and opened at its first use, as a restored
	// session is, so that an idle desk holds no session file open. A
	// failure to close it loses nothing.
	_ = log.Close()
	r.cur, r.log, r.current, r.mark, r.marked, r.markDate = st, nil, true, m, true, st.Spend.Date
	r.unwritten = false
	r.history, r.checkpoint, r.seen = nil, "", 0
	r.setTurnsLocked(turns{})
	return nil
}

// firstLocked makes a desk's first session current without writing it
// (unwritten; see RestoreSession): the session of the desk's trading date
// at now, firstSessionID. A file of that id left by a first use cut short
// before the state file named it holds at most its header (records are
// appended only once the state file names the session): it is removed.
// One that holds records (its state file was lost) is resumed instead,
// read whole (resumed true).
func (r *Router) firstLocked(now time.Time) (resumed bool, err error) {
	date := r.newDateLocked(now)
	spend := r.spendLocked()
	spend.SessionTokens = 0
	st := state{State: memory.State{Session: firstSessionID(r.desk, r.day, date), Date: date}, Spend: spend}
	if _, err := os.Lstat(r.folder.SessionPath(st.Session)); err == nil {
		records, err := r.folder.ReadSession(st.Session)
		if err != nil {
			return false, fmt.Errorf("start session %s of %s: %w", st.Session, r.desk, err)
		}
		if len(records) > 1 && records[0].Type == memory.RecordHeader {
			if err := r.resumeLocked(st); err != nil {
				return false, fmt.Errorf("restore session %s of %s: %w", st.Session, r.desk, err)
			}
			return true, nil
		}
		if err := r.folder.DiscardSession(st.Session); err != nil {
			return false, fmt.Errorf("start session %s of %s: %w", st.Session, r.desk, err)
		}
	}
	if r.log != nil {
		_ = r.log.Close() // appends only; every record was fsynced
	}
	r.cur, r.log, r.current, r.unwritten = st, nil, true, true
	// Nothing to mark: the state file is written at the first use, with
	// its mark (marked keeps chargeLocked from writing it before).
	r.mark, r.marked, r.markDate = mark{}, true, st.Spend.Date
	r.history, r.checkpoint, r.seen = nil, "", 0
	r.setTurnsLocked(turns{})
	return false, nil
}

// writeFirstLocked writes the unwritten current session at its first use:
// its file with its header (fsynced, sessions/ and the desk's folder made
// as needed), then the state file naming it, as startLocked does; then it
// opens the file as ensureLocked does. A failure leaves the session
// unwritten (a crash in between, at worst a file holding only its header,
// which the next start resumes: firstLocked).
func (r *Router) writeFirstLocked() error {
	now := r.clock.Now()
	st := r.cur
	// Nothing reached the model yet: a failure here is ErrNotSent (a turn
	// runs again once writes succeed).
	header := memory.Record{At: now, Session: st.Session, Desk: r.desk, Date: st.Date.String()}
	log, err := r.folder.CreateSession(header)
	if errors.Is(err, fs.ErrExist) && r.folder.DiscardSession(st.Session) == nil {
		// An earlier try's file, holding only its header, that it could
		// not remove: it is removed now (one with more is refused).
		log, err = r.folder.CreateSession(header)
	}
	if err != nil {
		return fmt.Errorf("start session %s of %s: %w: %w", st.Session, r.desk, ErrNotSent, err)
	}
	m := markOf(log.Size(), turns{answer: r.answer})
	st.Mark = &m
	if err := r.folder.WriteJSON(stateFile, st); err != nil {
		_ = log.Close()
		_ = r.folder.DiscardSession(st.Session)
		return fmt.Errorf("start session %s of %s: %w: %w", st.Session, r.desk, ErrNotSent, err)
	}
	_ = log.Close() // opened again below, as a restored session's is
	r.unwritten, r.mark, r.marked, r.markDate = false, m, true, st.Spend.Date
	_, err = r.loadLocked(false)
	return err
}

// loadLocked opens the current session's file, creating it with its
// header if it does not exist yet, announces a torn tail it cut off, and
// reads its history (the conversation after its latest checkpoint). With
// all, or when the session has no checkpoint, it decodes every record
// (with all, it returns them); otherwise it decodes only the records from
// the turn of the latest checkpoint on (see historyStart) and returns
// none. The counts of its turns and the spend are the caller's to set.
func (r *Router) loadLocked(all bool) ([]memory.Record, error) {
	st := r.cur
	var log *memory.SessionLog
	var records []memory.Record
	var torn *memory.TornTail
	var err error
	if all || !r.compacted {
		log, records, torn, err = r.folder.OpenSession(st.Session)
	} else {
		var lines memory.SessionLines
		log, lines, torn, err = r.folder.OpenSessionLines(st.Session)
		start := historyStart(lines)
		records = make([]memory.Record, 0, lines.Len()-start)
		for i := start; i < lines.Len(); i++ {
			if rec, ok := lines.Record(i); ok {
				records = append(records, rec)
			}
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		log, err = r.folder.CreateSession(memory.Record{
			At: r.clock.Now(), Session: st.Session, Desk: r.desk, Date: st.Date.String(), Parent: st.Parent,
		})
	}
	if err != nil {
		return nil, err
	}
	if torn != nil {
		event.Publish(r.bus, event.SessionTorn{
			Header:  event.Header{At: r.clock.Now(), Desk: r.desk},
			Session: st.Session, Path: torn.Path, Offset: torn.Offset, Bytes: torn.Bytes, SavedTo: torn.SavedTo,
		})
	}
	r.log = log
	c := Rebuild(records)
	r.history, r.checkpoint, r.seen = c.History, c.Checkpoint, 0
	if !all {
		return nil, nil
	}
	return records, nil
}

// historyStart returns the index of the first record Rebuild needs for
// the history and checkpoint of a session: the turn's message before the
// latest checkpoint (the turn it was made for goes on after it), so that
// only the records from there on are decoded. Before that message,
// Rebuild's state is all replaced: the checkpoint drops the history, and
// the message starts the turn afresh. With no checkpoint (or no such
// message) it is 0: the whole file is read.
func historyStart(lines memory.SessionLines) int {
	cp := -1
	for i := lines.Len() - 1; i >= 0; i-- {
		if lines.Is(i, memory.RecordCheckpoint) {
			cp = i
			break
		}
	}
	for i := cp - 1; i >= 0; i-- {
		if !lines.Is(i, memory.RecordMessage) {
			continue
		}
		if rec, ok := lines.Record(i); ok && rec.Role == RoleUser && !rec.Silent {
			return i
		}
	}
	return 0
}

// dayMarkerLocked returns the line that goes before the first message of a
// new trading day in a session that spans the boundary without rolling over
// (rollover off, or a rollover that failed), so that the desk knows which
// turns were "yesterday"; "" on the session's own day, and while deskd's
// clock is behind the last turn's date (a clock started before it or
// stepped back: no new day has begun).
func (r *Router) dayMarkerLocked(now time.Time) string {
	last := r.lastTurn
	if last.IsZero() {
		last = r.cur.Date
	}
	today := r.day.DateOf(now)
	if last.IsZero() || !last.Before(today) {
		return ""
	}
	return fmt.Sprintf("[deskd: a new trading day, %s; it is now %s. The turns above were on %s or before.]",
		today, now.In(r.day.Location).Format("15:04 MST"), last)
}

// spendLocked returns the spend, with the day's counters at zero on a new
// trading date.
func (r *Router) spendLocked() Spend {
	return r.cur.Spend.on(r.day.DateOf(r.clock.Now()))
}

// on returns s for trading date d: the day's counters at zero when d is
// a later date than s's. An earlier d (deskd's clock behind s's date: a
// clock started before it, or stepped back) is no new day: s stays, and
// what is spent meanwhile counts into its day.
func (s Spend) on(d memory.Date) Spend {
	if s.Date.Before(d) {
		return Spend{Date: d, SessionTokens: s.SessionTokens}
	}
	return s
}

// charge returns s after a call on trading date d of usage u that cost
// cost. Every change to a spend is made here: a live call, and a restore
// that reads the call's record back, add the same numbers in the same
// order, so the two give the same spend to the bit.
func (s Spend) charge(d memory.Date, u memory.Usage, cost float64) Spend {
	s = s.on(d)
	n := int64(u.InputTokens + u.OutputTokens)
	s.DayTokens += n
	s.DayCachedTokens += int64(u.CachedTokens)
	s.SessionTokens += n
	s.DayCost += cost
	return s
}

// add returns s after rec, a record of a session file: a record of a
// model call (it carries the call's usage) charges its tokens and cost at
// its time's trading date. Records a fork copied were charged in the
// session they were first written in.
func (s Spend) add(day memory.TradingDay, rec memory.Record) Spend {
	if rec.Usage == nil || rec.Type == memory.RecordHeader || rec.ForkedFrom != "" {
		return s
	}
	return s.charge(day.DateOf(rec.At), *rec.Usage, rec.Cost)
}

// Send runs one turn: it records the trigger's text as the user's message,
// compacts the session first if the request would outgrow the model's
// context window, then asks the desk's model (retrying, then falling back)
// and runs the tools it calls until it answers, recording every message.
func (r *Router) Send(ctx context.Context, t triggers.Trigger) (Reply, error) {
	return r.send(ctx, t, true, TurnOptions{})
}

// SendAccepted is Send for a trigger whose acceptance the caller has made
// durable in a form that keeps a restart from running it again without
// the session's record of the message (the desk's ledger record of a
// trigger taken at once: triggers.Record.AtOnce). The message is written
// without an fsync of its own, so the request goes out with no durability
// point between the acceptance and the model; the turn's later synced
// writes (the reply) make it durable.
func (r *Router) SendAccepted(ctx context.Context, t triggers.Trigger) (Reply, error) {
	return r.send(ctx, t, false, TurnOptions{})
}

// TurnOptions shape one turn of Router.Turn.
type TurnOptions struct {
	// Accepted makes the turn SendAccepted's rather than Send's: the
	// caller made the trigger's acceptance durable, and the message is
	// written without an fsync of its own.
	Accepted bool
	// Sent, when not nil, is called at most once, on a goroutine of its
	// own, as the turn's first request to the model goes out (net/http
	// has written it to the connection's buffer): while the model works
	// on it, not on the way to the model. It is not called for a model
	// that makes no HTTP request (the scripted model) nor for a request
	// that could not be written, so a caller that records the request's
	// going out calls it again itself once Turn returns: make it
	// idempotent (sync.OnceFunc).
	Sent func()
	// Begin, when not nil, is called at most once, on Turn's goroutine,
	// before anything of the turn is written to the session or sent: once
	// the turn's first request is built (as late as the moment the request
	// is handed to the HTTP transport): the caller announces the turn
	// there, or waits for what the turn must not go out without. When
	// Begin returns an error, nothing of the turn is written or sent, and
	// Turn returns an error that wraps ErrNotBegun and Begin's.
	Begin func() error
}

// ErrNotBegun marks the error of a Turn whose TurnOptions.Begin failed:
// nothing of the turn was written or sent.
var ErrNotBegun = errors.New("the turn did not begin")

// Turn is Send, or SendAccepted when o.Accepted, with o's hooks.
func (r *Router) Turn(ctx context.Context, t triggers.Trigger, o TurnOptions) (Reply, error) {
	return r.send(ctx, t, !o.Accepted, o)
}

// turnStart is what a turn writes first, once it may begin: the user's
// message and (as the request goes out) its request.sent record, in one
// write. Nothing of the turn is written before it runs.
type turnStart struct {
	r      *Router
	begin  func() error // TurnOptions.Begin, or nil
	user   memory.Record
	synced bool // the message gets an fsync of its own (Send, not SendAccepted)
	ran    bool
	sent   bool // the request.sent record is written
	err    error
}

// beginError is the error of a turnStart: the turn did not begin, or its
// first records could not be written. The model was not asked, and no
// other model of the route may be.
type beginError struct{ err error }

func (e *beginError) Error() string { return e.err.Error() }
func (e *beginError) Unwrap() error { return e.err }

// run begins the turn, once: it calls Begin, then writes the message and,
// when sending (the request goes out next), the request.sent record with
// it. r.mu is held (run is called on the turn's goroutine, from the
// transport's hook or the router itself).
func (s *turnStart) run(sending bool) error {
	r := s.r
	if s.ran {
		if s.err == nil && sending && !s.sent {
			// Begun before a compaction: the request.sent record comes
			// just before the turn's own request, as it would alone.
			s.sent = true
			if err := r.noteLocked(requestSent(r.clock.Now(), s.user.Trigger)); err != nil {
				return &beginError{fmt.Errorf("the model was not asked: record that the request of %s is sent: %w: %w", s.user.Trigger, ErrNotSent, err)}
			}
		}
		return s.err
	}
	s.ran = true
	if s.begin != nil {
		if err := s.begin(); err != nil {
			s.err = &beginError{fmt.Errorf("turn %s of %s: %w: %w", s.user.Trigger, r.desk, ErrNotBegun, err)}
			return s.err
		}
	}
	recs := []memory.Record{s.user}
	if sending {
		recs = append(recs, requestSent(r.clock.Now(), s.user.Trigger))
		s.sent = true
	}
	var err error
	switch {
	case s.synced:
		err = r.appendAllLocked(recs...)
	default:
		err = r.noteAllLocked(recs...)
	}
	if err != nil && sending {
		s.err = &beginError{fmt.Errorf("the model was not asked: record trigger %s of %s and that its request is sent: %w: %w", s.user.Trigger, r.desk, ErrNotSent, err)}
		return s.err
	}
	if err != nil {
		s.err = &beginError{fmt.Errorf("record trigger %s of %s: %w: %w", s.user.Trigger, r.desk, ErrNotSent, err)}
		return s.err
	}
	r.lastTurn, r.open, r.trigger = r.day.DateOf(s.user.At), true, s.user.Trigger
	return nil
}

// requestSent is the record, written just before a turn's request goes
// out, that lets a restart tell a trigger the model was never sent from
// one it may have acted on (Outcome.Requested). Not fsynced by itself.
func requestSent(at time.Time, trigger string) memory.Record {
	return memory.Record{Type: memory.RecordEvent, At: at, Kind: memory.RequestSentKind, Trigger: trigger}
}

// beforeSendKey is the context key of the turnStart that the turn's first
// request runs as it goes out (beforeSend).
type beforeSendKey struct{}

// withBeforeSend returns ctx carrying s, for the model call that is the
// turn's first request.
func withBeforeSend(ctx context.Context, s *turnStart) context.Context {
	return context.WithValue(ctx, beforeSendKey{}, s)
}

// beforeSend begins the turn of ctx, if it carries one not begun yet, as
// a request is handed to the transport: an HTTP client calls it just
// before the request goes out, and the router for any other client
// (one that does not implement callsBeforeSend) before it calls it.
func beforeSend(ctx context.Context) error {
	if s, ok := ctx.Value(beforeSendKey{}).(*turnStart); ok {
		return s.run(true)
	}
	return nil
}

// callsBeforeSend is implemented by the clients that call beforeSend as
// their request goes out (those that make HTTP requests).
type callsBeforeSend interface{ callsBeforeSend() }

// send is Send; synced says whether the message gets an fsync of its own,
// and o gives the turn's hooks.
func (r *Router) send(ctx context.Context, t triggers.Trigger, synced bool, o TurnOptions) (Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Memory.md and the skills are checked for an operator's edit once a
	// turn, not at each of its requests (a Folder's own writes still count
	// at once).
	defer r.folder.HoldPromptFiles()()
	if err := r.ensureLocked(); err != nil {
		return Reply{}, fmt.Errorf("send %s to %s: %w", t.ID, r.desk, err)
	}
	now := r.clock.Now()
	r.moveMarkLocked(now)
	r.refreshToolsLocked()
	if marker := r.dayMarkerLocked(now); marker != "" {
		t.Text = marker + "\n" + t.Text
	}
	// One cache for the user's message in every request of the turn, so
	// that each carries it in place (conversationLocked).
	user := Message{Role: RoleUser, Text: t.Text, wire: newWireCache()}
	// The turn's first request, built and its tokens counted once: the
	// budgets, the compaction check and the first round all go by it.
	first := r.requestLocked(TaskTurn, []Message{user}, true)
	est := requestTokensWith(first, &r.historyTokens)
	// Nothing of the turn is written before it begins (TurnOptions.Begin):
	// as its first request goes out, or before whatever else it must
	// write first (a refusal, a compaction, a failure).
	start := &turnStart{r: r, begin: o.Begin, synced: synced,
		user: memory.Record{Type: memory.RecordMessage, At: r.clock.Now(), Role: RoleUser, Text: t.Text, Trigger: t.ID, Kind: string(t.Kind)}}
	r.starting = start
	defer func() { r.starting = nil }()
	if be := r.set.Budgets.check(r.desk, r.spendLocked(), TaskTurn, 0, est); be != nil {
		if err := start.run(false); err != nil {
			return Reply{}, err
		}
		r.announceBudgetLocked(be)
		r.recordLocked(memory.Record{Type: memory.RecordEvent, Kind: "budget.exceeded", Trigger: t.ID, Text: be.Error()})
		return Reply{}, be
	}
	built := &first
	if r.compactDueLocked(est) {
		if err := start.run(false); err != nil {
			return Reply{}, err
		}
		compacting, err := r.compactIfFullLocked(ctx, t.ID, est)
		if err != nil {
			if ctx.Err() != nil {
				return Reply{}, err
			}
			// A failed compaction leaves the history whole; the turn goes on
			// and the model may refuse it as too long.
			r.recordLocked(memory.Record{Type: memory.RecordEvent, Kind: "compaction.failed", Trigger: t.ID, Text: err.Error()})
		}
		if compacting {
			built = nil // the history, or Memory.md (the flush turn's notes), may have changed
		}
	}
	began := r.clock.Now()
	turnCtx := ctx
	if o.Sent != nil {
		turnCtx = onRequestWritten(ctx, o.Sent)
	}
	turn, reply, err := r.loopLocked(turnCtx, t.ID, TaskTurn, []Message{user}, r.tools, r.set.MaxToolRounds, false, built)
	reply.Duration = r.clock.Now().Sub(began)
	if err != nil {
		var nb *beginError
		if errors.As(err, &nb) {
			return reply, nb.err // nothing more of the turn is written
		}
		if err := start.run(false); err != nil {
			return reply, err // a turn that failed before its request went out
		}
		var be *BudgetError
		if errors.As(err, &be) {
			r.recordLocked(memory.Record{Type: memory.RecordEvent, Kind: "budget.exceeded", Trigger: t.ID, Text: err.Error()})
			return reply, err
		}
		r.recordLocked(memory.Record{Type: memory.RecordEvent, Kind: "turn.failed", Trigger: t.ID, Text: err.Error()})
		return reply, fmt.Errorf("turn %s of %s in session %s: %w", t.ID, r.desk, r.cur.Session, err)
	}
	r.extendHistoryLocked(turn)
	r.exchanges++
	r.open = false
	reply.Session, reply.Turn = r.cur.Session, r.exchanges
	return reply, nil
}

// onRequestWritten returns ctx with a trace of the HTTP requests made
// under it that runs fn, on a goroutine of its own, once the first is
// written without error. net/http reports a request written
// (WroteRequest) before it flushes the connection's buffer: fn must not
// hold up that flush, so it never runs on the transport's goroutine.
func onRequestWritten(ctx context.Context, fn func()) context.Context {
	var once sync.Once
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
		if w.Err == nil {
			once.Do(func() { go fn() })
		}
	}})
}

// loopLocked runs the tool loop for the messages of one turn: it calls the
// model, records its answer, runs the tools (of runnable) it asks for and
// sends their results back, at most rounds times; the last round lets the
// model call no tool, so it must answer. Every request defines the desk's
// tools. It returns the turn's messages. first, when not nil, is the
// first round's request as the caller built it (with the tools callable)
// and checked against the budgets, with nothing changed since.
func (r *Router) loopLocked(ctx context.Context, trigger string, task Task, turn []Message, runnable []Tool, rounds int, silent bool, first *Request) ([]Message, Reply, error) {
	var reply Reply
	var turnUsed int64
	for round := 0; ; round++ {
		callable := round < rounds && len(runnable) > 0
		var req Request
		if round == 0 && first != nil {
			req = *first
			if !callable {
				req.ToolChoice = ToolChoiceNone
			}
		} else {
			req = r.requestLocked(task, turn, callable)
			if err := r.budgetLocked(task, turnUsed, requestTokensWith(req, &r.historyTokens)); err != nil {
				return turn, reply, err
			}
		}
		callCtx := ctx
		if round == 0 && task == TaskTurn && !silent && r.starting != nil {
			// The turn begins as this request goes out (turnStart): its
			// message and request.sent record are written then.
			callCtx = withBeforeSend(ctx, r.starting)
		}
		callStart := r.clock.Now()
		resp, model, failed, err := r.completeLocked(callCtx, req)
		if err != nil {
			return turn, reply, err
		}
		reply.Fallback, reply.Primary, reply.PrimaryError = fallbackOf(r.set.Route[0], model, failed)
		at := r.clock.Now()
		cost := r.chargeLocked(model, resp.Usage, at)
		turnUsed += int64(resp.Usage.InputTokens + resp.Usage.OutputTokens)
		reply.Usage = addUsage(reply.Usage, resp.Usage)
		reply.Cost += cost
		text, calls := resp.Text, resp.ToolCalls
		var unrun []ToolCall
		if !callable {
			unrun, calls = calls, nil // past the round limit, tool calls are not run
		}
		var data json.RawMessage
		switch {
		case resp.Truncated:
			text, calls = text+truncatedNote(len(text)), nil
			reply.Truncated = true
		case len(unrun) > 0:
			// Never an empty answer without a word: the reply says why the
			// turn ended, and the record carries it.
			names := make([]string, len(unrun))
			for i, c := range unrun {
				names[i] = c.Name
			}
			if round >= rounds {
				text = withNote(text, fmt.Sprintf("[deskd: the model was still calling tools after %d rounds; its last calls were not run]", rounds))
				reply.ToolRoundsExceeded = true
				data, _ = json.Marshal(map[string]any{"tool_rounds_exceeded": rounds, "tool_calls_not_run": names})
			} else {
				text = withNote(text, "[deskd: the model called tools where none may be called; its calls were not run]")
				data, _ = json.Marshal(map[string]any{"tool_calls_not_run": names})
			}
		}
		reply.Text, reply.Model, reply.Provider, reply.Scripted = text, model.Name, model.Provider, model.Scripted()
		usage := resp.Usage
		rec := memory.Record{
			Type: memory.RecordMessage, At: at, Role: RoleAssistant, Text: text, Trigger: trigger,
			Model: model.Name, Provider: string(model.Provider), Scripted: model.Scripted(), Usage: &usage, Cost: cost,
			DurationMS: at.Sub(callStart).Milliseconds(), ToolCalls: encodeCalls(calls), Silent: silent,
			Truncated: resp.Truncated, Data: data,
		}
		if err := r.appendLocked(rec); err != nil {
			r.unrecordedLocked()
			return turn, reply, fmt.Errorf("record reply to %s: %w", trigger, err)
		}
		if a, ok := answerOf(rec); ok {
			r.answer = &a
		}
		turn = append(turn, Message{Role: RoleAssistant, Text: text, ToolCalls: calls})
		if len(calls) == 0 {
			return turn, reply, nil
		}
		for i, call := range calls {
			msg, ran, err := r.answerCallLocked(ctx, trigger, runnable, call, i, len(calls), silent)
			if err != nil {
				return turn, reply, err
			}
			if ran {
				reply.ToolCalls++
			}
			turn = append(turn, msg)
		}
	}
}

// refusalLocked is what the model hears of a call of a tool the desk does
// not offer: a toolset's reason, when one knows it (an MCP tool the desk's
// file does not allow, or whose server is down), else what it heard; and
// whether the name is still unknown (not one the desk may call).
func (r *Router) refusalLocked(tool, heard string) (string, bool) {
	for _, ts := range r.set.Toolsets {
		if rf, ok := ts.(Refuser); ok {
			if why, allowed, ok := rf.Refusal(tool); ok {
				return "error: " + why, !allowed
			}
		}
	}
	return heard, true
}

// decisionText is a decision in a sentence, for transcripts.
func decisionText(d Decision) string {
	s := fmt.Sprintf("%s call %s %s by %s", d.Tool, d.ID, d.Outcome, d.By)
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// answerCallLocked answers the i-th of an answer's n tool calls: it runs
// the call (or says why not), recording the operator's decision on it,
// if it waited for one, before it runs; then its result with how long it
// took; and announces tool.called. It returns the result's message, and whether the call was
// put to its tool (not refused for its arguments or the cap on calls).
func (r *Router) answerCallLocked(ctx context.Context, trigger string, runnable []Tool, call ToolCall, i, n int, silent bool) (msg Message, ran bool, err error) {
	start := r.clock.Now()
	var ans toolAnswer
	record := func(d Decision) error {
		data, _ := json.Marshal(d)
		if err := r.appendLocked(memory.Record{
			Type: memory.RecordEvent, At: d.DecidedAt, Kind: RecordApproval, Trigger: trigger, Text: decisionText(d),
			ToolCallID: call.ID, ToolName: call.Name, Silent: silent, Data: data,
		}); err != nil {
			return fmt.Errorf("record the decision on tool call %s for %s (the call did not run): %w", call.ID, trigger, err)
		}
		return nil
	}
	if fault, bad := argumentsFault(call); bad && i < r.set.MaxToolCalls {
		ans = toolAnswer{result: fault, isError: true, outcome: OutcomeRefused} // not run: the model hears why
	} else if i < r.set.MaxToolCalls {
		ran = true
		if ans, err = runTool(ctx, r.tools, runnable, call, GateCall{Desk: r.desk, Session: r.cur.Session, Trigger: trigger}, record); err != nil {
			return Message{}, ran, err
		}
		if ans.unknown {
			ans.result, ans.unknown = r.refusalLocked(call.Name, ans.result)
		}
	} else {
		ans = toolAnswer{result: notRun(call, n, r.set.MaxToolCalls), isError: true, outcome: OutcomeRefused}
	}
	end := r.clock.Now()
	if err := r.appendLocked(memory.Record{
		Type: memory.RecordTool, At: end, Role: RoleTool, Text: ans.result, Trigger: trigger,
		ToolCallID: call.ID, ToolName: call.Name, IsError: ans.isError, Silent: silent, DurationMS: end.Sub(start).Milliseconds(),
	}); err != nil {
		return Message{}, ran, fmt.Errorf("record tool result for %s: %w", trigger, err)
	}
	called := event.ToolCalled{Header: event.Header{At: end, Desk: r.desk}, Session: r.cur.Session, Trigger: trigger, Call: call.ID,
		Tool: call.Name, Server: ans.server, Outcome: ans.outcome, DurationMS: end.Sub(start).Milliseconds(), Unknown: ans.unknown}
	if ans.isError {
		called.Error = cutText(firstLine(ans.result), 200)
	}
	event.Publish(r.bus, called)
	return Message{Role: RoleTool, Text: ans.result, ToolCallID: call.ID, ToolName: call.Name, IsError: ans.isError}, ran, nil
}

// Summarise asks the desk's model, in the current session, for a summary
// of the session of trading date date. It makes one call (with the route's
// retries and fallbacks); the caller retries.
func (r *Router) Summarise(ctx context.Context, date memory.Date) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prompt := fmt.Sprintf("Summarise this session of %s for your next session: what happened, what you decided, "+
		"what is still open. Plain Markdown, at most 300 words.", date)
	text, model, err := r.askModelLocked(ctx, TaskSummary, prompt, nil)
	if err != nil {
		return "", fmt.Errorf("summarise session %s of %s: %w", r.cur.Session, r.desk, err)
	}
	if model.Scripted() {
		text = memory.ScriptedSummaryHeader(model.Name) + text
	}
	return text, nil
}

// Digest returns the mechanical summary of the current session, made
// without a model: one line for each exchange.
func (r *Router) Digest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.ensureLocked() // without its file, the digest of no exchanges
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
	text, err := r.askLocked(ctx, TaskFold, prompt, &FoldInput{Date: date, Memory: memoryText, Notes: notes})
	if err != nil {
		return "", fmt.Errorf("fold notes of %s for %s: %w", date, r.desk, err)
	}
	return text, nil
}

// Ask makes one call at the end of the session's conversation, with the
// prompt as its last user message, in which the model may call no tool,
// and records the answer as an event of the session. The call carries
// what the session's turns carry (the system prompt, the desk's tools and
// the history), so that it finds that prefix in the service's prompt
// cache. The skill curator uses it. An answer cut at its cap is a
// failure.
func (r *Router) Ask(ctx context.Context, prompt string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	text, err := r.askLocked(ctx, TaskCurate, prompt, nil)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", r.desk, err)
	}
	return text, nil
}

// askLocked makes one call at the end of the session's conversation in
// which the model may call no tool, and records the answer as an event of
// the session. An answer cut at its cap is a failure.
func (r *Router) askLocked(ctx context.Context, task Task, prompt string, fold *FoldInput) (string, error) {
	text, _, err := r.askModelLocked(ctx, task, prompt, fold)
	return text, err
}

// askModelLocked is askLocked, and returns the model that answered.
func (r *Router) askModelLocked(ctx context.Context, task Task, prompt string, fold *FoldInput) (string, Model, error) {
	if err := r.ensureLocked(); err != nil {
		return "", Model{}, err
	}
	req := r.requestLocked(task, []Message{{Role: RoleUser, Text: prompt}}, false)
	req.Fold = fold
	if err := r.budgetLocked(task, 0, requestTokensWith(req, &r.historyTokens)); err != nil {
		return "", Model{}, err
	}
	return r.answerModelLocked(ctx, req)
}

// answerLocked makes the call req, whose answer is a text to use (a
// summary, a fold, a checkpoint, the curator's operations), and records
// the answer as an event of the session. An answer that was cut at its cap
// is recorded as truncated and is a failure: half a Memory.md or half a
// JSON plan is worse than none, and every caller has a fallback.
func (r *Router) answerLocked(ctx context.Context, req Request) (string, error) {
	text, _, err := r.answerModelLocked(ctx, req)
	return text, err
}

// answerModelLocked is answerLocked, and returns the model that answered.
func (r *Router) answerModelLocked(ctx context.Context, req Request) (string, Model, error) {
	if err := r.ensureLocked(); err != nil {
		return "", Model{}, err
	}
	resp, model, _, err := r.completeLocked(ctx, req)
	if err != nil {
		return "", Model{}, err
	}
	at := r.clock.Now()
	cost := r.chargeLocked(model, resp.Usage, at)
	usage := resp.Usage
	if err := r.appendLocked(memory.Record{Type: memory.RecordEvent, At: at, Kind: string(req.Task), Text: resp.Text,
		Model: model.Name, Provider: string(model.Provider), Scripted: model.Scripted(), Usage: &usage, Cost: cost, Truncated: resp.Truncated}); err != nil {
		r.unrecordedLocked()
	}
	if resp.Truncated {
		return "", Model{}, fmt.Errorf("model %s: the answer was truncated after %d bytes, at deskd's cap for its output limit, and is not used",
			model.Name, len(resp.Text))
	}
	return resp.Text, model, nil
}

// requestLocked builds a request at the end of the session's
// conversation: the system prompt, the history, then msgs. It defines the
// desk's tools whether or not the model may call them (callable; the tool
// choice is none otherwise): a conversation with tool calls must define
// tools (the Messages API refuses it otherwise), and the model should see
// what it called. Every request of the session is built here, so that
// every call of the desk (turns, their tool rounds, summary, fold, the
// curator's) begins with the same prefix, which the services' prompt
// caches keep: the system prompt, the tools and the history (Prefix), and
// carries the desk's CacheKey.
//
// It gives each message of the history and of msgs (in place) a cache of
// its wire encodings, so that each message is encoded once for all the
// calls that carry it.
func (r *Router) requestLocked(task Task, msgs []Message, callable bool) Request {
	withWireCaches(r.history)
	withWireCaches(msgs)
	req := Request{Task: task, Messages: r.conversationLocked(msgs), Tools: specs(r.tools),
		Prefix: len(r.history), CacheKey: cacheKey(r.desk)}
	req.System = r.systemLocked(holdsMarketEvent(req.Messages))
	if !callable {
		req.ToolChoice = ToolChoiceNone
	}
	return req
}

// conversationLocked returns the history followed by tail (whose
// messages have their wire caches), as a slice of the history's own
// array: the history is not copied for each request. The messages a
// request saw (the array below r.seen) are never written again, so that
// a provider may keep a request's Messages: a tail that differs from the
// one the last request saw past the history (an Ask after a turn's
// messages, a failed turn's next try), or one that does not fit, moves
// the history to a new array first. The slice's capacity is its length:
// a provider's append cannot write into the array.
func (r *Router) conversationLocked(tail []Message) []Message {
	h, n := len(r.history), len(r.history)+len(tail)
	full := r.history[:cap(r.history)]
	same := 0 // how many of tail stand past the history already, as seen
	for same < len(tail) && h+same < r.seen && full[h+same].wire == tail[same].wire && tail[same].wire != nil {
		same++
	}
	if n > len(full) || (same < len(tail) && h+same < r.seen) {
		grown := make([]Message, h, max(2*n, 16))
		copy(grown, r.history)
		r.history, full, r.seen, same = grown, grown[:cap(grown)], h, 0
	}
	copy(full[h+same:n], tail[same:])
	r.seen = max(r.seen, n)
	return full[:n:n]
}

// extendHistoryLocked makes turn (the messages of an answered turn) part
// of the history, in place where the last request carried them already.
func (r *Router) extendHistoryLocked(turn []Message) {
	withWireCaches(turn)
	n := len(r.conversationLocked(turn))
	r.history = r.history[:n]
}

// withNote ends text with deskd's note, on a paragraph of its own.
func withNote(text, note string) string {
	if strings.TrimSpace(text) == "" {
		return note
	}
	return text + "\n\n" + note
}

// truncatedNote ends the text of an answer cut after n bytes.
func truncatedNote(n int) string {
	return fmt.Sprintf("\n\n[deskd: this answer was truncated after %d bytes, at the cap its output limit allows; "+
		"the rest was not read, and no tool call of it was run]", n)
}

// completeLocked tries each model of the route in turn, each with the
// retry policy, and returns the first answer, with the errors of the
// models tried before the one that answered.
func (r *Router) completeLocked(ctx context.Context, req Request) (Response, Model, []error, error) {
	var errs []error
	for _, m := range r.set.Route {
		call := func(ctx context.Context) (Response, error) {
			if _, ok := m.Client.(callsBeforeSend); !ok {
				if err := beforeSend(ctx); err != nil {
					return Response{}, err
				}
			}
			r.debugRequest(m, req)
			resp, err := m.Client.Complete(ctx, req)
			var nb *beginError
			if errors.As(err, &nb) {
				return resp, err // the turn did not begin: no model failed
			}
			if err != nil && ctx.Err() == nil {
				ev := event.ModelFailed{Header: event.Header{At: r.clock.Now(), Desk: r.desk}, Model: m.Name, Error: err.Error()}
				var ae *APIError
				if errors.As(err, &ae) {
					ev.Status, ev.Retryable = ae.Status, ae.Retryable
				}
				event.Publish(r.bus, ev)
			}
			return resp, err
		}
		var resp Response
		var err error
		if r.set.Retry != nil {
			resp, _, err = r.set.Retry.Do(ctx, r.clock, call)
		} else {
			resp, err = call(ctx)
		}
		if err == nil {
			return resp, m, errs, nil
		}
		var nb *beginError
		if errors.As(err, &nb) {
			return Response{}, Model{}, nil, err // no other model may be asked either
		}
		if !strings.Contains(err.Error(), m.Name) {
			err = fmt.Errorf("model %s: %w", m.Name, err)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return Response{}, Model{}, nil, errors.Join(errs...)
}

// budgetLocked refuses a call of est tokens that would pass a budget, and
// announces it.
func (r *Router) budgetLocked(task Task, turnUsed, est int64) error {
	be := r.set.Budgets.check(r.desk, r.spendLocked(), task, turnUsed, est)
	if be == nil {
		return nil
	}
	r.announceBudgetLocked(be)
	return be
}

// announceBudgetLocked announces a call that be refused.
func (r *Router) announceBudgetLocked(be *BudgetError) {
	event.Publish(r.bus, event.BudgetExceeded{
		Header: event.Header{At: r.clock.Now(), Desk: r.desk}, Budget: be.Budget, Limit: int64(be.Limit), Used: int64(be.Used),
	})
}

// chargeLocked adds the usage of a call answered at at to the spend and
// returns its cost. The spend is persisted by the call's record, which
// carries the usage and the cost (the caller appends it, with its time at
// at, and calls unrecordedLocked if it cannot): the state file is not
// rewritten, unless it holds no mark yet (an older state file that could
// not be rewritten), when it is rewritten as an older deskd did.
func (r *Router) chargeLocked(m Model, u memory.Usage, at time.Time) float64 {
	cost := m.Prices.cost(u)
	r.cur.Spend = r.cur.Spend.charge(r.day.DateOf(at), u, cost)
	if r.marked {
		return cost
	}
	if err := r.folder.WriteJSON(stateFile, r.cur); err != nil && r.log != nil {
		// The session file keeps every call's usage; the spend is rebuilt
		// from the state at the next write.
		r.recordLocked(memory.Record{Type: memory.RecordEvent, Kind: "spend.unsaved", Text: err.Error()})
	}
	return cost
}

// systemLocked returns the system prompt: the desk's instructions, how
// to read a market event when the conversation holds one (market; see
// holdsMarketEvent), its Memory.md, the index of its skills (when it may read them with
// skill_read) and the session's checkpoint. A Memory.md or skill that
// exists but cannot be read is left out, and reported: announced as
// memory.unreadable when it is found, and listed by Unreadable until it
// can be read again. One that does not exist is no problem.
func (r *Router) systemLocked(market bool) string {
	found := map[string]unreadableFile{}
	mem, err := r.folder.ReadMemory()
	if err != nil {
		found[r.folder.Path(memory.MemoryFile)] = unreadableFile{err: err.Error()}
		mem = ""
	}
	var skills string
	if offers(r.tools, "skill_read") {
		skills = skillsIndex(r.folder, found)
	}
	r.noteUnreadable(found)
	var notes, note string
	if len(r.toolNotes) > 0 {
		notes = strings.Join(r.toolNotes, "\n")
	}
	if market {
		note = triggers.MarketNote
	}
	parts := [6]string{r.set.Instructions, note, mem, skills, notes, r.checkpoint}
	if r.system.text != "" && parts == r.system.parts {
		return r.system.text // Memory.md's text is the Folder's same string: compared at once
	}
	var checkpoint string
	if r.checkpoint != "" {
		checkpoint = "## Checkpoint: the earlier part of this session, summarised\n\n" + r.checkpoint
	}
	if strings.TrimSpace(mem) != "" {
		mem = "## Memory.md (your lasting lessons)\n\n" + mem
	}
	if skills != "" {
		skills = "## Your skills (read one with skill_read)\n\n" + skills
	}
	var unavailable string
	if notes != "" {
		unavailable = "## Tools unavailable now\n\n" + notes
	}
	text := joinNonEmpty("\n\n", r.set.Instructions, note, mem, skills, unavailable, checkpoint)
	r.system = builtSystem{parts: parts, text: text}
	return text
}

// Unreadable is a file a desk's prompt should carry, Memory.md or a skill,
// that exists but could not be read (its permissions, say): the prompts go
// without it until it can be read again.
type Unreadable struct {
	// Path is the file (or, when the skills folder cannot be listed, that
	// folder).
	Path string `json:"path"`
	// Error is why it could not be read.
	Error string `json:"error"`
	// Since is when a prompt first went without it.
	Since time.Time `json:"since"`
}

// unreadableFile is one entry of Router.unreadable.
type unreadableFile struct {
	err   string
	since time.Time
	dir   bool // the skills folder: it is listed, not read
}

// Unreadable returns the files the desk's last prompt could not read, by
// path, that still cannot be read: one that can be read again, or is gone,
// drops out at once; one that has become unreadable since shows after the
// next prompt. It never waits for a turn.
func (r *Router) Unreadable() []Unreadable {
	r.unreadableMu.Lock()
	defer r.unreadableMu.Unlock()
	out := []Unreadable{}
	for path, u := range r.unreadable {
		var err error
		if u.dir {
			_, err = os.ReadDir(path)
		} else {
			_, err = os.ReadFile(path)
		}
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			delete(r.unreadable, path)
			continue
		}
		out = append(out, Unreadable{Path: path, Error: u.err, Since: u.since})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// noteUnreadable makes found what the last prompt could not read, and
// announces each file not already known to be unreadable for that reason.
func (r *Router) noteUnreadable(found map[string]unreadableFile) {
	now := r.clock.Now()
	var fresh []event.MemoryUnreadable
	r.unreadableMu.Lock()
	for path, u := range found {
		if old, ok := r.unreadable[path]; ok && old.err == u.err {
			found[path] = old
			continue
		}
		u.since = now
		found[path] = u
		fresh = append(fresh, event.MemoryUnreadable{Header: event.Header{At: now, Desk: r.desk}, Path: path, Error: u.err})
	}
	r.unreadable = found
	r.unreadableMu.Unlock()
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Path < fresh[j].Path })
	for _, e := range fresh {
		event.Publish(r.bus, e)
	}
}

// offers reports whether tools has one called name.
func offers(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Spec.Name == name {
			return true
		}
	}
	return false
}

// skillsIndex returns the prompt's index of the desk's skills, one line
// each ("" for none), and adds what cannot be read to found. When a skill
// cannot be read, the folder's skills cannot be listed with their front
// matter: the index then names the readable ones by folder, which is what
// skill_read takes.
func skillsIndex(folder *memory.Folder, found map[string]unreadableFile) string {
	skills, err := folder.Skills()
	if err == nil {
		var b strings.Builder
		for _, s := range skills {
			fmt.Fprintf(&b, "- %s: %s\n", s.Dir, s.Description)
		}
		return b.String()
	}
	dir := folder.Path(memory.SkillsDir)
	entries, derr := os.ReadDir(dir)
	if derr != nil {
		found[dir] = unreadableFile{err: err.Error(), dir: true}
		return ""
	}
	var b strings.Builder
	bad := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err != nil || !fi.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name(), memory.SkillFile)
		if _, err := durable.ReadRegular(path, memory.MaxPromptFile, durable.Follow); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				found[path] = unreadableFile{err: fmt.Sprintf("read skill %s: %v", path, err)}
				bad++
			}
			continue
		}
		fmt.Fprintf(&b, "- %s\n", e.Name())
	}
	if bad == 0 {
		found[dir] = unreadableFile{err: err.Error(), dir: true}
	}
	return b.String()
}

// noteLocked appends rec without its own fsync (memory.SessionLog.Note).
func (r *Router) noteLocked(rec memory.Record) error {
	return r.noteAllLocked(rec)
}

// noteAllLocked is noteLocked of several records in one write.
func (r *Router) noteAllLocked(recs ...memory.Record) error {
	if err := r.log.NoteAll(recs...); err != nil {
		return err
	}
	for _, rec := range recs {
		r.logger.Debug().Str("desk", r.desk).Str("session", r.cur.Session).Str("type", rec.Type).Str("kind", rec.Kind).
			Str("trigger", rec.Trigger).Msg("session record written (not fsynced)")
	}
	return nil
}

// recordLocked appends a record whose failure to write changes nothing the
// caller does (the failure is also announced or returned elsewhere).
func (r *Router) recordLocked(rec memory.Record) {
	rec.At = r.clock.Now()
	_ = r.appendLocked(rec)
}

func specs(tools []Tool) []ToolSpec {
	out := make([]ToolSpec, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Spec)
	}
	return out
}

func addUsage(a, b memory.Usage) memory.Usage {
	return memory.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens, CachedTokens: a.CachedTokens + b.CachedTokens,
		CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens}
}

// firstSessionID returns the id of desk's first session, on trading date
// date, before anything of it is written: the UTC start of the date and
// eight hex digits of a hash of the desk's name and the date. It is the
// same at every start of that date, so that a desk that has written
// nothing names the same session across restarts (and hosts), and sorts
// before any session begun later.
func firstSessionID(desk string, day memory.TradingDay, date memory.Date) string {
	sum := sha256.Sum256([]byte(desk + "\x00" + date.String()))
	return day.StartOf(date).UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(sum[:4])
}

// newSessionID returns a sortable, unique session id: the UTC start time
// and eight random hex digits.
func newSessionID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
