package termsafe_test

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/deskd/deskd/desk/termsafe"
)

func TestPrintable(t *testing.T) {
	tests := []struct{ in, line, text string }{
		{"plain text, é", "plain text, é", "plain text, é"},
		{"\x1b[2Jwipe", `\u001b[2Jwipe`, `\u001b[2Jwipe`},
		{"a\nb\tc\rd", `a\u000ab\u0009c\u000dd`, "a\nb\tc\\u000dd"},
		{"del\x7f c1\u009b", `del\u007f c1\u009b`, `del\u007f c1\u009b`},
		{"bidi \u202egnp.exe \u2066x\u2069 \u200f", `bidi \u202egnp.exe \u2066x\u2069 \u200f`, `bidi \u202egnp.exe \u2066x\u2069 \u200f`},
		{"sep\u2028arator", `sep\u2028arator`, `sep\u2028arator`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
		}
	}
	v := map[string]string{"reason": "\x1b[31mred\u202e \x7f\u0085"}
	b, _ := json.Marshal(v)
	out := JSON(b)
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["reason"] != v["reason"] {
		t.Errorf("JSON(%s) = %s: not the same JSON (%v)", b, out, err)
	}
	if hasRaw(string(out)) {
		t.Errorf("JSON left raw controls: %q", out)
	}
}

// hasRaw reports whether s holds a control character other than newline
// and tab, or a bidi control.
func hasRaw(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && Unsafe(r) })
}
