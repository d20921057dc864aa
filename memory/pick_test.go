package memory_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deskd/deskd/memory"
)

func self(s string) string { return s }

// TestByID: a whole id names its item even when it is also a prefix of
// others; else a prefix names every item it begins, in order.
func TestByID(t *testing.T) {
	items := []string{"ab1", "ab", "ab2", "b"}
	tests := []struct {
		name, arg string
		want      []string
	}{
		{"whole id, also a prefix", "ab", []string{"ab"}},
		{"unique prefix", "a", []string{"ab1", "ab", "ab2"}},
		{"one by prefix", "ab2", []string{"ab2"}},
		{"none", "c", nil},
		{"empty names all", "", items},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memory.ByID(items, tt.arg, self); !slices.Equal(got, tt.want) {
				t.Errorf("ByID(%q) = %q, want %q", tt.arg, got, tt.want)
			}
		})
	}
}

// TestCandidates: at most MaxCandidates ids, in order, and how many more.
func TestCandidates(t *testing.T) {
	var seven []string
	for i := range 7 {
		seven = append(seven, fmt.Sprint("s", i))
	}
	tests := []struct {
		name     string
		matches  []string
		wantIDs  []string
		wantMore int
	}{
		{"seven", seven, seven[:memory.MaxCandidates], 2},
		{"exactly the bound", seven[:memory.MaxCandidates], seven[:memory.MaxCandidates], 0},
		{"two", seven[:2], seven[:2], 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, more := memory.Candidates(tt.matches, self)
			if !slices.Equal(ids, tt.wantIDs) || more != tt.wantMore {
				t.Errorf("Candidates(%q) = %q, %d; want %q, %d", tt.matches, ids, more, tt.wantIDs, tt.wantMore)
			}
		})
	}
}
