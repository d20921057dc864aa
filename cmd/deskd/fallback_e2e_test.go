package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
)

// TestFallbackE2EScriptedIsImpossibleToMiss: a desk whose primary, an
// openai model, answers 500, and whose fallback is the scripted model:
// the turn is answered by the fallback, logged at warn with a sentence
// naming both, model.failed is at warn, status's last_answer names the
// scripted fallback with fallback true, and deskd status says FALLBACK.
func TestFallbackE2EScriptedIsImpossibleToMiss(t *testing.T) {
	primary := failingPrimary(t)
	dir := t.TempDir()
	cfg := apiConfig(t, dir, openAIModel(primary), "  offline: {provider: scripted}\n", "fallbacks: [offline]\n")
	d, addr := startModelsDeskd(t, cfg)
	if got := d.postPastPrimary(t); got["state"] != "answered" || !strings.HasPrefix(got["reply"].(string), "[scripted]") {
		t.Fatalf("trigger f1 = %v, want answered by the scripted fallback", got)
	}

	done := d.waitFor(t, time.Now().Add(60*time.Second), "turn.completed", isEvent("turn.completed"))
	var completed map[string]any
	if err := json.Unmarshal([]byte(done.Raw), &completed); err != nil {
		t.Fatal(err)
	}
	if completed["level"] != "warn" || completed["fallback"] != true || completed["primary"] != "m" || completed["model"] != "offline" ||
		!strings.HasPrefix(completed["message"].(string), "desk main: turn 1 of session ") ||
		!strings.Contains(completed["message"].(string), " answered by fallback offline (scripted) because primary m failed: ") {
		t.Errorf("turn.completed's log line = %s, want it at warn, fallback true, primary m, with the sentence", done.Raw)
	}
	lines, _ := d.stderr.snapshot()
	failed := 0
	for _, l := range lines {
		if l.Event() == "model.failed" {
			failed++
			if !strings.Contains(l.Raw, `"level":"warn"`) {
				t.Errorf("model.failed is not at warn: %s", l.Raw)
			}
		}
	}
	if failed == 0 {
		t.Error("no model.failed line")
	}

	code, body := d.call(t, "GET", "/v1/desks/main", "", "")
	var st struct {
		Model      string `json:"model"`
		LastAnswer *struct {
			Model, Provider    string
			Scripted, Fallback bool
			At                 time.Time
		} `json:"last_answer"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("GET /v1/desks/main = %d %s (%v)", code, body, err)
	}
	if a := st.LastAnswer; st.Model != "m" || a == nil || a.Model != "offline" || a.Provider != "scripted" || !a.Scripted || !a.Fallback || a.At.IsZero() {
		t.Errorf("status = %s, want model m and last_answer the scripted fallback offline", body)
	}

	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"status", "--addr", addr}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "m -> FALLBACK offline (SCRIPTED)") {
		t.Errorf("deskd status = %d, want m -> FALLBACK offline (SCRIPTED):\n%s%s", code, out.String(), errb.String())
	}
	var sj bytes.Buffer
	if code := run(t.Context(), []string{"status", "--json", "--addr", addr}, &sj, &errb); code != 0 {
		t.Fatalf("deskd status --json = %d %s", code, errb.String())
	}
	var desks httpapi.DesksResponse
	if err := json.Unmarshal(sj.Bytes(), &desks); err != nil || len(desks.Desks) != 1 || desks.Desks[0].LastAnswer == nil || !desks.Desks[0].LastAnswer.Fallback {
		t.Errorf("deskd status --json = %s (%v), want last_answer with fallback true", sj.String(), err)
	}

	// After a restart, the status still names the fallback.
	d.terminate(t)
	d2, addr2 := startModelsDeskd(t, cfg)
	var again bytes.Buffer
	if code := run(t.Context(), []string{"status", "--addr", addr2}, &again, &errb); code != 0 ||
		!strings.Contains(again.String(), "m -> FALLBACK offline (SCRIPTED)") {
		t.Errorf("deskd status after a restart = %d:\n%s%s", code, again.String(), errb.String())
	}
	d2.terminate(t)
}
