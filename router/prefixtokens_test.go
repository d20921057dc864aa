package router

import (
	"fmt"
	"testing"
)

// TestRequestTokensWithKeptHistory: the estimate with the history's kept
// sum equals the one made afresh, as the history grows in its array (each
// request's own message in place past it, as conversationLocked puts it),
// moves to a new array, and is cut short, and a request's own messages
// past the history count every time.
func TestRequestTokensWithKeptHistory(t *testing.T) {
	msg := func(i int) Message {
		return Message{Role: RoleUser, Text: fmt.Sprintf("market event %d: %0*d", i, i%50, 7), wire: newWireCache()}
	}
	var c prefixTokens
	// check estimates the request of history (whose array has room) and
	// tail, written in place past it.
	check := func(step string, history []Message, tail ...Message) {
		t.Helper()
		msgs := history[:len(history)+len(tail)]
		copy(msgs[len(history):], tail)
		if len(history) > 0 && len(tail) > 0 && &msgs[0] != &history[0] {
			t.Fatalf("%s: the request is not in the history's array", step)
		}
		req := Request{System: "desk instructions", Messages: msgs, Prefix: len(history),
			Tools: []ToolSpec{{Name: "quote", Description: "a quote", Schema: []byte(`{"type":"object"}`)}}}
		if got, want := requestTokensWith(req, &c), requestTokens(req); got != want {
			t.Fatalf("%s: requestTokensWith = %d, requestTokens = %d", step, got, want)
		}
	}
	arr := make([]Message, 0, 128)
	for i := range 40 {
		check(fmt.Sprintf("turn %d", i), arr, msg(1000+i))
		arr = append(arr, msg(i), Message{Role: RoleAssistant, Text: "noted", wire: newWireCache()})
	}
	check("the same array, cut short", arr[:10])
	check("the same array, longer again", arr, msg(11))
	moved := make([]Message, len(arr), 256) // a grown history: a new array
	copy(moved, arr)
	moved = append(moved, msg(99))
	check("moved", moved, msg(100))
	check("new session", append(make([]Message, 0, 4), msg(7)), msg(8))
	check("empty history", make([]Message, 0, 1), msg(9))
}
