//go:build slow

package main

// TestClusterBenchSmallest builds deskd and runs three of them on a NATS
// cluster (about 10 s): CI runs it (-tags slow), the quick loop leaves it
// out.

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestClusterBenchSmallest runs the cluster subcommand for one round at
// its smallest against the deskd binary built from this module, and
// checks that it measured both failovers and both event-to-model figures
// (for triggers by HTTP and by NATS) and that every trigger acknowledged
// was answered exactly once. It asserts no speed.
func TestClusterBenchSmallest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three deskd binaries on a NATS cluster: skipped under -short")
	}
	bin, err := buildDeskd(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"cluster", "-json", "-deskd", bin, "-work", t.TempDir(), "-rounds", "1", "-events", "3", "-steady", "300ms"}
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("deskbench %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode the report: %v\n%s", err, stdout.String())
	}
	want := map[string]bool{
		"SIGKILL of the owner to a standby's first answer (median)":                              false,
		"SIGTERM of the owner to a standby's first answer (median)":                              false,
		"event to model p50, cluster (median of rounds)":                                         false,
		"event to model p50, one host (median of rounds)":                                        false,
		"SIGKILL of the owner to the first answer of a NATS trigger published after it (median)": false,
		"SIGTERM of the owner to the first answer of a NATS trigger published after it (median)": false,
	}
	once := false
	for _, f := range rep.Figures {
		if _, ok := want[f.Name]; ok {
			want[f.Name] = f.Failed == "" && f.Value > 0
		}
		if strings.HasPrefix(f.Name, "acknowledged triggers answered") {
			once = f.Met != nil && *f.Met && f.Value > 0
			if !once {
				t.Errorf("the exactly-once check: %v %s (%s)", f.Value, f.Unit, f.Note)
			}
		}
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("no positive figure %q in %s", name, stdout.String())
		}
	}
	if !once {
		t.Error("no exactly-once check reported")
	}
}
