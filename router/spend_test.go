package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/router"
)

// ticking is a priced model for tests: each call takes step on the clock
// (so calls cross a trading-date boundary in the middle of a turn) and
// uses a different number of tokens; it fails while told to.
type ticking struct {
	clock *clock.Fake
	step  time.Duration

	mu       sync.Mutex
	n        int
	fail     bool
	messages []int // how many messages each request carried
}

func (p *ticking) usage(i int) memory.Usage {
	return memory.Usage{InputTokens: 1000 + 37*i, OutputTokens: 7 + i%5, CachedTokens: 100 * (i % 3)}
}

func (p *ticking) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock.Advance(p.step)
	p.messages = append(p.messages, len(req.Messages))
	if p.fail {
		return router.Response{}, &router.APIError{Model: "priced", Status: 503, Retryable: true, Err: errDown}
	}
	u := p.usage(p.n)
	p.n++
	return router.Response{Text: fmt.Sprintf("answer %d", p.n), Usage: u}, nil
}

func (p *ticking) setFail(fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = fail
}

// lastMessages returns how many messages the last request carried.
func (p *ticking) lastMessages(t *testing.T) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	return lastOf(t, p.messages)
}

var prices = router.Prices{Input: 2.5, Output: 10.1, CachedInput: 1.25}

// priced returns a model answered by p, with prices.
func priced(p *ticking) router.Model {
	return router.Model{Name: "priced", Provider: router.OpenAIProvider, Client: p, Prices: prices}
}

// callCost is what one call of u costs at prices, as deskd prices it.
func callCost(u memory.Usage) float64 {
	fresh := u.InputTokens - u.CachedTokens
	return (float64(fresh)*prices.Input + float64(u.CachedTokens)*prices.CachedInput + float64(u.OutputTokens)*prices.Output) / 1e6
}

// tickingDesk is where most spend tests start: a rig at 10:00 IST on
// 1 March, a ticking model that takes a second a call (p), and a router
// answered by it (r, over folder) that has run turn t1, "one".
func tickingDesk(t *testing.T) (g *rig, p *ticking, r *router.Router, folder *memory.Folder) {
	t.Helper()
	g = newRig(t, "2026-03-01T04:30:00Z")
	p = &ticking{clock: g.clock, step: time.Second}
	r, folder, _ = g.open(priced(p))
	send(t, r, "t1", "one")
	return g, p, r, folder
}

