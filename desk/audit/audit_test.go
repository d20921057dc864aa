package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/router"
)

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// request is the audit of date of the fixture desk s, as deskd audit asks
// for it: trading dates in Asia/Kolkata, the config files beside the
// fixture's, no config snapshots, made on 2026-03-10.
func request(t *testing.T, s *memorytest.Desk, date string) Request {
	t.Helper()
	ist, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	d, err := memory.ParseDate(date)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Folder: s.Folder, Date: d, Day: memory.TradingDay{Location: ist}, Now: memorytest.UTC(t, "2026-03-10T04:00:00Z"), Version: "test",
		Config: Config{SnapshotDir: "config-history", Main: s.Config, Desk: filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml")}}
}

// bundleWith builds the bundle of date of s, with the config that edit
// makes of the request's, archives it and reads the archive back. It
// returns the files by their names inside the bundle's folder, and the
// names in order.
func bundleWith(t *testing.T, s *memorytest.Desk, date string, edit func(*Config)) (map[string]string, []string) {
	t.Helper()
	r := request(t, s, date)
	if edit != nil {
		edit(&r.Config)
	}
	b, err := Build(r)
	if err != nil {
		t.Fatalf("Build(%s): %v", date, err)
	}
	data, err := b.Archive(r.Now)
	if err != nil {
		t.Fatal(err)
	}
	read, err := ReadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != len(b.Files())+2 {
		t.Errorf("the archive holds %d files, want the bundle's %d and the manifest and sums", len(read), len(b.Files()))
	}
	root := "deskd-audit-main-" + date + "/"
	byName := map[string]string{}
	var names []string
	for _, f := range read {
		name, ok := strings.CutPrefix(f.Name, root)
		if !ok {
			t.Errorf("%s is outside the bundle's folder %s", f.Name, root)
		}
		byName[name] = string(f.Data)
		names = append(names, name)
	}
	return byName, names
}

// bundleOf is bundleWith with the request's config.
func bundleOf(t *testing.T, s *memorytest.Desk, date string) (map[string]string, []string) {
	t.Helper()
	return bundleWith(t, s, date, nil)
}

func TestBuildBundle(t *testing.T) {
	s := memorytest.Populated(t)
	files, names := bundleOf(t, s, "2026-03-02")
	want := []string{
		"MANIFEST.txt",
		"SHA256SUMS",
		"sessions/" + memorytest.S1 + ".jsonl",
		"sessions/" + memorytest.S1 + ".html",
		"summary/2026-03-02.md",
		"summary/history/20260302T183000.500000000Z.md",
		"notes/2026-03-02.md",
		"memory/Memory.before.md",
		"memory/Memory.after.md",
		"memory/Memory.diff",
		"curator/ledger.jsonl",
		"triggers/triggers.jsonl",
		"rollover.json",
		"config/deskd.yaml",
		"config/desks.d/main.yaml",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the bundle holds\n  %s\nwant\n  %s", strings.Join(names, "\n  "), strings.Join(want, "\n  "))
	}

	// Each file is in the manifest and in SHA256SUMS with its hash.
	manifest, sums := files["MANIFEST.txt"], files["SHA256SUMS"]
	var sumLines []string
	for _, name := range want[2:] {
		data := files[name]
		line := fmt.Sprintf("%s  %d  %s: ", sha256Of(data), len(data), name)
		if !strings.Contains(manifest, "\n"+line) {
			t.Errorf("MANIFEST.txt lacks the line %q", line)
		}
		sumLines = append(sumLines, sha256Of(data)+"  "+name)
	}
	if want := strings.Join(sumLines, "\n") + "\n"; sums != want {
		t.Errorf("SHA256SUMS =\n%s\nwant\n%s", sums, want)
	}

	// The day's files, as they are in the desk folder.
	for name, src := range map[string]string{
		"sessions/" + memorytest.S1 + ".jsonl": filepath.Join(s.DeskDir, "sessions", memorytest.S1+".jsonl"),
		"summary/2026-03-02.md":                filepath.Join(s.DeskDir, "summaries", "2026-03-02.md"),
		"notes/2026-03-02.md":                  filepath.Join(s.DeskDir, "notes", "2026-03-02.md"),
		"rollover.json":                        filepath.Join(s.DeskDir, "rollover.json"),
		"config/deskd.yaml":                    s.Config,
		"config/desks.d/main.yaml":             filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml"),
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if files[name] != string(b) {
			t.Errorf("%s differs from %s", name, src)
		}
	}
	if got := files["summary/history/20260302T183000.500000000Z.md"]; got != memorytest.EarlySummary {
		t.Errorf("the summary's earlier version = %q, want %q", got, memorytest.EarlySummary)
	}
	if !strings.Contains(files["sessions/"+memorytest.S1+".html"], "Checkpoint: long NIFTY 22500 CE, hedged.") {
		t.Error("the rendered session lacks its checkpoint")
	}

	// Memory.md before the day's fold (after the operator's edit), after
	// the rollover, and the diff.
	if got := files["memory/Memory.before.md"]; got != memorytest.MemV2 {
		t.Errorf("Memory.before.md =\n%s\nwant\n%s", got, memorytest.MemV2)
	}
	if got := files["memory/Memory.after.md"]; got != memorytest.MemV3 {
		t.Errorf("Memory.after.md =\n%s\nwant\n%s", got, memorytest.MemV3)
	}
	wantDiff := `--- a/Memory.md
+++ b/Memory.md
@@ -1,3 +1,6 @@
 # Memory
 - Respect the stop loss.
 - Operator: no trades before 09:20.
+
+## 2026-03-02
+- NIFTY opened flat; hedge early.
`
	if got := files["memory/Memory.diff"]; got != wantDiff {
		t.Errorf("Memory.diff =\n%s\nwant\n%s", got, wantDiff)
	}

	// The ledgers: only the trading date's entries.
	wantCurator := `{"at":"2026-03-02T18:30:03Z","trading_date":"2026-03-02","session":"` + memorytest.S1 + `","action":"inventory","skills":[]}` + "\n"
	if got := files["curator/ledger.jsonl"]; got != wantCurator {
		t.Errorf("curator/ledger.jsonl =\n%s\nwant\n%s", got, wantCurator)
	}
	wantTriggers := `{"at":"2026-03-01T18:31:00Z","id":"early-0302","state":"queued"}` + "\n" +
		`{"at":"2026-03-02T03:30:00Z","id":"open@1","state":"queued"}` + "\n" +
		`{"at":"2026-03-03T04:00:00Z","id":"open@1","state":"answered","session":"` + memorytest.S1 + `","turn":1}` + "\n"
	if got := files["triggers/triggers.jsonl"]; got != wantTriggers {
		t.Errorf("triggers/triggers.jsonl =\n%s\nwant\n%s", got, wantTriggers)
	}

	// The manifest says what the bundle is and where its parts came from.
	configSums := sha256Of(files["config/deskd.yaml"]) + "  config/deskd.yaml\n" +
		sha256Of(files["config/desks.d/main.yaml"]) + "  config/desks.d/main.yaml\n"
	for _, want := range []string{
		"desk: main\n",
		"trading date: 2026-03-02 (Asia/Kolkata, from 2026-03-02 00:00:00 IST to 2026-03-03 00:00:00 IST)\n",
		"sessions: 1 (" + memorytest.S1 + ")\n",
		"memory before: Memory.md as the day's fold of notes read it (session " + memorytest.S1 + ", 2026-03-03T00:00:01+05:30); " +
			"from history/memory/20260302T183002.000000000Z.md (replaced at 2026-03-02T18:30:02Z), the version the fold replaced\n",
		"memory after: Memory.md as the day's fold left it (session " + memorytest.S1 + ", 2026-03-03T00:00:01+05:30); " +
			"from history/memory/20260303T183002.000000000Z.md (replaced at 2026-03-03T18:30:02Z), what the fold wrote, kept when it was replaced in turn\n",
		"model answers: 6 in the day's sessions, 6 of them SCRIPTED (written by deskd's offline scripted model, not a real LLM):\n" +
			"  session " + memorytest.S1 + " 2026-03-02T09:00:02+05:30 reply to open@1 (tool calls): offline (scripted) SCRIPTED\n",
		"  session " + memorytest.S1 + " 2026-03-03T00:00:01+05:30 fold: offline (scripted) SCRIPTED\n",
		"trigger ledger: 1 line that did not parse left out\n",
		"not a snapshot of the config in force on 2026-03-02",
		"config sha256: " + sha256Of(configSums) + " ",
	} {
		if !strings.Contains(manifest, want) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", want, manifest)
		}
	}
}

