package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// Bounds of a desk's compact_at_tokens.
const (
	// DefaultCompactAtTokens is compact_at_tokens when a desk does not set
	// it: 0, no bound of its own, so that compact_share of the model's
	// context window alone decides (as deskd did before the setting).
	DefaultCompactAtTokens = 0
	// MinCompactAtTokens is the smallest bound a desk may set: below it,
	// the instructions, tools and Memory.md alone would compact the
	// session on every turn.
	MinCompactAtTokens = 1000
	// MaxCompactAtTokens is the largest bound a desk may set, past the
	// context window of any model.
	MaxCompactAtTokens = 10_000_000
)

// flushPrompt opens the silent turn before a compaction.
const flushPrompt = "[deskd: the earlier part of this session is about to be summarised to make room. " +
	"Before that, write with the note tool anything you must not forget. Answer NO_REPLY when done.]"

// compactPrompt asks for the checkpoint.
const compactPrompt = "Summarise the conversation so far into a checkpoint that replaces it: the facts, positions, " +
	"decisions and open questions you will need for the rest of the day. Plain Markdown, at most 400 words."

// Conversation is a session's conversation rebuilt from its records.
type Conversation struct {
	// History is what the next request carries: the answered exchanges
	// after the latest checkpoint, with their tool calls and results.
	History []Message
	// Checkpoint is the latest checkpoint's text ("" when there is none).
	Checkpoint string
	// Exchanges counts the answered turns of the whole session.
	Exchanges int
}

// Rebuild rebuilds the conversation of a session file's records. A
// turn that got no final answer (it failed, or was cut off) stays in the
// file but is not sent again; silent turns are not sent again either.
func Rebuild(records []memory.Record) Conversation {
	var c Conversation
	var pending []Message
	var trigger string
	for _, rec := range records {
		if rec.Silent {
			continue
		}
		switch rec.Type {
		case memory.RecordCheckpoint:
			// A checkpoint replaces the answered exchanges before it; the
			// turn it was made for (pending) goes on after it.
			c.History, c.Checkpoint = nil, rec.Text
		case memory.RecordMessage:
			switch rec.Role {
			case RoleUser:
				pending, trigger = []Message{{Role: RoleUser, Text: rec.Text}}, rec.Trigger
			case RoleAssistant:
				if pending == nil || rec.Trigger != trigger {
					continue
				}
				calls := decodeCalls(rec.ToolCalls)
				pending = append(pending, Message{Role: RoleAssistant, Text: rec.Text, ToolCalls: calls})
				if len(calls) == 0 {
					c.History = append(c.History, pending...)
					c.Exchanges++
					pending = nil
				}
			}
		case memory.RecordTool:
			if pending != nil && rec.Trigger == trigger {
				pending = append(pending, Message{Role: RoleTool, Text: rec.Text, ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, IsError: rec.IsError})
			}
		}
	}
	return c
}

// compactBound is the estimated request size, in tokens, past which the
// session is compacted: the smaller of the compaction share of the desk
// model's context window (when the window is known) and the desk's
// CompactAtTokens (when set); 0 when neither applies.
func (s Settings) compactBound() int64 {
	var bound int64
	if window := s.Route[0].ContextWindow; window > 0 {
		bound = int64(s.CompactShare * float64(window))
	}
	if at := int64(s.CompactAtTokens); at > 0 && (bound == 0 || at < bound) {
		bound = at
	}
	return bound
}

// compactDueLocked says whether a request of est tokens must wait for a
// compaction of the session first (compactIfFullLocked).
func (r *Router) compactDueLocked(est int64) bool {
	bound := r.set.compactBound()
	return bound > 0 && len(r.history) > 0 && est > bound
}

