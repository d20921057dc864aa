package termview_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// TestStatusShowsTheAnsweringModel: deskd status names the model that
// answered the last turn when it is not the configured one, loudly, and
// says nothing more when the primary answered.
func TestStatusShowsTheAnsweringModel(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    desk.Status
		want []string
		not  []string
	}{
		{"the scripted fallback answered", desk.Status{Name: "main", State: "idle", Model: "gpt-4o", Provider: "openai",
			LastAnswer: &desk.LastAnswer{Model: "offline", Provider: router.ScriptedProvider, Scripted: true, Fallback: true, At: at}},
			[]string{"gpt-4o -> FALLBACK offline (SCRIPTED)",
				"desk main: its last turn (2026-03-02T10:00:00Z) was answered by FALLBACK offline, not by its primary gpt-4o: offline is a SCRIPTED offline model, its replies are canned"}, nil},
		{"a model fallback answered", desk.Status{Name: "main", State: "idle", Model: "gpt-4o", Provider: "openai",
			LastAnswer: &desk.LastAnswer{Model: "claude", Provider: "anthropic", Fallback: true, At: at}},
			[]string{"gpt-4o -> FALLBACK claude", "answered by FALLBACK claude, not by its primary gpt-4o\n"}, []string{"SCRIPTED"}},
		{"the primary answered", desk.Status{Name: "main", State: "idle", Model: "gpt-4o", Provider: "openai",
			LastAnswer: &desk.LastAnswer{Model: "gpt-4o", Provider: "openai", At: at}},
			[]string{"gpt-4o"}, []string{"FALLBACK", "->", "SCRIPTED"}},
		{"a scripted primary", desk.Status{Name: "main", State: "idle", Model: "offline", Provider: router.ScriptedProvider, Scripted: true,
			LastAnswer: &desk.LastAnswer{Model: "offline", Provider: router.ScriptedProvider, Scripted: true, At: at}},
			[]string{"offline (scripted)"}, []string{"FALLBACK", "->"}},
		{"no turn yet", desk.Status{Name: "main", State: "idle", Model: "gpt-4o", Provider: "openai"},
			[]string{"gpt-4o"}, []string{"FALLBACK", "->"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			has(t, "deskd status", status(tt.s), tt.want, tt.not...)
		})
	}
}

// TestSessionsMarksScripted: the sessions table has a SCRIPTED column,
// from each session's scripted flag (not its title or model's name).
func TestSessionsMarksScripted(t *testing.T) {
	var b strings.Builder
	infos := []memory.SessionInfo{
		{ID: "s1", Turns: 1, State: memory.SessionInactive, Scripted: true, FirstUserText: "Check the tape."},
		{ID: "s2", Turns: 1, State: memory.SessionActive, FirstUserText: "offline (scripted) in the title"},
	}
	if err := termview.Sessions(&b, infos); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want a heading and 2 rows:\n%s", len(lines), b.String())
	}
	if f := strings.Fields(lines[0]); len(f) < 6 || f[5] != "SCRIPTED" {
		t.Errorf("heading = %q, want a SCRIPTED column after STATE", lines[0])
	}
	for i, want := range []string{"SCRIPTED", "-"} {
		if f := strings.Fields(lines[i+1]); len(f) < 6 || f[5] != want {
			t.Errorf("row %d = %q, want %q in its SCRIPTED column", i+1, lines[i+1], want)
		}
	}
}

// TestContextSaysScripted: deskd context's model line says (scripted)
// when the report says the model is the scripted one.
func TestContextSaysScripted(t *testing.T) {
	for _, tt := range []struct {
		rep  router.ContextReport
		want string
	}{
		{router.ContextReport{Desk: "main", Session: "s1", Model: "offline", Scripted: true}, "desk main, session s1, model offline (scripted)\n"},
		{router.ContextReport{Desk: "main", Session: "s1", Model: "gpt-4o"}, "desk main, session s1, model gpt-4o\n"},
	} {
		var b strings.Builder
		if err := termview.Context(&b, tt.rep); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != tt.want {
			t.Errorf("deskd context's first line = %q, want %q", first, tt.want)
		}
	}
}
