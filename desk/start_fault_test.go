package desk_test

// A first start cut short (issue 24 item 4): an idle desk's first start
// writes nothing of the desk (its folder is made by its first write:
// TestIdleDeskFirstWriteCutShort crashes that at each step); the daemon
// makes desks/ once. A failure of that leaves a state folder that the
// next start runs every desk from.

import (
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestAFirstStartCutShortRestartsCleanly: idle desks' first start through
// a file layer that fails what the first start writes (desks/'s creation,
// the state folder's fsync of it, or everything, as a full disk): every
// desk runs all the same, as none needs a write to start. The next start,
// on a sound disk, runs every desk; the one after it writes nothing.
func TestAFirstStartCutShortRestartsCleanly(t *testing.T) {
	const idle = 12
	tests := []struct {
		name string
		fail func(f *faultfs.FS)
	}{
		{"desks/'s creation fails", func(f *faultfs.FS) { f.FailAt(faultfs.Create, 1, faultfs.ErrNoSpace) }},
		{"the state folder's fsync fails", func(f *faultfs.FS) { f.FailAt(faultfs.Sync, 1, faultfs.ErrIO) }},
		{"the disk is full", func(f *faultfs.FS) { f.Fill(faultfs.ErrNoSpace) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := idleFleet(t, idle)
			fsys := &faultfs.FS{}
			tt.fail(fsys)
			r := runIdle(t, dir, fsys)
			failed := len(r.d.Set().Failed())
			if got := len(r.d.Set().Names()); got != idle || failed != 0 {
				t.Errorf("a first start whose writes fail runs %d desks of %d (%d failed), want all: an idle desk's start writes nothing\n%s",
					got, idle, failed, r.log)
			}
			r.stopCleanly(t)

			r = runIdle(t, dir, &faultfs.FS{})
			if got, f := len(r.d.Set().Names()), r.d.Set().Failed(); got != idle || len(f) != 0 {
				t.Fatalf("the start after a first start cut short (%d desks failed) runs %d desks of %d; failed: %v\n%s",
					failed, got, idle, f, r.log)
			}
			r.stopCleanly(t)

			again := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
			r = runIdle(t, dir, again)
			if got := len(r.d.Set().Names()); got != idle {
				t.Fatalf("the start after that runs %d desks of %d\n%s", got, idle, r.log)
			}
			r.stopCleanly(t)
			for _, op := range startOps {
				if n := again.Count(op); n != 0 {
					t.Errorf("the start after that made %d %s operations, want none: a desk's files were not whole", n, op)
				}
			}
			t.Logf("%d of %d desks failed at the first start", failed, idle)
		})
	}
}