// TestSpendAfterACrashIsTheLiveSpend: a router dropped without Close
// after any number of model calls (turns and summaries, across a trading
// date boundary that falls in the middle of a turn) is restored with the
// spend, exchanges and last turn the live router had, to the bit, and
// goes on from there: what a router that rewrote its state after every
// call would have read back.
func TestSpendAfterACrashIsTheLiveSpend(t *testing.T) {
	for n := 0; n <= 9; n++ {
		t.Run(fmt.Sprintf("%d calls", n), func(t *testing.T) {
			// 23:58 IST; each call takes 20s, so call 6 is answered at
			// midnight IST, in the turn that began before it.
			g := newRig(t, "2026-03-01T18:28:00Z")
			p := &ticking{clock: g.clock, step: 20 * time.Second}
			r, _, _ := g.open(priced(p))
			id := r.SessionID()

			var wantDay, wantSession int64
			var wantCost float64
			day := desktest.Day().DateOf(g.clock.Now())
			for i := range n {
				if i%4 == 3 {
					if _, err := r.Summarise(t.Context(), day); err != nil {
						t.Fatalf("Summarise: %v", err)
					}
				} else {
					send(t, r, fmt.Sprintf("t%d", i), fmt.Sprintf("turn %d", i))
				}
				// The call is charged at the time it was answered.
				if d := desktest.Day().DateOf(g.clock.Now()); d != day {
					day, wantDay, wantCost = d, 0, 0
				}
				u := p.usage(i)
				wantDay += int64(u.InputTokens + u.OutputTokens)
				wantSession += int64(u.InputTokens + u.OutputTokens)
				wantCost += callCost(u)
			}
			live, exchanges := r.Spend(), r.Exchanges()
			if live.DayTokens != wantDay || live.SessionTokens != wantSession || live.DayCost != wantCost || live.Date != day {
				t.Fatalf("live spend = %+v, want day %s, %d day tokens, %d session tokens, cost %v", live, day, wantDay, wantSession, wantCost)
			}

			// The crash: r is dropped as it is, and a new process restores.
			r2, _, resumed := g.open(priced(p))
			if resumed != (n > 0) || r2.SessionID() != id { // a session never used was never written
				t.Fatalf("restored %s (resumed %v), want %s (resumed %v)", r2.SessionID(), resumed, id, n > 0)
			}
			if got := r2.Spend(); got != live {
				t.Errorf("spend after the crash = %+v, want the live spend %+v", got, live)
			}
			if got := r2.Exchanges(); got != exchanges {
				t.Errorf("Exchanges() after the crash = %d, want %d", got, exchanges)
			}

			// And it goes on: the next turn carries the history, counts on,
			// and charges on from the restored spend.
			reply := send(t, r2, "next", "go on")
			if reply.Turn != exchanges+1 {
				t.Errorf("the turn after the crash is turn %d, want %d", reply.Turn, exchanges+1)
			}
			if got, want := p.lastMessages(t), 2*exchanges+1; got != want {
				t.Errorf("the turn after the crash carried %d messages, want %d (the history, then the trigger)", got, want)
			}
			u := p.usage(n)
			want := live
			if d := desktest.Day().DateOf(g.clock.Now()); d != want.Date {
				want = router.Spend{Date: d, SessionTokens: want.SessionTokens}
			}
			want.DayTokens += int64(u.InputTokens + u.OutputTokens)
			want.DayCachedTokens += int64(u.CachedTokens)
			want.SessionTokens += int64(u.InputTokens + u.OutputTokens)
			want.DayCost += callCost(u)
			if got := r2.Spend(); got != want {
				t.Errorf("spend after a turn past the crash = %+v, want %+v", got, want)
			}
			// A second crash, after that turn, finds the same again.
			r3, _, _ := g.open(priced(p))
			if got := r3.Spend(); got != want {
				t.Errorf("spend after a second crash = %+v, want %+v", got, want)
			}
		})
	}
}

// TestCrashInATurnThatGotNoAnswer: a turn whose message is recorded but
// whose model call failed is not an exchange after a crash either, and an
// answer of a later turn is counted.
func TestCrashInATurnThatGotNoAnswer(t *testing.T) {
	g, p, r, _ := tickingDesk(t)
	if err := r.Close(); err != nil { // the mark is after t1's answer
		t.Fatal(err)
	}
	r, _, _ = g.open(priced(p))
	p.setFail(true)
	if _, err := r.Send(t.Context(), trigger("t2", "two")); err == nil {
		t.Fatal("Send with a failing model succeeded")
	}
	p.setFail(false)
	live := r.Spend()

	r2, _, _ := g.open(priced(p))
	if got := r2.Exchanges(); got != 1 {
		t.Errorf("Exchanges() after a crash past a failed turn = %d, want 1", got)
	}
	if got := r2.Spend(); got != live {
		t.Errorf("spend = %+v, want %+v", got, live)
	}
	if reply := send(t, r2, "t3", "three"); reply.Turn != 2 {
		t.Errorf("the next turn is turn %d, want 2", reply.Turn)
	}
	r3, _, _ := g.open(priced(p))
	if got := r3.Exchanges(); got != 2 {
		t.Errorf("Exchanges() after the next crash = %d, want 2", got)
	}
}

