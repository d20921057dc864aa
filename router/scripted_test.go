package router_test

import (
	"context"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

func TestScriptedReplyQuotesTheFirstLine(t *testing.T) {
	tests := []struct {
		name string
		msgs []router.Message
		want string
	}{
		{"one line", []router.Message{{Role: "user", Text: "hello"}}, `[scripted] Received: "hello"`},
		{"first of several lines", []router.Message{{Role: "user", Text: "line one\nline two"}}, `[scripted] Received: "line one"`},
		{"blank lines and spaces around it", []router.Message{{Role: "user", Text: "\n\n  padded  \nrest"}}, `[scripted] Received: "padded"`},
		{"quotes escaped", []router.Message{{Role: "user", Text: `say "hi"`}}, `[scripted] Received: "say \"hi\""`},
		{"the last message of a conversation", []router.Message{
			{Role: "user", Text: "old"}, {Role: "assistant", Text: "seen"}, {Role: "user", Text: "new\nmore"},
		}, `[scripted] Received: "new"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := router.Scripted{}.Complete(t.Context(), router.Request{Task: router.TaskTurn, System: "desk", Messages: tt.msgs})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.want {
				t.Errorf("reply = %q, want %q", resp.Text, tt.want)
			}
			if resp.Usage.InputTokens <= 0 || resp.Usage.OutputTokens <= 0 {
				t.Errorf("usage = %+v, want an estimate in and out", resp.Usage)
			}
		})
	}
}

func TestScriptedSummaryAndFold(t *testing.T) {
	conv := []router.Message{
		{Role: "user", Text: "Buy NIFTY?\nLTP 22000"}, {Role: "assistant", Text: "[scripted] Received: \"Buy NIFTY?\""},
		{Role: "user", Text: "Summarise this session."},
	}
	resp, err := router.Scripted{}.Complete(t.Context(), router.Request{Task: router.TaskSummary, Messages: conv})
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 exchange:\n- Buy NIFTY? -> [scripted] Received: \"Buy NIFTY?\"\n"; resp.Text != want {
		t.Errorf("summary = %q, want the digest without the prompt: %q", resp.Text, want)
	}

	tests := []struct {
		name, memory, want string
	}{
		{"into an empty Memory.md", "", "## Notes of 2026-03-01\n\nGap up.\n"},
		{"after the lessons", "# Lessons\n\n- Small size.\n\n", "# Lessons\n\n- Small size.\n\n## Notes of 2026-03-01\n\nGap up.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &router.FoldInput{Date: memory.Date{Year: 2026, Month: 3, Day: 1}, Memory: tt.memory, Notes: "Gap up.\n\n"}
			resp, err := router.Scripted{}.Complete(t.Context(), router.Request{Task: router.TaskFold, Fold: in})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.want {
				t.Errorf("fold = %q, want %q", resp.Text, tt.want)
			}
		})
	}
	if _, err := (router.Scripted{}).Complete(t.Context(), router.Request{Task: router.TaskFold}); err == nil {
		t.Error("a fold without its input succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (router.Scripted{}).Complete(ctx, router.Request{Task: router.TaskTurn}); err == nil {
		t.Error("a call with a cancelled context succeeded")
	}
}
