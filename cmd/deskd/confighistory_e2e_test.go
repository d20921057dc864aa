package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

// TestE2EConfigInForceIsKept: deskd keeps a snapshot of its effective
// config when it starts and at each reload that changes it (never a
// secret: not the API key, not a base URL's password), a restart on the
// same files adds none, and `deskd audit` of the day holds the snapshots
// in force that day, each with the instructions it ran on.
func TestE2EConfigInForceIsKept(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	dir := t.TempDir()
	const secret, password = "sk-live-do-not-keep-me", "hunter2-do-not-keep-me"
	cfg := writeE2EMain(t, dir, fmt.Sprintf("  real: {provider: openai, model: gpt-test, base_url: \"http://trader:%s@127.0.0.1:9/v1\", api_key_file: key.txt}\n", password))
	writeTestFile(t, dir, "key.txt", secret+"\n")
	mainFile := writeTestFile(t, dir, filepath.Join("desks.d", "main.yaml"), "model: offline\nfallbacks: [real]\ninstructions: Version one of the instructions.\n")
	history := filepath.Join(dir, "state", config.HistoryDir)
	snapshots := func() []string {
		t.Helper()
		entries, err := os.ReadDir(history)
		if err != nil {
			t.Fatalf("the config history: %v", err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	d := startInProcess(t, "deskd", cfg, istTime(t, "2026-03-02T10:00:00+05:30"))
	d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	if got := snapshots(); len(got) != 1 {
		t.Fatalf("after the start, the config history holds %v, want one snapshot", got)
	}
	saveByRename(t, mainFile, "model: offline\nfallbacks: [real]\ninstructions: Version two of the instructions.\n")
	d.debounced(t, func() {
		d.waitEach(t, deadline, nil, map[string]func(stderrLine) bool{
			"config.reloaded":   reloaded(),
			"the snapshot kept": logMessage("config in force kept for audits"),
		})
	})
	d.terminate(t)
	if got := snapshots(); len(got) != 2 {
		t.Fatalf("after the reload, the config history holds %v, want two snapshots", got)
	}

	// A restart on the same files keeps no new snapshot.
	d2 := startInProcess(t, "second deskd", cfg, istTime(t, "2026-03-02T11:00:00+05:30"))
	d2.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	// A turn, so that the desk has a folder to audit (an idle desk writes
	// none: issue 24 item 4).
	if code, _ := d2.post(t, `{"text": "Good morning", "id": "t1", "kind": "manual"}`); code != 202 {
		d2.fail(t, "POST a trigger: %d", code)
	}
	d2.waitFor(t, deadline, "turn.completed", isEvent("turn.completed", "desk", "main"))
	d2.terminate(t)
	names := snapshots()
	if len(names) != 2 {
		t.Fatalf("after a restart on the same config, the config history holds %v, want the same two snapshots", names)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(history, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(password)) {
			t.Errorf("the snapshot %s holds a secret:\n%s", name, b)
		}
		if !bytes.Contains(b, []byte(`"api_key_file": "`+filepath.Join(dir, "key.txt")+`"`)) {
			t.Errorf("the snapshot %s does not say where the key comes from:\n%s", name, b)
		}
	}

	var out, errOut bytes.Buffer
	bundle := filepath.Join(t.TempDir(), "audit.tar.gz")
	if code := run(t.Context(), []string{"audit", "main", "2026-03-02", "-o", bundle, "--config", cfg}, &out, &errOut); code != 0 {
		t.Fatalf("deskd audit: exit %d, %s", code, errOut.String())
	}
	var inForce []string
	for _, f := range readBundle(t, bundle) {
		name := f.name[strings.Index(f.name, "/")+1:]
		if !strings.HasPrefix(name, "config/") {
			continue
		}
		inForce = append(inForce, name)
		want := "Version one"
		if len(inForce) == 2 {
			want = "Version two"
		}
		if !strings.HasPrefix(name, "config/in-force/") || !strings.Contains(f.data, want) {
			t.Errorf("the bundle's %s:\n%s\nwant a snapshot with %q", name, f.data, want)
		}
	}
	if len(inForce) != 2 {
		t.Errorf("the bundle's config files = %v, want the two snapshots in force on 2026-03-02", inForce)
	}
}
