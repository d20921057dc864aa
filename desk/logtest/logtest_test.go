package logtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/deskd/deskd/desk/logtest"
)

func TestBufferKeepsEveryConcurrentWrite(t *testing.T) {
	var b logtest.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				if n, err := fmt.Fprintf(&b, "w%d-%d\n", i, j); err != nil || n == 0 {
					t.Errorf("Write = %d, %v", n, err)
				}
				_ = b.String() // a read while others write
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "w") || !strings.Contains(l, "-") {
			t.Fatalf("line %q: writes interleaved", l)
		}
	}
}
