package durable_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestMkdirsIn: the missing folders of a list are made in order and made
// durable by one flush (a syncfs, counted by faultfs as one Sync), not one
// fsync of a parent each; folders that exist are left; when the syncfs
// fails, each parent is fsynced instead; when a folder cannot be made or
// nothing makes them durable, the folders made are removed again and the
// error names the folder.
func TestMkdirsIn(t *testing.T) {
	layout := func(root string) []string {
		var paths []string
		for _, d := range []string{"a", "b", "c"} {
			paths = append(paths, filepath.Join(root, d), filepath.Join(root, d, "sessions"))
		}
		return paths
	}
	tests := []struct {
		name      string
		fail      func(f *faultfs.FS)
		syncs     int // Syncs counted: the syncfs, and the fsyncs made instead
		wantError bool
	}{
		{"one flush", func(*faultfs.FS) {}, 1, false},
		{"the syncfs fails: each parent fsynced", func(f *faultfs.FS) { f.FailAt(faultfs.Sync, 1, faultfs.ErrIO) }, 1 + 4, false},
		{"a folder cannot be made", func(f *faultfs.FS) { f.FailAt(faultfs.Create, 3, faultfs.ErrNoSpace) }, 0, true},
		{"no flush works", func(f *faultfs.FS) {
			f.FailAt(faultfs.Sync, 1, faultfs.ErrIO) // the syncfs
			f.FailAt(faultfs.Sync, 2, faultfs.ErrIO) // the first fsync instead
		}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "b"), 0o750); err != nil { // b exists: only b/sessions is made in it
				t.Fatal(err)
			}
			fsys := &faultfs.FS{}
			tt.fail(fsys)
			made, err := durable.MkdirsIn(fsys, layout(root), 0o750)
			if got := fsys.Count(faultfs.Sync); got != tt.syncs {
				t.Errorf("%d syncs, want %d", got, tt.syncs)
			}
			if tt.wantError {
				var pe *os.PathError
				if err == nil || len(made) != 0 || !errors.As(err, &pe) {
					t.Fatalf("MkdirsIn = %v, %v; want no folders and an error naming one", made, err)
				}
				for _, p := range layout(root) {
					if _, err := os.Stat(p); err == nil && p != filepath.Join(root, "b") {
						t.Errorf("%s is left after the failure", p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "sessions"), filepath.Join(root, "b", "sessions"),
				filepath.Join(root, "c"), filepath.Join(root, "c", "sessions")}
			if len(made) != len(want) {
				t.Fatalf("made %v, want %v", made, want)
			}
			for i := range want {
				if made[i] != want[i] {
					t.Errorf("made[%d] = %s, want %s", i, made[i], want[i])
				}
				if fi, err := os.Stat(want[i]); err != nil || !fi.IsDir() {
					t.Errorf("%s: %v, want a folder", want[i], err)
				}
			}
			if got := fsys.Count(faultfs.Create); got != 6 {
				t.Errorf("%d creations tried, want 6 (b's fails: it exists)", got)
			}
		})
	}
}
