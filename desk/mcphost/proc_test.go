package mcphost_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
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

func killPID(pid int) { unix.Kill(pid, unix.SIGKILL) }

func contextWithWait(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), wait)
}
