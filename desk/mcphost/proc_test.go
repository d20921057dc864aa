package mcphost_test

import (
	"encoding/json"
	"strconv"
	"testing"
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a PID: %q", s)
	}
	return n
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
