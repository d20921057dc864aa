package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

func TestContextCommandCountsBySource(t *testing.T) {
	s := newOpsSetup(t)
	if _, err := s.Folder.WriteMemory(strings.Repeat("- a lasting lesson\n", 40)); err != nil {
		t.Fatal(err)
	}
	id := "20260301T100000Z-c0ffee00"
	if err := s.Folder.WriteJSON("state.json", map[string]string{"session": id, "trading_date": "2026-03-01"}); err != nil {
		t.Fatal(err)
	}
	s.session(t, memory.Record{At: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Session: id, Date: "2026-03-01"},
		memory.Record{Type: memory.RecordMessage, Role: "user", Text: strings.Repeat("x", 400), Trigger: "t1"},
		memory.Record{Type: memory.RecordMessage, Role: "assistant", Text: "ok", Trigger: "t1"},
	)
	before, _ := s.Folder.ReadSession(id)

	out := runOpsOK(t, s, "context", "main", "--json")
	var rep router.ContextReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	got := map[string]int64{}
	for _, src := range rep.Sources {
		got[src.Name] = src.Tokens
	}
	if rep.Session != id || !rep.Estimate || got["memory"] != 190 || got["history"] != 109 || got["tools"] == 0 || got["instructions"] == 0 {
		t.Fatalf("report = %+v", rep)
	}
	var sum int64
	for _, v := range got {
		sum += v
	}
	if rep.Total != sum {
		t.Errorf("total %d, sources add up to %d", rep.Total, sum)
	}
	code, out, _ := runOps(t, s, "context", "main")
	if code != 0 || !strings.Contains(out, "estimates") || !strings.Contains(out, "memory") {
		t.Errorf("table = %d\n%s", code, out)
	}
	if after, _ := s.Folder.ReadSession(id); len(after) != len(before) {
		t.Errorf("deskd context wrote to the session file")
	}
}
