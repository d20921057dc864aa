package desk

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// TestDaemonBoundsConcurrentStarts: the daemon starts its desks with
// fleet.workers workers: that many desks are being opened and started at
// once (the test waits for all of them to begin before letting any
// finish), and never more, from a desk's folder's opening until it has
// started; and the bytes the desks starting at once read are bounded too
// (fleet.reading): a budget smaller than one desk's share starts them one
// at a time.
func TestDaemonBoundsConcurrentStarts(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reading int64 // the budget of bytes read at once
		want    int   // desks starting at once
	}{
		{"workers", startReadBytes, 4},
		{"bytes read", 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) { testBoundedStarts(t, tt.reading, tt.want) })
	}
}

func testBoundedStarts(t *testing.T, reading int64, want int) {
	const desks, workers = 13, 4
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("deskd.yaml", "state_dir: state\ntimezone: Asia/Kolkata\nmodels:\n  offline: {provider: scripted}\n")
	for i := range desks {
		write(filepath.Join("desks.d", fmt.Sprintf("d%02d.yaml", i)), "model: offline\ninstructions: You run this desk.\n")
	}
	cfg, err := config.Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDaemon(DaemonOptions{Config: cfg, Clock: clock.NewFake(time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)), Bus: event.New()})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu               sync.Mutex
		inFlight, peak   int
		finished, bagged int
	)
	entered := make(chan string, desks)
	release := make(chan struct{})
	d.fleet.workers, d.fleet.reading = workers, newBudget(reading)
	d.fleet.starting = func(name string) func() {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		entered <- name
		<-release
		return func() {
			mu.Lock()
			inFlight--
			finished++
			mu.Unlock()
		}
	}
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(t.Context(), sigs) }()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	receive := func() {
		t.Helper()
		select {
		case <-entered:
			bagged++
		case err := <-done:
			t.Fatalf("the daemon stopped while starting: %v", err)
		case <-deadline.C:
			t.Fatalf("only %d desks began their start (want %d at once)", bagged, want)
		}
	}
	// Every worker begins a desk before any may finish: they start in
	// parallel. Then each desk let through makes room for one more.
	for range want {
		receive()
	}
	for range desks - want {
		release <- struct{}{}
		receive()
	}
	for range want {
		release <- struct{}{}
	}
	select {
	case <-d.Ready():
	case err := <-done:
		t.Fatalf("the daemon stopped while starting: %v", err)
	case <-deadline.C:
		t.Fatal("the daemon was not ready")
	}
	mu.Lock()
	if peak != want || finished != desks {
		t.Errorf("%d desks were starting at once at most, want %d; %d of %d finished", peak, want, finished, desks)
	}
	mu.Unlock()
	if got := len(d.Set().Names()); got != desks {
		t.Errorf("%d desks in the set, want %d", got, desks)
	}
	sigs <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
