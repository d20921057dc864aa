package triggers

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// The persisted index: a cache of what OpenLedger's index holds, written
// beside the ledger (<ledger>.idx) when it closes and after a compaction,
// so that the next open reads only the records appended after it. It is
// never the truth: OpenLedger uses it only when it decodes, its checksum
// matches, and it describes the file that is there (the same file, by
// device and inode; at least as long as what it covers; the same first and
// last bytes of what it covers; and, if the file has not grown since, the
// same modification time). Otherwise the ledger is read whole, as without
// it.
//
// Its form, little-endian: the magic "deskdLX1", the CRC-32C of the body,
// and the body: uvarints and varints as named in persisted, strings as a
// uvarint length then their bytes, times of schedules in time's binary form.

// IndexSuffix is added to a ledger's path to name its persisted index.
const IndexSuffix = ".idx"

const (
	indexMagic   = "deskdLX1"
	indexVersion = 1
	// edgeBytes is how much of the covered part's head and tail the
	// check hashes.
	edgeBytes = 4 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileCheck is what ties a persisted index to the ledger's file.
type fileCheck struct {
	covered    int64  // the file's length the index was taken at: the end of a good record
	dev, ino   uint64 // the file's identity
	size       int64  // the file's length when the index was written
	mtime      int64  // its modification time then (Unix ns)
	head, tail uint32 // CRC-32C of the first and last edgeBytes of the covered bytes
}

// persisted is a decoded persisted index.
type persisted struct {
	check      fileCheck
	records    int
	skipped    []durable.Skipped
	x          *index
	mergedInto map[uint32]string
	slots      map[uint32]slotRef
	scheds     map[string]*schedule
}

// edges returns the CRC-32C of the first and last edgeBytes of the first
// covered bytes of f.
func edges(f *os.File, covered int64) (head, tail uint32, err error) {
	sum := func(from, to int64) (uint32, error) {
		b, err := readRange(f, from, to)
		if err != nil {
			return 0, err
		}
		return crc32.Checksum(b, castagnoli), nil
	}
	if head, err = sum(0, min(covered, edgeBytes)); err != nil {
		return 0, 0, err
	}
	if tail, err = sum(max(covered-edgeBytes, 0), covered); err != nil {
		return 0, 0, err
	}
	return head, tail, nil
}

// identity returns the device, inode, length and modification time of fi.
func identity(fi os.FileInfo) (dev, ino uint64, size, mtime int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(st.Dev), st.Ino
	}
	return dev, ino, fi.Size(), fi.ModTime().UnixNano()
}

