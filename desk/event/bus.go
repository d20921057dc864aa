// Package event is deskd's in-process event bus and the catalogue of its
// events.
//
// The bus wraps asaskevich/EventBus so that topics and payloads are checked
// at compile time: a topic is the payload's type (Publish[E], Subscribe[E]),
// never a string at the call site, so a wrong payload cannot reach a handler
// and cannot panic inside EventBus's reflection. EventBus's known traps are
// kept out of reach (see ../shared/research/go-libs.md §4): one dispatcher
// per topic is registered with it exactly once and never unsubscribed;
// deskd's own subscribers live in a map keyed by id; every subscriber has its
// own goroutine and mailbox, so handlers never run under EventBus's lock, may
// publish themselves, and a slow one never blocks a publisher; a panicking
// handler is recovered and counted.
//
// An exporter (Export), such as the NATS event publisher's durable outbox,
// is not a subscriber: it is called in the publisher's goroutine, before
// any subscriber gets the event, and never misses one (a mailbox may drop
// events when full). Stage splits a publication in two, so that a producer
// can record the state an event reports after its exporters have the
// event and before its subscribers do.
//
// Events are notifications. Nothing that must not be lost travels only on
// the bus: durable facts are written to disk first.
package event

import (
	"slices"
	"sync"
	"sync/atomic"

	evbus "github.com/asaskevich/EventBus"
)

// DefaultMailbox is how many undelivered events a subscriber may hold before
// newer ones are dropped (and counted) for that subscriber.
const DefaultMailbox = 1 << 16

// Event is one announcement. Its topic names its type; Head carries the time
// and the desk. Only the types in this package's catalogue implement it.
type Event interface {
	// Topic is the event's name, such as "session.started".
	Topic() string
	// Head returns the time and desk every event carries.
	Head() Header
}

// Bus delivers published events to subscribers. The zero value is not
// usable; call New.
type Bus struct {
	eb evbus.Bus

	// regMu guards registered. It is never taken while mu is held, nor by
	// dispatch (which runs under EventBus's own lock), so that registering
	// a topic with EventBus (which takes EventBus's lock) cannot deadlock
	// with a publication in progress (EventBus's lock, then mu).
	regMu      sync.Mutex
	registered map[string]bool

	// expMu serialises Export and its cancels, which replace exporters
	// (copy on write: a publication reads it without a lock, and never
	// holds expMu while an exporter is called).
	expMu     sync.Mutex
	exporters atomic.Pointer[[]exporter]
	expNext   uint64
	// nows are SubscribeAllNow's functions, copy on write under expMu
	// too; their ids come from expNext.
	nows atomic.Pointer[[]exporter]

	mu      sync.Mutex
	byTopic map[string]map[uint64]*mailbox
	all     map[uint64]*mailbox
	next    uint64
	// closed is set by Close, under mu; publications read it without.
	closed  atomic.Bool
	workers sync.WaitGroup

	dropped  atomic.Int64
	panicked atomic.Int64
}

// New returns an empty bus.
func New() *Bus {
	return &Bus{
		eb:         evbus.New(),
		registered: map[string]bool{},
		byTopic:    map[string]map[uint64]*mailbox{},
		all:        map[uint64]*mailbox{},
	}
}

// exporter is one Export's function and the id its cancel removes.
type exporter struct {
	id uint64
	fn func(Event)
}

// Publish hands e to the exporters (Export), then announces it to every
// subscriber of its type and to every SubscribeAll subscriber. It never
// blocks on a subscriber. After Close it does nothing. An event nobody
// exports or subscribes to costs two atomic loads and a lock: it is not
// boxed, copied or handed to EventBus.
func Publish[E Event](b *Bus, e E) {
	if b.closed.Load() {
		return
	}
	export(b, e)
	announce(b, e)
}

// Stage hands e to the exporters now and returns deliver, which announces
// it to the subscribers, as Publish does. A producer whose event reports a
// state it records (a turn's answer in the trigger ledger) stages the
// event, records the state, then delivers: an exporter that keeps events
// durably has the event before the state is recorded, so a crash between
// the two leaves the event to send and the state unrecorded (to be
// recovered and announced again, with the same Header.ID), never the
// state recorded and the event lost; and a subscriber that sees the event
// finds the state recorded. Call deliver once. After Close both do
// nothing.
func Stage[E Event](b *Bus, e E) (deliver func()) {
	if b.closed.Load() {
		return func() {}
	}
	export(b, e)
	return func() { announce(b, e) }
}

