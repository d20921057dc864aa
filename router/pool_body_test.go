package router_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/deskd/deskd/router"
)

// bodyEcho is an HTTP/1.1 server that answers each POST with the length
// and SHA-256 of the body it read (through buffers of its own, so that
// a benchmark's B/op are the client's).
func bodyEcho(t testing.TB) *httptest.Server {
	t.Helper()
	bufs := sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		buf := bufs.Get().(*[]byte)
		defer bufs.Put(buf)
		n, err := io.CopyBuffer(h, r.Body, *buf)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Length", strconv.FormatInt(n, 10))
		_, _ = w.Write(h.Sum(nil))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// postThrough posts body on c to srv and returns what the server read:
// its length and SHA-256.
func postThrough(t testing.TB, c *http.Client, srv *httptest.Server, body []byte) (int64, []byte) {
	t.Helper()
	resp, err := c.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %d bytes: %v", len(body), err)
	}
	defer resp.Body.Close()
	sum, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %d bytes: %s, %v", len(body), resp.Status, err)
	}
	n, err := strconv.ParseInt(resp.Header.Get("X-Length"), 10, 64)
	if err != nil {
		t.Fatalf("X-Length %q: %v", resp.Header.Get("X-Length"), err)
	}
	return n, sum
}

// TestPoolRequestBodiesArriveWhole: bodies of every size around the
// transport's write buffer and the copy buffers (the part of a body
// that goes through the connection's ReadFrom) reach an HTTP/1.1
// service byte for byte, on connections the pool reuses.
func TestPoolRequestBodiesArriveWhole(t *testing.T) {
	srv := bodyEcho(t)
	pool := router.NewPool(2, nil)
	t.Cleanup(pool.CloseIdleConnections)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 4 << 10, 4<<10 + 1, 32 << 10, 32<<10 + 7, 100 << 10, 1<<20 + 3} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		want := sha256.Sum256(body)
		for range 2 { // the second on the kept-alive connection
			n, sum := postThrough(t, pool.Client(), srv, body)
			if n != int64(size) || !bytes.Equal(sum, want[:]) {
				t.Fatalf("a body of %d bytes arrived as %d bytes, SHA-256 %x; want %x", size, n, sum, want)
			}
		}
	}
}

// BenchmarkPoolPost: one POST of a request body (8 KiB, 100 KiB) on a
// Pool's client to an HTTP/1.1 service; B/op shows what the body's copy
// to the connection allocates.
//
//	go test -run '^$' -bench BenchmarkPoolPost -benchmem ./router
func BenchmarkPoolPost(b *testing.B) {
	for _, size := range []int{8 << 10, 100 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			srv := bodyEcho(b)
			pool := router.NewPool(1, nil)
			b.Cleanup(pool.CloseIdleConnections)
			body := bytes.Repeat([]byte("x"), size)
			b.SetBytes(int64(size))
			for b.Loop() {
				if n, _ := postThrough(b, pool.Client(), srv, body); n != int64(size) {
					b.Fatalf("the service read %d bytes of %d", n, size)
				}
			}
		})
	}
}
