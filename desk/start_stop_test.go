package desk_test

// Many idle desks stop at once (issue 21, item 8): an idle desk's stop
// writes nothing, and the desks stop in parallel.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// idleFleet writes the config of n idle desks (no schedule) into a new
// folder, and returns the folder.
func idleFleet(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "desks.d"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "deskd.yaml"), []byte(daemonMain), 0o644); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "desks.d", fmt.Sprintf("i%05d.yaml", i)), []byte(daemonDesk("offline")), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// runIdle starts the daemon of the config in dir on a fake clock at
// start, writing through fsys (nil: the disk itself), its events not
// watched, and waits (2 min) until it is ready.
func runIdle(tb testing.TB, dir string, fsys *faultfs.FS) *lazyRun {
	tb.Helper()
	var fs durable.FS
	if fsys != nil {
		fs = fsys // not a nil *faultfs.FS in the interface
	}
	return startRun(tb, dir, clock.NewFake(start), fs, false)
}

// TestIdleDesksStopWithoutWriting: 200 idle desks, started for the first
// time (empty ledgers) and again after a clean stop (ledgers with their
// persisted index): at SIGTERM the daemon stops cleanly, and no desk's
// stop makes a single write, fsync, creation or rename in the state folder.
// What each desk's stop writes does not depend on how many there are: 200
// show it as 2,000 did, in a tenth of the time (how long 10,000 take to
// stop is BenchmarkIdleDesksStop's).
func TestIdleDesksStopWithoutWriting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 200 desks, twice")
	}
	const idle = 200
	dir := idleFleet(t, idle)
	for _, run := range []string{"first start", "second start"} {
		fsys := &faultfs.FS{}
		r := runIdle(t, dir, fsys)
		if got := len(r.d.Set().Names()); got != idle {
			t.Fatalf("%s: %d desks run, want %d", run, got, idle)
		}
		before := map[faultfs.Op]int{}
		for _, op := range []faultfs.Op{faultfs.Write, faultfs.Sync, faultfs.Create, faultfs.Rename} {
			before[op] = fsys.Count(op)
		}
		r.stopCleanly(t)
		for op, n := range before {
			if d := fsys.Count(op) - n; d != 0 {
				t.Errorf("%s: the stop of %d idle desks made %d %s operations, want 0", run, idle, d, op)
			}
		}
	}
}

// BenchmarkIdleDesksStop: how long SIGTERM takes to stop n idle desks,
// from the signal to Run's return: after their first start (new folders,
// empty ledgers) and after a start on the files a clean stop left (ledgers
// with their persisted index). For the 10,000 figure of BENCHMARKS.md:
//
//	go test -run '^$' -bench 'BenchmarkIdleDesksStop/.*/10000' -benchtime 1x ./desk
func BenchmarkIdleDesksStop(b *testing.B) {
	forIdleFleets(b, func(b *testing.B, n int, again bool) {
		var dir string
		if again {
			dir = idleFleet(b, n)
			runIdle(b, dir, nil).stop(b) // the first start: the folders and ledgers
		}
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			if !again {
				dir = idleFleet(b, n)
			}
			r := runIdle(b, dir, nil)
			b.StartTimer()
			r.stopCleanly(b)
		}
	})
}

// forIdleFleets runs bench as a sub-benchmark for each size n of the
// idle-desk benchmarks' fleets (1,000 and 10,000 desks) and each start:
// "first/n", the desks' first start (no folders yet), and "again/n"
// (again set), a start on the files a clean stop left.
func forIdleFleets(b *testing.B, bench func(b *testing.B, n int, again bool)) {
	for _, again := range []bool{false, true} {
		for _, n := range []int{1000, 10000} {
			name := fmt.Sprintf("first/%d", n)
			if again {
				name = fmt.Sprintf("again/%d", n)
			}
			b.Run(name, func(b *testing.B) { bench(b, n, again) })
		}
	}
}
