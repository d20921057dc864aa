package desk

// The config files refused and still refused: what the status, the API,
// /healthz and the metrics show until a good version is loaded.

import (
	"slices"
	"time"

	"github.com/deskd/deskd/config"
)

// ConfigRejected is a config file refused: since when (the first refusal
// of the file since it was last good), the file, the field and the reason
// (the file's first problem).
type ConfigRejected struct {
	Since  time.Time `json:"since"`
	File   string    `json:"file"`
	Field  string    `json:"field"`
	Reason string    `json:"reason"`
}

// ConfigRejection is one current problem of a refused config file, and
// the desk whose file it is ("" for the main file, or any file that is
// not one desk's).
type ConfigRejection struct {
	ConfigRejected
	Desk string `json:"desk"`
}

// ConfigRejections returns every current rejection: the problems of the
// config files the daemon refused at its last load and still runs
// without, by desk then file ("" first). Never nil.
func (s *Set) ConfigRejections() []ConfigRejection {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]ConfigRejection{}, s.rejected...)
}

// setRejections replaces the current rejections, and tells each desk in
// the set its own (its first problem), or none.
func (s *Set) setRejections(rs []ConfigRejection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejected = rs
	for _, d := range s.desks {
		d.configRejected.Store(firstRejection(rs, d.Name()))
	}
}

// firstRejection returns desk's first rejection in rs, or nil.
func firstRejection(rs []ConfigRejection, desk string) *ConfigRejected {
	for _, r := range rs {
		if r.Desk == desk && desk != "" {
			c := r.ConfigRejected
			return &c
		}
	}
	return nil
}

// rejections turns problems into rejections at now: each desk's since is
// kept from prev while the desk's (or the main file's) refusal goes on.
// deskOf names the desk of a problem's file ("" for none). It returns
// them sorted by desk, and the desks of prev that are no longer refused.
func rejections(prev []ConfigRejection, problems config.Problems, deskOf func(file string) string, now time.Time) (cur []ConfigRejection, cleared []string) {
	since := map[string]time.Time{}
	for _, r := range prev {
		if _, ok := since[r.Desk]; !ok {
			since[r.Desk] = r.Since
		}
	}
	still := map[string]bool{}
	for _, p := range problems {
		desk := deskOf(p.File)
		at, ok := since[desk]
		if !ok {
			at = now
		}
		still[desk] = true
		cur = append(cur, ConfigRejection{ConfigRejected: ConfigRejected{Since: at, File: p.File, Field: p.Field, Reason: p.Reason}, Desk: desk})
	}
	slices.SortStableFunc(cur, func(a, b ConfigRejection) int {
		switch {
		case a.Desk < b.Desk:
			return -1
		case a.Desk > b.Desk:
			return 1
		}
		return 0
	})
	for desk := range since {
		if !still[desk] {
			cleared = append(cleared, desk)
		}
	}
	slices.Sort(cleared)
	return cur, cleared
}
