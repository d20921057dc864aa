package natsfeed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// The request-reply form of the ingress. A message consumed from the
// stream cannot be answered on its own reply subject: JetStream answers a
// core request on a stream's subject itself (the PubAck), and the reply
// subject of a message it delivers is the ack's ($JS.ACK...). So a sender
// that wants the outcome names where in a header, and listens there.
const (
	// ReplyToHeader names the subject deskd answers on once the message's
	// trigger is final, or the reply's wait has passed: an inbox of the
	// sender's (it must begin with ReplyPrefix).
	ReplyToHeader = "Deskd-Reply-To"
	// ReplyWaitHeader, optional, is how long deskd waits for the trigger
	// to be final before it answers 202: a duration such as 30s; default
	// DefaultReplyWait, at most MaxReplyWait.
	ReplyWaitHeader = "Deskd-Reply-Wait"
	// StatusHeader is the answer's status, as the HTTP API's for
	// POST /v1/desks/{desk}/triggers?wait=: 200 (the body is the
	// trigger's final status, as GET .../triggers/{id} answers a feed:
	// no reply text), 202 (not final yet: {"id", "state", "duplicate"}),
	// 400 (the message was refused: {"error"}), 403 (the id is a trigger
	// NATS did not send: {"error"}).
	StatusHeader = "Deskd-Status"
	// ReplyPrefix begins every subject deskd answers on (what
	// nats.NewInbox makes): deskd publishes on no other subject on a
	// sender's word, so a message cannot make it write to the JetStream
	// API, its own events or its triggers.
	ReplyPrefix = nats.InboxPrefix
	// DefaultReplyWait is the wait of a message without ReplyWaitHeader.
	DefaultReplyWait = 30 * time.Second
	// MaxReplyWait bounds ReplyWaitHeader, as the HTTP API bounds ?wait=.
	MaxReplyWait = 5 * time.Minute
	// MaxReplyWaits bounds the senders waiting at once; the one past it is
	// answered at once, with the trigger's state then.
	MaxReplyWaits = 1000
)

// reply is where and how long a message's sender waits: to is empty when
// it waits for nothing.
type reply struct {
	to   string
	wait time.Duration
}

// replyOf reads the reply headers of a message. A bad one is an error
// (the message is refused, as the API refuses a bad ?wait=); the reply
// is kept when its subject is good, so that the refusal is answered.
func replyOf(h nats.Header) (reply, error) {
	to := h.Get(ReplyToHeader)
	if to == "" {
		if h.Get(ReplyWaitHeader) != "" {
			return reply{}, fmt.Errorf("%s without %s: name the subject to answer on", ReplyWaitHeader, ReplyToHeader)
		}
		return reply{}, nil
	}
	if !strings.HasPrefix(to, ReplyPrefix) || len(to) == len(ReplyPrefix) || strings.ContainsAny(to, " \t\r\n*>") ||
		strings.Contains(to, "..") || strings.HasSuffix(to, ".") {
		return reply{}, fmt.Errorf("%s %q: want a subject beginning with %s, without wildcards (an inbox, nats.NewInbox)", ReplyToHeader, to, ReplyPrefix)
	}
	r := reply{to: to, wait: DefaultReplyWait}
	if v := h.Get(ReplyWaitHeader); v != "" {
		w, err := time.ParseDuration(v)
		if err != nil || w < 0 {
			return r, fmt.Errorf("%s %q: want a duration such as 30s", ReplyWaitHeader, v)
		}
		r.wait = min(w, MaxReplyWait)
	}
	return r, nil
}

// errorBody is the body of a refusal, as the API's errors.
type errorBody struct {
	Error string `json:"error"`
}

// pending is the body of a 202: the API's TriggerResponse.
type pending struct {
	ID        string         `json:"id"`
	State     triggers.State `json:"state,omitempty"`
	Duplicate bool           `json:"duplicate,omitempty"`
	Replaced  string         `json:"replaced,omitempty"`
}

// sentByNATS reports whether a trigger's source says NATS sent it.
func sentByNATS(source string) bool { return source == Source || strings.HasPrefix(source, Source+":") }

// replyOnceFinal answers rp, if it waits, once acc's trigger is final, its
// wait has passed on the desk's clock or the feed stops, in a goroutine
// of the feed's (Stop waits for it).
func (f *Feed) replyOnceFinal(rp reply, d *desk.Desk, acc desk.Accepted) {
	if rp.to == "" {
		return
	}
	if st, ok := d.Trigger(acc.ID); ok && !sentByNATS(st.Source) {
		f.answer(rp, http.StatusForbidden, errorBody{Error: fmt.Sprintf("desk %s: trigger %q was not sent through NATS: NATS reads only the triggers it sent", d.Name(), acc.ID)})
		return
	}
	wait := rp.wait
	if f.waiting.Add(1) > MaxReplyWaits {
		wait = 0 // answered at once
	}
	f.replies.Go(func() {
		defer f.waiting.Add(-1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := make(chan struct{})
		defer close(stop)
		go func() { // ends with the wait: stop is closed when this goroutine's owner returns
			select {
			case <-f.stopping:
				cancel()
			case <-stop:
			}
		}()
		var (
			st    desk.TriggerStatus
			found bool
		)
		if wait > 0 {
			st, found = d.WaitTrigger(ctx, acc.ID, wait)
		} else {
			st, found = d.Trigger(acc.ID)
		}
		if found && st.Final() {
			st.Reply = "" // NATS is a feed: the desk's answer (positions, orders) is the operator's to read
			f.answer(rp, http.StatusOK, st)
			return
		}
		state := acc.State
		if found {
			state = st.State
		}
		f.answer(rp, http.StatusAccepted, pending{ID: acc.ID, State: state, Duplicate: acc.Duplicate, Replaced: acc.Replaced})
	})
}

// answer publishes body, with its status, on rp's subject (if any).
func (f *Feed) answer(rp reply, status int, body any) {
	if rp.to == "" {
		return
	}
	data, err := json.Marshal(body)
	if err != nil {
		f.o.Log.Error().Err(err).Str("subject", rp.to).Msg("nats triggers: encode the answer")
		return
	}
	m := &nats.Msg{Subject: rp.to, Header: nats.Header{}, Data: data}
	m.Header.Set(StatusHeader, strconv.Itoa(status))
	if err := f.o.Conn.PublishMsg(m); err != nil {
		f.o.Log.Warn().Err(err).Str("subject", rp.to).Msg("nats triggers: answer a sender that waits")
	}
}
