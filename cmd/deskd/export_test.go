package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exportS1 exports the fixture's first session and returns the page.
func exportS1(t *testing.T, s *opsSetup) (path, page string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s1.html")
	out := runOpsOK(t, s, "export", "main", opsS1, "-o", path)
	if !strings.HasPrefix(out, "wrote "+path+": session "+opsS1+" of desk main, 11 records, ") {
		t.Errorf("deskd export printed %q", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

func TestExportWritesTheFile(t *testing.T) {
	s := newOpsDesk(t)
	path, page := exportS1(t, s)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("export file mode %v, want 0640", fi.Mode().Perm())
	}
	if !strings.Contains(page, "<title>Check the tape. · main · "+opsS1+"</title>") {
		t.Errorf("the exported file is not the page of %s:\n%s", opsS1, page)
	}
}

func TestExportDefaultSession(t *testing.T) {
	s := newOpsDesk(t)
	page := runOpsOK(t, s, "export", "main", "-o", "-")
	for _, want := range []string{
		"<title>Good morning. Plan the day. · main · " + opsS2 + "</title>",
		`<details class="preamble"><summary>Carries the summary of the previous session, from 2026-03-02</summary><pre class="text">` +
			strings.TrimRight(opsSummary, "\n") + `</pre></details>`,
		`<pre class="text">Good morning. Plan the day.</pre>`,
		`<span class="badge state-active">active</span>`,
		"No summary of 2026-03-03 yet",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the exported active session lacks %q", want)
		}
	}
}

func TestExportRefused(t *testing.T) {
	s := newOpsDesk(t)
	checkRefusals(t, s, []opsRefusal{
		{"no -o", []string{"export", "main"}, 2, "-o FILE.html is required"},
		{"unknown session", []string{"export", "main", "nosuch", "-o", "-"}, 2, `no session "nosuch"`},
		{"unwritable file", []string{"export", "main", "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "x.html")}, 1, "export session"},
	})
}
