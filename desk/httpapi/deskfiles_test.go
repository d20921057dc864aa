package httpapi_test

// Tests of the desk page's endpoints over a desk whose folder is the
// populated fixture (memorytest.Populated): two sessions, four versions
// of Memory.md, notes, summaries, a curator's change.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/audit"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/memory/memorytest"
)

// populated serves the populated fixture's desk, with a retired skill
// "breakout" the curator's change "c-retire" can bring back and a live
// skill "opening-range". The fixture's trigger ledger is left out, so
// that the desk runs no turn of its own.
func populated(t *testing.T) (*httpapitest.Harness, *memorytest.Desk) {
	t.Helper()
	fx := memorytest.Populated(t)
	if err := os.Remove(filepath.Join(fx.DeskDir, "triggers.jsonl")); err != nil {
		t.Fatal(err)
	}
	memorytest.Write(t, fx.DeskDir, "skills/opening-range/SKILL.md", "---\nname: opening-range\ndescription: Trade the first 15 minutes.\npinned: true\n---\nBody.\n")
	memorytest.Write(t, fx.DeskDir, "skills/.archive/breakout-20260302T183003.000000000Z/SKILL.md", "---\nname: breakout\ndescription: Old.\n---\n")
	memorytest.Write(t, fx.DeskDir, "curator/ledger.jsonl",
		`{"at":"2026-03-02T18:30:03Z","trading_date":"2026-03-02","session":"old","action":"inventory","skills":[]}`+"\n"+
			`{"id":"c-retire","at":"2026-03-02T18:30:04Z","trading_date":"2026-03-02","action":"retire","skill":"breakout","reason":"unused",`+
			`"before":"","after":"","archived_to":"skills/.archive/breakout-20260302T183003.000000000Z"}`+"\n")
	// 17:30 in Kolkata on 2026-03-03, the trading date of S2, the
	// current session: the desk starts without a rollover.
	clk := clock.NewFake(time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC))
	h := httpapitest.Start(t, httpapitest.Options{Dir: filepath.Dir(fx.DeskDir), Clock: clk, Files: httpapi.Files{
		AuditConfig: func(string) (audit.Config, error) { return audit.Config{Main: fx.Config}, nil },
	}})
	return h, fx
}

