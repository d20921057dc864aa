package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// candidateSetup loads a main file with one desk (main) and returns it with
// a fresh folder, outside desks_dir, for candidate desk files.
func candidateSetup(t *testing.T) (*config.Config, string) {
	t.Helper()
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	return c, t.TempDir()
}

func TestLoadDeskFile(t *testing.T) {
	c, dir := candidateSetup(t)
	writeFiles(t, dir, map[string]string{
		"cand.yaml": "model: offline\ninstructions: |\n  Trade less.\nmax_tool_rounds: 3\n",
	})
	path := filepath.Join(dir, "cand.yaml")
	d, err := config.LoadDeskFile(c, path)
	if err != nil {
		t.Fatalf("LoadDeskFile: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Name", d.Name, "cand"},
		{"Path", d.Path, path},
		{"Model", d.Model, "offline"},
		{"Instructions", d.Instructions, "Trade less.\n"},
		{"MaxToolRounds", d.MaxToolRounds, 3},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %#v, want %#v", ck.name, ck.got, ck.want)
		}
	}
	if _, ok := c.Desks["cand"]; ok {
		t.Error("LoadDeskFile added the candidate to the config's desks")
	}
	if len(c.Desks) != 1 || c.Desks["main"] == nil {
		t.Errorf("config's desks = %v, want only main", c.Desks)
	}
}

func TestLoadDeskFileRelativePath(t *testing.T) {
	c, dir := candidateSetup(t)
	writeFiles(t, dir, map[string]string{"cand.yaml": baseDesk})
	t.Chdir(dir)
	d, err := config.LoadDeskFile(c, "cand.yaml")
	if err != nil {
		t.Fatalf("LoadDeskFile: %v", err)
	}
	if want := filepath.Join(dir, "cand.yaml"); d.Path != want {
		t.Errorf("Path = %q, want the absolute %q", d.Path, want)
	}
}

func TestLoadDeskFileProblems(t *testing.T) {
	tests := []struct {
		name  string
		file  string // base name of the candidate file
		body  string // "" writes no file
		wants []want
	}{
		{"missing file", "cand.yaml", "", []want{{"cand.yaml", "", "cannot read: no such file or directory"}}},
		{"invalid YAML", "cand.yaml", "model: offline\ninstructions: [unclosed\n", []want{{"cand.yaml", "", "not valid YAML"}}},
		{"empty", "cand.yaml", "\n", []want{{"cand.yaml", "", "empty"}}},
		{"unknown model", "cand.yaml", sub(t, baseDesk, "model: offline", "model: gpt-9"), []want{{"cand.yaml", "model", `unknown model "gpt-9"`}}},
		{"bad cron", "cand.yaml", sub(t, baseDesk, `cron: "* * * * *"`, `cron: "every minute"`), []want{{"cand.yaml", "schedules[0].cron", ""}}},
		{"unknown field", "cand.yaml", baseDesk + "colour: blue\n", []want{{"cand.yaml", "colour", ""}}},
		{"two problems at once", "cand.yaml", "instructions: hi\nmax_tool_rounds: many\n", []want{
			{"cand.yaml", "model", ""},
			{"cand.yaml", "max_tool_rounds", ""},
		}},
		{"not .yaml", "cand.yml", baseDesk, []want{{"cand.yml", "", "desk files are named <desk>.yaml"}}},
		{"bad desk name", "Bad Name.yaml", baseDesk, []want{{"Bad Name.yaml", "", "bad desk name"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dir := candidateSetup(t)
			path := filepath.Join(dir, tt.file)
			if tt.body != "" {
				writeFiles(t, dir, map[string]string{tt.file: tt.body})
			}
			d, err := config.LoadDeskFile(c, path)
			if d != nil {
				t.Errorf("LoadDeskFile returned a desk (%q) with problems", d.Name)
			}
			ps := problemsOf(t, err)
			if len(ps) != len(tt.wants) {
				t.Errorf("got %d problems, want %d:\n%v", len(ps), len(tt.wants), err)
			}
			for _, w := range tt.wants {
				found := false
				for _, p := range ps {
					found = found || w.matches(p)
				}
				if !found {
					t.Errorf("no problem %+v in:\n%v", w, err)
				}
			}
			for _, p := range ps {
				if p.File != path {
					t.Errorf("problem names file %q, want %q: %v", p.File, path, p)
				}
				if strings.TrimSpace(p.Reason) == "" {
					t.Errorf("problem without a reason: %v", p)
				}
			}
			// The error's text names the file and the reason, as the CLI prints it.
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, ps[0].Reason) {
				t.Errorf("error %q does not name the file %q and the reason %q", msg, path, ps[0].Reason)
			}
			if _, ok := c.Desks[strings.TrimSuffix(tt.file, ".yaml")]; ok {
				t.Error("a bad candidate was added to the config's desks")
			}
		})
	}
}

func TestLoadDeskFileIsADirectory(t *testing.T) {
	c, dir := candidateSetup(t)
	path := filepath.Join(dir, "cand.yaml")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := config.LoadDeskFile(c, path)
	ps := problemsOf(t, err)
	if len(ps) != 1 || ps[0].File != path || !strings.Contains(ps[0].Reason, "cannot read") {
		t.Fatalf("problems = %v", err)
	}
}
