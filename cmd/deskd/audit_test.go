package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bundleFile is one file read back from an audit bundle.
type bundleFile struct {
	name string
	data string
}

// readBundle lists the files of a .tar.gz, in archive order.
func readBundle(t *testing.T, path string) []bundleFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", path, err)
	}
	tr := tar.NewReader(gz)
	var files []bundleFile
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			t.Errorf("%s: %s is not a regular file", path, hdr.Name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, bundleFile{hdr.Name, string(b)})
	}
	return files
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// auditBundleOf runs deskd audit and returns the bundle's files by their
// names inside the bundle's folder, and the names in order.
func auditBundleOf(t *testing.T, s *opsSetup, date string) (map[string]string, []string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "audit.tar.gz")
	code, stdout, errOut := runOps(t, s, "audit", "main", date, "-o", out)
	if code != 0 {
		t.Fatalf("deskd audit main %s: exit %d, stderr %s", date, code, errOut)
	}
	root := "deskd-audit-main-" + date + "/"
	byName := map[string]string{}
	var names []string
	for _, f := range readBundle(t, out) {
		name, ok := strings.CutPrefix(f.name, root)
		if !ok {
			t.Errorf("%s is outside the bundle's folder %s", f.name, root)
		}
		byName[name] = f.data
		names = append(names, name)
	}
	return byName, names, stdout
}

