package triggers

// recentItems is how many finished triggers' Items a ledger keeps.
const recentItems = 256

// recent is a bounded cache of finished triggers' Items, by id: the last
// ones put in stay, the oldest one goes when it is full. Its owner guards
// it (Ledger.mu).
type recent struct {
	items map[string]*Item
	ring  []string // ids in the order put; ring[next] is the oldest when full
	next  int
	limit int
}

// newRecent returns an empty cache of at most n Items. It allocates as it
// fills, so that an idle desk's ledger costs next to nothing.
func newRecent(n int) *recent {
	return &recent{items: map[string]*Item{}, limit: n}
}

// get returns the cached Item of id.
func (c *recent) get(id string) (*Item, bool) {
	it, ok := c.items[id]
	return it, ok
}

// put caches it as the Item of id.
func (c *recent) put(id string, it Item) {
	if old, ok := c.items[id]; ok {
		*old = it
		return
	}
	if c.limit <= 0 {
		return
	}
	if len(c.ring) < c.limit {
		c.ring = append(c.ring, id)
	} else {
		delete(c.items, c.ring[c.next])
		c.ring[c.next] = id
		c.next = (c.next + 1) % len(c.ring)
	}
	c.items[id] = &it
}

// drop forgets id (its slot in the ring is reused in turn).
func (c *recent) drop(id string) { delete(c.items, id) }

// len returns how many Items it holds.
func (c *recent) len() int { return len(c.items) }
