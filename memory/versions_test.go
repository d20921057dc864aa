package memory_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

// versionFolder returns a folder whose Memory.md was written at the given
// times (UTC, RFC 3339 with nanoseconds): each write but the first keeps a
// version, replaced at that write's time.
func versionFolder(t *testing.T, times ...string) *memory.Folder {
	t.Helper()
	i := 0
	f, err := memory.OpenFolder(t.TempDir(), "main", func() time.Time { return utc(times[min(i, len(times)-1)]) })
	if err != nil {
		t.Fatal(err)
	}
	for n := range times {
		i = n
		if _, err := f.WriteMemory("v" + string(rune('0'+n)) + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestResolveMemoryVersion(t *testing.T) {
	f := versionFolder(t, "2026-03-01T09:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T10:00:30Z", "2026-03-03T11:15:00Z")
	tests := []struct {
		name, give, want string
		kind             error
	}{
		{"whole id", "20260302T100000.000000000Z", "20260302T100000.000000000Z", nil},
		{"unique prefix", "20260303", "20260303T111500.000000000Z", nil},
		{"prefix as a time", "2026-03-02T10:00:3", "20260302T100030.000000000Z", nil},
		{"ambiguous", "20260302T1000", "", memory.ErrAmbiguousVersion},
		{"none", "2027", "", memory.ErrUnknownVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := f.ResolveMemoryVersion(tt.give)
			if tt.kind != nil {
				if !errors.Is(err, tt.kind) {
					t.Fatalf("ResolveMemoryVersion(%q) = %v, %v; want %v", tt.give, v.ID, err, tt.kind)
				}
				return
			}
			if err != nil || v.ID != tt.want {
				t.Fatalf("ResolveMemoryVersion(%q) = %q, %v; want %q", tt.give, v.ID, err, tt.want)
			}
		})
	}
}

func TestMemoryVersionErrorsNameNoPath(t *testing.T) {
	f := versionFolder(t, "2026-03-01T09:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T10:00:30Z")
	_, err := f.ReadMemoryVersion("2026-03-02")
	if err == nil || !strings.Contains(err.Error(), "20260302T100000.000000000Z, 20260302T100030.000000000Z") {
		t.Fatalf("ambiguous prefix: %v; want both candidates named", err)
	}
	if _, err := f.ReadMemoryVersion("2025"); err == nil || !strings.Contains(err.Error(), `version "2025" of Memory.md`) {
		t.Fatalf("unknown version: %v", err)
	}
	versions, _ := f.MemoryHistory()
	if err := os.Chmod(versions[0].Path, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		_, err = f.ReadMemoryVersion(versions[0].ID)
		if err == nil || !errors.Is(err, os.ErrPermission) {
			t.Fatalf("unreadable version: %v, want a permission error", err)
		}
	}
	for _, name := range []string{"2026-03-02", "2025", versions[0].ID} {
		_, err := f.ReadMemoryVersion(name)
		if err != nil && strings.Contains(err.Error(), f.Dir()) {
			t.Errorf("ReadMemoryVersion(%q): %v names the folder's path", name, err)
		}
		_, _, err = f.RestoreMemory(name)
		if err != nil && strings.Contains(err.Error(), f.Dir()) {
			t.Errorf("RestoreMemory(%q): %v names the folder's path", name, err)
		}
	}
}

func TestAmbiguousVersionListsAtMostFive(t *testing.T) {
	f := versionFolder(t, "2026-03-01T09:00:00Z", "2026-03-02T10:00:01Z", "2026-03-02T10:00:02Z", "2026-03-02T10:00:03Z",
		"2026-03-02T10:00:04Z", "2026-03-02T10:00:05Z", "2026-03-02T10:00:06Z", "2026-03-02T10:00:07Z")
	_, err := f.ResolveMemoryVersion("20260302")
	var ve *memory.VersionError
	if !errors.As(err, &ve) || len(ve.Candidates) != 5 || ve.More != 2 || !strings.Contains(err.Error(), "and 2 more") {
		t.Fatalf("ResolveMemoryVersion(20260302) = %v; want 5 candidates and 2 more", err)
	}
}

func TestRestoreMemoryByPrefix(t *testing.T) {
	f := versionFolder(t, "2026-03-01T09:00:00Z", "2026-03-02T10:00:00Z", "2026-03-03T11:15:00Z")
	// Memory.md is v2; the versions are v0 (replaced 03-02) and v1 (03-03).
	restored, keptAs, err := f.RestoreMemory("20260302")
	if err != nil || restored.ID != "20260302T100000.000000000Z" {
		t.Fatalf("RestoreMemory(20260302) = %q, %q, %v", restored.ID, keptAs, err)
	}
	if got, _ := f.ReadMemory(); got != "v0\n" {
		t.Fatalf("Memory.md = %q after the restore, want v0", got)
	}
	kept, err := f.ReadMemoryVersion(keptAs)
	if err != nil || kept != "v2\n" {
		t.Fatalf("kept as %q = %q, %v; want the replaced v2", keptAs, kept, err)
	}
}

func TestShortIDs(t *testing.T) {
	vs := []memory.MemoryVersion{{ID: "20260302T100000.000000000Z"}, {ID: "20260302T100030.000000000Z"}, {ID: "20260303T111500.000000000Z"},
		{ID: "20260303T111500.000000000Z-2"}}
	want := []string{"20260302T10000", "20260302T10003", "20260303T111500.000000000Z", "20260303T111500.000000000Z-"}
	got := memory.ShortIDs(vs)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ShortIDs[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
