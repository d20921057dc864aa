package httpapi

// deskd trigger --wait's exchange: one POST that deskd answers when the
// turn ends, then, for a turn still going, a watch on the host that took
// the trigger.

import (
	"context"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// SendAndWait posts trigger r to desk deskName, following a cluster's 421
// to the desk's owner (OnOwner), and asks deskd to answer once the turn
// ends within min(timeout, first) (PostTriggerWait). taken is told the
// accepted trigger once a host took it. A turn that does not end within
// that first wait is watched on the host that took it (WatchTrigger,
// progress told each change) for the rest of timeout, measured on c.Now.
// The status returned is not Final when timeout passed first.
func (c *Client) SendAndWait(ctx context.Context, deskName string, r triggers.Request, timeout, first time.Duration,
	taken func(TriggerResponse), progress func(desk.TriggerProgress)) (TriggerResponse, desk.TriggerStatus, error) {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	var acc TriggerResponse
	var s desk.TriggerStatus
	var final bool
	at, err := c.OnOwner(func(at *Client) (err error) {
		acc, s, final, err = at.PostTriggerWait(ctx, deskName, r, min(timeout, first))
		return err
	})
	if err != nil {
		return acc, s, err
	}
	taken(acc)
	if !final {
		s, err = at.WatchTrigger(ctx, deskName, acc.ID, max(timeout-now().Sub(start), 0), progress)
	}
	return acc, s, err
}
