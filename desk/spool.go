package desk

// The spool folders of the running daemon: a trigger file dropped in
// <state_dir>/inbox/<desk>/ is submitted to the desk of that name in the
// set, as a feed's trigger.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/triggers"
)

// InboxDir returns the root of the spool folders of the state folder
// stateDir: one folder per desk below it.
func InboxDir(stateDir string) string { return filepath.Join(stateDir, "inbox") }

// spool takes trigger files from the inboxes of the desks of a set. It is
// used by the daemon's main loop alone.
type spool struct {
	dir string // the inbox root
	set *Set
	clk clock.Clock
	bus *event.Bus
	log zerolog.Logger

	// names are the desks the running spool serves; start runs it again
	// when the desks change.
	names []string
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// spoolSubmitError is what the spool hears of a desk's Submit: a desk
// that is restarting (to take a config change) or cannot write to its disk
// is "full" for the spool, which leaves the file in the inbox for its next
// look; any other error rejects the file.
func spoolSubmitError(name string, err error) error {
	switch {
	case errors.Is(err, ErrStopped):
		return fmt.Errorf("%w (desk %s is restarting)", triggers.ErrQueueFull, name)
	case errors.Is(err, ErrStorage):
		return fmt.Errorf("%w (desk %s cannot write to its disk: %v)", triggers.ErrQueueFull, name, err)
	}
	return err
}

// submit submits the trigger of an inbox file to its desk. A desk that
// does not run here now (a cluster's desk standing by, starting, failed
// to start), or that left this host while it submitted (its lease lost),
// keeps the file in the inbox for a later look; a desk gone from the
// config rejects it.
func (s *spool) submit(name, file string, r triggers.Request) error {
	p := s.set.Locate(name)
	switch {
	case p.Desk == nil && p.State != "":
		return fmt.Errorf("%w (desk %s does not run on this host now: %s)", triggers.ErrQueueFull, name, p.State)
	case p.Desk == nil:
		return fmt.Errorf("desk %s is not in the config any more", name)
	}
	_, err := p.Desk.Submit(r.Trigger(name, "inbox:"+file))
	if err != nil && s.set.Locate(name).Desk != p.Desk {
		return fmt.Errorf("%w (desk %s left this host: %v)", triggers.ErrQueueFull, name, err)
	}
	return spoolSubmitError(name, err)
}

// start takes trigger files from the inboxes of the set's desks, unless it
// does already; when the desks changed it starts again on the new ones.
func (s *spool) start(ctx context.Context) error {
	names := s.set.Names()
	if s.stop != nil && slices.Equal(names, s.names) {
		return nil
	}
	s.halt()
	sp := &triggers.Spool{
		Dir: s.dir, Desks: names, Clock: s.clk,
		Submit: s.submit,
		Rejected: func(name, file, reason string) {
			event.Publish(s.bus, event.InboxRejected{Header: event.Header{At: s.clk.Now(), Desk: name}, File: file, Reason: reason})
		},
		Failed: func(name, file string, err error) {
			s.log.Error().Err(err).Str("desk", name).Str("file", file).Msg("inbox file left in place")
		},
	}
	if err := sp.Open(); err != nil {
		return err
	}
	spoolCtx, stop := context.WithCancel(ctx)
	s.stop, s.names = stop, names
	s.wg.Add(1)
	go func() { defer s.wg.Done(); sp.Run(spoolCtx) }()
	return nil
}

// running reports whether the spool is taking files.
func (s *spool) running() bool { return s.stop != nil }

// halt stops taking files, and waits until the spool has stopped.
func (s *spool) halt() {
	if s.stop != nil {
		s.stop()
		s.wg.Wait()
		s.stop, s.names = nil, nil
	}
}
