package desk_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory"
)

// TestRouterSettingsCarriesTheCompactionBounds: a desk's compact_share
// and compact_at_tokens reach its router's settings.
func TestRouterSettingsCarriesTheCompactionBounds(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{
		"main":  daemonDesk("offline") + "compact_share: 0.5\ncompact_at_tokens: 20000\n",
		"plain": daemonDesk("offline"),
	})
	cfg, err := config.Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC))
	for _, tt := range []struct {
		desk  string
		share float64
		at    int
	}{{"main", 0.5, 20000}, {"plain", 0.8, 0}} {
		folder, err := memory.OpenFolder(filepath.Join(t.TempDir(), tt.desk), tt.desk, clk.Now)
		if err != nil {
			t.Fatal(err)
		}
		s, err := desk.RouterSettings(cfg, cfg.Desks[tt.desk], folder, clk)
		if err != nil {
			t.Fatal(err)
		}
		if s.CompactShare != tt.share || s.CompactAtTokens != tt.at {
			t.Errorf("desk %s: CompactShare %g, CompactAtTokens %d; want %g, %d", tt.desk, s.CompactShare, s.CompactAtTokens, tt.share, tt.at)
		}
	}
}
