package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/deskd/deskd/config"
)

// Listen opens every listen address: host:port over TCP, unix:PATH as a
// unix socket (a stale socket file left by a crash is replaced; one in use
// is an error). On an error, the listeners already open are closed.
func Listen(addrs []string) ([]net.Listener, error) {
	var ls []net.Listener
	closeAll := func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}
	for _, a := range addrs {
		var (
			l   net.Listener
			err error
		)
		if p, ok := strings.CutPrefix(a, config.UnixPrefix); ok {
			l, err = listenUnix(p)
		} else {
			l, err = net.Listen("tcp", a)
		}
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// listenUnix listens on a unix socket at path, made where only deskd's
// user can reach it and then moved into place at mode 0660.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale socket: %w", err)
		}
	}
	// The socket is made in a fresh folder only deskd's user can enter
	// (0700), given its mode there, and only then renamed into place: at no
	// moment can anyone outside deskd's user and group connect, whatever
	// the umask (a connection keeps the operator's trust for its life).
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, fmt.Errorf("stage the socket: %w", err)
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "s")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: staged, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ul.SetUnlinkOnClose(false) // it is unlinked at path, below, not at staged
	if err := os.Chmod(staged, 0o660); err == nil {
		err = os.Rename(staged, path)
	}
	if err != nil {
		_ = ul.Close()
		return nil, fmt.Errorf("move the socket into place: %w", err)
	}
	return &unixListener{UnixListener: ul, path: path}, nil
}

// unixListener is a unix socket at path: it names path as its address
// and removes its socket file when it is closed.
type unixListener struct {
	*net.UnixListener
	path string
}

// Addr is the socket's path, where it was moved to (the listener was made
// at its staging path).
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Close closes the listener and removes its socket file.
func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if rerr := os.Remove(l.path); err == nil && rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = rerr
	}
	return err
}

// maxHeaderBytes bounds a request's headers (431 beyond): a token, a
// cookie and a browser's usual headers are far below it.
const maxHeaderBytes = 64 << 10

// Serving is a handler served on listeners, until Shutdown.
type Serving struct {
	srv     *http.Server
	stop    context.CancelFunc
	addrs   []string
	serving sync.WaitGroup
	errs    chan error
}

// Serve serves h on ls until Shutdown. The requests' contexts live until
// Shutdown, not until ctx ends (the values of ctx are kept): the API keeps
// answering while deskd stops its desks.
func Serve(ctx context.Context, h http.Handler, ls []net.Listener) *Serving {
	base, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Serving{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    maxHeaderBytes,
			BaseContext:       func(net.Listener) context.Context { return base },
		},
		stop: stop,
		errs: make(chan error, len(ls)),
	}
	for _, l := range ls {
		addr := l.Addr().String()
		if l.Addr().Network() == "unix" {
			addr = config.UnixPrefix + addr
		}
		s.addrs = append(s.addrs, addr)
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errs <- fmt.Errorf("serve the API on %s: %w", addr, err)
			}
		}()
	}
	return s
}

// Addrs returns the addresses served (unix:PATH for a socket), with the
// ports the system chose.
func (s *Serving) Addrs() []string { return s.addrs }

// Errs delivers an error if serving stops on its own.
func (s *Serving) Errs() <-chan error { return s.errs }

// Shutdown ends the event streams and waits, within timeout, for the
// requests in flight; past it, the connections are closed and the
// deadline's error returned.
func (s *Serving) Shutdown(timeout time.Duration) error {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	s.serving.Wait()
	return err
}
