package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/logtest"
)

// TestStartFrontend: the front end serves the API with the token of
// auth_token_file and the extra handlers on the config's listen, writes
// the runtime file naming the addresses served, logs "deskd ready", and
// its Stop removes the runtime file.
func TestStartFrontend(t *testing.T) {
	dir := t.TempDir()
	state := dir // made: deskd run makes it before the front end starts
	cfg := &config.Config{Path: filepath.Join(dir, "deskd.yaml"), StateDir: state, Listens: []string{"127.0.0.1:0"},
		AuthTokenFile: writeFile(t, dir, "operator.token", "s3cret\n")}
	clk := clock.NewFake(time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC))
	bus := event.New()
	defer bus.Close()
	var logs logtest.Buffer
	f, err := httpapi.StartFrontend(t.Context(), httpapi.FrontendOptions{Config: cfg, Clock: clk, Events: httpapi.NewEventRing(bus, clk.Now(), 16),
		Log: zerolog.New(&logs), Desks: desk.NewSet(), Version: "v9",
		Handlers: map[string]http.Handler{"GET /extra": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("extra")) })}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := httpapi.ReadRuntime(state)
	if err != nil || !slices.Equal(rt.Listen, f.Addrs()) || rt.Version != "v9" || rt.Config != cfg.Path {
		t.Errorf("runtime file %+v, %v; want the addresses served %v, version v9, config %s", rt, err, f.Addrs(), cfg.Path)
	}
	if !strings.Contains(logs.String(), `"message":"deskd ready"`) || !strings.Contains(logs.String(), `"auth":true`) {
		t.Errorf("log %s: want deskd ready, with auth", logs.String())
	}
	c, err := httpapi.Dial(f.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	var ae *httpapi.Error
	if _, err := c.Desks(t.Context()); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Errorf("GET /v1/desks without the token: %v, want 401", err)
	}
	c.Token = "s3cret"
	if _, err := c.Desks(t.Context()); err != nil {
		t.Errorf("GET /v1/desks with the token: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+f.Addrs()[0]+"/extra", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || body.String() != "extra" {
		t.Errorf("GET /extra = %d %q, want the extra handler's answer", resp.StatusCode, body.String())
	}
	if err := f.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.ReadRuntime(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("runtime file after Stop: %v, want none", err)
	}
}

// TestStartFrontendRefusesAnUnreadableToken: a token file that cannot be
// read is an error naming its key, and nothing is served.
func TestStartFrontendRefusesAnUnreadableToken(t *testing.T) {
	state := t.TempDir()
	cfg := &config.Config{StateDir: state, Listens: []string{"127.0.0.1:0"}, FeedTokenFile: filepath.Join(state, "missing.token")}
	clk := clock.NewFake(time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC))
	bus := event.New()
	defer bus.Close()
	ring := httpapi.NewEventRing(bus, clk.Now(), 16)
	defer ring.Close()
	f, err := httpapi.StartFrontend(context.Background(), httpapi.FrontendOptions{Config: cfg, Clock: clk, Events: ring, Log: zerolog.Nop(), Desks: desk.NewSet()})
	if err == nil || !strings.HasPrefix(err.Error(), "feed_token_file: ") || f != nil {
		t.Fatalf("StartFrontend = %v, %v; want the feed_token_file error", f, err)
	}
	if _, err := httpapi.ReadRuntime(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("runtime file: %v, want none", err)
	}
}
