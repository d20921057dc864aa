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

// StateStandby is the state of a desk of a cluster's config that another
// host owns, or that no host has won yet (config cluster): this host runs
// none of it and stands by to take it over; its triggers go to the owner
// (421).
const StateStandby State = "standby"

// Owner is the host of a cluster that owns a desk (its lease in
// DESKD_OWNERS, docs/SCALING.md).
type Owner struct {
	// Host is the owner's cluster.host.
	Host string `json:"host"`
	// Epoch is the desk's epoch: the KV revision of the write that won
	// the lease, the same on every host.
	Epoch uint64 `json:"epoch"`
	// Since is when the owner won the lease, on its clock.
	Since time.Time `json:"since"`
	// Addr is the owner's API address, where a client is sent; empty
	// when it has none.
	Addr string `json:"addr,omitempty"`
}

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
	// owners are the owners of the desks of a cluster, by name: of those
	// this host runs, and of those it stands by for (standby).
	owners map[string]Owner
	// standby are the desks of a cluster this host stands by for, and
	// starting those it has won and is starting (Own), not yet running.
	standby  map[string]bool
	starting map[string]bool
	// storesDown are the desks of a cluster this host stopped because the
	// cluster's stores could not make their writes durable (StoresLost).
	storesDown map[string]StorageStatus
}

// NewSet returns a set of the desks ds.
func NewSet(ds ...*Desk) *Set {
	s := &Set{desks: map[string]*Desk{}, failed: map[string]Failure{}, owners: map[string]Owner{}, standby: map[string]bool{}, starting: map[string]bool{},
		storesDown: map[string]StorageStatus{}}
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
	out := s.listLocked()
	s.mu.RUnlock()
	return out
}

// listLocked is List under the set's lock (read).
func (s *Set) listLocked() []*Desk {
	out := make([]*Desk, 0, len(s.desks))
	for _, d := range s.desks {
		out = append(out, d)
	}
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
// (Fail) is over, and so is its standby (Standby).
func (s *Set) Put(d *Desk) {
	s.mu.Lock()
	s.desks[d.Name()] = d
	delete(s.failed, d.Name())
	delete(s.standby, d.Name())
	delete(s.starting, d.Name())
	delete(s.storesDown, d.Name())
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

// RunningAndFailed returns List and Failed of one look: a desk moving
// between running and failed is in one of them, never in both or none.
func (s *Set) RunningAndFailed() ([]*Desk, map[string]Failure) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.listLocked(), maps.Clone(s.failed)
}

// Standby records that this host stands by for the desk called name, of
// a cluster: it is not in the set's desks (a running desk of the name is
// taken out, a failure to start it here forgotten), and is listed by
// Statuses in state standby with owner o (nil: no host owns it now) until
// it runs here (Put) or Unstandby.
func (s *Set) Standby(name string, o *Owner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.desks, name)
	delete(s.starting, name)
	delete(s.failed, name) // this host's failure to start it is past: it stands by
	s.standby[name] = true
	if o != nil {
		s.owners[name] = *o
		delete(s.storesDown, name) // the stores answer: an owner is seen
	} else {
		delete(s.owners, name)
	}
}

// Own records o, this host, as the owner of the desk called name, which
// it has won and is starting (a failure to start it before forgotten):
// until it runs (Put), Statuses lists it in state starting.
func (s *Set) Own(name string, o Owner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owners[name] = o
	delete(s.standby, name)
	delete(s.failed, name) // starting again
	if _, running := s.desks[name]; !running {
		s.starting[name] = true
	}
}

// Unstandby forgets the desk called name as a desk of a cluster: its
// standby and its owner (it left the config).
func (s *Set) Unstandby(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.standby, name)
	delete(s.starting, name)
	delete(s.owners, name)
	delete(s.storesDown, name)
}

// StoresLost records that the desk called name, of a cluster, stands by
// here because the cluster's stores could not make its writes durable
// (quorum lost): StoresTrouble shows st until the desk runs again or
// another owner is seen (Standby with an owner).
func (s *Set) StoresLost(name string, st StorageStatus) {
	s.mu.Lock()
	s.storesDown[name] = st
	s.mu.Unlock()
}

// StoresTrouble returns the storage trouble of the desks this host stopped
// because the cluster's stores could not make their writes durable, by
// name; nil when there is none.
func (s *Set) StoresTrouble() map[string]*StorageStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.storesDown) == 0 {
		return nil
	}
	out := make(map[string]*StorageStatus, len(s.storesDown))
	for name, st := range s.storesDown {
		out[name] = &st
	}
	return out
}

// Place is where a desk is, as one look at the set sees it: running here
// (Desk), or not, and then why (State).
type Place struct {
	// Name is the desk's name.
	Name string
	// Desk is the desk when it runs on this host; nil otherwise.
	Desk *Desk
	// State, when Desk is nil, is StateStandby (another host of the
	// cluster owns the desk, or none yet), StateStarting (this host won
	// it and is starting it) or StateFailed (its start failed, Failure);
	// "" for a name the set does not know.
	State State
	// Owner is the desk's owner in a cluster, when one is known (Owned).
	Owner Owner
	Owned bool
	// Failure is why the desk failed to start (State StateFailed).
	Failure Failure
}

// Locate returns where the desk called name is, in one look: a desk
// moving between the states (taken over, handed over) is seen in one of
// them, never in none.
func (s *Set) Locate(name string) Place {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.locateLocked(name)
}

func (s *Set) locateLocked(name string) Place {
	p := Place{Name: name, Desk: s.desks[name]}
	p.Owner, p.Owned = s.owners[name]
	switch f, failed := s.failed[name]; {
	case p.Desk != nil:
	case s.standby[name]:
		p.State = StateStandby
	case s.starting[name]:
		p.State = StateStarting
	case failed:
		p.State, p.Failure = StateFailed, f
	}
	return p
}

// Statuses returns the status of every desk, sorted by name: each running
// desk's (Desk.Status), for each desk that failed to start, one of state
// failed with its Failure, and for each desk of a cluster this host
// stands by for, one of state standby; every desk of a cluster has its
// Owner when one is known.
func (s *Set) Statuses() []Status {
	s.mu.RLock() // one look: a desk moving between the states is listed once
	desks := s.listLocked()
	elsewhere := maps.Clone(s.standby) // the desks this host does not run
	maps.Copy(elsewhere, s.starting)
	for name := range s.failed {
		elsewhere[name] = true
	}
	var places []Place
	for name := range elsewhere {
		if p := s.locateLocked(name); p.Desk == nil {
			places = append(places, p)
		}
	}
	owners := maps.Clone(s.owners)
	s.mu.RUnlock()

	out := make([]Status, 0, len(desks)+len(places))
	for _, d := range desks {
		st := d.Status()
		if o, ok := owners[st.Name]; ok {
			st.Owner = &o
		}
		out = append(out, st)
	}
	for _, p := range places {
		out = append(out, p.Status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Status is the status of a desk that does not run on this host (Desk
// nil): its state, its owner when one is known, its failure.
func (p Place) Status() Status {
	st := Status{Name: p.Name, State: p.State, Interrupted: []TriggerStatus{}}
	if p.Owned {
		o := p.Owner
		st.Owner = &o
	}
	if p.State == StateFailed {
		f := p.Failure
		st.AsOf, st.Failed = f.Since, &f
	}
	return st
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