// TestNoStateRewritePerCall: a turn on the session's own trading date
// leaves the state file as it was; the spend is in the session file.
func TestNoStateRewritePerCall(t *testing.T) {
	g, _, r, folder := tickingDesk(t)
	path := folder.Path(memory.StateFile)
	before := readFile(t, path)
	for i := range 3 {
		send(t, r, fmt.Sprintf("t%d", i+2), "more")
	}
	if _, err := r.Summarise(t.Context(), desktest.Day().DateOf(g.clock.Now())); err != nil {
		t.Fatal(err)
	}
	if after := readFile(t, path); after != before {
		t.Errorf("the state file was rewritten by model calls:\nbefore %s\nafter  %s", before, after)
	}
	var costs int
	for _, rec := range records(t, folder, r.SessionID()) {
		if rec.Usage != nil {
			if want := callCost(*rec.Usage); rec.Cost != want {
				t.Errorf("%s record: cost %v, want %v", rec.Type, rec.Cost, want)
			}
			costs++
		}
	}
	if costs != 5 {
		t.Errorf("%d records carry a call's usage and cost, want 5", costs)
	}
}

// rigWithFiles is a rig at 10:00 IST on 1 March whose desk folder holds
// what an earlier process left: session, the file of session id, and
// state, the state file; it returns the rig and the two files' paths.
func rigWithFiles(t *testing.T, id, session, state string) (g *rig, sessionPath, statePath string) {
	t.Helper()
	g = newRig(t, "2026-03-01T04:30:00Z")
	if err := os.MkdirAll(filepath.Join(g.dir, memory.SessionsDir), 0o750); err != nil {
		t.Fatal(err)
	}
	sessionPath = filepath.Join(g.dir, memory.SessionsDir, id+".jsonl")
	statePath = filepath.Join(g.dir, memory.StateFile)
	if err := os.WriteFile(sessionPath, []byte(session), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, []byte(state), 0o640); err != nil {
		t.Fatal(err)
	}
	return g, sessionPath, statePath
}

// TestRestoreAStateFileOfAnOlderDeskd: a state file without a mark, beside
// a session file whose records carry no cost (as today's deskd wrote
// them, rewriting the state after every call), is read in place: its
// spend is as of the end of the session file (nothing counted twice), its
// exchanges and history are the file's, and it is rewritten with a mark;
// the spend goes on from it across a crash.
func TestRestoreAStateFileOfAnOlderDeskd(t *testing.T) {
	const id = "20260301T030000Z-0a0b0c0d"
	session := `{"type":"header","at":"2026-03-01T03:00:00Z","session":"` + id + `","desk":"main","trading_date":"2026-03-01"}
{"type":"message","at":"2026-03-01T03:00:01Z","role":"user","text":"Buy NIFTY?","trigger":"t1","kind":"market"}
{"type":"message","at":"2026-03-01T03:00:02Z","role":"assistant","text":"No.","trigger":"t1","model":"priced","provider":"openai","usage":{"input_tokens":500,"output_tokens":20}}
{"type":"message","at":"2026-03-01T03:10:01Z","role":"user","text":"And now?","trigger":"t2","kind":"market"}
{"type":"message","at":"2026-03-01T03:10:02Z","role":"assistant","text":"Still no.","trigger":"t2","model":"priced","provider":"openai","usage":{"input_tokens":600,"output_tokens":30}}
`
	old := `{
  "session": "` + id + `",
  "trading_date": "2026-03-01",
  "spend": {
    "trading_date": "2026-03-01",
    "day_tokens": 1650,
    "day_cost": 0.004,
    "session_tokens": 1150
  }
}
`
	g, sessionPath, statePath := rigWithFiles(t, id, session, old)
	p := &ticking{clock: g.clock, step: time.Second}
	r, _, resumed := g.open(priced(p))
	want := router.Spend{Date: memory.Date{Year: 2026, Month: 3, Day: 1}, DayTokens: 1650, DayCost: 0.004, SessionTokens: 1150}
	if !resumed || r.SessionID() != id {
		t.Fatalf("restored %s (resumed %v), want %s", r.SessionID(), resumed, id)
	}
	if got := r.Spend(); got != want {
		t.Errorf("spend of an older state file = %+v, want it as it was, %+v", got, want)
	}
	if got := r.Exchanges(); got != 2 {
		t.Errorf("Exchanges() = %d, want 2", got)
	}
	var st struct {
		AsOf *struct {
			Offset    int64 `json:"offset"`
			Exchanges int   `json:"exchanges"`
		} `json:"as_of"`
	}
	if err := json.Unmarshal([]byte(readFile(t, statePath)), &st); err != nil {
		t.Fatal(err)
	}
	if st.AsOf == nil || st.AsOf.Offset != int64(len(session)) || st.AsOf.Exchanges != 2 {
		t.Errorf("state file after the restore = %s, want it marked as of the end of the session file (%d), 2 exchanges", readFile(t, statePath), len(session))
	}
	if got := readFile(t, sessionPath); got != session {
		t.Errorf("the session file was changed by the restore:\n%s", got)
	}

	reply := send(t, r, "t3", "Once more?")
	if reply.Turn != 3 || p.lastMessages(t) != 5 {
		t.Errorf("turn %d carrying %d messages, want turn 3 carrying 5", reply.Turn, p.lastMessages(t))
	}
	u := p.usage(0)
	want.DayTokens += int64(u.InputTokens + u.OutputTokens)
	want.SessionTokens += int64(u.InputTokens + u.OutputTokens)
	want.DayCost += callCost(u)
	if got := r.Spend(); got != want {
		t.Errorf("spend after a turn = %+v, want %+v", got, want)
	}
	r2, _, _ := g.open(priced(p)) // a crash
	if got := r2.Spend(); got != want {
		t.Errorf("spend after a crash = %+v, want %+v", got, want)
	}
	if got := r2.Exchanges(); got != 3 {
		t.Errorf("Exchanges() after a crash = %d, want 3", got)
	}
}

