package main

// End-to-end tests of damaged desk files (issue 21, item 7): one desk's
// damaged file never stops deskd nor the other desks. Through the binary:
// every file of desk m2's folder is damaged in turn, cut in half and
// emptied (as a power cut leaves it); deskd starts, desk m1 answers, and m2
// either answers (the file is rebuilt, or its damage is set aside) or is
// failed, with the file and the reason in GET /v1/desks, /healthz,
// /metrics and a desk.failed event, and the damaged file kept.

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
)

// damagedFailing are the files of a desk that cannot be rebuilt: damaged,
// they fail the desk (see desk/startfiles.go).
var damagedFailing = []string{"rollover.json", "folded-notes.json"}

// TestDamagedFilesE2E: two desks; each file of m2 in turn, cut in half and
// emptied. deskd starts (ready, exit 0 at SIGTERM), m1 answers a trigger;
// state.json is rebuilt (set aside as state.json.damaged-<time>, announced
// as file.rebuilt) and m2 answers on its session; rollover.json and
// folded-notes.json fail m2, named with the reason in its status,
// healthz's detail, deskd_desk_failed and desk.failed, left as they were;
// a damaged pause.json keeps m2 paused (a kill switch fails safe); every
// other file (the ledger and its index, the session files, the summary,
// the curator's inventory, Memory.md and its history, the notes) leaves
// m2 answering.
func TestDamagedFilesE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary once for each file of a desk, twice")
	}
	t.Parallel()
	dir := t.TempDir()
	port := pickFreePort(t)
	cfg := writeTestFile(t, dir, "deskd.yaml", fmt.Sprintf(`state_dir: state
timezone: Asia/Kolkata
listen: 127.0.0.1:%d
log: {level: info, format: json}
shutdown_timeout: 5s
models:
  offline: {provider: scripted}
`, port))
	for _, name := range []string{"m1", "m2"} {
		writeTestFile(t, dir, filepath.Join("desks.d", name+".yaml"),
			"model: offline\ninstructions: You run this desk.\ncurator: {enabled: true}\n")
	}
	state := filepath.Join(dir, "state")
	m2 := filepath.Join(state, "desks", "m2")

	// The files to damage: a day of m2 with a turn, notes folded at a
	// rollover, and a turn in the new session.
	d := startDeskd(t, "deskd (first run)", "run", "--config", cfg)
	d.waitReady(t)
	answer(t, d, "m1", "m1-first")
	answer(t, d, "m2", "m2-first")
	writeTestFile(t, m2, filepath.Join("notes", time.Now().In(istZone).Format(time.DateOnly)+".md"), "- the tape was slow\n")
	writeTestFile(t, m2, "Memory.md", "# Lessons\n\n- read the tape\n")
	if status, body := d.call(t, http.MethodPost, "/v1/desks/m2/rollover", "", ""); status != http.StatusOK {
		d.fail(t, "POST rollover = %d %s", status, body)
	}
	answer(t, d, "m2", "m2-second")
	for _, op := range []string{"pause", "resume"} { // pause.json
		if status, body := d.call(t, http.MethodPost, "/v1/desks/m2/"+op, "", ""); status != http.StatusOK {
			d.fail(t, "POST %s = %d %s", op, status, body)
		}
	}
	d.terminate(t)
	template := filepath.Join(dir, "template")
	if err := os.Rename(state, template); err != nil {
		t.Fatal(err)
	}
	var files []string
	err := filepath.WalkDir(filepath.Join(template, "desks", "m2"), func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			rel, _ := filepath.Rel(filepath.Join(template, "desks", "m2"), path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"state.json", "triggers.jsonl", "triggers.jsonl.idx", "Memory.md", "pause.json"}, damagedFailing...) {
		if !slices.Contains(files, want) {
			t.Fatalf("m2's folder has no %s to damage: %v", want, files)
		}
	}

	for _, rel := range files {
		for _, mode := range []string{"half", "empty"} {
			t.Run(rel+"/"+mode, func(t *testing.T) {
				if err := os.RemoveAll(state); err != nil {
					t.Fatal(err)
				}
				if err := os.CopyFS(state, os.DirFS(template)); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(m2, rel)
				whole, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				damaged := whole[:0]
				if mode == "half" {
					damaged = whole[:len(whole)/2]
				}
				if err := os.WriteFile(path, damaged, 0o640); err != nil {
					t.Fatal(err)
				}

				d := startDeskd(t, "deskd ("+rel+" "+mode+")", "run", "--config", cfg)
				d.waitReady(t)
				answer(t, d, "m1", "m1-after")
				st := deskState(t, d, "m2")
				switch {
				case slices.Contains(damagedFailing, rel):
					checkFailed(t, d, st, path, damaged)
				case rel == "pause.json":
					// A kill switch fails safe: the desk runs, paused.
					if st.State != "paused" {
						d.fail(t, "m2 with a damaged pause file is %s, want paused", st.State)
					}
				default:
					if st.State == "failed" {
						d.fail(t, "m2 failed with %s %s: %+v", rel, mode, st.Failed)
					}
					answer(t, d, "m2", "m2-after")
				}
				if rel == "state.json" {
					checkRebuilt(t, d, path, damaged)
				}
				d.terminate(t)
			})
		}
	}
}

