package mcphost

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caps on what a server's tools/list may put before the model: a server
// is not trusted to keep deskd's memory or the model's prompt small.
const (
	// MaxServerTools is how many of a server's tools deskd takes: the
	// first ones it lists (a note tells the model there are more).
	MaxServerTools = 256
	// MaxToolDescription is the most bytes of a tool's description the
	// model reads; a longer one is cut.
	MaxToolDescription = 4 << 10
	// MaxToolSchema is the most bytes of a tool's input schema, as JSON;
	// a tool with a larger one is left out.
	MaxToolSchema = 32 << 10
	// MaxServerSpecBytes is the most bytes of names, descriptions and
	// schemas of one server's tools offered to the model at a turn; the
	// tools past it (in the server's order) are left out.
	MaxServerSpecBytes = 256 << 10

	// maxToolPages is how many pages of tools/list deskd reads.
	maxToolPages = 100
	// maxShownName is the most bytes of a tool's name in a note or the
	// status (a longer name is not valid anyway).
	maxShownName = 80
	// maxLeftOutNotes is how many tools of a server left out are named
	// in the notes; one more note counts the rest.
	maxLeftOutNotes = 10
)

// toolDef is one of a server's tools, as deskd keeps it: the description
// cleaned and capped, the schema as JSON. A tool the model cannot be
// offered says why in leftOut.
type toolDef struct {
	name, description string
	// shown is the name cleaned and cut, for notes and the status.
	shown   string
	schema  json.RawMessage
	leftOut string
	// repeat: the server listed this name before (this listing is left out).
	repeat bool
}

// toolList is what a server listed: at most MaxServerTools tools; more
// says it listed more, pages that its pages went on past maxToolPages.
type toolList struct {
	tools []toolDef
	more  bool
	pages bool
}

// newToolList checks and cleans the tools a server listed.
func newToolList(tools []*mcp.Tool, more bool) toolList {
	l := toolList{more: more}
	seen := map[string]bool{}
	for _, t := range tools {
		d := toolDef{name: t.Name, shown: cleanText(t.Name, maxShownName),
			description: cleanText(t.Description, MaxToolDescription)}
		d.schema, d.leftOut = checkSchema(t.InputSchema)
		switch {
		case t.Name == "":
			d.schema, d.leftOut = nil, "it has no name"
		case seen[t.Name]:
			d.schema, d.leftOut, d.repeat = nil, "the server lists it more than once", true
		}
		seen[t.Name] = true
		l.tools = append(l.tools, d)
	}
	return l
}

// checkSchema returns a tool's input schema as JSON, or why the tool
// cannot be offered: the model providers take only object schemas.
func checkSchema(schema any) (json.RawMessage, string) {
	if schema == nil {
		return nil, "it has no input schema (null or missing)"
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Sprintf("its input schema is not JSON (%v)", err)
	}
	if len(b) > MaxToolSchema {
		return nil, fmt.Sprintf("its input schema is larger than %d bytes (%d)", MaxToolSchema, len(b))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return nil, "its input schema is not an object schema"
	}
	typ, ok := obj["type"]
	if !ok {
		obj["type"] = json.RawMessage(`"object"`)
		b, _ = json.Marshal(obj)
		return b, ""
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return nil, fmt.Sprintf("its input schema is not an object schema (type %s)", cleanText(string(typ), 40))
	}
	return b, ""
}

// cleanText makes a server's text safe for logs, terminals and the model:
// valid UTF-8, no control characters but newlines and tabs (a CR LF is a
// newline), no bidirectional controls (text that reads otherwise than it
// is), at most max bytes (cut at a rune, with "…").
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// MaxMessage is the most bytes deskd reads of one message from a server
// (a stdio line, an HTTP body or event): a larger one ends the connection.
const MaxMessage = mcp.DefaultMaxLineLength