// export calls every exporter with e, in the caller's goroutine; e is
// boxed only when there is one.
func export[E Event](b *Bus, e E) {
	exps := b.exporters.Load()
	if exps == nil || len(*exps) == 0 {
		return
	}
	ev := Event(e)
	for _, x := range *exps {
		b.call(x.fn, ev)
	}
}

// announce calls SubscribeAllNow's functions with e, then hands e to
// EventBus, which calls the topic's dispatcher, when someone subscribes to
// its topic or to all.
func announce[E Event](b *Bus, e E) {
	if b.closed.Load() {
		return
	}
	if nows := b.nows.Load(); nows != nil && len(*nows) > 0 {
		ev := Event(e)
		for _, x := range *nows {
			b.call(x.fn, ev)
		}
	}
	topic := e.Topic()
	if !b.wanted(topic) {
		return
	}
	b.register(topic)
	b.eb.Publish(topic, Event(e))
}

// wanted says whether an event of topic has a subscriber to go to (none
// once closed).
func (b *Bus) wanted(topic string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.closed.Load() && (len(b.all) > 0 || len(b.byTopic[topic]) > 0)
}

// SubscribeAllNow calls fn with every event of every topic as it is
// announced to the subscribers (a staged event when it is delivered, so
// after the state it reports is recorded), in the publisher's goroutine,
// before Publish or deliver returns: a reader that comes after the
// publication finds it. Its events are never dropped. fn must be quick
// (no I/O) and must not publish; a panic in it is recovered and counted
// (Panics). It ends when the returned cancel is called.
func SubscribeAllNow(b *Bus, fn func(Event)) (cancel func()) {
	return b.addTo(&b.nows, fn)
}

// Export calls fn with every event published on b from now on, in the
// publisher's goroutine, before any subscriber gets it, until the returned
// cancel is called. Unlike a subscriber's, its events are never dropped:
// fn must be quick (a write to a file, not an fsync per event), and may
// publish. A panic in fn is recovered and counted (Panics).
func Export(b *Bus, fn func(Event)) (cancel func()) {
	return b.addTo(&b.exporters, fn)
}

// addTo adds fn to list (the exporters, or SubscribeAllNow's) and returns
// its removal.
func (b *Bus) addTo(list *atomic.Pointer[[]exporter], fn func(Event)) (cancel func()) {
	b.expMu.Lock()
	b.expNext++
	id := b.expNext
	edit(list, func(old []exporter) []exporter { return append(old, exporter{id: id, fn: fn}) })
	b.expMu.Unlock()
	return func() {
		b.expMu.Lock()
		edit(list, func(old []exporter) []exporter {
			return slices.DeleteFunc(old, func(x exporter) bool { return x.id == id })
		})
		b.expMu.Unlock()
	}
}

// edit replaces list by change of a copy of it; expMu is held.
func edit(list *atomic.Pointer[[]exporter], change func([]exporter) []exporter) {
	var old []exporter
	if p := list.Load(); p != nil {
		old = slices.Clone(*p)
	}
	next := change(old)
	list.Store(&next)
}

// call runs an exporter, recovering (and counting) its panic.
func (b *Bus) call(fn func(Event), e Event) {
	defer func() {
		if r := recover(); r != nil {
			b.panicked.Add(1)
		}
	}()
	fn(e)
}

// register makes EventBus call dispatch for topic: one dispatcher per
// topic, registered once, never unsubscribed. Its single parameter is the
// Event interface and Publish passes exactly one Event, so EventBus's
// reflect.Call cannot fail. It takes regMu and then EventBus's lock, never
// mu (see Bus.regMu).
func (b *Bus) register(topic string) {
	b.regMu.Lock()
	defer b.regMu.Unlock()
	if !b.registered[topic] {
		_ = b.eb.Subscribe(topic, func(ev Event) { b.dispatch(ev) })
		b.registered[topic] = true
	}
}

// Subscribe calls fn, on a goroutine of its own, for every published E in
// publication order, until the returned cancel is called. Events already in
// the mailbox when cancel is called are still delivered.
func Subscribe[E Event](b *Bus, fn func(E)) (cancel func()) {
	var zero E
	return b.subscribe(zero.Topic(), func(ev Event) {
		if e, ok := ev.(E); ok {
			fn(e)
		}
	})
}

// SubscribeAll calls fn for every published event of every topic, in
// publication order, until the returned cancel is called.
func SubscribeAll(b *Bus, fn func(Event)) (cancel func()) {
	return b.subscribe("", fn)
}

