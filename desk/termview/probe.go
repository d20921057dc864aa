package termview

import (
	"fmt"
	"io"
	"strings"

	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/termsafe"
)

// Probe prints what check-config --probe found of each MCP server: its
// tools, or why it could not be reached, and each tool a desk allows that
// it does not have. It returns how many problems it printed (a server not
// reached, a tool missing).
func Probe(w io.Writer, reports []mcphost.ProbeReport) int {
	problems := 0
	for _, r := range reports {
		used := "used by no desk"
		if len(r.Used) > 0 {
			used = "used by " + termsafe.Line(strings.Join(r.Used, ", "))
		}
		if r.Err != nil {
			problems++
			fmt.Fprintf(w, "mcp server %s (%s): NOT REACHED: %s\n", termsafe.Line(r.Server), used, termsafe.Line(r.Err.Error()))
			continue
		}
		names := make([]string, len(r.Tools))
		for i, t := range r.Tools {
			names[i] = t.Name
		}
		fmt.Fprintf(w, "mcp server %s (%s): %s: %s\n", termsafe.Line(r.Server), used, termsafe.Plural(len(r.Tools), "tool"),
			termsafe.Line(strings.Join(names, ", ")))
		for _, m := range r.Missing {
			problems++
			what := "allows"
			if m.Key != "tools" {
				what = "names in " + m.Key // a misspelling leaves the tool it meant without its approval or limit
			}
			fmt.Fprintf(w, "  MISSING: desk %s %s %s, which server %s does not have\n", termsafe.Line(m.Desk), what, termsafe.Line(m.Tool), termsafe.Line(r.Server))
		}
	}
	return problems
}
