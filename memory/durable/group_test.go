package durable_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// gateFS is the OS's file system with counted fsyncs and syncfs calls:
// while gate is set, the first file fsync waits for it to close, so that
// other writers queue behind the flush; syncfsErr fails every syncfs.
type gateFS struct {
	durable.OS
	mu        sync.Mutex
	gate      chan struct{}
	fsyncs    int
	syncfss   int
	syncfsErr error
}

type gateFile struct {
	*os.File
	fs *gateFS
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return gateFile{f, g}, nil
}

func (f gateFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.fsyncs++
	gate := f.fs.gate
	f.fs.gate = nil
	f.fs.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return f.File.Sync()
}

func (g *gateFS) SyncFS(dir durable.File) error {
	g.mu.Lock()
	g.syncfss++
	err := g.syncfsErr
	g.mu.Unlock()
	if err != nil {
		return err
	}
	return durable.OS{}.SyncFS(dir.(gateFile).File)
}

func (g *gateFS) counts() (fsyncs, syncfss int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fsyncs, g.syncfss
}

// waitSyncs waits until n synced writes have reached the group.
func waitSyncs(t *testing.T, g *durable.Group, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.Stats().Syncs < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d synced writes reached the group, want %d", g.Stats().Syncs, n)
		}
		runtime.Gosched()
	}
}

// groupedAppends opens n logs through g and appends one synced record to
// each at once, the first one's fsync held until the others wait behind
// it. It returns each Append's error, the first one's at 0.
func groupedAppends(t *testing.T, base *gateFS, g *durable.Group, n int) ([]*durable.Log, []error) {
	t.Helper()
	dir := t.TempDir()
	logs := make([]*durable.Log, n)
	for i := range logs {
		logs[i], _ = openLog(t, g, filepath.Join(dir, fmt.Sprintf("log%d.jsonl", i)))
		if err := logs[i].Sync(); err != nil { // lists the new file in its folder
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	base.mu.Lock()
	base.gate, base.fsyncs, base.syncfss = gate, 0, 0
	base.mu.Unlock()
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = logs[0].Append([]byte(`{"n":0}`), true) }()
	waitSyncs(t, g, 1)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = logs[i].Append([]byte(fmt.Sprintf(`{"n":%d}`, i)), true) }()
	}
	waitSyncs(t, g, int64(n))
	close(gate)
	wg.Wait()
	return logs, errs
}

func TestGroupSharesOneFlushAmongWaitingWriters(t *testing.T) {
	base := &gateFS{}
	g := durable.NewGroup(base)
	defer g.Close()
	const n = 32
	logs, errs := groupedAppends(t, base, g, n)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
	fsyncs, syncfss := base.counts()
	if fsyncs != 1 || syncfss != 1 {
		t.Errorf("%d writes made %d fsyncs and %d syncfs calls, want 1 and 1 (the lone first, then one for the %d that waited)", n, fsyncs, syncfss, n-1)
	}
	for i, l := range logs {
		_ = l.Close()
		if _, sc := openLog(t, nil, l.Path()); len(sc.Records) != 1 || string(sc.Records[0]) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("log %d holds %q", i, records(sc))
		}
	}
}

func TestGroupLoneWriterFsyncsAtOnce(t *testing.T) {
	base := &gateFS{}
	g := durable.NewGroup(base)
	defer g.Close()
	l, _ := openLog(t, g, filepath.Join(t.TempDir(), "log.jsonl"))
	if err := l.Sync(); err != nil { // lists the new file in its folder (an fsync of the folder)
		t.Fatal(err)
	}
	for i := range 5 {
		before, _ := base.counts()
		if err := l.Append([]byte(`{"a":1}`), true); err != nil {
			t.Fatal(err)
		}
		fsyncs, syncfss := base.counts()
		if fsyncs-before != 1 || syncfss != 0 {
			t.Errorf("lone Append %d: %d fsyncs, %d syncfs calls; want 1 and 0", i, fsyncs-before, syncfss)
		}
	}
	if err := l.Append([]byte(`{"a":1}`), false); err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(); st.Syncs != 5 || st.Fsyncs != 5 || st.SyncFSs != 0 {
		t.Errorf("Stats = %+v, want 5 syncs, 5 fsyncs, no syncfs (a Note waits for none)", st)
	}
}

