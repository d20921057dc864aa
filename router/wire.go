package router

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
)

// The wire encoding of requests. A provider writes each request's body
// itself, from pieces encoded once: each Message's encoding is kept in the
// wireCache the message points to (copies of a Message share it, so the
// session's history keeps its encodings from call to call), and the
// encodings of tools and system prompts are kept by content in a memo of
// the provider. A call then costs the copying of the pieces into the body,
// not the encoding of the whole conversation. The clients post the body
// and read the streamed answer themselves (sse.go).

// wireCache holds one Message's encodings, one per provider. A Message's
// fields never change once it is made, so an encoding, once filled, holds
// for every copy of it. Each slot is filled at most once per race (two
// calls that fill it at the same time compute the same bytes; the first
// one stored wins).
type wireCache struct {
	openai    atomic.Pointer[[]byte]
	anthropic atomic.Pointer[[][]byte]
	// tokens is the message's token estimate (messageTokens) plus one; 0
	// until it is first made. The budget and compaction checks of every
	// call add up the whole history's.
	tokens atomic.Int64
}

// newWireCache returns an empty cache for a Message.
func newWireCache() *wireCache { return new(wireCache) }

// withWireCaches gives each message without a cache one, in place, so
// that the encodings a call makes are kept for the next calls that carry
// the same messages.
func withWireCaches(msgs []Message) {
	for i := range msgs {
		if msgs[i].wire == nil {
			msgs[i].wire = newWireCache()
		}
	}
}

// cached returns what slot holds, or what fill makes, which it keeps in
// slot. A nil slot (a Message without a cache) is filled every time.
func cached[T any](slot *atomic.Pointer[T], fill func() (T, error)) (T, error) {
	if slot != nil {
		if v := slot.Load(); v != nil {
			return *v, nil
		}
	}
	v, err := fill()
	if err != nil || slot == nil {
		return v, err
	}
	slot.CompareAndSwap(nil, &v)
	return *slot.Load(), nil
}

// memoLimit bounds a memo's entries: a provider shared by many desks keeps
// the encodings of that many tools or system prompts, and starts over when
// it has more.
const memoLimit = 512

// memo keeps encodings by the text they encode (a tool's definition, a
// system prompt). It is safe for concurrent use.
type memo struct {
	mu sync.Mutex
	m  map[string][]byte
}

// get returns key's encoding, made by enc the first time.
func (c *memo) get(key string, enc func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := enc()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= memoLimit {
		c.m = make(map[string][]byte)
	}
	c.m[key] = b
	c.mu.Unlock()
	return b, nil
}

// toolMemo keeps tools' encodings by name, each beside the description
// and schema it was made from: a lookup compares them with the tool's and
// allocates nothing, and a tool whose definition changed (or that another
// desk of the provider defines otherwise) is encoded anew. It is safe for
// concurrent use.
type toolMemo struct {
	mu sync.Mutex
	m  map[string][]toolEncoding
	n  int
}

// toolVariants bounds the definitions kept under one tool name (a tool
// whose description changes as the desk's skills do), oldest dropped
// first, so that a lookup compares with a few at most.
const toolVariants = 8

// toolEncoding is one definition of a tool and its encoding.
type toolEncoding struct {
	description string
	schema      []byte
	enc         []byte
}

// get returns t's encoding, made by enc the first time t is seen as it is.
func (c *toolMemo) get(t ToolSpec, enc func(ToolSpec) ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	for _, e := range c.m[t.Name] {
		if e.description == t.Description && bytes.Equal(e.schema, t.Schema) {
			c.mu.Unlock()
			return e.enc, nil
		}
	}
	c.mu.Unlock()
	b, err := enc(t)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || c.n >= memoLimit {
		c.m, c.n = make(map[string][]toolEncoding), 0
	}
	kept := c.m[t.Name]
	if len(kept) >= toolVariants {
		kept = kept[1:]
	} else {
		c.n++
	}
	c.m[t.Name] = append(kept, toolEncoding{t.Description, bytes.Clone(t.Schema), b})
	c.mu.Unlock()
	return b, nil
}

// maxPooledBody is the largest body buffer kept for the next call.
const maxPooledBody = 16 << 20