func TestBuildDayWithoutFold(t *testing.T) {
	s := memorytest.Populated(t)
	files, names := bundleOf(t, s, "2026-03-03")
	for _, name := range names {
		if strings.HasPrefix(name, "summary/") || strings.HasPrefix(name, "notes/") || name == "rollover.json" {
			t.Errorf("the bundle of 2026-03-03 holds %s, which is of another day", name)
		}
	}
	if _, ok := files["sessions/"+memorytest.S2+".jsonl"]; !ok {
		t.Errorf("the bundle of 2026-03-03 lacks session %s: %v", memorytest.S2, names)
	}
	// No fold of 2026-03-03 is recorded: before is Memory.md at the day's
	// end, after is Memory.md now, as no session has followed.
	if files["memory/Memory.before.md"] != memorytest.MemV3 || files["memory/Memory.after.md"] != memorytest.MemV4 {
		t.Errorf("before =\n%s\nafter =\n%s\nwant v3 and v4", files["memory/Memory.before.md"], files["memory/Memory.after.md"])
	}
	if !strings.Contains(files["memory/Memory.diff"], "@@ -4,3 +4,6 @@\n \n ## 2026-03-02\n - NIFTY opened flat; hedge early.\n+\n+## 2026-03-03\n+- Quiet day.\n") {
		t.Errorf("Memory.diff =\n%s", files["memory/Memory.diff"])
	}
	manifest := files["MANIFEST.txt"]
	for _, want := range []string{
		"memory before: Memory.md at the end of the trading day (no fold of the day's notes is recorded)",
		"memory after: Memory.md now (no session has followed the day's sessions yet)",
		"from Memory.md, the current file\n",
		"summary: none",
		"notes: none",
	} {
		if !strings.Contains(manifest, want) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", want, manifest)
		}
	}
	if got := files["curator/ledger.jsonl"]; !strings.Contains(got, `"trading_date":"2026-03-03"`) || strings.Count(got, "\n") != 1 {
		t.Errorf("curator/ledger.jsonl of 2026-03-03 =\n%s", got)
	}
	// The answer to 2026-03-02's open@1 was recorded on 2026-03-03: it is
	// of both days.
	wantTriggers := `{"at":"2026-03-03T04:00:00Z","id":"open@1","state":"answered","session":"` + memorytest.S1 + `","turn":1}` + "\n" +
		`{"at":"2026-03-02T18:31:00Z","id":"open@2","state":"queued"}` + "\n"
	if got := files["triggers/triggers.jsonl"]; got != wantTriggers {
		t.Errorf("triggers/triggers.jsonl of 2026-03-03 =\n%s", got)
	}
}

