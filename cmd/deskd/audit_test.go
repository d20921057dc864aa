package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/audit"
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
	read, err := audit.ReadArchive(f)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var files []bundleFile
	for _, rf := range read {
		files = append(files, bundleFile{rf.Name, string(rf.Data)})
	}
	return files
}

// TestAuditCommand: deskd audit writes the bundle to -o, mode 0640, and
// prints what it holds: a line for the bundle, then one per file with its
// size and what it is.
func TestAuditCommand(t *testing.T) {
	s := newOpsDesk(t)
	path := filepath.Join(t.TempDir(), "audit.tar.gz")
	out := runOpsOK(t, s, "audit", "main", "2026-03-02", "-o", path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("bundle file mode %v, want 0640", fi.Mode().Perm())
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if want := fmt.Sprintf("wrote %s: desk main, trading date 2026-03-02, 1 session, 13 files, %d bytes", path, fi.Size()); lines[0] != want {
		t.Errorf("deskd audit printed %q, want %q", lines[0], want)
	}
	files := readBundle(t, path)
	if len(files) != 15 || len(lines) != 14 {
		t.Fatalf("the bundle holds %d files and deskd audit listed %d, want 15 (the manifest and sums first) and 13:\n%s", len(files), len(lines)-1, out)
	}
	for i, f := range files[2:] {
		name := strings.TrimPrefix(f.name, "deskd-audit-main-2026-03-02/")
		if fields := strings.Fields(lines[i+1]); len(fields) < 3 || fields[0] != name || fields[1] != fmt.Sprint(len(f.data)) {
			t.Errorf("deskd audit listed %q, want %s and its %d bytes", lines[i+1], name, len(f.data))
		}
	}
	if !strings.Contains(out, "  sessions/"+opsS1+".jsonl") || !strings.Contains(out, "  config/desks.d/main.yaml") {
		t.Errorf("deskd audit does not list the day's session and the desk's config:\n%s", out)
	}
}

// TestAuditHoldsTheConfigInForce: deskd audit bundles the snapshots of the
// effective config kept in the state dir's config-history that were in
// force that day (the one in force when the day began, and each taken
// during it), not the files as they are at export time.
func TestAuditHoldsTheConfigInForce(t *testing.T) {
	s := newOpsDesk(t)
	dir := filepath.Join(filepath.Dir(filepath.Dir(s.DeskDir)), config.HistoryDir)
	snap := func(name, instructions string) {
		writeTestFile(t, dir, name, `{"taken":"x","reason":"start","config":{"desks":{"main":{"instructions":"`+instructions+`"}}}}`+"\n")
	}
	snap("20260301T050000.000000000Z.json", "v1, in force when 2 March began")
	snap("20260302T060000.000000000Z.json", "v2, from 11:30 IST on 2 March")
	snap("20260303T060000.000000000Z.json", "v3, of 3 March")
	path := filepath.Join(t.TempDir(), "audit.tar.gz")
	if code, _, errOut := runOps(t, s, "audit", "main", "2026-03-02", "-o", path); code != 0 {
		t.Fatalf("deskd audit: exit %d, stderr %s", code, errOut)
	}
	var cfgs []string
	for _, f := range readBundle(t, path) {
		if name := f.name[strings.Index(f.name, "/")+1:]; strings.HasPrefix(name, "config/") {
			cfgs = append(cfgs, name)
		}
	}
	want := []string{"config/in-force/20260301T050000.000000000Z.json", "config/in-force/20260302T060000.000000000Z.json"}
	if strings.Join(cfgs, " ") != strings.Join(want, " ") {
		t.Errorf("the bundle's config files = %v, want %v", cfgs, want)
	}
}

func TestAuditRefused(t *testing.T) {
	s := newOpsDesk(t)
	out := filepath.Join(t.TempDir(), "a.tar.gz")
	checkRefusals(t, s, []opsRefusal{
		{"no -o", []string{"audit", "main", "2026-03-02"}, 2, "-o FILE.tar.gz is required"},
		{"bad date", []string{"audit", "main", "2026-02-30", "-o", out}, 2, `trading date "2026-02-30"`},
		{"not a date", []string{"audit", "main", "yesterday", "-o", out}, 2, "want YYYY-MM-DD"},
		{"nothing that day", []string{"audit", "main", "2026-01-15", "-o", out}, 1, "no session, summary or notes of that trading date"},
		{"unknown desk", []string{"audit", "nosuch", "2026-03-02", "-o", out}, 2, `no desk "nosuch"`},
	})
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused audit wrote %s", out)
	}
}