// keptBodyBytes bounds the room of the body buffers kept between calls:
// enough for 64 calls in flight of 250 KB bodies, or one of the largest.
const keptBodyBytes = maxPooledBody

// maxHintedBody bounds the room a new body buffer is given: one desk's
// long conversation must not size the buffers of every other desk's calls.
const maxHintedBody = 1 << 20

// bodies recycles the buffers request bodies are written in, so that a
// call does not allocate (and clear) a buffer the size of its
// conversation. It keeps them in a free list of bounded room rather than a
// sync.Pool, which loses its buffers at every garbage collection (every
// few milliseconds under load, when a new buffer grown by doubling was 11%
// of deskd's allocated bytes); a buffer it must make has room for the last
// body given back plus a quarter, up to maxHintedBody. It is safe for
// concurrent use.
type bodies struct {
	mu   sync.Mutex
	free []*wireBody
	// kept is the room of free's buffers; last the length of the last
	// body given back.
	kept, last int
}

// get returns an empty buffer.
func (p *bodies) get() *wireBody {
	p.mu.Lock()
	var b *wireBody
	if n := len(p.free); n > 0 {
		b, p.free[n-1] = p.free[n-1], nil
		p.free = p.free[:n-1]
		p.kept -= b.Cap()
	}
	hint := min(p.last, maxHintedBody)
	p.mu.Unlock()
	if b == nil {
		b = new(wireBody)
	}
	if b.Cap() < hint {
		b.Grow(hint + hint/4)
	}
	return b
}

// put keeps b for a later call, when it fits the room kept; nothing may
// use its bytes after.
func (p *bodies) put(b *wireBody) {
	n := b.Len()
	b.Reset()
	b.fields = 0
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = n
	if c := b.Cap(); c <= maxPooledBody && p.kept+c <= keptBodyBytes {
		p.free = append(p.free, b)
		p.kept += c
	}
}

// wireBody builds a request body.
type wireBody struct {
	bytes.Buffer
	fields int
}

// key starts the next field of the top-level object.
func (b *wireBody) key(name string) {
	if b.fields == 0 {
		b.WriteByte('{')
	} else {
		b.WriteByte(',')
	}
	b.fields++
	b.WriteByte('"')
	b.WriteString(name)
	b.WriteString(`":`)
}

// raw writes the field name with value, already encoded.
func (b *wireBody) raw(name string, value []byte) {
	b.key(name)
	b.Write(value)
}

// str writes the field name with a string value.
func (b *wireBody) str(name, value string) {
	b.key(name)
	writeString(&b.Buffer, value)
}

// int writes the field name with an integer value.
func (b *wireBody) int(name string, value int) {
	b.key(name)
	b.WriteString(strconv.Itoa(value))
}

// done ends the top-level object and returns the body.
func (b *wireBody) done() []byte {
	if b.fields == 0 {
		b.WriteByte('{')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeString writes s as a JSON string, without HTML escapes: <, > and
// & go as they are (the services read JSON, not HTML; an escape costs six
// bytes of the request for one of text).
func writeString(b *bytes.Buffer, s string) {
	_ = encodeTo(b, s) // a string always encodes
}

// marshal encodes v as JSON without HTML escapes (see writeString), the
// encoding of every piece of a request body.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeTo(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeTo writes v's JSON to b without HTML escapes and without the
// newline json.Encoder ends it with.
func encodeTo(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1)
	return nil
}

// cacheControl is the mark the Messages API takes on a block that ends a
// prefix to cache.
const cacheControl = `,"cache_control":{"type":"ephemeral"}}`

// writeMarked writes the JSON object block, marked with cacheControl when
// mark is set.
func writeMarked(b *bytes.Buffer, block []byte, mark bool) {
	if !mark || len(block) < 2 || block[len(block)-1] != '}' {
		b.Write(block)
		return
	}
	b.Write(block[:len(block)-1])
	if len(block) > 2 { // not {}
		b.WriteString(cacheControl)
	} else {
		b.WriteString(cacheControl[1:])
	}
}

// cacheKey is the prompt cache key of a desk's requests: stable for the
// desk, and nothing but its name.
func cacheKey(desk string) string { return "deskd-" + desk }
