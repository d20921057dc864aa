package desk_test

// Many idle desks start at once (issue 24, item 4): an idle desk's start
// creates, writes and fsyncs only what it must, and the desks start in
// parallel.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory/durable/faultfs"
)

// startOps is what TestIdleDeskStartTouchesLittle counts of a start.
var startOps = []faultfs.Op{faultfs.Create, faultfs.Sync, faultfs.Write, faultfs.Rename}

// TestIdleDeskStartTouchesLittle: idle desks' first start (no folder yet)
// and their restart (on the files a clean stop left) make at most so many
// creations (files and folders), fsyncs, writes and renames per desk,
// counted through faultfs. A first start creates the desk's folder, its
// first session and its state file, and no folder a turn has not asked
// for (notes, summaries, skills...), nor its ledger's file, which its
// first record makes; a restart writes nothing at all. (Before issue 24
// item 4: 9 creations and 11 fsyncs a desk at the first start, every
// folder of the desk made and fsynced into its parent, and an empty
// ledger created and fsynced into the desk's folder.)
func TestIdleDeskStartTouchesLittle(t *testing.T) {
	const idle = 20
	limits := map[string]map[faultfs.Op]int{
		// Creations: the desk's folder, sessions/, the first session's
		// file, state.json's temp file. Fsyncs: desks/ (the desk's folder), the
		// desk's folder (sessions/ in it), the session file and sessions/,
		// the temp file and the desk's folder (state.json renamed in it).
		// Writes: the session's header, state.json. Renames: state.json.
		"first start":  {faultfs.Create: 4, faultfs.Sync: 6, faultfs.Write: 2, faultfs.Rename: 1},
		"second start": {faultfs.Create: 0, faultfs.Sync: 0, faultfs.Write: 0, faultfs.Rename: 0},
	}
	dir := idleFleet(t, idle)
	for _, run := range []string{"first start", "second start"} {
		// Everything under the state folder's desks/ (desks/ itself
		// included: once a daemon, its creation and state/'s fsync).
		fsys := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
		r := runIdle(t, dir, fsys)
		if got := len(r.d.Set().Names()); got != idle {
			t.Fatalf("%s: %d desks run, want %d", run, got, idle)
		}
		for _, op := range startOps {
			got := fsys.Count(op)
			if want := limits[run][op]*idle + 1; got > want {
				t.Errorf("%s: %d idle desks made %d %s operations (%.2f a desk), want at most %d a desk",
					run, idle, got, op, float64(got)/idle, limits[run][op])
			}
		}
		r.stop(t)
		if run == "first start" {
			desk0 := filepath.Join(dir, "state", "desks", "i00000")
			for _, lazy := range []string{"notes", "summaries", "skills", "history"} {
				if _, err := os.Stat(filepath.Join(desk0, lazy)); err == nil {
					t.Errorf("an idle desk's first start made its folder %s/, which no turn asked for", lazy)
				}
			}
		}
	}
}

// BenchmarkIdleDesksStart: how long n idle desks take from NewDaemon to
// every desk started (Ready), on deskd's fake clock: their first start
// (no folder yet) and a restart on the files a clean stop left. For the
// 10,000 figures of BENCHMARKS.md:
//
//	go test -run '^$' -bench 'BenchmarkIdleDesksStart/.*/10000' -benchtime 1x ./desk
func BenchmarkIdleDesksStart(b *testing.B) {
	for _, again := range []bool{false, true} {
		for _, n := range []int{1000, 10000} {
			name := fmt.Sprintf("first/%d", n)
			if again {
				name = fmt.Sprintf("again/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				dir := idleFleet(b, n)
				if again {
					runIdle(b, dir, nil).stop(b) // the first start: the folders and ledgers
				}
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if !again {
						if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					r := runIdle(b, dir, nil)
					b.StopTimer()
					r.stop(b)
				}
			})
		}
	}
}
