package desk_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
)

// TestOpenStateFolder: a desk of the config or one gone from it is found
// by its state folder; a desk of the config without one has not run; a
// name that is neither, or is not a plain folder name, names no desk.
func TestOpenStateFolder(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) } // the folders' clock: nothing here writes
	state := t.TempDir()
	cfg := &config.Config{StateDir: state, DesksDir: "/etc/deskd/desks.d",
		Desks: map[string]*config.Desk{"main": {Name: "main"}, "new": {Name: "new"}}}
	for _, d := range []string{"main", "gone"} {
		if err := os.MkdirAll(filepath.Join(state, "desks", d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"main", "gone"} {
		f, err := desk.OpenStateFolder(cfg, name, now)
		if err != nil || f.Desk() != name || f.Dir() != filepath.Join(state, "desks", name) {
			t.Errorf("OpenStateFolder(%s) = %v, %v; want its folder", name, f, err)
		}
	}
	for _, tt := range []struct {
		name string
		kind error
		want string
	}{
		{"new", desk.ErrNeverRan, "desk new has no state folder yet (" + filepath.Join(state, "desks", "new") + "): it has not run"},
		{"other", desk.ErrNoSuchDesk, `no desk "other" in /etc/deskd/desks.d and no state folder ` + filepath.Join(state, "desks", "other")},
		{"../main", desk.ErrNoSuchDesk, `no desk "../main" in /etc/deskd/desks.d`},
		{".hidden", desk.ErrNoSuchDesk, `no desk ".hidden" in /etc/deskd/desks.d`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := desk.OpenStateFolder(cfg, tt.name, now)
			if !errors.Is(err, tt.kind) || err.Error() != tt.want {
				t.Errorf("OpenStateFolder(%s) = %v, want %v: %s", tt.name, err, tt.kind, tt.want)
			}
		})
	}
}
