package desk_test

import (
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// TestTriggerProgressSameRunningWithoutPhase: a running trigger whose
// phase the desk's status no longer shows (read just after its turn
// ended) is no news after "running (model)", so deskd trigger --wait
// prints no bare "running" line between it and "answered"; a phase that
// follows a phaseless running is news.
func TestTriggerProgressSameRunningWithoutPhase(t *testing.T) {
	running := func(ph desk.Phase) desk.TriggerProgress {
		return desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t", State: triggers.StateRunning}, Phase: ph}
	}
	if !running(desk.PhaseModel).Same(running("")) {
		t.Error(`running (model) then running without a phase: Same = false, want true (no news)`)
	}
	if running("").Same(running(desk.PhaseModel)) {
		t.Error(`running without a phase then running (model): Same = true, want false (the phase is news)`)
	}
}
