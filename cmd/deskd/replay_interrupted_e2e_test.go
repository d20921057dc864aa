package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/replay"
	"github.com/deskd/deskd/router/routertest"
)

// TestReplayInterruptedE2E: a day with an interrupted trigger, through
// the binary. deskd is SIGKILLed while the model holds the answer to the
// second trigger (its message recorded, its reply never come), restarted
// (the trigger is now interrupted) and answers one more; `deskd replay`
// of that day, with the restarted daemon running, lists the interrupted
// trigger in order with its original side marked interrupted and no
// reply (none invented from the session or the model), and the
// candidate's answer to it; the live desk folder's every file hash is
// the same before and after the replay, and the model of record hears
// nothing from it.
func TestReplayInterruptedE2E(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	llm, _ := newFakeLLM(t, "HOLD")
	cfg := apiConfig(t, t.TempDir(), openAIModel(llm), "  other: {provider: scripted}\n", "")
	env := []string{"DESKD_E2E_KEY=test-key"}

	d := startDeskdEnv(t, "first deskd", env, "run", "--config", cfg, "--clock-start", "2026-12-01T04:00:00Z")
	d.waitReady(t)
	if s, _ := d.post(t, `{"id": "before", "text": "Morning check of the tape.", "kind": "manual"}`); s != 202 {
		d.fail(t, "POST before = %d", s)
	}
	if tr := answered(t, d, "before"); tr["state"] != "answered" {
		d.fail(t, "before = %v", tr)
	}
	if s, _ := d.post(t, `{"id": "held", "text": "HOLD the INFY order <b>now</b>", "kind": "manual"}`); s != 202 {
		d.fail(t, "POST held = %d", s)
	}
	llm.Await(t, routertest.UserContains("HOLD the INFY order"))
	killNow(t, d)

	d = startDeskdEnv(t, "second deskd", env, "run", "--config", cfg, "--clock-start", "2026-12-01T05:00:00Z")
	d.waitReady(t)
	d.waitFor(t, time.Now().Add(60*time.Second), "turn.interrupted of held", isEvent("turn.interrupted", "trigger", "held"))
	if held := d.trigger(t, "held"); held["state"] != "interrupted" || held["reply"] != nil && held["reply"] != "" {
		d.fail(t, "held after the restart = %v, want interrupted with no reply", held)
	}
	if s, _ := d.post(t, `{"id": "after", "text": "Afternoon check of the tape.", "kind": "manual"}`); s != 202 {
		d.fail(t, "POST after = %d", s)
	}
	if tr := answered(t, d, "after"); tr["state"] != "answered" {
		d.fail(t, "after = %v", tr)
	}

	deskDir := filepath.Join(filepath.Dir(cfg), "state", "desks", "main")
	before := treeHashes(t, deskDir)
	requests := llm.Count()
	out := filepath.Join(t.TempDir(), "replay")
	stdout, stderr, code := runReplayEnv(t, env, "main", "--config", cfg, "--date", "2026-12-01", "--model", "other", "--out", out)
	if code != 0 || !strings.Contains(stdout, "replayed 3 of 3 triggers of main 2026-12-01") || !strings.Contains(stderr, "3/3 triggers") {
		t.Fatalf("deskd replay = %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	checkTreeUnchanged(t, deskDir, before, "the replay")
	if n := llm.Count(); n != requests {
		t.Errorf("the desk's model got %d requests during the replay, want none (the candidate is other)", n-requests)
	}

	rep, err := replay.ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Start.Skills == nil {
		t.Errorf("report.json's start.skills is null; want [] (the desk has no skills)")
	}
	var ids []string
	for _, row := range rep.Triggers {
		ids = append(ids, row.ID)
	}
	if fmt.Sprint(ids) != "[before held after]" {
		t.Fatalf("the report's triggers %v, want [before held after] in order", ids)
	}
	held := rep.Triggers[1]
	if held.Outcome != "interrupted" || held.Original.Reply != "" || !strings.Contains(held.Original.Error, "interrupted") {
		t.Errorf("held's original side: outcome %q, reply %q, error %q; want interrupted, no reply, and why", held.Outcome, held.Original.Reply, held.Original.Error)
	}
	if !strings.HasSuffix(held.Text, "HOLD the INFY order <b>now</b>") {
		t.Errorf("held's text %q: want the message the model saw", held.Text)
	}
	if c := held.Candidate; c == nil || c.Model != "other" || !c.Scripted || !strings.HasPrefix(c.Reply, "[scripted]") || !held.Differs {
		t.Errorf("held's candidate side %+v, differs %v: want the scripted candidate's answer, differing from no reply", c, held.Differs)
	}
	for _, i := range []int{0, 2} {
		if row := rep.Triggers[i]; row.Outcome != "answered" || row.Original.Reply != "noted" {
			t.Errorf("%s: outcome %q, original reply %q; want answered, the ledger's \"noted\"", row.ID, row.Outcome, row.Original.Reply)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, replay.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(page)
	if i := strings.Index(sec, `id="t-held"`); i < 0 {
		t.Fatalf("report.html has no section of held")
	} else {
		sec = sec[i:]
		if j := strings.Index(sec, "</section>"); j >= 0 {
			sec = sec[:j]
		}
	}
	for _, want := range []string{"original: interrupted", `class="side original"`, `class="side candidate"`, "[scripted]", "&lt;b&gt;now&lt;/b&gt;"} {
		if !strings.Contains(sec, want) {
			t.Errorf("report.html's section of held lacks %q:\n%s", want, sec)
		}
	}
}