// sessionFDs counts this process's open descriptors of path.
func sessionFDs(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestRestoreOpensTheSessionFileAtFirstUse: a restored router holds no
// descriptor of its session file and reads none of its history until its
// first turn; its status is right before that; the turn opens it once.
func TestRestoreOpensTheSessionFileAtFirstUse(t *testing.T) {
	g, p, r, folder := tickingDesk(t) // t1 wrote the first session's file: it is written at its first use
	id := r.SessionID()
	path, err := filepath.EvalSymlinks(folder.SessionPath(id))
	if err != nil {
		t.Fatal(err)
	}
	send(t, r, "t2", "two")
	if n := sessionFDs(t, path); n != 1 {
		t.Fatalf("a router in use holds %d descriptors of its session file, want 1", n)
	}
	live := r.Spend()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := sessionFDs(t, path); n != 0 {
		t.Fatalf("a closed router holds %d descriptors of its session file, want 0", n)
	}

	r2, _, _ := g.open(priced(p))
	if n := sessionFDs(t, path); n != 0 {
		t.Errorf("a restored router holds %d descriptors of its session file before its first turn, want 0", n)
	}
	date, ok := r2.TradingDate()
	if r2.SessionID() != id || !ok || date != (memory.Date{Year: 2026, Month: 3, Day: 1}) || r2.Exchanges() != 2 || r2.Spend() != live {
		t.Errorf("status before the first turn: %s %v %v, %d exchanges, %+v; want %s 2026-03-01, 2 exchanges, %+v",
			r2.SessionID(), date, ok, r2.Exchanges(), r2.Spend(), id, live)
	}
	if reply := send(t, r2, "t3", "three"); reply.Turn != 3 || p.lastMessages(t) != 5 {
		t.Errorf("first turn after the restore: turn %d carrying %d messages, want turn 3 carrying 5", reply.Turn, p.lastMessages(t))
	}
	if n := sessionFDs(t, path); n != 1 {
		t.Errorf("after its first turn the router holds %d descriptors of its session file, want 1", n)
	}
}

// TestMarkMovesOnANewTradingDate: the first turn of a new trading date
// moves the state's mark to the end of the session file, so that a
// restore reads only that day's records.
func TestMarkMovesOnANewTradingDate(t *testing.T) {
	g, p, r, folder := tickingDesk(t)
	path := folder.Path(memory.StateFile)
	before := readFile(t, path)
	g.clock.Set(desktest.At("2026-03-01T19:00:00Z")) // 00:30 IST, 2 March
	size := int64(len(readFile(t, folder.SessionPath(r.SessionID()))))
	send(t, r, "t2", "two")
	after := readFile(t, path)
	if after == before {
		t.Fatal("the first turn of a new trading date left the state file as it was")
	}
	if !strings.Contains(after, fmt.Sprintf(`"offset": %d`, size)) {
		t.Errorf("state file after the first turn of a new date = %s, want its mark at %d", after, size)
	}
	live := r.Spend()
	r2, _, _ := g.open(priced(p))
	if got := r2.Spend(); got != live || got.Date != (memory.Date{Year: 2026, Month: 3, Day: 2}) {
		t.Errorf("spend after a crash = %+v, want %+v (of 2 March)", got, live)
	}
}

// TestMarkOfAReplacedSessionFile: a mark past the end of the session file
// (an operator replaced it) does not fit: the file is read whole and the
// state's spend kept.
func TestMarkOfAReplacedSessionFile(t *testing.T) {
	g, p, r, folder := tickingDesk(t)
	send(t, r, "t2", "two")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	live := r.Spend()
	path := folder.SessionPath(r.SessionID())
	data := readFile(t, path)
	lines := strings.SplitAfter(data, "\n")
	short := strings.Join(lines[:4], "") // the header and t1's exchange (message, request.sent, answer)
	if err := os.WriteFile(path, []byte(short), 0o640); err != nil {
		t.Fatal(err)
	}
	r2, _, _ := g.open(priced(p))
	if got := r2.Exchanges(); got != 1 {
		t.Errorf("Exchanges() of the replaced file = %d, want 1", got)
	}
	if got := r2.Spend(); got != live {
		t.Errorf("spend = %+v, want the state's %+v", got, live)
	}
	if !bytes.Equal([]byte(readFile(t, path)), []byte(short)) {
		t.Errorf("the replaced file was changed")
	}
}

// TestFirstUseReadsTheHistoryFromTheLatestCheckpoint: a restored session
// with compaction checkpoints sends, at its first turn, what Rebuild makes
// of the whole file: the latest checkpoint (in the system prompt), the
// turn it was made for, and what came after.
func TestFirstUseReadsTheHistoryFromTheLatestCheckpoint(t *testing.T) {
	const id = "20260301T030000Z-0a0b0c0e"
	session := `{"type":"header","at":"2026-03-01T03:00:00Z","session":"` + id + `","desk":"main","trading_date":"2026-03-01"}
{"type":"message","at":"2026-03-01T03:00:01Z","role":"user","text":"q1","trigger":"t1"}
{"type":"message","at":"2026-03-01T03:00:02Z","role":"assistant","text":"a1","trigger":"t1","usage":{"input_tokens":5,"output_tokens":1}}
{"type":"checkpoint","at":"2026-03-01T03:00:03Z","text":"old checkpoint","trigger":"t2"}
{"type":"message","at":"2026-03-01T03:01:01Z","role":"user","text":"q2","trigger":"t2"}
{"type":"message","at":"2026-03-01T03:01:02Z","role":"assistant","text":"","trigger":"t2","tool_calls":[{"id":"c1","name":"quote","arguments":{}}],"usage":{"input_tokens":5,"output_tokens":1}}
{"type":"tool","at":"2026-03-01T03:01:03Z","role":"tool","text":"22000","trigger":"t2","tool_call_id":"c1","tool_name":"quote"}
{"type":"message","at":"2026-03-01T03:01:04Z","role":"assistant","text":"a2","trigger":"t2","usage":{"input_tokens":5,"output_tokens":1}}
{"type":"message","at":"2026-03-01T03:02:01Z","role":"user","text":"q3","trigger":"t3"}
{"type":"message","at":"2026-03-01T03:02:02Z","role":"user","text":"flush","trigger":"t3","silent":true}
{"type":"message","at":"2026-03-01T03:02:03Z","role":"assistant","text":"NO_REPLY","trigger":"t3","silent":true,"usage":{"input_tokens":5,"output_tokens":1}}
{"type":"event","at":"2026-03-01T03:02:04Z","kind":"compact","text":"the checkpoint","usage":{"input_tokens":5,"output_tokens":1}}
{"type":"checkpoint","at":"2026-03-01T03:02:05Z","text":"the checkpoint","trigger":"t3"}
{"type":"message","at":"2026-03-01T03:02:06Z","role":"assistant","text":"a3","trigger":"t3","usage":{"input_tokens":5,"output_tokens":1}}
{"type":"message","at":"2026-03-01T03:03:01Z","role":"user","text":"q4","trigger":"t4"}
{"type":"message","at":"2026-03-01T03:03:02Z","role":"assistant","text":"a4","trigger":"t4","usage":{"input_tokens":5,"output_tokens":1}}
`
	old := `{"session": "` + id + `", "trading_date": "2026-03-01", "spend": {"trading_date": "2026-03-01", "day_tokens": 36, "session_tokens": 36}}`
	g, _, _ := rigWithFiles(t, id, session, old)
	r, folder, _ := g.open(offline)
	if err := r.Close(); err != nil { // the older state file is marked now
		t.Fatal(err)
	}
	f := &fake{}
	r2, _, _ := g.open(router.Model{Name: "fake", Provider: router.OpenAIProvider, Client: f})
	if got := r2.Exchanges(); got != 4 {
		t.Errorf("Exchanges() = %d, want 4", got)
	}
	send(t, r2, "t5", "q5")
	var want []string
	for _, m := range router.Rebuild(records(t, folder, id)[:16]).History {
		want = append(want, m.Role+": "+m.Text)
	}
	want = append(want, "user: q5")
	if got := f.last(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the first turn after the restore sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want[0] != "user: q3" {
		t.Errorf("Rebuild's history begins with %q, want the checkpoint's turn, user: q3", want[0])
	}
	f.mu.Lock()
	system := f.reqs[len(f.reqs)-1].System
	f.mu.Unlock()
	if !strings.Contains(system, "the checkpoint") || strings.Contains(system, "old checkpoint") {
		t.Errorf("the system prompt does not carry the latest checkpoint:\n%s", system)
	}
}

// TestSpendOfACallWhoseRecordFailed: when a call's record cannot be
// written to the session file, its charge is kept in the state file, and
// if even that write fails, the state is rewritten after the next call: a
// crash after either finds the live spend.
func TestSpendOfACallWhoseRecordFailed(t *testing.T) {
	for _, stateFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("state write fails %v", stateFails), func(t *testing.T) {
			g := newRig(t, "2026-03-01T04:30:00Z")
			p := &ticking{clock: g.clock, step: time.Second}
			folder, err := memory.OpenFolder(g.dir, "main", g.clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			faults := &faultfs.FS{}
			folder.FS = faults
			r, err := router.New(router.Options{Desk: "main", Folder: folder, Clock: g.clock, Day: desktest.Day(), Bus: g.bus,
				Settings: router.Settings{Route: []router.Model{priced(p)}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.RestoreSession(t.Context()); err != nil {
				t.Fatal(err)
			}
			send(t, r, "t1", "one")
			faults.FailAt(faultfs.Write, 2, faultfs.ErrIO) // t2's answer; its message and its request.sent, in one write, are the first
			if stateFails {
				faults.FailAt(faultfs.Rename, 1, faultfs.ErrIO)
			}
			if _, err := r.Send(t.Context(), trigger("t2", "two")); err == nil {
				t.Fatal("Send succeeded with its answer's record refused")
			}
			live := r.Spend()
			if live.SessionTokens == 0 || live.SessionTokens == int64(p.usage(0).InputTokens+p.usage(0).OutputTokens) {
				t.Fatalf("the refused record's call was not charged: %+v", live)
			}
			if !stateFails {
				r2, _, _ := g.open(priced(p))
				if got := r2.Spend(); got != live {
					t.Errorf("spend after a crash = %+v, want %+v", got, live)
				}
				return
			}
			send(t, r, "t3", "three")
			live = r.Spend()
			r2, _, _ := g.open(priced(p))
			if got := r2.Spend(); got != live {
				t.Errorf("spend after a crash = %+v, want %+v", got, live)
			}
			if got := r2.Exchanges(); got != 2 {
				t.Errorf("Exchanges() = %d, want 2", got)
			}
		})
	}
}
