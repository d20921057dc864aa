// Package termsafe makes text from outside safe to print on an operator's
// terminal: trigger texts, model replies, pause reasons, file and key
// names may carry escape sequences or bidirectional controls, and none of
// them may drive the terminal or forge a line.
package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Every printer passes what it did not write itself through Line (one
// line) or Text (a text of several lines); JSON output passes through
// JSON, which keeps it JSON.

// Line returns s, one line of an operator's screen, with every
// character that could act on a terminal or change what the line seems
// to say escaped: the C0 controls (newline, tab and carriage return
// included: a field cannot start a line of its own, or a column), DEL,
// the C1 controls, the bidirectional controls that reorder text on screen
// (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) and the
// line and paragraph separators (U+2028, U+2029). ESC becomes \u001b;
// a byte that is not UTF-8 becomes \xff.
func Line(s string) string { return escape(s, false) }

// Text is Line for a text of several lines (a transcript,
// Memory.md, a diff): newline and tab are kept.
func Text(s string) string { return escape(s, true) }

// JSON escapes, in JSON that encoding/json wrote, the characters
// Line escapes that JSON leaves raw (DEL, the C1, bidirectional and
// separator characters), as \u escapes: the output stays valid JSON, of
// the same value.
func JSON(b []byte) []byte {
	if !strings.ContainsFunc(string(b), func(r rune) bool { return r >= 0x7f && Unsafe(r) }) {
		return b
	}
	var out strings.Builder
	for _, r := range string(b) {
		if r >= 0x7f && Unsafe(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return []byte(out.String())
}

// Unsafe reports whether r is a character Line escapes.
func Unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true // bidirectional controls
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

// escape is Line, keeping newline and tab when lines is set.
func escape(s string, lines bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Unsafe(r) && !(lines && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Unsafe(r) && !(lines && (r == '\n' || r == '\t')):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
