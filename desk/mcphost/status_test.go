package mcphost_test

import (
	"slices"
	"testing"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
)

// TestStatusListsOnlyOfferedTools: a server listing 256 tools of 9 names
// (one empty, one invalid, one with a null input schema, one with none):
// its status's tools are exactly what a desk allowing all of them is
// offered, each once (review: the status listed all 256 entries, "" and
// "bad name/../x" among them).
func TestStatusListsOnlyOfferedTools(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "repeats"))
	var offered []string
	for _, tl := range r.host.Toolset("d", all).Tools() {
		_, name, _ := mcphost.SplitToolName(tl.Spec.Name)
		offered = append(offered, name)
	}
	want := []string{"quote", "place_order", "echo", "fail", "big"}
	if !slices.Equal(offered, want) {
		t.Errorf("offered %q, want %q", offered, want)
	}
	if got := r.status("hostile").Tools; !slices.Equal(got, offered) {
		t.Errorf("the status's tools %q, want what is offered %q", got, offered)
	}
}

// TestDeskStatusSaysWhatIsLeftOut: a desk's status shows, of each of its
// servers, the tools its model is offered (the same as its Toolset's,
// for a desk that allows some of them) and each other tool once, with
// why: no name, an invalid name, no input schema, not allowed by the
// desk's file, named by the file but not listed by the server.
func TestDeskStatusSaysWhatIsLeftOut(t *testing.T) {
	r := newRig(t)
	r.serve(hostile(t, "repeats"))
	uses := map[string]config.DeskMCP{"hostile": {Tools: []string{"quote", "place_order", "nullschema", "ghost"}}}
	var offered []string
	for _, tl := range r.host.Toolset("d", uses).Tools() {
		_, name, _ := mcphost.SplitToolName(tl.Spec.Name)
		offered = append(offered, name)
	}
	st := r.host.DeskStatus(uses)
	if len(st) != 1 || st[0].Name != "hostile" || st[0].State != mcphost.StateUp {
		t.Fatalf("DeskStatus = %+v, want hostile up", st)
	}
	if want := []string{"quote", "place_order"}; !slices.Equal(offered, want) || !slices.Equal(st[0].Tools, offered) {
		t.Errorf("offered %q, the status's tools %q; want both %q", offered, st[0].Tools, want)
	}
	wantLeft := []mcphost.LeftOut{
		{Tool: "", Why: "it has no name"},
		{Tool: "bad name/../x", Why: `"mcp__hostile__bad name/../x" is not a valid tool name (letters, digits, _ and -, at most 64)`},
		{Tool: "nullschema", Why: "it has no input schema (null or missing)"},
		{Tool: "noschema", Why: "it has no input schema (null or missing)"},
		{Tool: "echo", Why: "the desk's file does not allow it"},
		{Tool: "fail", Why: "the desk's file does not allow it"},
		{Tool: "big", Why: "the desk's file does not allow it"},
		{Tool: "ghost", Why: "the server does not list it"},
	}
	if !slices.Equal(st[0].LeftOut, wantLeft) {
		t.Errorf("left out:\n%q\nwant\n%q", st[0].LeftOut, wantLeft)
	}
}
