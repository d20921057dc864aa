package router

import (
	"encoding/json"
	"github.com/deskd/deskd/memory"
	"strings"
)

// Estimate counts tokens offline at about four characters a token. It is an
// estimate for every model: deskd ships no tokenizer, and the services'
// own counts (recorded after each call) are what budgets charge.
func Estimate(s string) int64 { return int64(len(s)+3) / 4 }

// ContextReport is what the next request of a desk would carry, in tokens
// by source.
type ContextReport struct {
	Desk    string `json:"desk"`
	Session string `json:"session"`
	Model   string `json:"model"`
	// Scripted is true when Model is the offline scripted model.
	Scripted bool `json:"scripted,omitempty"`
	// Window is the model's context window (0: unknown).
	Window int `json:"context_window"`
	// Sources are the tokens of each part, in request order.
	Sources []Source `json:"sources"`
	Total   int64    `json:"total"`
	// Estimate is true: the counts are estimates (about four characters a token).
	Estimate bool `json:"estimate"`
}

// Source is one part of a request.
type Source struct {
	Name   string `json:"name"`
	Tokens int64  `json:"tokens"`
}

// contextReport measures the parts of the next request.
func contextReport(instructions, memoryText, skillsIndex, summary, checkpoint string, history []Message, tools []Tool) []Source {
	var hist int64
	for _, m := range history {
		hist += messageTokens(m)
	}
	var toolTokens int64
	for _, t := range tools {
		toolTokens += Estimate(t.Spec.Name) + Estimate(t.Spec.Description) + Estimate(string(t.Spec.Schema))
	}
	return []Source{
		{"instructions", Estimate(instructions)},
		{"memory", Estimate(memoryText)},
		{"skills_index", Estimate(skillsIndex)},
		{"summary", Estimate(summary)},
		{"checkpoint", Estimate(checkpoint)},
		{"history", hist},
		{"tools", toolTokens},
	}
}

// messageTokens estimates one message, once per message: the estimate is
// kept in the message's wire cache, which its copies share.
func messageTokens(m Message) int64 {
	if m.wire != nil {
		if v := m.wire.tokens.Load(); v > 0 {
			return v - 1
		}
		n := estimateMessage(m)
		m.wire.tokens.Store(n + 1)
		return n
	}
	return estimateMessage(m)
}

// estimateMessage is messageTokens made afresh.
func estimateMessage(m Message) int64 {
	n := Estimate(m.Text) + 4
	for _, c := range m.ToolCalls {
		n += Estimate(c.Name) + Estimate(string(c.Arguments))
	}
	return n
}

// requestTokens estimates a whole request.
func requestTokens(req Request) int64 {
	return requestTokensWith(req, nil)
}

// requestTokensWith is requestTokens, with the estimate of the request's
// history (its first Prefix messages) taken from and kept in c when c is
// not nil: a turn's checks cost the turn's messages, not the session's.
func requestTokensWith(req Request, c *prefixTokens) int64 {
	n := Estimate(req.System)
	rest := req.Messages
	if c != nil && req.Prefix > 0 && req.Prefix <= len(req.Messages) {
		n += c.of(req.Messages[:req.Prefix])
		rest = req.Messages[req.Prefix:]
	}
	for i := range rest {
		n += messageTokens(rest[i])
	}
	for _, t := range req.Tools {
		n += Estimate(t.Name) + Estimate(t.Description) + Estimate(string(t.Schema))
	}
	return n
}

// prefixTokens is the token estimate of the first n messages of one
// history array (whose first element is at base). The elements of a
// history's array that a request carried are never written again
// (Router.conversationLocked), and a new history is a new array, so the
// estimate holds for as long as base is the array's start: a later
// history of the same array adds only its new messages. Keeping base keeps
// the array alive, so that its address cannot be another's.
type prefixTokens struct {
	base *Message
	n    int
	sum  int64
}

// of returns the estimate of history, from c's where history is c's array
// with at least c's messages, and keeps it.
func (c *prefixTokens) of(history []Message) int64 {
	if c.base != &history[0] || c.n > len(history) {
		*c = prefixTokens{base: &history[0]}
	}
	for i := c.n; i < len(history); i++ {
		c.sum += messageTokens(history[i])
	}
	c.n = len(history)
	return c.sum
}

func encodeCalls(calls []ToolCall) json.RawMessage {
	if len(calls) == 0 {
		return nil
	}
	b, _ := json.Marshal(calls) // ToolCall always encodes
	return b
}

func decodeCalls(raw json.RawMessage) []ToolCall {
	calls, _ := memory.Record{ToolCalls: raw}.Calls()
	return calls
}

func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}
