package termview

import (
	"fmt"
	"io"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
)

// Skills prints a desk's skills (pinned ones marked) and then the
// curator's changes, oldest first, saying so when it has none of either.
// Ledger lines without an id are not changes and are left out.
func Skills(w io.Writer, desk string, skills []memory.Skill, entries []curator.LedgerEntry) {
	if len(skills) == 0 {
		fmt.Fprintf(w, "desk %s has no skills\n", termsafe.Line(desk))
	}
	for _, s := range skills {
		pinned := ""
		if s.Pinned {
			pinned = " [pinned]"
		}
		fmt.Fprintf(w, "%s%s: %s\n", termsafe.Line(s.Name), pinned, termsafe.Line(s.Description))
	}
	header := false
	for _, e := range entries {
		if e.ID == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\ncurator changes:")
			header = true
		}
		fmt.Fprintf(w, "%s\t%s\t%s %s\t%s\n", termsafe.Line(e.ID), e.At.UTC().Format("2006-01-02 15:04"), termsafe.Line(e.Action), termsafe.Line(e.Skill), termsafe.Line(e.Reason))
	}
	if !header {
		fmt.Fprintln(w, "no curator changes")
	}
}

// SkillUndone prints the entry of an undo of the curator's change.
func SkillUndone(w io.Writer, id, reason, skill string) {
	fmt.Fprintf(w, "%s: %s (%s)\n", termsafe.Line(id), termsafe.Line(reason), termsafe.Line(skill))
}
