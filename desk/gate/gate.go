// Package gate keeps a component's work and its Close apart: each piece
// of work enters the gate (many at once), Close shuts it once every piece
// inside has left, and work that comes after finds it shut, so that a
// Close never closes a file under a writer and nothing is written after.
package gate

import "sync"

// Gate is open until Shut. The zero Gate is open and ready to use; a Gate
// must not be copied after its first use.
type Gate struct {
	mu   sync.RWMutex
	shut bool
}

// Enter reports whether the gate is open; when it is, the caller is
// inside and must call Leave when its work is done, and Shut waits for
// it. A false means shut: do nothing, and do not call Leave.
func (g *Gate) Enter() bool {
	g.mu.RLock()
	if g.shut {
		g.mu.RUnlock()
		return false
	}
	return true
}

// Leave ends the work of an Enter that reported true.
func (g *Gate) Leave() { g.mu.RUnlock() }

// Shut shuts the gate once the work inside has left, and reports whether
// this call shut it: false when it was shut already, so that a second
// Close does nothing.
func (g *Gate) Shut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	already := g.shut
	g.shut = true
	return !already
}
