package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"
)

// StartDebug starts the debug listener on addr ("" is none) and logs what
// came of it; it returns the function that stops it. A listener that
// cannot open is logged as an error and does not keep the desks from
// running.
func StartDebug(addr string, log zerolog.Logger) (stop func()) {
	if addr == "" {
		return func() {}
	}
	d, err := ServeDebug(addr)
	if err != nil {
		log.Error().Err(err).Msg("debug listener: not serving the profiles")
		return func() {}
	}
	log.Info().Str("debug_listen", d.Addr()).Str("pprof", "http://"+d.Addr()+"/debug/pprof/").
		Msg("debug listener: serving the profiles, on loopback only")
	return d.Stop
}

// DebugServer is the debug listener (debug_listen): net/http/pprof's
// handlers on a mux of their own, never the API's nor the default mux,
// on a loopback address, behind the API's Host rule (hosts.go) without
// allowed_hosts: a request must name an IP address, localhost or
// debug_listen's own host, so that no web page can rebind a name to it
// and read the daemon's memory.
type DebugServer struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// ServeDebug serves the profiles on addr, which config validation has
// checked is loopback; the address it binds is checked again (a
// localhost that resolves elsewhere is refused).
func ServeDebug(addr string) (*DebugServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug_listen %s: %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("debug_listen %s: it bound %s, which is not a loopback address", addr, ln.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // and every named profile: heap, goroutine, allocs, ...
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	// No write timeout: a CPU profile or a trace streams for its seconds.
	h := newHostRule([]string{addr}, nil).wrap(mux)
	d := &DebugServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		_ = d.srv.Serve(ln) // ErrServerClosed once Stop closes it
	}()
	return d, nil
}

// Addr returns the address it listens on.
func (d *DebugServer) Addr() string { return d.addr }

// Stop closes the debug listener and its connections, and waits for it.
func (d *DebugServer) Stop() {
	_ = d.srv.Close()
	<-d.done
}