func TestGroupFailedFlushFailsEachWriterItCovered(t *testing.T) {
	base := &gateFS{syncfsErr: syscall.EIO}
	g := durable.NewGroup(base)
	defer g.Close()
	const n = 8
	logs, errs := groupedAppends(t, base, g, n)
	if errs[0] != nil {
		t.Errorf("the lone first Append, flushed by its own fsync: %v", errs[0])
	}
	for i := 1; i < n; i++ {
		if !errors.Is(errs[i], syscall.EIO) {
			t.Errorf("Append %d, covered by the failed syncfs: %v, want EIO", i, errs[i])
		}
	}
	// The failed writes are not in their logs (cut back), and the next
	// synced write of a log whose bytes preceded the failure asks its own
	// file (fsync), not another syncfs.
	for i, l := range logs {
		_ = l.Close()
		want := 0
		if i == 0 {
			want = 1
		}
		if _, sc := openLog(t, nil, l.Path()); len(sc.Records) != want {
			t.Errorf("log %d holds %q, want %d records", i, records(sc), want)
		}
	}
}

// TestGroupAfterAFailedSyncfsAsksTheFile: bytes written before a syncfs
// failed are checked by an fsync of their own file, even in a batch.
func TestGroupAfterAFailedSyncfsAsksTheFile(t *testing.T) {
	base := &gateFS{syncfsErr: syscall.EIO}
	g := durable.NewGroup(base)
	defer g.Close()
	dir := t.TempDir()
	old, _ := openLog(t, g, filepath.Join(dir, "old.jsonl"))
	if err := old.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := old.Append([]byte(`{"noted":1}`), false); err != nil { // unsynced, before the failure
		t.Fatal(err)
	}
	_, errs := groupedAppends(t, base, g, 3) // one syncfs, failed
	if !errors.Is(errs[1], syscall.EIO) {
		t.Fatalf("the batch did not fail: %v", errs)
	}
	base.mu.Lock()
	base.syncfsErr, base.fsyncs, base.syncfss = nil, 0, 0
	base.mu.Unlock()
	if err := old.Append([]byte(`{"a":2}`), true); err != nil {
		t.Fatal(err)
	}
	if fsyncs, syncfss := base.counts(); fsyncs != 1 || syncfss != 0 {
		t.Errorf("%d fsyncs, %d syncfs; want the file's own fsync", fsyncs, syncfss)
	}
}

// BenchmarkGroupAppend: 64 logs appending synced records at once, each
// fsyncing its own file (plain) or through a Group.
func BenchmarkGroupAppend(b *testing.B) {
	for _, name := range []string{"fsync", "group"} {
		grouped := name == "group"
		b.Run(name, func(b *testing.B) {
			var fsys durable.FS = durable.OS{}
			var g *durable.Group
			if grouped {
				g = durable.NewGroup(nil)
				defer g.Close()
				fsys = g
			}
			dir := b.TempDir()
			const writers = 64
			logs := make([]*durable.Log, writers)
			for i := range logs {
				l, _, err := durable.OpenLog(fsys, filepath.Join(dir, fmt.Sprintf("%d.jsonl", i)), 0o640, isObject)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				logs[i] = l
			}
			rec := []byte(`{"type":"message","text":"a record of about a hundred bytes, as a turn's are, give or take"}`)
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N/writers + 1
			for _, l := range logs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if err := l.Append(rec, true); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if g != nil {
				st := g.Stats()
				b.ReportMetric(float64(st.Fsyncs+st.SyncFSs)/float64(st.Syncs), "flushes/write")
			} else {
				b.ReportMetric(1, "flushes/write")
			}
		})
	}
}
