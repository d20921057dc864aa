package router

import (
	"fmt"

	"github.com/deskd/deskd/memory"
)

// Budgets limit what a desk may spend: a desk file's budgets, which
// config reads into this type. Zero means no limit.
type Budgets struct {
	// TurnTokens bounds the tokens (input and output) of one turn, tool
	// rounds included (turn_tokens).
	TurnTokens int64
	// SessionTokens bounds the tokens of one session (session_tokens); a
	// new session starts it again.
	SessionTokens int64
	// DayTokens bounds the tokens of one trading date (day_tokens).
	DayTokens int64
	// DayCost bounds the cost of one trading date (day_cost), in the
	// currency of the models' prices; it counts only models with prices.
	DayCost float64
	// ReserveTokens may be spent beyond SessionTokens and DayTokens by the
	// rollover's own calls (summary, fold) and by compaction, so that a
	// spent desk still rolls over (reserve_tokens; default 20000 when any
	// budget is set).
	ReserveTokens int64
}

// Limited reports whether any spending limit of a turn, a session or a
// day is set.
func (b Budgets) Limited() bool {
	return b.TurnTokens > 0 || b.SessionTokens > 0 || b.DayTokens > 0 || b.DayCost > 0
}

// Spend is what a desk has spent, persisted with its session.
type Spend struct {
	// Date is the trading date Day* count.
	Date          memory.Date `json:"trading_date"`
	DayTokens     int64       `json:"day_tokens"`
	DayCost       float64     `json:"day_cost"`
	SessionTokens int64       `json:"session_tokens"`
	// DayCachedTokens are the day's prompt tokens read from the services'
	// prompt caches (counted in DayTokens too).
	DayCachedTokens int64 `json:"day_cached_tokens,omitempty"`
}

// BudgetError says which budget a call would pass.
type BudgetError struct {
	Desk   string
	Budget string // turn_tokens, session_tokens, day_tokens, day_cost
	Limit  float64
	Used   float64
	// Need is what the refused call was estimated to add.
	Need float64
}

// Error names the budget, what was used, and when it resets.
func (e *BudgetError) Error() string {
	reset := "it resets at the next rollover"
	if e.Budget == "turn_tokens" {
		reset = "the turn stopped"
	}
	if e.Need > 0 {
		return fmt.Sprintf("desk %s: budget %s: %g used of %g, and the next call needs about %g more; %s", e.Desk, e.Budget, e.Used, e.Limit, e.Need, reset)
	}
	return fmt.Sprintf("desk %s: budget %s spent: %g used of %g; %s", e.Desk, e.Budget, e.Used, e.Limit, reset)
}

// check returns the budget that spending est more tokens would pass, for a
// call of task within a turn that has used turnUsed so far.
func (b Budgets) check(desk string, s Spend, task Task, turnUsed, est int64) *BudgetError {
	reserve := int64(0)
	if task == TaskSummary || task == TaskFold || task == TaskCompact || task == TaskCurate {
		reserve = b.ReserveTokens
		if reserve == 0 && (b.SessionTokens > 0 || b.DayTokens > 0 || b.DayCost > 0) {
			reserve = 20000
		}
	}
	if b.TurnTokens > 0 && (task == TaskTurn || task == TaskFlush) && turnUsed+est > b.TurnTokens {
		return &BudgetError{desk, "turn_tokens", float64(b.TurnTokens), float64(turnUsed), float64(est)}
	}
	if b.SessionTokens > 0 && s.SessionTokens+est > b.SessionTokens+reserve {
		return &BudgetError{desk, "session_tokens", float64(b.SessionTokens), float64(s.SessionTokens), float64(est)}
	}
	if b.DayTokens > 0 && s.DayTokens+est > b.DayTokens+reserve {
		return &BudgetError{desk, "day_tokens", float64(b.DayTokens), float64(s.DayTokens), float64(est)}
	}
	if b.DayCost > 0 && reserve == 0 && s.DayCost >= b.DayCost {
		return &BudgetError{desk, "day_cost", b.DayCost, s.DayCost, 0}
	}
	return nil
}

// cost prices one call's usage, per million tokens: the prompt's tokens
// read from the cache at CachedInput, those written to it at CacheWrite
// (each Input when not set), the rest of the prompt at Input.
func (p Prices) cost(u memory.Usage) float64 {
	readPrice, writePrice := p.CachedInput, p.CacheWrite
	if readPrice == 0 {
		readPrice = p.Input
	}
	if writePrice == 0 {
		writePrice = p.Input
	}
	fresh := max(0, u.InputTokens-u.CachedTokens-u.CacheWriteTokens)
	return (float64(fresh)*p.Input + float64(u.CachedTokens)*readPrice + float64(u.CacheWriteTokens)*writePrice +
		float64(u.OutputTokens)*p.Output) / 1e6
}
