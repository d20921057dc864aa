package systemd

import (
	"strings"
	"testing"
)

func TestNotifyOneLine(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct{ in, want string }{
		{"running", "running"},
		{"a\nb", "a ; b"},
		{"  spaced\tout  ", "spaced out"},
		{long, strings.Repeat("x", 199) + "…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
