package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
)

// hostileText carries what must never reach a terminal raw: an escape
// sequence, a bidi override, a carriage return, DEL and a C1 control.
const hostileText = "\x1b[2J\x1b]0;owned\x07\u202eevil\rcr\x7f\u009b"

// hasRaw reports whether s holds a control character other than newline
// and tab, or a bidi control.
func hasRaw(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && termsafe.Unsafe(r) })
}

// TestStatusEscapesPauseText: deskd status, pause and resume print a
// pause's by and reason escaped, on one line; --json stays JSON.
func TestStatusEscapesPauseText(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	cli := cliWith(t, "--addr", h.URL())
	code, out, errs := cli("pause", "main", "--by", "ops"+hostileText, "--reason", "risk\nFORGED LINE"+hostileText)
	if code != 0 || hasRaw(out) || strings.Contains(out, "\nFORGED") {
		t.Errorf("pause = %d %q %s", code, out, errs)
	}
	code, out, errs = cli("status")
	if code != 0 || hasRaw(out) || strings.Contains(out, "\nFORGED") || !strings.Contains(out, `ops\u001b[2J`) ||
		!strings.Contains(out, `risk\u000aFORGED LINE`) {
		t.Errorf("status = %d, want the pause escaped on its line:\n%q\n%s", code, out, errs)
	}
	code, out, _ = cli("status", "--json")
	var st httpapi.DesksResponse
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || hasRaw(out) ||
		len(st.Desks) != 1 || st.Desks[0].Paused == nil || st.Desks[0].Paused.By != "ops"+hostileText {
		t.Errorf("status --json = %d %v, want JSON with the text intact and escaped:\n%q", code, err, out)
	}
	awaitRingEvent(t, h.URL(), "desk.paused") // the ring takes events from its own mailbox, after the pause's answer
	code, out, _ = cli("events")
	if code != 0 || hasRaw(out) || !strings.Contains(out, "desk.paused") {
		t.Errorf("events = %d, want JSON lines without raw controls:\n%q", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("events printed a line that is not JSON: %q", line)
		}
	}
	code, out, _ = cli("resume", "main")
	if code != 0 || hasRaw(out) || strings.Contains(out, "\nFORGED") {
		t.Errorf("resume = %d %q", code, out)
	}
}

// awaitRingEvent waits, for at most 30 s, until the event ring of the
// deskd at base holds an event of topic.
func awaitRingEvent(t *testing.T, base, topic string) {
	t.Helper()
	c, err := httpapi.Dial(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = c.Events(ctx, httpapi.EventQuery{Backlog: true, Follow: true}, func(e httpapi.Event) {
		if e.Topic == topic {
			cancel()
		}
	}, func(string) {})
	if ctx.Err() == nil || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("the event ring of %s: no %s within 30s (%v)", base, topic, err)
	}
}

// TestOperatorScreensEscapeControlCharacters: show, memory, skills and
// check-config print what came from outside (a model's tool names and
// curator reasons, Memory.md, a config key) escaped.
func TestOperatorScreensEscapeControlCharacters(t *testing.T) {
	s := newOpsSetup(t)
	s.session(t, memory.Record{Session: "s1", Date: "2026-03-02", At: utcTime(t, "2026-03-02T03:30:00Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Text: "go", Trigger: "t"},
		memory.Record{Type: memory.RecordMessage, Role: "assistant", Trigger: "t", Model: "m" + hostileText,
			ToolCalls: json.RawMessage(`[{"id":"c1\n--- forged","name":"quote\u202e\u001b[2J","arguments":{"x":"\u001b[2J"}}]`)},
		memory.Record{Type: memory.RecordTool, ToolName: "quote\n--- 2026-03-02 09:00:00 IST  user manual", ToolCallID: "c1", Text: "ok"},
	)
	if _, err := s.Folder.WriteMemory("- lesson" + hostileText + "\n"); err != nil {
		t.Fatal(err)
	}
	original := "---\nname: vwap\ndescription: VWAP entries\n---\n\nv1\n"
	if _, err := s.Folder.WriteSkill("vwap", original); err != nil {
		t.Fatal(err)
	}
	reason, _ := json.Marshal("sharper" + hostileText)
	model := fixedAnswer(`{"operations":[{"op":"patch","skill":"vwap","content":"---\nname: vwap\ndescription: VWAP v2\n---\n\nv2\n","reason":` + string(reason) + `}]}`)
	r := &curator.Reviewer{Folder: s.Folder, Model: model, Now: s.Folder.Now}
	if _, err := r.Review(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2}, "s1"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", "main"}, {"memory", "main"}, {"skills", "main"}, {"sessions", "main"}} {
		out := runOpsOK(t, s, args...)
		if hasRaw(out) || strings.Contains(out, "\n--- forged") || strings.Contains(out, "\n--- 2026-03-02 09:00:00 IST  user manual") {
			t.Errorf("deskd %v printed raw controls or a forged line:\n%q", args, out)
		}
	}
	if _, out, _ := runOps(t, s, "memory", "main"); !strings.Contains(out, `- lesson\u001b[2J`) {
		t.Errorf("memory does not show the escaped text: %q", out)
	}

	// A config key that holds an escape sequence is named escaped.
	cfg, err := os.ReadFile(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Config, append(cfg, []byte("\"\\e[2Jsneaky\\u202e\": 1\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOps(t, s, "check-config")
	if code != 2 || hasRaw(out+errOut) || !strings.Contains(errOut, `\u001b[2jsneaky`) {
		t.Errorf("check-config = %d, want the key escaped:\n%q\n%q", code, out, errOut)
	}
	_ = filepath.Base(s.Config)
}
