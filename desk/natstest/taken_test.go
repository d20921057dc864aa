package natstest_test

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/natstest"
)

// fatalTB is the test's TB whose Fatalf is recorded and ends the
// goroutine that called it, as a test's would.
type fatalTB struct {
	testing.TB
	fatal chan string
}

func (f fatalTB) Fatalf(format string, args ...any) {
	f.fatal <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestAServerOnATakenPortSaysSo: a server asked for a port another
// process holds stops at once with an error naming the port and why
// (natstest gives a first start other ports for that reason), rather
// than waiting out its readiness and saying only "not ready".
func TestAServerOnATakenPortSaysSo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	tb := fatalTB{TB: t, fatal: make(chan string, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		natstest.StartAt(tb, port)
	}()
	<-done
	select {
	case msg := <-tb.fatal:
		if !strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d", port)) || !strings.Contains(msg, "port taken by another process") {
			t.Errorf("a server on a taken port: %q, want the port named as taken", msg)
		}
	default:
		t.Fatal("a server on a taken port started")
	}
}
