package main

// The wiring of notifications (desk/notify): the main file's notify
// targets, each desk's notify.answers, and the ledgers' triggers.

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/notify"
	"github.com/deskd/deskd/desk/termsafe"
)

// NotifyDir is the notifications' folder under state_dir: one outbox per
// target below it.
const notifyDir = "notify"

// startNotify makes and starts the notifier of cfg's notify targets, or
// returns nil without any. daemon returns the daemon once it is made (the
// desks' answers and ledgers); nil before.
func startNotify(cfg *config.Config, bus *event.Bus, clk clock.Clock, log zerolog.Logger, daemon func() *desk.Daemon) (*notify.Notifier, error) {
	if len(cfg.Notify) == 0 {
		return nil, nil
	}
	targets, err := notify.TargetsOf(cfg.Notify)
	if err != nil {
		return nil, err
	}
	n, err := notify.New(notify.Options{
		Targets: targets, Dir: filepath.Join(cfg.StateDir, notifyDir), ConsoleURL: cfg.ConsoleURL, Bus: bus, Clock: clk, Log: log,
		Answers: func(name string) []string {
			d := daemon()
			if d == nil {
				return nil
			}
			if dc := d.Config().Desks[name]; dc != nil {
				return dc.NotifyAnswers
			}
			return nil
		},
		Trigger: func(name, id string) (notify.Trigger, bool) {
			d := daemon()
			if d == nil {
				return notify.Trigger{}, false
			}
			dk, ok := d.Set().Get(name)
			if !ok {
				return notify.Trigger{}, false
			}
			s, ok := dk.Trigger(id)
			return notify.Trigger{Kind: string(s.Kind), Text: s.Text, Reply: s.Reply}, ok
		},
	})
	if err != nil {
		return nil, err
	}
	n.Start()
	return n, nil
}

// notifyTrouble prints a line for each notification target that is
// failing or has lost notifications (deskd status).
func notifyTrouble(w io.Writer, st []httpapi.NotifyStatus) {
	for _, s := range st {
		if !s.Failing && s.Failed == 0 {
			continue
		}
		line := "notify " + termsafe.Line(s.Target) + " (" + termsafe.Line(s.Host) + "): "
		if s.Failing {
			line += "failing since " + s.Since.Format(time.RFC3339) + " (" + termsafe.Line(s.LastError) + "), retried with backoff; "
		}
		line += fmt.Sprintf("%s pending, %s lost (given up, or not kept)", termsafe.Plural(s.Pending, "notification"), termsafe.Plural(int(s.Failed), "notification"))
		fmt.Fprintln(w, line)
	}
}
