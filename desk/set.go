package desk

import (
	"maps"
	"sort"
	"sync"
	"time"
)

// StateFailed is the state of a desk of the config that failed to start
// (Set.Fail): it runs no turn and takes no trigger; the other desks run.
const StateFailed State = "failed"

// Failure is why a desk of the config does not run: its start failed.
type Failure struct {
	// File is the desk's file that stopped it (a damaged rollover.json,
	// say), when the failure names one; it is left where it is, for an
	// operator to mend or move away.
	File string `json:"file,omitempty"`
	// Reason is the error of the start.
	Reason string `json:"reason"`
	// Since is when it failed, on deskd's clock.
	Since time.Time `json:"since"`
}

// Set is the running desks by name: what the API, the spool and the
// metrics see. The daemon puts a desk in once it takes triggers and takes
// it out when it stops for good. It is safe for concurrent use.
type Set struct {
	mu    sync.RWMutex
	desks map[string]*Desk
	// rejected are the current config rejections (rejected.go).
	rejected []ConfigRejection
	// failed are the desks of the config that failed to start, by name.
	failed map[string]Failure
}

// NewSet returns a set of the desks ds.
func NewSet(ds ...*Desk) *Set {
	s := &Set{desks: map[string]*Desk{}, failed: map[string]Failure{}}
	for _, d := range ds {
		s.desks[d.Name()] = d
	}
	return s
}

// Get returns the desk called name.
func (s *Set) Get(name string) (*Desk, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.desks[name]
	return d, ok
}

// List returns the desks, sorted by name.
func (s *Set) List() []*Desk {
	s.mu.RLock()
	out := make([]*Desk, 0, len(s.desks))
	for _, d := range s.desks {
		out = append(out, d)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Names returns the desks' names, sorted.
func (s *Set) Names() []string {
	s.mu.RLock()
	names := make([]string, 0, len(s.desks))
	for name := range s.desks {
		names = append(names, name)
	}
	s.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Put adds d, or replaces the desk of its name; a failure of its name
// (Fail) is over.
func (s *Set) Put(d *Desk) {
	s.mu.Lock()
	s.desks[d.Name()] = d
	delete(s.failed, d.Name())
	d.configRejected.Store(firstRejection(s.rejected, d.Name()))
	s.mu.Unlock()
}

// Remove takes the desk called name out.
func (s *Set) Remove(name string) {
	s.mu.Lock()
	delete(s.desks, name)
	s.mu.Unlock()
}

// Fail records that the desk called name failed to start, and why. It is
// not in the set's desks (a running desk of the name is taken out), and
// is listed by Failed and Statuses until it starts (Put) or Unfail.
func (s *Set) Fail(name string, f Failure) {
	s.mu.Lock()
	delete(s.desks, name)
	s.failed[name] = f
	s.mu.Unlock()
}

// Unfail forgets the failure of the desk called name (its file is gone
// from the config).
func (s *Set) Unfail(name string) {
	s.mu.Lock()
	delete(s.failed, name)
	s.mu.Unlock()
}

// Failed returns the desks that failed to start, by name.
func (s *Set) Failed() map[string]Failure {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.failed) // never nil: NewSet makes s.failed
}

// Statuses returns the status of every desk, sorted by name: each running
// desk's (Desk.Status), and for each desk that failed to start, one of
// state failed with its Failure.
func (s *Set) Statuses() []Status {
	desks := s.List()
	out := make([]Status, 0, len(desks))
	for _, d := range desks {
		out = append(out, d.Status())
	}
	for name, f := range s.Failed() {
		out = append(out, Status{Name: name, AsOf: f.Since, State: StateFailed, Interrupted: []TriggerStatus{}, Failed: &f})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ConfigCheck is what a reload of the config files would do, found
// without doing it (GET /v1/config/diff): the changes, or the problems
// that would refuse it.
type ConfigCheck struct {
	// Config is the main file the daemon runs on.
	Config   string         `json:"config"`
	Changes  []ConfigChange `json:"changes"`
	Problems []string       `json:"problems"`
}

// ConfigChange is one change of a ConfigCheck.
type ConfigChange struct {
	Desk    string `json:"desk,omitempty"`
	Field   string `json:"field,omitempty"`
	What    string `json:"what"`
	Restart bool   `json:"restart,omitempty"`
}