func TestAuditBundle(t *testing.T) {
	s := newOpsDesk(t)
	files, names, stdout := auditBundleOf(t, s, "2026-03-02")
	want := []string{
		"MANIFEST.txt",
		"SHA256SUMS",
		"sessions/" + opsS1 + ".jsonl",
		"sessions/" + opsS1 + ".html",
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
	if !strings.Contains(stdout, ", 1 sessions, 13 files, ") {
		t.Errorf("deskd audit printed %q", stdout)
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
		"sessions/" + opsS1 + ".jsonl": filepath.Join(s.DeskDir, "sessions", opsS1+".jsonl"),
		"summary/2026-03-02.md":        filepath.Join(s.DeskDir, "summaries", "2026-03-02.md"),
		"notes/2026-03-02.md":          filepath.Join(s.DeskDir, "notes", "2026-03-02.md"),
		"rollover.json":                filepath.Join(s.DeskDir, "rollover.json"),
		"config/deskd.yaml":            s.Config,
		"config/desks.d/main.yaml":     filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml"),
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if files[name] != string(b) {
			t.Errorf("%s differs from %s", name, src)
		}
	}
	if got := files["summary/history/20260302T183000.500000000Z.md"]; got != opsEarlySummary {
		t.Errorf("the summary's earlier version = %q, want %q", got, opsEarlySummary)
	}
	if !strings.Contains(files["sessions/"+opsS1+".html"], "Checkpoint: long NIFTY 22500 CE, hedged.") {
		t.Error("the rendered session lacks its checkpoint")
	}

	// Memory.md before the day's fold (after the operator's edit), after
	// the rollover, and the diff.
	if got := files["memory/Memory.before.md"]; got != opsMemV2 {
		t.Errorf("Memory.before.md =\n%s\nwant\n%s", got, opsMemV2)
	}
	if got := files["memory/Memory.after.md"]; got != opsMemV3 {
		t.Errorf("Memory.after.md =\n%s\nwant\n%s", got, opsMemV3)
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
	wantCurator := `{"at":"2026-03-02T18:30:03Z","trading_date":"2026-03-02","session":"` + opsS1 + `","action":"inventory","skills":[]}` + "\n"
	if got := files["curator/ledger.jsonl"]; got != wantCurator {
		t.Errorf("curator/ledger.jsonl =\n%s\nwant\n%s", got, wantCurator)
	}
	wantTriggers := `{"at":"2026-03-01T18:31:00Z","id":"early-0302","state":"queued"}` + "\n" +
		`{"at":"2026-03-02T03:30:00Z","id":"open@1","state":"queued"}` + "\n" +
		`{"at":"2026-03-03T04:00:00Z","id":"open@1","state":"answered","session":"` + opsS1 + `","turn":1}` + "\n"
	if got := files["triggers/triggers.jsonl"]; got != wantTriggers {
		t.Errorf("triggers/triggers.jsonl =\n%s\nwant\n%s", got, wantTriggers)
	}

	// The manifest says what the bundle is and where its parts came from.
	configSums := sha256Of(files["config/deskd.yaml"]) + "  config/deskd.yaml\n" +
		sha256Of(files["config/desks.d/main.yaml"]) + "  config/desks.d/main.yaml\n"
	for _, want := range []string{
		"desk: main\n",
		"trading date: 2026-03-02 (Asia/Kolkata, from 2026-03-02 00:00:00 IST to 2026-03-03 00:00:00 IST)\n",
		"sessions: 1 (" + opsS1 + ")\n",
		"memory before: Memory.md as the day's fold of notes read it (session " + opsS1 + ", 2026-03-03T00:00:01+05:30); " +
			"from history/memory/20260302T183002.000000000Z.md (replaced at 2026-03-02T18:30:02Z), the version the fold replaced\n",
		"memory after: Memory.md as the day's fold left it (session " + opsS1 + ", 2026-03-03T00:00:01+05:30); " +
			"from history/memory/20260303T183002.000000000Z.md (replaced at 2026-03-03T18:30:02Z), what the fold wrote, kept when it was replaced in turn\n",
		"model answers: 6 in the day's sessions, 6 of them SCRIPTED (written by deskd's offline scripted model, not a real LLM):\n" +
			"  session " + opsS1 + " 2026-03-02T09:00:02+05:30 reply to open@1 (tool calls): offline (scripted) SCRIPTED\n",
		"  session " + opsS1 + " 2026-03-03T00:00:01+05:30 fold: offline (scripted) SCRIPTED\n",
		"trigger ledger: 1 line that did not parse left out\n",
		"not a snapshot of the config in force on 2026-03-02",
		"config sha256: " + sha256Of(configSums) + " ",
	} {
		if !strings.Contains(manifest, want) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", want, manifest)
		}
	}
}

func TestAuditDayWithoutFold(t *testing.T) {
	s := newOpsDesk(t)
	files, names, _ := auditBundleOf(t, s, "2026-03-03")
	for _, name := range names {
		if strings.HasPrefix(name, "summary/") || strings.HasPrefix(name, "notes/") || name == "rollover.json" {
			t.Errorf("the bundle of 2026-03-03 holds %s, which is of another day", name)
		}
	}
	if _, ok := files["sessions/"+opsS2+".jsonl"]; !ok {
		t.Errorf("the bundle of 2026-03-03 lacks session %s: %v", opsS2, names)
	}
	// No fold of 2026-03-03 is recorded: before is Memory.md at the day's
	// end, after is Memory.md now, as no session has followed.
	if files["memory/Memory.before.md"] != opsMemV3 || files["memory/Memory.after.md"] != opsMemV4 {
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
	wantTriggers := `{"at":"2026-03-03T04:00:00Z","id":"open@1","state":"answered","session":"` + opsS1 + `","turn":1}` + "\n" +
		`{"at":"2026-03-02T18:31:00Z","id":"open@2","state":"queued"}` + "\n"
	if got := files["triggers/triggers.jsonl"]; got != wantTriggers {
		t.Errorf("triggers/triggers.jsonl of 2026-03-03 =\n%s", got)
	}
}

func TestAuditRefused(t *testing.T) {
	s := newOpsDesk(t)
	out := filepath.Join(t.TempDir(), "a.tar.gz")
	tests := []struct {
		name   string
		args   []string
		code   int
		reason string
	}{
		{"no -o", []string{"audit", "main", "2026-03-02"}, 2, "-o FILE.tar.gz is required"},
		{"bad date", []string{"audit", "main", "2026-02-30", "-o", out}, 2, `trading date "2026-02-30"`},
		{"not a date", []string{"audit", "main", "yesterday", "-o", out}, 2, "want YYYY-MM-DD"},
		{"nothing that day", []string{"audit", "main", "2026-01-15", "-o", out}, 1, "no session, summary or notes of that trading date"},
		{"unknown desk", []string{"audit", "nosuch", "2026-03-02", "-o", out}, 2, `no desk "nosuch"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runOps(t, s, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.reason) {
				t.Errorf("deskd %v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, tt.code, tt.reason)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused audit wrote %s", out)
	}
}

func TestAuditUnifiedDiff(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"from nothing", "", "a\nb\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to nothing", "a\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n"},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"missing newline", "a\nb", "a\nb\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"two hunks", lines(20), strings.Replace(strings.Replace(lines(20), "line 2\n", "two\n", 1), "line 18\n", "", 1),
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n" +
				"@@ -15,6 +15,5 @@\n line 15\n line 16\n line 17\n-line 18\n line 19\n line 20\n"},
		{"close changes share a hunk", lines(10), strings.Replace(strings.Replace(lines(10), "line 3\n", "", 1), "line 8\n", "eight\n", 1),
			"--- a\n+++ b\n@@ -1,10 +1,9 @@\n line 1\n line 2\n-line 3\n line 4\n line 5\n line 6\n line 7\n-line 8\n+eight\n line 9\n line 10\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unifiedHunks("a", "b", tt.a, tt.b)
			if got != tt.want {
				t.Errorf("unifiedHunks(%q, %q) =\n%s\nwant\n%s", tt.a, tt.b, got, tt.want)
			}
			if got != "" {
				if patched := applyUnified(t, tt.a, got); patched != tt.b {
					t.Errorf("applying the diff to a gives %q, want %q", patched, tt.b)
				}
			}
		})
	}
}

// applyUnified applies a unified diff made by unifiedHunks to a.
func applyUnified(t *testing.T, a, diff string) string {
	t.Helper()
	src := unifiedSplit(a)
	var out []string
	next := 0 // the next line of src to copy
	lines := strings.SplitAfter(diff, "\n")
	for i := 2; i < len(lines) && lines[i] != ""; i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "@@ -"):
			spec := strings.Fields(l)[1][1:]
			start, _, _ := strings.Cut(spec, ",")
			n, err := strconv.Atoi(start)
			if err != nil {
				t.Fatalf("bad hunk header %q", l)
			}
			if strings.HasSuffix(spec, ",0") {
				n++ // an empty range names the line before it
			}
			for ; next < n-1; next++ {
				out = append(out, src[next])
			}
		case strings.HasPrefix(l, `\ No newline`):
			k := len(out) - 1
			if strings.HasPrefix(lines[i-1], "-") {
				continue
			}
			out[k] = strings.TrimSuffix(out[k], "\n")
		case l[0] == ' ':
			out = append(out, src[next])
			next++
		case l[0] == '-':
			next++
		case l[0] == '+':
			out = append(out, l[1:])
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, "")
}

func TestAuditWithoutLedgers(t *testing.T) {
	s := newOpsDesk(t)
	for _, name := range []string{"curator/ledger.jsonl", "triggers.jsonl"} {
		if err := os.Remove(filepath.Join(s.DeskDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	files, names, _ := auditBundleOf(t, s, "2026-03-02")
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
