package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

// The operator commands' tests build a desk's state folder with
// memorytest (no daemon), then run the commands in process (runOps).

// The fixture's sessions, Memory.md versions and summaries (memorytest).
const (
	opsS1      = memorytest.S1
	opsS2      = memorytest.S2
	opsSummary = memorytest.Summary
)

// opsSetup is a config and a desk's state folder built for a test.
type opsSetup struct{ *memorytest.Desk }

// newOpsSetup is memorytest.New: the config and an empty desk folder.
func newOpsSetup(t *testing.T) *opsSetup { return &opsSetup{memorytest.New(t)} }

// newOpsDesk is memorytest.Populated: the whole fixture desk.
func newOpsDesk(t *testing.T) *opsSetup { return &opsSetup{memorytest.Populated(t)} }

// at moves the fixture's clock.
func (s *opsSetup) at(t *testing.T, when string) { s.At(t, when) }

// writeMemoryAt writes Memory.md with the fixture's clock at when (at).
func (s *opsSetup) writeMemoryAt(t *testing.T, when, text string) {
	t.Helper()
	s.at(t, when)
	if _, err := s.Folder.WriteMemory(text); err != nil {
		t.Fatalf("write Memory.md at %s: %v", when, err)
	}
}

// session creates a session and appends recs (memorytest.Desk.Session).
func (s *opsSetup) session(t *testing.T, header memory.Record, recs ...memory.Record) {
	t.Helper()
	s.Session(t, header, recs...)
}

// utcTime parses an RFC 3339 instant.
func utcTime(t *testing.T, s string) time.Time { t.Helper(); return memorytest.UTC(t, s) }

// runOps runs deskd with args and the fixture's --config in process.
func runOps(t *testing.T, s *opsSetup, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), append(args, "--config", s.Config), &out, &errOut)
	return code, out.String(), errOut.String()
}

// runOpsOK is runOps that fails the test unless the command exits 0, and
// returns its stdout.
func runOpsOK(t *testing.T, s *opsSetup, args ...string) string {
	t.Helper()
	code, out, errOut := runOps(t, s, args...)
	if code != 0 {
		t.Fatalf("deskd %s: exit %d, stderr %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// opsRefusal is a command the operator's tools refuse: its arguments, the
// exit code, and what its stderr says.
type opsRefusal struct {
	name   string
	args   []string
	code   int
	reason string
}

// checkRefusals runs each refusal's command (runOps) in a subtest and
// reports an error unless it exits with its code and says its reason.
func checkRefusals(t *testing.T, s *opsSetup, tests []opsRefusal) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runOps(t, s, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.reason) {
				t.Errorf("deskd %v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, tt.code, tt.reason)
			}
		})
	}
}
