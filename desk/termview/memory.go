package termview

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
)

// MemoryVersions prints the kept versions of a desk's Memory.md, oldest
// first: each one's id, when it was replaced (UTC), its size, and the
// shortest prefix of its id that names it alone (memory.ShortIDs), which
// deskd memory --diff and --restore take as well as the id.
func MemoryVersions(w io.Writer, versions []memory.MemoryVersion) error {
	if len(versions) == 0 {
		fmt.Fprintln(w, "no earlier versions of Memory.md")
		return nil
	}
	short := memory.ShortIDs(versions)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, v := range versions {
		at := "-"
		if !v.At.IsZero() {
			at = v.At.UTC().Format(time.DateTime) + " UTC"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d bytes\tshort: %s\n", termsafe.Line(v.ID), at, v.Size, termsafe.Line(short[i]))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print the versions of Memory.md: %w", err)
	}
	return nil
}
