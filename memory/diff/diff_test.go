package diff

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"from nothing", "", "a\nb\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to nothing", "a\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n"},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"missing newline", "a\nb", "a\nb\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"two hunks", lines(20), strings.Replace(strings.Replace(lines(20), "line 2\n", "two\n", 1), "line 18\n", "", 1),
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n" +
				"@@ -15,6 +15,5 @@\n line 15\n line 16\n line 17\n-line 18\n line 19\n line 20\n"},
		{"close changes share a hunk", lines(10), strings.Replace(strings.Replace(lines(10), "line 3\n", "", 1), "line 8\n", "eight\n", 1),
			"--- a\n+++ b\n@@ -1,10 +1,9 @@\n line 1\n line 2\n-line 3\n line 4\n line 5\n line 6\n line 7\n-line 8\n+eight\n line 9\n line 10\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("a", "b", tt.a, tt.b)
			if got != tt.want {
				t.Errorf("Unified(%q, %q) =\n%s\nwant\n%s", tt.a, tt.b, got, tt.want)
			}
			if got != "" {
				if patched := applyUnified(t, tt.a, got); patched != tt.b {
					t.Errorf("applying the diff to a gives %q, want %q", patched, tt.b)
				}
			}
		})
	}
}

// applyUnified applies a unified diff made by Unified to a.
func applyUnified(t *testing.T, a, diff string) string {
	t.Helper()
	src := splitLines(a)
	var out []string
	next := 0 // the next line of src to copy
	lines := strings.SplitAfter(diff, "\n")
	for i := 2; i < len(lines) && lines[i] != ""; i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "@@ -"):
			spec := strings.Fields(l)[1][1:]
			start, _, _ := strings.Cut(spec, ",")
			n, err := strconv.Atoi(start)
			if err != nil {
				t.Fatalf("bad hunk header %q", l)
			}
			if strings.HasSuffix(spec, ",0") {
				n++ // an empty range names the line before it
			}
			for ; next < n-1; next++ {
				out = append(out, src[next])
			}
		case strings.HasPrefix(l, `\ No newline`):
			k := len(out) - 1
			if strings.HasPrefix(lines[i-1], "-") {
				continue
			}
			out[k] = strings.TrimSuffix(out[k], "\n")
		case l[0] == ' ':
			out = append(out, src[next])
			next++
		case l[0] == '-':
			next++
		case l[0] == '+':
			out = append(out, l[1:])
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, "")
}