func TestBuildWithoutLedgers(t *testing.T) {
	s := memorytest.Populated(t)
	for _, name := range []string{"curator/ledger.jsonl", "triggers.jsonl"} {
		if err := os.Remove(filepath.Join(s.DeskDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	files, names := bundleOf(t, s, "2026-03-02")
	for _, name := range names {
		if strings.HasPrefix(name, "curator/") || strings.HasPrefix(name, "triggers/") {
			t.Errorf("the bundle holds %s, but the desk has no such ledger", name)
		}
	}
	for _, want := range []string{
		"curator ledger: none (curator/ledger.jsonl does not exist)\n",
		"trigger ledger: none (triggers.jsonl does not exist)\n",
	} {
		if !strings.Contains(files["MANIFEST.txt"], want) {
			t.Errorf("MANIFEST.txt lacks %q", want)
		}
	}
}

// TestBuildFoldThatCreatedMemory: a new desk's first fold creates
// Memory.md (there was none, so nothing is kept in history/). The audit of
// that day shows an empty before, the fold's Memory.md after, and the diff
// between them, not today's Memory.md twice with an empty diff. The next
// day's fold is shown as what it read and what it wrote.
func TestBuildFoldThatCreatedMemory(t *testing.T) {
	s := memorytest.New(t)
	d := memorytest.NewLive(t, s, "2026-03-02T04:00:00Z")
	d.Turn("t1", "Check the tape.\nNOTE: NIFTY gapped up; hedge early.")
	d.At("2026-03-02T18:31:00Z") // 00:01 IST, 3 March: the rollover folds the notes of 2 March
	d.Turn("t2", "Good morning.\nNOTE: quiet open.")
	first, err := d.Folder.ReadMemory()
	if err != nil || !strings.Contains(first, "NIFTY gapped up; hedge early.") {
		t.Fatalf("Memory.md after the first fold = %q, %v", first, err)
	}
	d.At("2026-03-03T18:31:00Z") // the rollover folds the notes of 3 March
	d.Turn("t3", "Hello.")
	second, err := d.Folder.ReadMemory()
	if err != nil || !strings.Contains(second, "quiet open.") {
		t.Fatalf("Memory.md after the second fold = %q, %v", second, err)
	}

	files, _ := bundleOf(t, s, "2026-03-02")
	if got := files["memory/Memory.before.md"]; got != "" {
		t.Errorf("Memory.before.md of 2026-03-02 = %q, want empty: there was no Memory.md before the day's fold", got)
	}
	if got := files["memory/Memory.after.md"]; got != first {
		t.Errorf("Memory.after.md of 2026-03-02 =\n%s\nwant what the fold wrote:\n%s", got, first)
	}
	if diff := files["memory/Memory.diff"]; !strings.Contains(diff, "@@ -0,0 +1,3 @@\n") || !strings.Contains(diff, "\n+NIFTY gapped up; hedge early.\n") {
		t.Errorf("Memory.diff of 2026-03-02 =\n%s\nwant the fold's lines added", diff)
	}
	if m := files["MANIFEST.txt"]; !strings.Contains(m, "memory before: Memory.md as the day's fold of notes read it") ||
		!strings.Contains(m, "no Memory.md: there was none, and the fold created it") {
		t.Errorf("MANIFEST.txt does not say where the day's before came from:\n%s", m)
	}

	files, _ = bundleOf(t, s, "2026-03-03")
	if got := files["memory/Memory.before.md"]; got != first {
		t.Errorf("Memory.before.md of 2026-03-03 =\n%s\nwant what the day's fold read:\n%s", got, first)
	}
	if got := files["memory/Memory.after.md"]; got != second {
		t.Errorf("Memory.after.md of 2026-03-03 =\n%s\nwant what the day's fold wrote:\n%s", got, second)
	}
	if m := files["MANIFEST.txt"]; !strings.Contains(m, "from rollover.json (fold_before: what the fold read)") {
		t.Errorf("the last rollover's before should come from its journal:\n%s", m)
	}
}

// TestBuildSaysWhichRepliesWereScripted: the manifest lists every model
// answer of the day's sessions, and marks those of the offline scripted
// model, and only those.
func TestBuildSaysWhichRepliesWereScripted(t *testing.T) {
	s := memorytest.New(t)
	d := memorytest.NewLive(t, s, "2026-03-02T04:00:00Z")
	d.Turn("rehearsal", "Rehearse the open.")
	real := router.Model{Name: "gpt", Provider: router.OpenAIProvider, Client: router.Scripted{}} // answers offline, but is not the scripted model
	if err := d.Router.Configure(router.Settings{Route: []router.Model{real}, Instructions: "You run the main desk."}); err != nil {
		t.Fatal(err)
	}
	d.Turn("live", "Trade the open.")
	session := d.Router.SessionID()

	files, _ := bundleOf(t, s, "2026-03-02")
	m := files["MANIFEST.txt"]
	for _, want := range []string{
		"model answers: 2 in the day's sessions, 1 of them SCRIPTED",
		"  session " + session + " 2026-03-02T09:31:00+05:30 reply to rehearsal: offline (scripted) SCRIPTED\n",
		"  session " + session + " 2026-03-02T09:32:00+05:30 reply to live: gpt (openai)\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", want, m)
		}
	}
}

// TestBuildHoldsTheConfigInForce: the bundle of a day holds the snapshots
// of the effective config in force that day (the one in force when the
// day began, and each taken during it), not the files as they are at
// export time.
func TestBuildHoldsTheConfigInForce(t *testing.T) {
	s := memorytest.Populated(t)
	dir := t.TempDir()
	var snaps []Snapshot
	snap := func(name, taken, instructions string) {
		path := memorytest.Write(t, dir, name, `{"taken":"x","reason":"start","config":{"desks":{"main":{"instructions":"`+instructions+`"}}}}`+"\n")
		snaps = append(snaps, Snapshot{Name: name, Path: path, Taken: memorytest.UTC(t, taken)})
	}
	snap("20260301T050000.000000000Z.json", "2026-03-01T05:00:00Z", "v1, in force when 2 March began")
	snap("20260302T060000.000000000Z.json", "2026-03-02T06:00:00Z", "v2, from 11:30 IST on 2 March")
	snap("20260303T060000.000000000Z.json", "2026-03-03T06:00:00Z", "v3, of 3 March")
	files, names := bundleWith(t, s, "2026-03-02", func(c *Config) { c.Snapshots = snaps })
	var cfgs []string
	for _, n := range names {
		if strings.HasPrefix(n, "config/") {
			cfgs = append(cfgs, n)
		}
	}
	want := []string{"config/in-force/20260301T050000.000000000Z.json", "config/in-force/20260302T060000.000000000Z.json"}
	if strings.Join(cfgs, " ") != strings.Join(want, " ") {
		t.Fatalf("the bundle's config files = %v, want %v", cfgs, want)
	}
	if !strings.Contains(files[want[0]], "v1, in force") || !strings.Contains(files[want[1]], "v2, from 11:30") {
		t.Errorf("the snapshots' contents differ from the files kept")
	}
	m := files["MANIFEST.txt"]
	for _, w := range []string{
		"config: the config in force on 2026-03-02: 2 snapshots of deskd's effective config",
		"config/in-force/20260301T050000.000000000Z.json: the effective config deskd ran on from 2026-03-01T10:30:00+05:30 to 2026-03-02T11:30:00+05:30",
	} {
		if !strings.Contains(m, w) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", w, m)
		}
	}
	if strings.Contains(m, "as it is at export time") {
		t.Errorf("with snapshots, the bundle should not hold the config files of export time:\n%s", m)
	}
}

// TestBuildOfADeskNoLongerConfigured: a desk removed from the config is
// audited from its folder; the bundle says so and holds only the main
// config file.
func TestBuildOfADeskNoLongerConfigured(t *testing.T) {
	s := memorytest.Populated(t)
	files, names := bundleWith(t, s, "2026-03-02", func(c *Config) { c.Desk = "" })
	if !strings.Contains(files["MANIFEST.txt"], "config: the desk is not in the config at export time; only the main file is included") {
		t.Errorf("the audit of a desk removed from the config does not say so")
	}
	for _, name := range names {
		if strings.Contains(name, "desks.d/") {
			t.Errorf("the audit of a desk removed from the config holds %s", name)
		}
	}
}

func TestBuildEmptyDay(t *testing.T) {
	s := memorytest.Populated(t)
	_, err := Build(request(t, s, "2026-01-15"))
	if !errors.Is(err, ErrEmptyDay) || !strings.Contains(err.Error(), "audit main 2026-01-15: the desk has no session, summary or notes of that trading date") {
		t.Errorf("Build of a day with nothing = %v, want ErrEmptyDay", err)
	}
}
