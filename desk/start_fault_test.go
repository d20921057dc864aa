package desk_test

// A first start cut short (issue 24 item 4): each desk's start makes its
// folder, sessions/, its first session and its state file; a failure at
// any point of that leaves a state folder that the next start runs every
// desk from.

import (
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestAFirstStartCutShortRestartsCleanly: idle desks' first start through
// a file layer that fails at one point of it (an fsync of a folder, a
// creation early or late, a state file's write, fsync or rename, a
// session's fsync, every creation from the middle on, as a disk that
// fills); the desks it reaches fail, the others run. The next start, on a
// sound disk, runs every desk; the one after it finds every desk's files
// whole and writes nothing.
func TestAFirstStartCutShortRestartsCleanly(t *testing.T) {
	const idle = 12
	// A first start makes 4 creations a desk (folder, sessions/, session
	// file, state.json's temp) and 6 fsyncs, in the order the workers
	// reach them.
	tests := []struct {
		name string
		fail func(f *faultfs.FS)
	}{
		{"desks/'s fsync fails", func(f *faultfs.FS) { f.FailAt(faultfs.Sync, 1, faultfs.ErrIO) }},
		{"two fsyncs fail", func(f *faultfs.FS) {
			f.FailAt(faultfs.Sync, 1, faultfs.ErrIO)
			f.FailAt(faultfs.Sync, 2, faultfs.ErrIO)
		}},
		{"an early creation fails", func(f *faultfs.FS) { f.FailAt(faultfs.Create, 7, faultfs.ErrNoSpace) }},
		{"a late creation fails", func(f *faultfs.FS) { f.FailAt(faultfs.Create, 2*idle+5, faultfs.ErrNoSpace) }},
		{"a state file's write fails", func(f *faultfs.FS) { f.FailAt(faultfs.Write, 2*5, faultfs.ErrIO) }},
		{"a session's fsync fails", func(f *faultfs.FS) { f.FailAt(faultfs.Sync, 6*2+3, faultfs.ErrIO) }},
		{"a state file's fsync fails", func(f *faultfs.FS) { f.FailAt(faultfs.Sync, 6*3+5, faultfs.ErrIO) }},
		{"a state file's rename fails", func(f *faultfs.FS) { f.FailAt(faultfs.Rename, 4, faultfs.ErrIO) }},
		{"the disk fills as the desks start", func(f *faultfs.FS) {
			for i := 2 * idle; i <= 4*idle; i++ {
				f.FailAt(faultfs.Create, i, faultfs.ErrNoSpace)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := idleFleet(t, idle)
			fsys := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
			tt.fail(fsys)
			r := runIdle(t, dir, fsys)
			failed := len(r.d.Set().Failed())
			r.stop(t)

			r = runIdle(t, dir, &faultfs.FS{})
			if got, f := len(r.d.Set().Names()), r.d.Set().Failed(); got != idle || len(f) != 0 {
				t.Fatalf("the start after a first start cut short (%d desks failed) runs %d desks of %d; failed: %v\n%s",
					failed, got, idle, f, r.log)
			}
			r.stop(t)

			again := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
			r = runIdle(t, dir, again)
			if got := len(r.d.Set().Names()); got != idle {
				t.Fatalf("the start after that runs %d desks of %d\n%s", got, idle, r.log)
			}
			r.stop(t)
			for _, op := range startOps {
				if n := again.Count(op); n != 0 {
					t.Errorf("the start after that made %d %s operations, want none: a desk's files were not whole", n, op)
				}
			}
			t.Logf("%d of %d desks failed at the first start", failed, idle)
		})
	}
}
