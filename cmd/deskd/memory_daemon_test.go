package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory/memorytest"
)

// versionedDesk is memorytest.New's desk with Memory.md written three
// times: two versions are kept, replaced on 2026-03-01 and 2026-03-02.
func versionedDesk(t *testing.T) *opsSetup {
	t.Helper()
	s := newOpsSetup(t)
	for i, at := range []string{"2026-02-28T10:00:00Z", "2026-03-01T10:00:00Z", "2026-03-02T10:00:00Z"} {
		s.writeMemoryAt(t, at, fmt.Sprintf("- lesson %d\n", i+1))
	}
	return s
}

// TestMemoryRestoreThroughDaemon: deskd memory --restore with a unique
// prefix goes through the running deskd, which restores on the desk's
// loop and announces memory.restored on the event stream.
func TestMemoryRestoreThroughDaemon(t *testing.T) {
	s := versionedDesk(t)
	d := startInProcess(t, "deskd", s.Config, apiStart)
	addr := d.waitReady(t)
	events := followSSE(t, addr, "?desk=main", "")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"memory", "main", "--restore", "2026-03-01", "--config", s.Config, "--addr", addr}, &out, &errOut)
	// The replaced text is kept under the daemon's clock: apiStart.
	if code != 0 || !strings.Contains(out.String(), "restored Memory.md from 20260301T100000.000000000Z; the replaced version is kept as 20260302T043005.000000000Z") ||
		strings.Contains(out.String(), "no running deskd") {
		t.Fatalf("memory --restore = %d\n%s%s", code, &out, &errOut)
	}
	e := events.next(t, "memory.restored", `"version":"20260301T100000.000000000Z"`)
	if !strings.Contains(e.Data, `"kept_as":"20260302T043005.000000000Z"`) || !strings.Contains(e.Data, `"by":"`+operator()+`"`) {
		t.Fatalf("memory.restored = %s", e.Data)
	}
	if text, _ := s.Folder.ReadMemory(); text != "- lesson 1\n" {
		t.Fatalf("Memory.md = %q after the restore, want lesson 1", text)
	}
	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"memory", "main", "--restore", "2026", "--config", s.Config, "--addr", addr}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "20260301T100000.000000000Z, 20260302T043005.000000000Z, 20260302T100000.000000000Z") || !strings.Contains(errOut.String(), "HTTP 409") {
		t.Fatalf("memory --restore of an ambiguous prefix = %d\n%s%s", code, &out, &errOut)
	}
}

// TestMemoryRestoreWithoutDaemon: with no deskd answering, the restore is
// done on the folder and the CLI says no event announced it.
func TestMemoryRestoreWithoutDaemon(t *testing.T) {
	s := versionedDesk(t)
	addr := fmt.Sprintf("127.0.0.1:%d", pickFreePort(t))
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"memory", "main", "--restore", "20260301", "--config", s.Config, "--addr", addr}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "no running deskd answered") || !strings.Contains(out.String(), "no event announced it") ||
		!strings.Contains(out.String(), "restored Memory.md from 20260301T100000.000000000Z") {
		t.Fatalf("memory --restore without deskd = %d\n%s%s", code, &out, &errOut)
	}
	if text, _ := s.Folder.ReadMemory(); text != "- lesson 1\n" {
		t.Fatalf("Memory.md = %q after the restore, want lesson 1", text)
	}
}

// TestMemoryHistoryShortIDs: --history lists each version's time, size
// and the shortest prefix that names it.
func TestMemoryHistoryShortIDs(t *testing.T) {
	s := versionedDesk(t)
	code, out, _ := runOps(t, s, "memory", "main", "--history")
	want := []string{
		"20260301T100000.000000000Z  2026-03-01 10:00:00 UTC  11 bytes  short: 20260301T1000",
		"20260302T100000.000000000Z  2026-03-02 10:00:00 UTC  11 bytes  short: 20260302T1000",
	}
	if code != 0 || strings.TrimSpace(out) != strings.Join(want, "\n") {
		t.Fatalf("--history = %d\n%s\nwant\n%s", code, out, strings.Join(want, "\n"))
	}
}

// TestSkillsEmpty: a desk without skills or curator changes says so.
func TestSkillsEmpty(t *testing.T) {
	code, out, _ := runOps(t, newOpsSetup(t), "skills", "main")
	if code != 0 || out != "desk main has no skills\nno curator changes\n" {
		t.Fatalf("skills of an empty desk = %d %q", code, out)
	}
}

// TestSkillsUndoThroughDaemon: deskd skills --undo goes through the
// running deskd, which announces skills.undone.
func TestSkillsUndoThroughDaemon(t *testing.T) {
	s := newOpsSetup(t)
	memorytest.Write(t, s.DeskDir, "skills/.archive/breakout-x/SKILL.md", "---\nname: breakout\ndescription: Old.\n---\n")
	memorytest.Write(t, s.DeskDir, "curator/ledger.jsonl", `{"id":"c1","at":"2026-03-01T18:30:04Z","trading_date":"2026-03-01","action":"retire",`+
		`"skill":"breakout","reason":"unused","before":"","after":"","archived_to":"skills/.archive/breakout-x"}`+"\n")
	d := startInProcess(t, "deskd", s.Config, apiStart)
	addr := d.waitReady(t)
	events := followSSE(t, addr, "?desk=main", "")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"skills", "main", "--undo", "c1", "--config", s.Config, "--addr", addr}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "undo retire c1 (breakout)") || strings.Contains(out.String(), "no running deskd") {
		t.Fatalf("skills --undo = %d\n%s%s", code, &out, &errOut)
	}
	if e := events.next(t, "skills.undone", `"change":"c1"`); !strings.Contains(e.Data, `"skill":"breakout"`) {
		t.Fatalf("skills.undone = %s", e.Data)
	}
	code, out2, _ := runOps(t, s, "skills", "main")
	if code != 0 || !strings.Contains(out2, "breakout: Old.") {
		t.Fatalf("skills after the undo = %d\n%s", code, out2)
	}
}
