package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestCheckConfigDiffWithoutDaemon: check-config --diff says clearly that
// no deskd runs, and fails.
func TestCheckConfigDiffWithoutDaemon(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"check-config", "--diff", "--addr", "127.0.0.1:" + freePortString(t)}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no running deskd answered at http://127.0.0.1:") ||
		!strings.Contains(errb.String(), "without --diff checks the files alone") {
		t.Errorf("check-config --diff without a daemon = %d\n%s%s", code, out.String(), errb.String())
	}
}

// freePortString returns a TCP port on 127.0.0.1 that nothing listens on.
func freePortString(t *testing.T) string { return strconv.Itoa(pickFreePort(t)) }
