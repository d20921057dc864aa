package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
)

// TestE2EConfigRejectedEverywhere: through the real files and the
// watcher, a bad fx.yaml saved with a good edit of main.yaml is refused
// alone: main's edit applies, fx runs on its last good config, and the
// refusal shows in GET /v1/desks (the desk's status and the list),
// /healthz (still 200), /metrics and deskd status, until the fix clears it.
func TestE2EConfigRejectedEverywhere(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(120 * time.Second)
	s := newE2ESetup(t, "")
	desksDir := filepath.Join(filepath.Dir(s.Config), "desks.d")
	writeTestFile(t, desksDir, "fx.yaml", fxDesk)
	fxFile := filepath.Join(desksDir, "fx.yaml")
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:40+05:30"))
	addr := apiAddr(t, d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready")))

	main, err := os.ReadFile(filepath.Join(desksDir, "main.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, desksDir, "fx.yaml", "model: missing\ninstructions: x\n")
	writeTestFile(t, desksDir, "main.yaml", string(main)+"queue_limit: 7\n")
	d.debounced(t, func() {
		d.waitEach(t, deadline, isRejection, map[string]func(stderrLine) bool{
			"config.rejected fx":     isEvent("config.rejected", "desk", "fx", "path", fxFile, "field", "model"),
			"config.reloaded main":   reloaded("desk main: queue_limit changed from 256 to 7"),
			"the refusal's log line": logMessage("desk file refused: the desk runs on its last good config; the other desks' edits were applied"),
		})
	})

	code, body := httpDo(t, "GET", addr+"/v1/desks", "")
	var list httpapi.DesksResponse
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 {
		t.Fatalf("GET /v1/desks = %d %s", code, body)
	}
	if len(list.ConfigRejected) != 1 || list.ConfigRejected[0].Desk != "fx" || list.ConfigRejected[0].File != fxFile || list.ConfigRejected[0].Field != "model" {
		t.Errorf("config_rejected = %+v, want fx's model", list.ConfigRejected)
	}
	for _, st := range list.Desks {
		switch {
		case st.Name == "fx" && (st.ConfigRejected == nil || st.ConfigRejected.Since.IsZero() || st.ConfigRejected.Field != "model"):
			t.Errorf("fx's status config_rejected = %+v", st.ConfigRejected)
		case st.Name == "main" && (st.ConfigRejected != nil || st.QueueLimit != 7):
			t.Errorf("main's status = %+v, want its edit applied and no rejection", st)
		}
	}
	if code, body := httpDo(t, "GET", addr+"/healthz", ""); code != 200 || !strings.Contains(body, `"config_rejected"`) || !strings.Contains(body, `"ok"`) {
		t.Errorf("GET /healthz = %d %s, want 200 ok with config_rejected", code, body)
	}
	if code, body := httpDo(t, "GET", addr+"/metrics", ""); code != 200 || !strings.Contains(body, `deskd_config_rejected{desk="fx"} 1`) {
		t.Errorf("GET /metrics = %d: no deskd_config_rejected{desk=\"fx\"} 1", code)
	}
	if code, out := deskdCLI(t, "status", "--config", s.Config); code != 0 ||
		!strings.Contains(out, "desk fx: its file "+fxFile+" was refused since ") || !strings.Contains(out, "it runs on its last good config") {
		t.Errorf("deskd status = %d\n%s", code, out)
	}

	writeTestFile(t, desksDir, "fx.yaml", fxDesk)
	d.debounced(t, func() {
		d.waitEach(t, deadline, isRejection, map[string]func(stderrLine) bool{"config.reloaded clearing fx": func(l stderrLine) bool {
			c, _ := l.Fields["cleared"].([]any)
			return l.Event() == "config.reloaded" && len(c) == 1 && c[0] == "fx"
		}})
	})
	if _, body := httpDo(t, "GET", addr+"/v1/desks", ""); !strings.Contains(body, `"config_rejected": []`) {
		t.Errorf("GET /v1/desks after the fix = %s, want config_rejected []", body)
	}
	d.terminate(t)
}
