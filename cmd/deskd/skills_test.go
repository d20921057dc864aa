package main

import (
	"context"
	"strings"
	"testing"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/memory"
)

// fixedAnswer is a curator model that always gives the same reply.
type fixedAnswer string

func (a fixedAnswer) Ask(context.Context, string) (string, error) { return string(a), nil }

func TestSkillsCommandListsAndUndoes(t *testing.T) {
	s := newOpsSetup(t)
	original := "---\nname: vwap\ndescription: VWAP entries\n---\n\nv1\n"
	if _, err := s.Folder.WriteSkill("vwap", original); err != nil {
		t.Fatal(err)
	}
	model := fixedAnswer(`{"operations":[{"op":"patch","skill":"vwap","content":"---\nname: vwap\ndescription: VWAP entries v2\n---\n\nv2\n","reason":"sharper"}]}`)
	r := &curator.Reviewer{Folder: s.Folder, Model: model, Now: s.Folder.Now}
	if _, err := r.Review(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2}, "s1"); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runOps(t, s, "skills", "main")
	if code != 0 || !strings.Contains(out, "vwap: VWAP entries v2") || !strings.Contains(out, "c1") || !strings.Contains(out, "patch vwap") {
		t.Fatalf("skills main = %d\n%s", code, out)
	}
	if code, out, errOut := runOps(t, s, "skills", "main", "--undo", "c1"); code != 0 {
		t.Fatalf("--undo c1 = %d %q %q", code, out, errOut)
	}
	if text, _ := s.Folder.ReadSkill("vwap"); text != original {
		t.Fatalf("vwap after undo = %q", text)
	}
}
