package httpapi

import (
	"net/http"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// sseWriteTimeout bounds one round of writes to an event stream's
// client: one that stops reading holds its connection no longer than
// this (then it is dropped), whatever the ring holds for it.
const sseWriteTimeout = 30 * time.Second

// watchWrites arms a watchdog on c for sseWriteTimeout: if the round of
// writes it guards has not ended by then, the connection's write
// deadline is moved into the past, so the blocked write fails and the
// stream ends. done disarms it; call it when the round's writes return.
func watchWrites(c clock.Clock, rc *http.ResponseController) (done func()) {
	t := c.NewTimer(sseWriteTimeout)
	stop := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-t.C():
			_ = rc.SetWriteDeadline(time.Unix(1, 0)) // any past instant: a net deadline, not deskd's clock
		case <-stop:
		}
	}()
	return func() {
		t.Stop()
		close(stop)
		<-ended
	}
}