// SubscribeAllIf is SubscribeAll for the events keep accepts. keep runs
// when the event is published, in the publisher's goroutine under the
// bus's lock: it must be quick and must not publish (a panic in it is
// recovered, counted, and refuses the event). Its verdict is the one of
// that moment (a log's level then), however late fn runs.
func SubscribeAllIf(b *Bus, keep func(Event) bool, fn func(Event)) (cancel func()) {
	return b.subscribeIf("", keep, fn)
}

// Dropped reports how many deliveries were dropped because a subscriber's
// mailbox was full.
func (b *Bus) Dropped() int64 { return b.dropped.Load() }

// Panics reports how many handler calls panicked (and were recovered).
func (b *Bus) Panics() int64 { return b.panicked.Load() }

// Close stops the bus: later publications are ignored, every subscriber's
// mailbox is drained, and Close returns when all handlers have returned.
// Only the first Close waits; a later one returns at once, so that a
// handler stuck for ever (a log write to a stalled pipe) holds up only
// the shutdown that gave up on it, not its callers' deferred Close too.
// It must not be called from a handler.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return
	}
	b.closed.Store(true)
	var boxes []*mailbox
	for _, m := range b.all {
		boxes = append(boxes, m)
	}
	for _, subs := range b.byTopic {
		for _, m := range subs {
			boxes = append(boxes, m)
		}
	}
	b.all = map[uint64]*mailbox{}
	b.byTopic = map[string]map[uint64]*mailbox{}
	b.mu.Unlock()
	for _, m := range boxes {
		m.stop()
	}
	b.workers.Wait()
}

func (b *Bus) subscribe(topic string, fn func(Event)) func() {
	return b.subscribeIf(topic, nil, fn)
}

// subscribeIf subscribes fn to topic ("" for all), with keep (nil: every
// event) the gate of its mailbox.
func (b *Bus) subscribeIf(topic string, keep func(Event) bool, fn func(Event)) func() {
	m := &mailbox{fn: fn, keep: keep, limit: DefaultMailbox, wake: make(chan struct{}, 1), done: make(chan struct{}), bus: b}
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return func() {}
	}
	b.next++
	id := b.next
	if topic == "" {
		b.all[id] = m
	} else {
		if b.byTopic[topic] == nil {
			b.byTopic[topic] = map[uint64]*mailbox{}
		}
		b.byTopic[topic][id] = m
	}
	b.workers.Add(1)
	b.mu.Unlock()
	go m.run(&b.workers)

	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			if topic == "" {
				delete(b.all, id)
			} else {
				delete(b.byTopic[topic], id)
			}
			b.mu.Unlock()
			m.stop()
		})
	}
}

// dispatch runs inside EventBus.Publish, under EventBus's lock: it only
// appends to mailboxes and never calls a handler.
func (b *Bus) dispatch(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.byTopic[ev.Topic()] {
		m.push(ev)
	}
	for _, m := range b.all {
		m.push(ev)
	}
}

// mailbox holds one subscriber's undelivered events.
type mailbox struct {
	fn    func(Event)
	keep  func(Event) bool // nil: every event
	limit int
	bus   *Bus

	mu      sync.Mutex
	queue   []Event
	stopped bool
	wake    chan struct{}
	done    chan struct{}
}

func (m *mailbox) push(ev Event) {
	if m.keep != nil && !m.kept(ev) {
		return
	}
	m.mu.Lock()
	if m.stopped || len(m.queue) >= m.limit {
		m.mu.Unlock()
		m.bus.dropped.Add(1)
		return
	}
	m.queue = append(m.queue, ev)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// kept is keep's verdict on ev; a keep that panics refuses ev, and the
// panic is counted (Panics), as a handler's is.
func (m *mailbox) kept(ev Event) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			m.bus.panicked.Add(1)
			ok = false
		}
	}()
	return m.keep(ev)
}

func (m *mailbox) stop() {
	m.mu.Lock()
	if !m.stopped {
		m.stopped = true
		close(m.done)
	}
	m.mu.Unlock()
}

func (m *mailbox) run(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		m.mu.Lock()
		batch := m.queue
		m.queue = nil
		stopped := m.stopped
		m.mu.Unlock()
		for _, ev := range batch {
			m.deliver(ev)
		}
		if len(batch) > 0 {
			continue
		}
		if stopped {
			return
		}
		select {
		case <-m.wake:
		case <-m.done:
		}
	}
}

func (m *mailbox) deliver(ev Event) {
	defer func() {
		if r := recover(); r != nil {
			m.bus.panicked.Add(1)
		}
	}()
	m.fn(ev)
}
