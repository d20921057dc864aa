package config_test

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

const badCronDesk = `model: offline
instructions: fx
schedules:
  - name: open
    cron: "nope"
    text: "Open."
`

func TestLoadKeeping(t *testing.T) {
	fxGood := "model: offline\ninstructions: fx on its last good config\n"
	tests := []struct {
		name  string
		main  string
		files map[string]string
		// last: the desks of the config in force (loaded from these files first); nil: none.
		last map[string]string
		// refused: the whole load is refused, with a problem in this file (relative).
		refused string
		desks   []string // the desks of the config to put in force
		kept    []string // refused desks kept on their last good config
		dropped []string // refused desks not started
		fxText  string   // fx's instructions in the config in force, when it has fx
	}{
		{name: "all good", main: baseMain,
			files: map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": fxGood},
			desks: []string{"fx", "main"}, fxText: "fx on its last good config"},
		{name: "bad desk file keeps its desk on the last good config", main: baseMain,
			files: map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": badCronDesk},
			last:  map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": fxGood},
			desks: []string{"fx", "main"}, kept: []string{"fx"}, fxText: "fx on its last good config"},
		{name: "bad first file of a new desk: not started", main: baseMain,
			files: map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": badCronDesk},
			last:  map[string]string{"desks.d/main.yaml": baseDesk},
			desks: []string{"main"}, dropped: []string{"fx"}},
		{name: "bad desk file at start (no config in force)", main: baseMain,
			files: map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": badCronDesk},
			desks: []string{"main"}, dropped: []string{"fx"}},
		{name: "bad main file refuses everything", main: baseMain + "timezone_typo: x\n",
			files:   map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": fxGood},
			refused: "deskd.yaml"},
		{name: "bad main file and bad desk file: refused", main: baseMain + "timezone_typo: x\n",
			files:   map[string]string{"desks.d/fx.yaml": badCronDesk},
			refused: "deskd.yaml"},
		{name: "two desk files with the same name refuse everything", main: baseMain,
			files:   map[string]string{"desks.d/main.yaml": baseDesk, "desks.d/fx.yaml": fxGood, "desks.d/fx.yml": fxGood},
			refused: "desks.d/fx.yml"},
		{name: "a kept desk the new main file no longer fits: refused", main: strings.Replace(baseMain, "offline:", "other:", 1),
			files:   map[string]string{"desks.d/fx.yaml": "model: other\ninstructions: x\nbad_key: 1\n"},
			last:    map[string]string{"desks.d/fx.yaml": fxGood},
			refused: "deskd.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "deskd.yaml")
			var last *config.Config
			if tt.last != nil {
				writeFiles(t, dir, map[string]string{"deskd.yaml": baseMain})
				writeFiles(t, dir, tt.last)
				var err error
				if last, err = config.Load(path); err != nil {
					t.Fatalf("Load(last) = %v", err)
				}
			}
			writeFiles(t, dir, map[string]string{"deskd.yaml": tt.main})
			writeFiles(t, dir, tt.files)
			got, err := config.LoadKeeping(path, last)
			if tt.refused != "" {
				var ps config.Problems
				if !errors.As(err, &ps) {
					t.Fatalf("LoadKeeping = %v, %v; want Problems", got, err)
				}
				want := filepath.Join(filepath.Dir(path), filepath.FromSlash(tt.refused))
				if !slices.ContainsFunc(ps, func(p config.Problem) bool { return p.File == want }) {
					t.Fatalf("problems %v: none in %s", ps, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadKeeping = %v", err)
			}
			if names := slices.Sorted(maps.Keys(got.Config.Desks)); !slices.Equal(names, tt.desks) {
				t.Errorf("desks = %v, want %v", names, tt.desks)
			}
			var kept, dropped []string
			for _, r := range got.Rejected {
				if len(r.Problems) == 0 || r.File != filepath.Join(filepath.Dir(path), "desks.d", r.Desk+".yaml") {
					t.Errorf("rejected %+v: want its file and problems", r)
				}
				if r.Kept {
					kept = append(kept, r.Desk)
				} else {
					dropped = append(dropped, r.Desk)
				}
			}
			if !slices.Equal(kept, tt.kept) || !slices.Equal(dropped, tt.dropped) {
				t.Errorf("kept %v, dropped %v; want %v, %v", kept, dropped, tt.kept, tt.dropped)
			}
			if fx := got.Config.Desks["fx"]; fx != nil && strings.TrimSpace(fx.Instructions) != tt.fxText {
				t.Errorf("fx instructions = %q, want %q", fx.Instructions, tt.fxText)
			}
			if len(got.Rejected) > 0 && got.Problems()[0].Field != "schedules[0].cron" {
				t.Errorf("first problem = %+v, want schedules[0].cron", got.Problems()[0])
			}
			if _, err := config.Load(path); (err == nil) != (len(got.Rejected) == 0) {
				t.Errorf("Load = %v: it must still refuse any bad file (check-config)", err)
			}
		})
	}
}
