package httpapi

// The runtime file: where the running deskd serves, for the CLI to find it
// whatever the config says now (an edit of listen takes effect at the next
// restart only).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
)

// RuntimeFile is the name of the runtime file in the state folder.
const RuntimeFile = "deskd.runtime.json"

// runtimeLimit bounds what ReadRuntime reads.
const runtimeLimit = 64 << 10

// Runtime is what the running deskd says of itself in
// <state_dir>/deskd.runtime.json while it serves.
type Runtime struct {
	// PID is the daemon's process id.
	PID int `json:"pid"`
	// Listen is every address it serves, with the ports the system chose
	// (unix:PATH for a socket).
	Listen []string `json:"listen"`
	// Config is the absolute path of the main config file it runs.
	Config string `json:"config"`
	// StartedAt is when it started serving, on deskd's clock.
	StartedAt time.Time `json:"started_at"`
	// Version is deskd's version.
	Version string `json:"version"`
}

// RuntimePath is the path of the runtime file of state folder stateDir.
func RuntimePath(stateDir string) string { return filepath.Join(stateDir, RuntimeFile) }

// WriteRuntime writes r as the runtime file of stateDir (crash safe, mode
// 0640) and returns the function that removes it at a clean stop.
func WriteRuntime(stateDir string, r Runtime) (remove func() error, err error) {
	path := RuntimePath(stateDir)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the runtime file %s: %w", path, err)
	}
	if err := memory.WriteFileAtomic(path, append(data, '\n'), 0o640); err != nil {
		return nil, fmt.Errorf("write the runtime file: %w", err)
	}
	return func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the runtime file: %w", err)
		}
		return nil
	}, nil
}

// ReadRuntime reads the runtime file of stateDir; an error is
// errors.Is fs.ErrNotExist when there is none.
func ReadRuntime(stateDir string) (Runtime, error) {
	path := RuntimePath(stateDir)
	data, err := durable.ReadRegular(path, runtimeLimit, durable.NoFollow)
	if err != nil {
		return Runtime{}, fmt.Errorf("read the runtime file: %w", err)
	}
	var r Runtime
	if err := json.Unmarshal(data, &r); err != nil {
		return Runtime{}, fmt.Errorf("runtime file %s: not deskd's JSON: %w", path, err)
	}
	if r.PID <= 0 || len(r.Listen) == 0 {
		return Runtime{}, fmt.Errorf("runtime file %s: no pid or no listen address", path)
	}
	return r, nil
}

// Alive reports whether the process of r.PID exists.
func (r Runtime) Alive() bool {
	err := syscall.Kill(r.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Location is where the CLI found the running deskd.
type Location struct {
	// Addr is the address to dial.
	Addr string
	// Notes are what the operator should know: a stale runtime file, a
	// listen that differs from the one served, another config file.
	Notes []string
	// Looked says where the address came from, for the error when
	// nothing answers there.
	Looked string
	// Runtime is the runtime file of the daemon found, if one was.
	Runtime *Runtime
}

// Locate finds the running deskd of the config c: the address its runtime
// file names (a unix socket first) when its process lives and its API
// answers, else fallback (from the config's listen). pick chooses among
// the addresses served.
func Locate(ctx context.Context, c config.Client, fallback string, pick func([]string) string) Location {
	path := RuntimePath(c.StateDir)
	loc := Location{Addr: fallback, Looked: fmt.Sprintf("the config's listen; no runtime file at %s", path)}
	if c.StateDir == "" {
		loc.Looked = "the config's listen; it has no state_dir"
		return loc
	}
	r, err := ReadRuntime(c.StateDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if answers(ctx, fallback) == nil {
			loc.Notes = append(loc.Notes, fmt.Sprintf("note: a deskd answers at %s, the config's listen, but no runtime file at %s vouches that it runs this config: it may be another deskd's (one of another config or state folder)", fallback, path))
		}
		return loc
	case err != nil:
		loc.Notes = append(loc.Notes, fmt.Sprintf("note: %v; ignored", err))
		loc.Looked = fmt.Sprintf("the config's listen; the runtime file %s was ignored", path)
		return loc
	case !r.Alive():
		loc.Notes = append(loc.Notes, fmt.Sprintf("note: %s names pid %d, which is not running (a deskd that did not stop cleanly); ignored", path, r.PID))
		loc.Looked = fmt.Sprintf("the config's listen; the runtime file %s was stale", path)
		return loc
	}
	addr := pick(r.Listen)
	if err := answers(ctx, addr); err != nil {
		loc.Notes = append(loc.Notes, fmt.Sprintf("note: %s names pid %d at %s, whose API does not answer (%v); trying the config's listen", path, r.PID, addr, err))
		loc.Looked = fmt.Sprintf("the config's listen; the runtime file %s names %s, which did not answer", path, addr)
		return loc
	}
	loc.Addr, loc.Runtime, loc.Looked = addr, &r, "named by the runtime file "+path
	if !sameListen(c.Listens, r.Listen) {
		loc.Notes = append(loc.Notes, fmt.Sprintf("note: the running deskd (pid %d) serves %s; the config's listen %s takes effect at its next restart",
			r.PID, strings.Join(r.Listen, ", "), strings.Join(c.Listens, ", ")))
	}
	if c.Path != "" && r.Config != "" && filepath.Clean(c.Path) != filepath.Clean(r.Config) {
		loc.Notes = append(loc.Notes, fmt.Sprintf("note: the running deskd (pid %d) runs the config %s, not %s", r.PID, r.Config, c.Path))
	}
	return loc
}

// sameListen reports whether every address of the config's listen is
// one served: the same, or the same port on a wildcard host.
func sameListen(listens, served []string) bool {
	for _, a := range listens {
		if !slices.ContainsFunc(served, func(s string) bool { return s == a || wildcardOf(a, s) }) {
			return false
		}
	}
	return true
}

// wildcardOf reports whether a, host:port with an empty or unspecified
// host, is served as s (the system's spelling of the same port).
func wildcardOf(a, s string) bool {
	ah, ap, err1 := net.SplitHostPort(a)
	sh, sp, err2 := net.SplitHostPort(s)
	if err1 != nil || err2 != nil || ap != sp {
		return false
	}
	ip, sip := net.ParseIP(ah), net.ParseIP(sh)
	return (ah == "" || ip != nil && ip.IsUnspecified()) && sip != nil && sip.IsUnspecified()
}

// answers checks that something answers GET /healthz at addr (any
// status: a deskd that is stopping answers 503).
func answers(ctx context.Context, addr string) error {
	c, err := Dial(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
