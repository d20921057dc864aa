package desk

import (
	"sort"
	"sync"
)

// Set is the running desks by name: what the API, the spool and the
// metrics see. The daemon puts a desk in once it takes triggers and takes
// it out when it stops for good. It is safe for concurrent use.
type Set struct {
	mu    sync.RWMutex
	desks map[string]*Desk
	// rejected are the current config rejections (rejected.go).
	rejected []ConfigRejection
}

// NewSet returns a set of the desks ds.
func NewSet(ds ...*Desk) *Set {
	s := &Set{desks: map[string]*Desk{}}
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

// Put adds d, or replaces the desk of its name.
func (s *Set) Put(d *Desk) {
	s.mu.Lock()
	s.desks[d.Name()] = d
	d.configRejected.Store(firstRejection(s.rejected, d.Name()))
	s.mu.Unlock()
}

// Remove takes the desk called name out.
func (s *Set) Remove(name string) {
	s.mu.Lock()
	delete(s.desks, name)
	s.mu.Unlock()
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