// compactIfFullLocked compacts the session when the next request, with the
// current turn's message, would carry more than the compaction bound
// (compactBound): the compaction share of the desk model's context
// window, or the desk's CompactAtTokens if smaller. First the desk gets one silent turn to
// write notes; then the exchanges so far are summarised into a checkpoint
// record appended to the session file (nothing is deleted), and later
// requests carry the checkpoint and what came after it. The current turn
// is never compacted away. est is the estimate of that request's tokens;
// compacting says whether the history was compacted, or may have been
// changed by the attempt.
func (r *Router) compactIfFullLocked(ctx context.Context, trigger string, est int64) (compacting bool, err error) {
	if !r.compactDueLocked(est) {
		return false, nil
	}
	bound := r.set.compactBound()
	window := r.set.Route[0].ContextWindow
	var noteTool []Tool
	for _, t := range r.tools {
		if t.Spec.Name == "note" {
			noteTool = append(noteTool, t)
		}
	}
	if len(noteTool) > 0 {
		if _, _, err := r.loopLocked(ctx, trigger, TaskFlush, []Message{{Role: RoleUser, Text: flushPrompt}}, noteTool, 2, true, nil); err != nil {
			if ctx.Err() != nil {
				return true, err
			}
			r.recordLocked(memory.Record{Type: memory.RecordEvent, Kind: "flush.failed", Trigger: trigger, Text: err.Error()})
		}
	}
	text, err := r.askLocked(ctx, TaskCompact, compactPrompt, nil)
	if err != nil {
		return true, fmt.Errorf("compact session %s of %s: %w", r.cur.Session, r.desk, err)
	}
	data, _ := json.Marshal(map[string]any{"estimated_tokens": est, "context_window": window, "compact_at_tokens": r.set.CompactAtTokens,
		"bound": bound, "messages": len(r.history)})
	if err := r.appendLocked(memory.Record{Type: memory.RecordCheckpoint, At: r.clock.Now(), Text: text, Trigger: trigger, Data: data}); err != nil {
		return true, fmt.Errorf("record checkpoint of %s: %w", r.desk, err)
	}
	r.history, r.checkpoint, r.compacted, r.seen = nil, text, true, 0
	return true, nil
}

// Context reports what the desk's next request would carry, by source.
// summary is the text a new session's first message would carry ("" when
// the session already has exchanges).
func (r *Router) Context(summary string) (ContextReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current && !r.unwritten { // an unwritten session has no history, and is not written by a look
		if err := r.ensureLocked(); err != nil { // the history is read at first use
			return ContextReport{}, fmt.Errorf("context of %s: %w", r.desk, err)
		}
	}
	mem, err := r.folder.ReadMemory()
	if err != nil {
		return ContextReport{}, err
	}
	index, err := SkillsIndex(r.folder)
	if err != nil {
		return ContextReport{}, err
	}
	if r.exchanges > 0 {
		summary = ""
	}
	r.refreshToolsLocked()
	instructions := r.set.Instructions // with the market-event note, as systemLocked writes them
	if holdsMarketEvent(r.history) {
		instructions = joinNonEmpty("\n\n", instructions, triggers.MarketNote)
	}
	rep := ContextReport{
		Desk: r.desk, Session: r.cur.Session, Model: r.set.Route[0].Name, Scripted: r.set.Route[0].Scripted(),
		Window: r.set.Route[0].ContextWindow, Estimate: true,
		Sources: contextReport(instructions, mem, index, summary, r.checkpoint, r.history, r.tools),
	}
	for _, s := range rep.Sources {
		rep.Total += s.Tokens
	}
	return rep, nil
}

// Inspect reports what the next request of a desk would carry, from its
// files alone: it reads the saved session without opening it for writing,
// so it is safe beside a running daemon. summary is as for Context.
func Inspect(o Options, summary string) (ContextReport, error) {
	r, err := New(o)
	if err != nil {
		return ContextReport{}, err
	}
	var st state
	ok, err := o.Folder.ReadJSON(stateFile, &st)
	if err != nil {
		return ContextReport{}, fmt.Errorf("inspect %s: %w", o.Desk, err)
	}
	if ok && st.Session != "" {
		records, err := o.Folder.ReadSession(st.Session)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ContextReport{}, fmt.Errorf("inspect %s: %w", o.Desk, err)
		}
		c := Rebuild(records)
		r.cur, r.history, r.checkpoint, r.exchanges, r.seen = st, c.History, c.Checkpoint, c.Exchanges, 0
	}
	return r.Context(summary)
}