// deskStatus is what the test reads of a desk in GET /v1/desks.
type deskStatus struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Session string `json:"session"`
	Failed  *struct {
		File   string `json:"file"`
		Reason string `json:"reason"`
	} `json:"failed"`
}

// deskState returns desk name's entry in GET /v1/desks.
func deskState(t *testing.T, d *deskdProc, name string) deskStatus {
	t.Helper()
	status, body := d.call(t, http.MethodGet, "/v1/desks", "", "")
	var out struct {
		Desks []deskStatus `json:"desks"`
	}
	if err := json.Unmarshal([]byte(body), &out); status != http.StatusOK || err != nil {
		d.fail(t, "GET /v1/desks = %d %s (%v)", status, body, err)
	}
	for _, st := range out.Desks {
		if st.Name == name {
			return st
		}
	}
	d.fail(t, "GET /v1/desks does not list %s: %s", name, body)
	return deskStatus{}
}

// answer posts a trigger to desk and waits for its answer.
func answer(t *testing.T, d *deskdProc, desk, id string) {
	t.Helper()
	status, body := d.call(t, http.MethodPost, "/v1/desks/"+desk+"/triggers", "", `{"text": "NIFTY 22000", "kind": "manual", "id": "`+id+`"}`)
	if status != http.StatusAccepted {
		d.fail(t, "POST a trigger to %s = %d %s", desk, status, body)
	}
	status, body = d.call(t, http.MethodGet, "/v1/desks/"+desk+"/triggers/"+id+"?wait=30s", "", "")
	var out map[string]any
	_ = json.Unmarshal([]byte(body), &out)
	if status != http.StatusOK || out["state"] != "answered" {
		d.fail(t, "trigger %s of %s = %d %s, want it answered", id, desk, status, body)
	}
}

// checkFailed checks that m2 is failed on path, in its status, healthz,
// the metrics and an event, and that the damaged file is left as it was.
func checkFailed(t *testing.T, d *deskdProc, st deskStatus, path string, damaged []byte) {
	t.Helper()
	if st.State != "failed" || st.Failed == nil || st.Failed.File != path || !strings.Contains(st.Failed.Reason, path) {
		d.fail(t, "m2 in GET /v1/desks = %+v, want failed on %s", st, path)
	}
	status, body := d.call(t, http.MethodGet, "/healthz", "", "")
	var health httpapi.HealthResponse
	if err := json.Unmarshal([]byte(body), &health); status != http.StatusOK || err != nil || health.Failed["m2"].File != path {
		d.fail(t, "GET /healthz = %d %s, want 200 naming m2's %s", status, body, path)
	}
	if status, body := d.call(t, http.MethodGet, "/metrics", "", ""); status != http.StatusOK || !strings.Contains(body, `deskd_desk_failed{desk="m2"} 1`) {
		d.fail(t, "GET /metrics = %d, without deskd_desk_failed{desk=\"m2\"} 1", status)
	}
	if status, body := d.call(t, http.MethodPost, "/v1/desks/m2/triggers", "", `{"text": "x"}`); status != http.StatusServiceUnavailable || !strings.Contains(body, "failed to start") {
		d.fail(t, "POST a trigger to the failed m2 = %d %s, want 503 saying it failed to start", status, body)
	}
	if d.count(isEvent("desk.failed", "desk", "m2", "file", path)) != 1 {
		d.fail(t, "no desk.failed event of m2 naming %s", path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != string(damaged) {
		d.fail(t, "%s now holds %q (%v), want the damaged file left as it was", path, b, err)
	}
}

// checkRebuilt checks that the damaged state file was set aside, kept as
// it was, and announced as rebuilt.
func checkRebuilt(t *testing.T, d *deskdProc, path string, damaged []byte) {
	t.Helper()
	var aside string
	if d.count(func(l stderrLine) bool {
		if isEvent("file.rebuilt", "desk", "m2", "path", path)(l) {
			aside = l.Str("set_aside")
			return true
		}
		return false
	}) != 1 {
		d.fail(t, "no file.rebuilt event of %s", path)
	}
	if !strings.HasPrefix(aside, path+".damaged-") {
		d.fail(t, "file.rebuilt set %s aside as %q, want %s.damaged-<time>", path, aside, path)
	}
	if b, err := os.ReadFile(aside); err != nil || string(b) != string(damaged) {
		d.fail(t, "%s holds %q (%v), want the damaged state file", aside, b, err)
	}
}
