package triggers_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/deskd/deskd/triggers"
)

func add(t *testing.T, q *triggers.Queue, tr triggers.Trigger) (triggers.Trigger, *triggers.Trigger, error) {
	t.Helper()
	return q.Add(tr, func(triggers.Trigger, *triggers.Trigger, int) error { return nil })
}

func popAll(q *triggers.Queue) []string {
	var ids []string
	for {
		tr, ok := q.Pop()
		if !ok {
			return ids
		}
		ids = append(ids, tr.ID)
	}
}

// TestQueuePriority: manual before market before schedule, each in
// arrival order.
func TestQueuePriority(t *testing.T) {
	q := triggers.NewQueue(10, false)
	for _, tr := range []triggers.Trigger{
		{ID: "s1", Kind: triggers.Schedule}, {ID: "m1", Kind: triggers.Market}, {ID: "h1", Kind: triggers.Manual},
		{ID: "s2", Kind: triggers.Schedule}, {ID: "m2", Kind: triggers.Market}, {ID: "h2", Kind: triggers.Manual},
	} {
		if _, _, err := add(t, q, tr); err != nil {
			t.Fatal(err)
		}
	}
	var items []string
	for _, tr := range q.Items() {
		items = append(items, tr.ID)
	}
	want := "h1 h2 m1 m2 s1 s2"
	if got := strings.Join(items, " "); got != want {
		t.Errorf("Items = %s, want %s", got, want)
	}
	if got := strings.Join(popAll(q), " "); got != want {
		t.Errorf("Pop order = %s, want %s", got, want)
	}
}

// TestQueueLimit: a full queue refuses without calling commit; Restore
// ignores the limit.
func TestQueueLimit(t *testing.T) {
	q := triggers.NewQueue(2, false)
	for _, id := range []string{"a", "b"} {
		if _, _, err := add(t, q, triggers.Trigger{ID: id, Kind: triggers.Market}); err != nil {
			t.Fatal(err)
		}
	}
	called := false
	_, _, err := q.Add(triggers.Trigger{ID: "c", Kind: triggers.Market}, func(triggers.Trigger, *triggers.Trigger, int) error {
		called = true
		return nil
	})
	if !errors.Is(err, triggers.ErrQueueFull) || called {
		t.Errorf("Add to a full queue = %v, commit called %v; want ErrQueueFull, not called", err, called)
	}
	q.Restore(triggers.Trigger{ID: "r", Kind: triggers.Manual})
	if q.Len() != 3 {
		t.Errorf("Len after Restore = %d, want 3", q.Len())
	}
}

// TestQueueCommitFails: when commit fails the queue is unchanged.
func TestQueueCommitFails(t *testing.T) {
	q := triggers.NewQueue(2, true)
	boom := errors.New("disk full")
	_, _, err := q.Add(triggers.Trigger{ID: "a", Kind: triggers.Market, Key: "X"}, func(triggers.Trigger, *triggers.Trigger, int) error { return boom })
	if !errors.Is(err, boom) || q.Len() != 0 {
		t.Fatalf("Add = %v, Len %d; want the commit's error and an empty queue", err, q.Len())
	}
	if _, _, err := add(t, q, triggers.Trigger{ID: "a", Kind: triggers.Market, Key: "X"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = q.Add(triggers.Trigger{ID: "b", Kind: triggers.Market, Key: "X"}, func(triggers.Trigger, *triggers.Trigger, int) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got := q.Items(); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("after a failed replacement, Items = %+v, want a alone", got)
	}
}

// TestQueueCoalesce: with coalescing, a market trigger replaces the queued
// market trigger of its key in place, counting the merges; it does so in
// a full queue too; other kinds and other keys are untouched.
func TestQueueCoalesce(t *testing.T) {
	q := triggers.NewQueue(3, true)
	for _, tr := range []triggers.Trigger{
		{ID: "n1", Kind: triggers.Market, Key: "NIFTY"},
		{ID: "b1", Kind: triggers.Market, Key: "BANKNIFTY"},
		{ID: "h1", Kind: triggers.Manual, Key: "NIFTY"},
	} {
		if _, _, err := add(t, q, tr); err != nil {
			t.Fatal(err)
		}
	}
	got, replaced, err := add(t, q, triggers.Trigger{ID: "n2", Kind: triggers.Market, Key: "NIFTY"})
	if err != nil || replaced == nil || replaced.ID != "n1" || got.Merged != 1 {
		t.Fatalf("coalesce n2 = %+v, replaced %+v, %v", got, replaced, err)
	}
	got, replaced, err = add(t, q, triggers.Trigger{ID: "n3", Kind: triggers.Market, Key: "NIFTY"})
	if err != nil || replaced == nil || replaced.ID != "n2" || got.Merged != 2 {
		t.Fatalf("coalesce n3 = %+v, replaced %+v, %v", got, replaced, err)
	}
	if _, _, err := add(t, q, triggers.Trigger{ID: "x", Kind: triggers.Market, Key: "RELIANCE"}); !errors.Is(err, triggers.ErrQueueFull) {
		t.Errorf("a new key in a full queue = %v, want ErrQueueFull", err)
	}
	if _, _, err := add(t, q, triggers.Trigger{ID: "nokey", Kind: triggers.Market}); !errors.Is(err, triggers.ErrQueueFull) {
		t.Errorf("a keyless market trigger in a full queue = %v, want ErrQueueFull", err)
	}
	if got := strings.Join(popAll(q), " "); got != "h1 n3 b1" {
		t.Errorf("Pop order = %s, want h1 n3 b1 (n3 in n1's place)", got)
	}

	off := triggers.NewQueue(3, false)
	add(t, off, triggers.Trigger{ID: "n1", Kind: triggers.Market, Key: "NIFTY"})
	if _, replaced, _ := add(t, off, triggers.Trigger{ID: "n2", Kind: triggers.Market, Key: "NIFTY"}); replaced != nil || off.Len() != 2 {
		t.Errorf("without coalescing, a second NIFTY replaced %v, Len %d", replaced, off.Len())
	}
}
