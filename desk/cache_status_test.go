package desk_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// cachingModel answers every call with a usage that read part of the
// prompt from the service's cache and wrote another part to it.
type cachingModel struct{}

func (cachingModel) Complete(_ context.Context, _ router.Request) (router.Response, error) {
	return router.Response{Text: "ok", Usage: memory.Usage{InputTokens: 1000, OutputTokens: 10, CachedTokens: 800, CacheWriteTokens: 100}}, nil
}

// TestCachedTokensInTurnCompletedAndStatus: a turn's cached tokens (read
// and written) are in its turn.completed, and the day's cached tokens in
// the desk's status (GET /v1/desks), next to its spend.
func TestCachedTokensInTurnCompletedAndStatus(t *testing.T) {
	h := desktest.New(t, desktest.Options{Model: cachingModel{}})
	for i, id := range []string{"t1", "t2"} {
		h.Submit(triggers.Trigger{ID: id, Kind: triggers.Manual, Text: "Check the tape."})
		done := eventtest.Next[event.TurnCompleted](h.Events)
		if done.CachedTokens != 800 || done.CacheWriteTokens != 100 || done.InputTokens != 1000 {
			t.Errorf("turn %d: turn.completed %+v, want 1000 input tokens, 800 cached, 100 written to the cache", i+1, done)
		}
		s := h.Desk.Status().Spend
		if want := int64(800 * (i + 1)); s.DayCachedTokens != want || s.DayTokens != int64(1010*(i+1)) {
			t.Errorf("after turn %d: status spend %+v, want %d cached of %d tokens", i+1, s, want, 1010*(i+1))
		}
	}
	b, err := json.Marshal(h.Desk.Status())
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Spend map[string]any `json:"spend"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Spend["day_cached_tokens"] != 1600.0 || v.Spend["day_tokens"] != 2020.0 {
		t.Errorf("status JSON spend = %v, want day_cached_tokens 1600 and day_tokens 2020", v.Spend)
	}
}
