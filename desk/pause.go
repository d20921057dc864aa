package desk

// The kill switch: a paused desk runs no turn. Its triggers wait in the
// queue, or are refused (Options.RefusePaused); its scheduled slots are
// still claimed, and queued or refused alike. A running turn is not cut
// off: it finishes, and no turn starts after it. The pause is written to
// the desk's pause file before Pause returns, so it survives a restart.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory/durable"
)

// PauseFile is the name of the pause file in a desk's folder.
const PauseFile = "pause.json"

// ErrPaused is the error of Submit when the desk is paused and refuses
// triggers while paused; the *PausedError that wraps it says who paused
// the desk and why.
var ErrPaused = errors.New("desk is paused")

// Pause is who paused a desk, when and why.
type Pause struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// PausedError is Submit's error for a desk that refuses triggers while
// paused.
type PausedError struct {
	Desk  string
	Pause Pause
}

func (e *PausedError) Error() string {
	s := fmt.Sprintf("desk %s is paused (by %s since %s", e.Desk, e.Pause.By, e.Pause.At.UTC().Format(time.RFC3339))
	if e.Pause.Reason != "" {
		s += ": " + e.Pause.Reason
	}
	return s + ") and refuses triggers while paused"
}

// Is makes errors.Is(err, ErrPaused) true.
func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// pauseRecord is the pause file: the desk's last pause or resume.
type pauseRecord struct {
	Paused bool      `json:"paused"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// loadPause reads the pause file. A file that cannot be read or parsed
// keeps the desk paused: a kill switch fails safe.
func loadPause(path string) (*Pause, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var rec pauseRecord
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return &Pause{By: "deskd", Reason: fmt.Sprintf("the pause file %s is damaged (%v): resume the desk to clear it", path, err)}, err
	}
	if !rec.Paused {
		return nil, nil
	}
	return &Pause{By: rec.By, At: rec.At, Reason: rec.Reason}, nil
}

// writePause records a pause or a resume in the pause file, atomically,
// through the desk folder's file layer.
func (d *Desk) writePause(rec pauseRecord) error {
	if d.o.PauseFile == "" {
		return nil
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	var fsys durable.FS // through the folder's file layer: on a cluster, replicated like the desk's other writes
	if d.o.Folder != nil {
		fsys = d.o.Folder.FS
	}
	// An idle desk's folder may not be made yet (it is made by its first
	// write): this may be it.
	if err := durable.MkdirAll(fsys, filepath.Dir(d.o.PauseFile), 0o750); err != nil {
		return fmt.Errorf("write %s: %w", d.o.PauseFile, err)
	}
	if err := durable.WriteFile(fsys, d.o.PauseFile, append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("write %s: %w", d.o.PauseFile, err)
	}
	return nil
}

// Paused returns the desk's pause, or nil when it is not paused.
func (d *Desk) Paused() *Pause {
	d.pauseMu.Lock()
	defer d.pauseMu.Unlock()
	if d.pause == nil {
		return nil
	}
	p := *d.pause
	return &p
}

// Pause pauses the desk: no turn starts until Resume. The pause is on disk
// before Pause returns. A running turn finishes. If the desk is paused
// already, nothing changes and the existing pause is returned with
// changed false.
func (d *Desk) Pause(by, reason string) (p Pause, changed bool, err error) {
	if by == "" {
		by = "unknown"
	}
	d.pauseMu.Lock()
	if d.pause != nil {
		p = *d.pause
		d.pauseMu.Unlock()
		return p, false, nil
	}
	p = Pause{By: by, At: d.o.Clock.Now(), Reason: reason}
	if err := d.writePause(pauseRecord{Paused: true, By: p.By, At: p.At, Reason: p.Reason}); err != nil {
		d.pauseMu.Unlock()
		return Pause{}, false, fmt.Errorf("desk %s: pause: %w", d.o.Name, err)
	}
	d.pause = &p
	d.pauseMu.Unlock()
	d.setIdleState()
	if d.o.OnPause != nil {
		d.o.OnPause(p) // its tool calls waiting for an operator are denied now
	}
	event.Publish(d.o.Bus, event.DeskPaused{Header: d.header(), By: p.By, Reason: p.Reason})
	d.poke()
	return p, true, nil
}

// Resume ends the desk's pause: the triggers waiting in its queue run. It
// returns the pause that ended, or nil (and does nothing) when the desk
// was not paused.
func (d *Desk) Resume(by string) (*Pause, error) {
	if by == "" {
		by = "unknown"
	}
	d.pauseMu.Lock()
	if d.pause == nil {
		d.pauseMu.Unlock()
		return nil, nil
	}
	was := *d.pause
	if err := d.writePause(pauseRecord{Paused: false, By: by, At: d.o.Clock.Now()}); err != nil {
		d.pauseMu.Unlock()
		return nil, fmt.Errorf("desk %s: resume: %w", d.o.Name, err)
	}
	d.pause = nil
	d.pauseMu.Unlock()
	d.setIdleState()
	event.Publish(d.o.Bus, event.DeskResumed{Header: d.header(), By: by})
	d.poke()
	return &was, nil
}

// refusing returns the error a trigger gets now: a *PausedError while the
// desk is paused and refuses triggers, else nil.
func (d *Desk) refusing() error {
	d.pauseMu.Lock()
	defer d.pauseMu.Unlock()
	if d.pause == nil || !d.refusePaused {
		return nil
	}
	return &PausedError{Desk: d.o.Name, Pause: *d.pause}
}

// poke wakes the desk's loop: settings or the pause changed.
func (d *Desk) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}
