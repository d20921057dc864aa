package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The debug and trace lines a turn, a schedule and the API's requests make.
var (
	debugLines = []string{"config files read", "trigger accepted", "model request", "session record written", "schedule's next slot"}
	traceLines = []string{"http request", "event stream client connected", "event stream client disconnected"}
)

// TestLogLevelsShowDebugAndTrace: log.level debug shows the debug lines
// (a trigger accepted, a model request with its size, a session record
// written, the config files read, a schedule's next slot), trace adds the
// API's requests and the event stream's clients, and info shows none of
// them. Every line carries trading_time in the trading time zone.
func TestLogLevelsShowDebugAndTrace(t *testing.T) {
	start := time.Date(2026, 3, 2, 4, 0, 30, 0, time.UTC)
	for _, level := range []string{"info", "debug", "trace"} {
		t.Run(level, func(t *testing.T) {
			s := newE2ESetup(t, everyMinuteSchedule)
			replaceInFile(t, s.Config, "level: info", "level: "+level)
			d := startInProcess(t, "deskd", s.Config, start)
			d.waitReady(t)
			if status, _ := d.post(t, `{"text": "NIFTY crossed 22000", "id": "evt-1", "source": "feed-a"}`); status != http.StatusAccepted && status != http.StatusOK {
				t.Fatalf("POST trigger = %d", status)
			}
			d.waitFor(t, time.Now().Add(60*time.Second), "turn.completed", isEvent("turn.completed", "trigger", "evt-1"))
			if status, _ := d.call(t, http.MethodGet, "/v1/events?follow=0", "", ""); status != http.StatusOK {
				t.Fatalf("GET /v1/events = %d", status)
			}
			d.terminate(t)

			want := map[string]bool{}
			for _, m := range debugLines {
				want[m] = level != "info"
			}
			for _, m := range traceLines {
				want[m] = level == "trace"
			}
			for m, shown := range want {
				if n := d.count(logMessage(m)); (n > 0) != shown {
					t.Errorf("level %s: %d lines %q, want shown %v", level, n, m, shown)
				}
			}
			if level == "info" {
				return
			}
			acc := firstLine(t, d, "trigger accepted", logMessage("trigger accepted"))
			if acc.Str("trigger") != "evt-1" || acc.Str("source") != "feed-a" {
				t.Errorf("trigger accepted = %s", acc.Raw)
			}
			req := firstLine(t, d, "model request", logMessage("model request"))
			if req.Num("bytes") <= 0 || req.Num("estimated_tokens") <= 0 {
				t.Errorf("model request = %s, want its bytes and estimated tokens", req.Raw)
			}
			if tt := acc.Str("trading_time"); !strings.HasSuffix(tt, "+05:30") {
				t.Errorf("trading_time = %q, want the trading zone's +05:30", tt)
			}
			if level == "trace" {
				h := firstLine(t, d, "http request", func(l stderrLine) bool {
					return l.Str("message") == "http request" && l.Str("method") == "POST" && l.Str("path") == "/v1/desks/main/triggers"
				})
				if h.Num("status") == 0 {
					t.Errorf("http request = %s, want its status", h.Raw)
				}
			}
		})
	}
}

// firstLine returns the first line deskd wrote that matches, wherever the
// test's cursor is; it fails the test when there is none.
func firstLine(t *testing.T, d *deskdProc, what string, match func(stderrLine) bool) stderrLine {
	t.Helper()
	lines, _ := d.stderr.snapshot()
	for _, l := range lines {
		if match(l) {
			return l
		}
	}
	t.Fatalf("no %s line", what)
	return stderrLine{}
}