// writeIndex writes the persisted index of the ledger, whose file holds
// good records up to l.size. l.wmu must be held. It is a cache: a failure
// leaves at worst a stale one, which the next open refuses.
func (l *Ledger) writeIndex() error {
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	c := fileCheck{covered: l.size}
	c.dev, c.ino, c.size, c.mtime = identity(fi)
	if c.size < c.covered {
		return fmt.Errorf("%s is shorter (%d) than its records (%d)", l.path, c.size, c.covered)
	}
	if c.head, c.tail, err = edges(f, c.covered); err != nil {
		return err
	}
	body := l.encodeIndex(c)
	out := make([]byte, 0, len(indexMagic)+4+len(body))
	out = append(out, indexMagic...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
	out = append(out, body...)
	return durable.WriteFile(l.fsys, l.path+IndexSuffix, out, 0o640)
}

// encodeIndex encodes the index (l.wmu held: it does not change).
func (l *Ledger) encodeIndex(c fileCheck) []byte {
	x := l.x
	b := make([]byte, 0, 64+len(x.arena)+len(x.ents)*24)
	uv := func(v uint64) { b = binary.AppendUvarint(b, v) }
	sv := func(v int64) { b = binary.AppendVarint(b, v) }
	str := func(s string) { uv(uint64(len(s))); b = append(b, s...) }
	uv(indexVersion)
	sv(c.covered)
	uv(c.dev)
	uv(c.ino)
	sv(c.size)
	sv(c.mtime)
	b = binary.LittleEndian.AppendUint32(b, c.head)
	b = binary.LittleEndian.AppendUint32(b, c.tail)
	uv(uint64(l.records))
	uv(uint64(len(l.skipped)))
	for _, s := range l.skipped {
		sv(s.Offset)
		uv(uint64(s.Bytes))
	}
	schedNo := make(map[*schedule]uint64, len(l.scheds))
	uv(uint64(len(l.scheds)))
	for name, s := range l.scheds {
		schedNo[s] = uint64(len(schedNo))
		str(name)
		t, err := s.last.MarshalBinary()
		if err != nil { // a zone offset time cannot hold: keep the instant
			t, _ = s.last.UTC().MarshalBinary()
		}
		str(string(t))
	}
	uv(uint64(len(x.ents)))
	for i := range x.ents {
		e := &x.ents[i]
		uv(uint64(e.idLen))
		b = append(b, x.arena[e.idOff:e.idOff+e.idLen]...)
		sv(e.first)
		sv(e.end - e.first)
		sv(e.updSec)
		sv(int64(e.updNs))
		single := byte(0)
		if e.single {
			single = 1
		}
		b = append(b, byte(e.state), single)
	}
	uv(uint64(len(l.mergedInto)))
	for n, into := range l.mergedInto {
		uv(uint64(n))
		str(into)
	}
	uv(uint64(len(l.slots)))
	for n, s := range l.slots {
		uv(uint64(n))
		uv(schedNo[s.sched])
		sv(s.sec)
		sv(int64(s.ns))
	}
	return b
}

// errBadIndex: the persisted index does not decode.
var errBadIndex = errors.New("trigger ledger: bad persisted index")

// reader decodes a persisted index's body; the first failure sticks.
type reader struct {
	b   []byte
	bad bool
}

// fail marks r bad: nothing more is read.
func (r *reader) fail() { r.bad, r.b = true, nil }

func (r *reader) uv() uint64 { return varint(r, binary.Uvarint) }

func (r *reader) sv() int64 { return varint(r, binary.Varint) }

// varint reads one varint of r with dec (binary.Uvarint or binary.Varint).
func varint[T uint64 | int64](r *reader, dec func([]byte) (T, int)) T {
	v, n := dec(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u32() uint32 {
	v := r.bytes(4)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(v)
}

// count reads a count of items of at least min bytes each: no count can
// ask for more than the bytes left.
func (r *reader) count(min int) int {
	n := r.uv()
	if n > uint64(len(r.b)/min) {
		r.fail()
		return 0
	}
	return int(n)
}

// decodeIndexFile decodes a persisted index, checking every number it
// holds against the others (offsets within what it covers, entries and
// schedules that exist, ids seen once), so that a damaged or forged one is
// refused rather than trusted.
func decodeIndexFile(data []byte) (*persisted, error) {
	if len(data) < len(indexMagic)+4 || string(data[:len(indexMagic)]) != indexMagic {
		return nil, errBadIndex
	}
	sum := binary.LittleEndian.Uint32(data[len(indexMagic):])
	body := data[len(indexMagic)+4:]
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errBadIndex
	}
	r := &reader{b: body}
	if r.uv() != indexVersion {
		return nil, errBadIndex
	}
	p := &persisted{x: newIndex(), mergedInto: map[uint32]string{}, slots: map[uint32]slotRef{}, scheds: map[string]*schedule{}}
	c := &p.check
	c.covered = r.sv()
	c.dev, c.ino = r.uv(), r.uv()
	c.size, c.mtime = r.sv(), r.sv()
	c.head, c.tail = r.u32(), r.u32()
	if r.bad || c.covered < 0 || c.size < c.covered {
		return nil, errBadIndex
	}
	p.records = int(r.uv())
	if p.records < 0 {
		return nil, errBadIndex
	}
	for range r.count(2) {
		s := durable.Skipped{Offset: r.sv(), Bytes: int(r.uv())}
		if s.Offset < 0 || s.Bytes < 0 || s.Offset+int64(s.Bytes) > c.covered {
			return nil, errBadIndex
		}
		p.skipped = append(p.skipped, s)
	}
	var scheds []*schedule
	for range r.count(2) {
		name := string(r.bytes(r.uv()))
		var last time.Time
		if r.bad || last.UnmarshalBinary(r.bytes(r.uv())) != nil || p.scheds[name] != nil {
			return nil, errBadIndex
		}
		s := &schedule{name: name, last: last}
		p.scheds[name] = s
		scheds = append(scheds, s)
	}
	nents := r.count(7)
	p.x.reserve(nents, len(r.b))
	for range nents {
		id := r.bytes(r.uv())
		e := entry{first: r.sv()}
		e.end = e.first + r.sv()
		e.updSec = r.sv()
		ns := r.sv()
		flags := r.bytes(2)
		if r.bad || e.first < 0 || e.end < e.first || e.end > c.covered || ns < 0 || ns >= 1e9 ||
			int(flags[0]) >= len(knownStates) || flags[1] > 1 {
			return nil, errBadIndex
		}
		e.updNs, e.state, e.single = int32(ns), stateCode(flags[0]), flags[1] == 1
		if !p.x.addNew(id, e) {
			return nil, errBadIndex // an id seen twice
		}
	}
	for range r.count(2) {
		n := r.uv()
		into := string(r.bytes(r.uv()))
		if r.bad || n >= uint64(nents) {
			return nil, errBadIndex
		}
		p.mergedInto[uint32(n)] = into
	}
	for range r.count(4) {
		n, k := r.uv(), r.uv()
		sec, ns := r.sv(), r.sv()
		if r.bad || n >= uint64(nents) || k >= uint64(len(scheds)) || ns < 0 || ns >= 1e9 {
			return nil, errBadIndex
		}
		p.slots[uint32(n)] = slotRef{sched: scheds[k], sec: sec, ns: int32(ns)}
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadIndex
	}
	return p, nil
}

// reserve makes room for n entries whose ids take up to arena bytes, so
// that adding them allocates nothing more.
func (x *index) reserve(n, arena int) {
	x.ents = make([]entry, 0, n)
	x.arena = make([]byte, 0, arena)
	size := 64
	for size < 2*(n+1) {
		size *= 2
	}
	x.table = make([]uint32, size)
}

// addNew adds an entry for id, as add does, unless id has one already.
func (x *index) addNew(id []byte, e entry) bool {
	if 2*(len(x.ents)+1) > len(x.table) {
		x.grow(max(64, 2*len(x.table)))
	}
	mask := uint64(len(x.table) - 1)
	h := maphash.Bytes(x.seed, id) & mask
	for ; x.table[h] != 0; h = (h + 1) & mask {
		o := &x.ents[x.table[h]-1]
		if bytes.Equal(x.arena[o.idOff:o.idOff+o.idLen], id) {
			return false
		}
	}
	e.idOff, e.idLen = uint32(len(x.arena)), uint32(len(id))
	x.arena = append(x.arena, id...)
	x.ents = append(x.ents, e)
	x.table[h] = uint32(len(x.ents))
	return true
}

// readIndexFile reads the persisted index at path: a regular file (never
// a link or a pipe), in one read sized from its Stat.
func readIndexFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<30 {
		return nil, errBadIndex
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// loadIndex returns the persisted index of the ledger at path if there is
// one that decodes and describes the file there now; nil otherwise.
func loadIndex(path string) *persisted {
	data, err := readIndexFile(path + IndexSuffix)
	if err != nil {
		return nil
	}
	p, err := decodeIndexFile(data)
	if err != nil {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	c := p.check
	dev, ino, size, mtime := identity(fi)
	if dev != c.dev || ino != c.ino || size < c.covered || size == c.size && mtime != c.mtime {
		return nil
	}
	head, tail, err := edges(f, c.covered)
	if err != nil || head != c.head || tail != c.tail {
		return nil
	}
	return p
}

// foldOpen folds into l.items, the open triggers' Items, the records of
// the file that name them: those in spans, bytes of the file that begin
// and end with a record (each open trigger's [first, end)), merged where
// they overlap, read in chunks.
func (l *Ledger) foldOpen(spans [][2]int64) error {
	if len(spans) == 0 {
		return nil
	}
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	// spans come in entry order; sort by start and merge.
	sortSpans(spans)
	merged := spans[:1]
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if s[0] <= last[1]+1 {
			last[1] = max(last[1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	for _, s := range merged {
		_, _, _, _, err := durable.ScanFile(io.NewSectionReader(f, s[0], s[1]-s[0]), 0, func(line []byte, _ int64) bool {
			ix, ok := decodeIndex(line)
			if !ok {
				return false
			}
			if l.items[ix.ID] == nil && !namesAny(ix.Merges, l.items) {
				return true
			}
			r, _ := decodeRecord(line) // decodeIndex took it: it decodes
			forNamed(&r, func(id string) {
				if it := l.items[id]; it != nil {
					fold(it, &r, id)
				}
			})
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func namesAny(ids []string, items map[string]*Item) bool {
	for _, id := range ids {
		if items[id] != nil {
			return true
		}
	}
	return false
}

func sortSpans(s [][2]int64) {
	slices.SortFunc(s, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
}