func TestDeskFilesSessionsAndTranscript(t *testing.T) {
	h, _ := populated(t)
	status, _, body := h.Call("GET", "/v1/desks/main/sessions", "")
	sessions := httpapitest.Decode[httpapi.SessionsResponse](t, body)
	if status != http.StatusOK || len(sessions.Sessions) != 2 || sessions.Sessions[0].ID != memorytest.S1 || sessions.Sessions[1].ID != memorytest.S2 {
		t.Fatalf("GET sessions = %d %s; want S1, S2", status, body)
	}
	for _, name := range []string{"current", memorytest.S2, memorytest.S2[:18]} {
		status, _, body = h.Call("GET", "/v1/desks/main/sessions/"+name+"/transcript", "")
		tr := httpapitest.Decode[httpapi.TranscriptResponse](t, body)
		if status != http.StatusOK || tr.Desk != "main" || tr.Session.ID != memorytest.S2 || len(tr.Entries) == 0 {
			t.Fatalf("GET transcript of %s = %d %s", name, status, body)
		}
	}
	status, _, body = h.Call("GET", "/v1/desks/main/sessions/"+memorytest.S1+"/transcript", "")
	if status != http.StatusOK || !strings.Contains(body, `"duration_ms": 1200`) || !strings.Contains(body, `"tool_call_id": "call_2"`) ||
		!strings.Contains(body, `"is_error": true`) || !strings.Contains(body, `"kind": "checkpoint"`) {
		t.Fatalf("GET transcript of S1 = %d %s", status, body)
	}
	tests := []struct {
		name, path string
		status     int
		says       string
	}{
		{"unknown session", "/v1/desks/main/sessions/nosuch/transcript", http.StatusNotFound, `no session "nosuch"`},
		{"ambiguous prefix", "/v1/desks/main/sessions/2026/transcript", http.StatusConflict, memorytest.S1 + ", " + memorytest.S2},
		{"unknown desk", "/v1/desks/other/sessions", http.StatusNotFound, `unknown desk "other"`},
		{"unknown session export", "/v1/desks/main/sessions/nosuch/export", http.StatusNotFound, `no session "nosuch"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := h.Call("GET", tt.path, "")
			if status != tt.status || !strings.Contains(errorText(t, body), tt.says) {
				t.Fatalf("GET %s = %d %s; want %d saying %q", tt.path, status, body, tt.status, tt.says)
			}
		})
	}
}

func TestDeskFilesExport(t *testing.T) {
	h, _ := populated(t)
	status, header, body := h.Call("GET", "/v1/desks/main/sessions/"+memorytest.S1+"/export", "")
	if status != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "text/html") ||
		!strings.Contains(header.Get("Content-Disposition"), `attachment; filename="main-`+memorytest.S1+`.html"`) {
		t.Fatalf("GET export = %d %v", status, header)
	}
	if !strings.Contains(body, "<html") || !strings.Contains(body, "Could not quote BANKNIFTY.") || strings.Contains(body, "<script>alert") {
		t.Fatalf("the export is not the session's page:\n%.400s", body)
	}
}

func TestDeskFilesMemory(t *testing.T) {
	h, fx := populated(t)
	status, _, body := h.Call("GET", "/v1/desks/main/memory", "")
	mem := httpapitest.Decode[httpapi.MemoryResponse](t, body)
	if status != http.StatusOK || mem.Text != memorytest.MemV4 || len(mem.Versions) != 3 {
		t.Fatalf("GET memory = %d %s; want MemV4 and 3 versions", status, body)
	}
	if !mem.Versions[0].At.After(mem.Versions[2].At) || mem.Versions[2].Size != int64(len(memorytest.MemV1)) {
		t.Fatalf("versions = %+v; want newest first, the oldest MemV1", mem.Versions)
	}
	oldest := mem.Versions[2].ID
	status, _, body = h.Call("GET", "/v1/desks/main/memory/versions/"+oldest[:10], "")
	v := httpapitest.Decode[httpapi.MemoryVersionResponse](t, body)
	if status != http.StatusOK || v.ID != oldest || v.Text != memorytest.MemV1 || !strings.Contains(v.Diff, "+- Operator: no trades before 09:20.") {
		t.Fatalf("GET memory/versions/%s = %d %s", oldest[:10], status, body)
	}
	tests := []struct {
		name, version string
		status        int
		says          string
	}{
		{"none", "2027", http.StatusNotFound, `version "2027" of Memory.md: there is none`},
		{"ambiguous", "2026030", http.StatusConflict, mem.Versions[2].ID},
		{"not an id", ".hidden", http.StatusBadRequest, "not a version id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := h.Call("GET", "/v1/desks/main/memory/versions/"+tt.version, "")
			if status != tt.status || !strings.Contains(errorText(t, body), tt.says) || strings.Contains(body, fx.DeskDir) {
				t.Fatalf("GET memory/versions/%s = %d %s; want %d saying %q and no path", tt.version, status, body, tt.status, tt.says)
			}
		})
	}
}

func TestDeskFilesRestore(t *testing.T) {
	h, fx := populated(t)
	versions, err := fx.Folder.MemoryHistory()
	if err != nil || len(versions) != 3 {
		t.Fatalf("MemoryHistory = %v, %v", versions, err)
	}
	status, _, body := h.Call("POST", "/v1/desks/main/memory/restore", `{"version": "`+versions[0].ID[:10]+`", "by": "asha"}`)
	res := httpapitest.Decode[httpapi.RestoreResponse](t, body)
	if status != http.StatusOK || res.Restored != versions[0].ID || res.KeptAs == "" {
		t.Fatalf("POST memory/restore = %d %s", status, body)
	}
	if got, _ := fx.Folder.ReadMemory(); got != memorytest.MemV1 {
		t.Fatalf("Memory.md = %q after the restore, want MemV1", got)
	}
	if kept, err := fx.Folder.ReadMemoryVersion(res.KeptAs); err != nil || kept != memorytest.MemV4 {
		t.Fatalf("kept as %s = %q, %v; want MemV4", res.KeptAs, kept, err)
	}
	e := waitEvent[event.MemoryRestored](t, h)
	if e.Desk != "main" || e.Version != versions[0].ID || e.KeptAs != res.KeptAs || e.By != "asha" {
		t.Fatalf("memory.restored = %+v", e)
	}
	checkRefusals(t, h, "/v1/desks/main/memory/restore", []refusal{
		{"ambiguous", `{"version": "2026030"}`, http.StatusConflict, "give more of the id"},
		{"none", `{"version": "1999"}`, http.StatusNotFound, "there is none"},
		{"missing", `{}`, http.StatusBadRequest, "the version to restore is missing"},
		{"unknown field", `{"versoin": "x"}`, http.StatusBadRequest, "versoin"},
	})
	if got, _ := fx.Folder.ReadMemory(); got != memorytest.MemV1 {
		t.Fatalf("a refused restore changed Memory.md to %q", got)
	}
}

func TestDeskFilesNotesAndSummaries(t *testing.T) {
	h, _ := populated(t)
	status, _, body := h.Call("GET", "/v1/desks/main/notes?date=2026-03-02", "")
	notes := httpapitest.Decode[httpapi.NotesResponse](t, body)
	if status != http.StatusOK || notes.Date != "2026-03-02" || !strings.Contains(notes.Text, "NIFTY opened flat; hedge early.") {
		t.Fatalf("GET notes = %d %s", status, body)
	}
	status, _, body = h.Call("GET", "/v1/desks/main/notes", "") // the clock's trading date, which has none
	if notes := httpapitest.Decode[httpapi.NotesResponse](t, body); status != http.StatusOK || notes.Date != "2026-03-03" || notes.Text != "" {
		t.Fatalf("GET notes of today = %d %s", status, body)
	}
	for _, bad := range []string{"2026-3-2", "2026-02-30", "yesterday"} {
		status, _, body = h.Call("GET", "/v1/desks/main/notes?date="+bad, "")
		if status != http.StatusBadRequest || !strings.Contains(body, "want a trading date YYYY-MM-DD") {
			t.Errorf("GET notes?date=%s = %d %s; want 400", bad, status, body)
		}
	}
	status, _, body = h.Call("GET", "/v1/desks/main/summaries", "")
	sums := httpapitest.Decode[httpapi.SummariesResponse](t, body)
	if status != http.StatusOK || len(sums.Summaries) != 1 {
		t.Fatalf("GET summaries = %d %s; want S1's", status, body)
	}
	s := sums.Summaries[0]
	if s.Date != "2026-03-02" || s.Session != memorytest.S1 || s.Path != "summaries/2026-03-02.md" || s.Text != memorytest.Summary ||
		s.Model != "offline" || !s.Scripted {
		t.Fatalf("summary = %+v", s)
	}
}

func TestDeskFilesSkillsAndUndo(t *testing.T) {
	h, fx := populated(t)
	status, _, body := h.Call("GET", "/v1/desks/main/skills", "")
	sk := httpapitest.Decode[httpapi.SkillsResponse](t, body)
	if status != http.StatusOK || len(sk.Skills) != 1 || sk.Skills[0] != (httpapi.SkillRow{Name: "opening-range", Description: "Trade the first 15 minutes.", Pinned: true}) ||
		len(sk.Changes) != 1 || sk.Changes[0].ID != "c-retire" || sk.Changes[0].Action != "retire" {
		t.Fatalf("GET skills = %d %s", status, body)
	}
	status, _, body = h.Call("POST", "/v1/desks/main/skills/undo", `{"change": "c-retire", "by": "asha"}`)
	undo := httpapitest.Decode[httpapi.SkillChange](t, body)
	if status != http.StatusOK || undo.Action != "undo" || undo.Skill != "breakout" || undo.ID == "" {
		t.Fatalf("POST skills/undo = %d %s", status, body)
	}
	if _, err := os.Stat(fx.Folder.Path("skills/breakout/SKILL.md")); err != nil {
		t.Fatalf("the undo did not bring the skill back: %v", err)
	}
	e := waitEvent[event.SkillsUndone](t, h)
	if e.Change != "c-retire" || e.Undo != undo.ID || e.Skill != "breakout" || e.By != "asha" {
		t.Fatalf("skills.undone = %+v", e)
	}
	status, _, body = h.Call("GET", "/v1/desks/main/skills", "")
	if sk := httpapitest.Decode[httpapi.SkillsResponse](t, body); len(sk.Changes) != 2 || sk.Changes[0].ID != undo.ID {
		t.Fatalf("GET skills after the undo = %d %s; want the undo first", status, body)
	}
	checkRefusals(t, h, "/v1/desks/main/skills/undo", []refusal{
		{"again", `{"change": "c-retire"}`, http.StatusConflict, "already undone"},
		{"none", `{"change": "c-nosuch"}`, http.StatusNotFound, "no such ledger entry"},
		{"missing", `{"by": "asha"}`, http.StatusBadRequest, "the change to undo is missing"},
	})
}

func TestDeskFilesAudit(t *testing.T) {
	h, _ := populated(t)
	status, header, body := h.Call("GET", "/v1/desks/main/audit?date=2026-03-02", "")
	if status != http.StatusOK || header.Get("Content-Type") != "application/gzip" ||
		!strings.Contains(header.Get("Content-Disposition"), `filename="main-2026-03-02.tar.gz"`) {
		t.Fatalf("GET audit = %d %v %.200s", status, header, body)
	}
	files, err := audit.ReadArchive(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("the audit bundle does not read: %v", err)
	}
	names := ""
	for _, f := range files {
		names += f.Name + " "
	}
	if !strings.Contains(names, memorytest.S1) || !strings.Contains(names, "notes") {
		t.Fatalf("the bundle of 2026-03-02 holds %s; want S1 and the notes", names)
	}
	if status, _, body := h.Call("GET", "/v1/desks/main/audit?date=02-03-2026", ""); status != http.StatusBadRequest || !strings.Contains(errorText(t, body), `date "02-03-2026"`) {
		t.Fatalf("GET audit of a bad date = %d %s", status, body)
	}
}

// TestDeskFilesEmpty: a desk that has run no turn answers with empty
// lists, not null, and 404 for the session it has not got.
func TestDeskFilesEmpty(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	for path, want := range map[string]string{
		"/v1/desks/main/memory":    `"versions": []`,
		"/v1/desks/main/skills":    `"skills": []`,
		"/v1/desks/main/summaries": `"summaries": []`,
	} {
		if status, _, body := h.Call("GET", path, ""); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %s; want %s", path, status, body, want)
		}
	}
	if status, _, body := h.Call("POST", "/v1/desks/main/memory/restore", `{"version": "2026"}`); status != http.StatusNotFound {
		t.Errorf("restore on a desk without versions = %d %s; want 404", status, body)
	}
	if status, _, body := h.Call("GET", "/v1/desks/main/audit", ""); status != http.StatusNotImplemented {
		t.Errorf("audit without AuditConfig = %d %s; want 501", status, body)
	}
}

// TestClientRestoreAndUndo: the Client's requests, and its *Error of a
// refusal.
func TestClientRestoreAndUndo(t *testing.T) {
	h, fx := populated(t)
	c := h.Client("")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	versions, _ := fx.Folder.MemoryHistory()
	res, err := c.RestoreMemory(ctx, "main", httpapi.RestoreRequest{Version: versions[1].ID})
	if err != nil || res.Restored != versions[1].ID {
		t.Fatalf("RestoreMemory = %+v, %v", res, err)
	}
	_, err = c.RestoreMemory(ctx, "main", httpapi.RestoreRequest{Version: "1999"})
	var apiErr *httpapi.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("RestoreMemory(1999) = %v; want a 404", err)
	}
	undo, err := c.UndoSkillChange(ctx, "main", httpapi.UndoRequest{Change: "c-retire"})
	if err != nil || undo.Skill != "breakout" {
		t.Fatalf("UndoSkillChange = %+v, %v", undo, err)
	}
	if e := waitEvent[event.SkillsUndone](t, h); e.By != "api" {
		t.Fatalf("skills.undone by %q, want the default api", e.By)
	}
}

// waitEvent returns the next E among the harness's events, failing the
// test after 10 s.
func waitEvent[E event.Event](t *testing.T, h *httpapitest.Harness) E {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-h.Events:
			if v, ok := e.(E); ok {
				return v
			}
		case <-deadline:
			var zero E
			t.Fatalf("no %T within 10 s", zero)
			return zero
		}
	}
}

// refusal is a body a route refuses: the status it answers and a part of
// its error's text.
type refusal struct {
	name, body string
	status     int
	says       string
}

// checkRefusals posts each refusal's body to path, a subtest each, and
// checks that the answer has its status and an error saying what it says.
func checkRefusals(t *testing.T, h *httpapitest.Harness, path string, refusals []refusal) {
	t.Helper()
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := h.Call("POST", path, tt.body)
			if status != tt.status || !strings.Contains(errorText(t, body), tt.says) {
				t.Fatalf("POST %s %s = %d %s; want %d saying %q", path, tt.body, status, body, tt.status, tt.says)
			}
		})
	}
}

// errorText returns the message of an {"error": "..."} body.
func errorText(t *testing.T, body string) string {
	t.Helper()
	return httpapitest.Decode[struct {
		Error string `json:"error"`
	}](t, body).Error
}
