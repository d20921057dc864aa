package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/memory"
)

// addConfig adds the config in force on the trading date: every snapshot
// deskd kept of its effective config (Config.Snapshots) that was in
// force during the day, the one in force when it began first. With none
// (a deskd that kept no snapshots then), it adds the config files as they
// are now, and says so.
func addConfig(b *Bundle, cfg Config, date memory.Date, dayStart, dayEnd time.Time, loc *time.Location) error {
	var inForce []Snapshot
	for _, s := range cfg.Snapshots {
		switch {
		case s.Taken.Before(dayStart):
			inForce = append(inForce[:0], s) // the one in force when the day began
		case s.Taken.Before(dayEnd):
			inForce = append(inForce, s)
		}
	}
	if len(inForce) > 0 {
		for i, s := range inForce {
			data, err := os.ReadFile(s.Path)
			if err != nil {
				return fmt.Errorf("read config snapshot %s: %w", s.Path, err)
			}
			until := "the end of the day or later"
			if i+1 < len(inForce) {
				until = inForce[i+1].Taken.In(loc).Format(time.RFC3339Nano)
			}
			b.add("config/in-force/"+s.Name, data, fmt.Sprintf("the effective config deskd ran on from %s to %s (kept in %s/%s when it came into force; no secrets)",
				s.Taken.In(loc).Format(time.RFC3339Nano), until, cfg.SnapshotDir, s.Name))
		}
		b.note("config: the config in force on %s: %d %s of deskd's effective config, from %s/ (taken at each start and reload that changed it)",
			date, len(inForce), plural(len(inForce), "snapshot", "snapshots"), cfg.SnapshotDir)
		if cfg.Desk == "" {
			b.note("config: the desk is not in the config at export time")
		}
		return nil
	}
	return addCurrentConfig(b, cfg, date)
}

// addCurrentConfig adds the config files as they are now, and their hash.
func addCurrentConfig(b *Bundle, cfg Config, date memory.Date) error {
	type cfgFile struct{ src, name, what string }
	files := []cfgFile{{cfg.Main, "config/" + filepath.Base(cfg.Main), "the main config file, as it is at export time"}}
	if cfg.Desk != "" {
		files = append(files, cfgFile{cfg.Desk, "config/desks.d/" + filepath.Base(cfg.Desk), "the desk's config file, as it is at export time"})
		if cfg.Instructions != "" {
			files = append(files, cfgFile{cfg.Instructions, "config/instructions/" + filepath.Base(cfg.Instructions), "the desk's instructions file, as it is at export time"})
		}
	} else {
		b.note("config: the desk is not in the config at export time; only the main file is included")
	}
	var sums strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return fmt.Errorf("read config %s: %w", f.src, err)
		}
		b.add(f.name, data, f.what+" ("+f.src+")")
		fmt.Fprintf(&sums, "%s  %s\n", sha256Hex(data), f.name)
	}
	b.note("config: the files as they are at export time, not a snapshot of the config in force on %s: deskd kept no snapshot of its config in force that day (%s/ has none of it); compare the hashes below with your config history", date, cfg.SnapshotDir)
	b.note("config sha256: %s (the sha256 of the lines \"<sha256>  <name>\" of the config files, in this order:)", sha256Hex([]byte(sums.String())))
	for _, line := range strings.Split(strings.TrimRight(sums.String(), "\n"), "\n") {
		b.note("  %s", line)
	}
	return nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ConfigOf says where the audit of desk finds the config in force: the
// snapshots deskd kept in config.HistoryDir, and the config files now.
func ConfigOf(cfg *config.Config, desk string) (Config, error) {
	snaps, err := config.Snapshots(filepath.Join(cfg.StateDir, config.HistoryDir))
	if err != nil {
		return Config{}, err
	}
	ac := Config{SnapshotDir: config.HistoryDir, Main: cfg.Path}
	for _, s := range snaps {
		ac.Snapshots = append(ac.Snapshots, Snapshot{Name: s.Name, Path: s.Path, Taken: s.Taken})
	}
	if dc, ok := cfg.Desks[desk]; ok {
		ac.Desk, ac.Instructions = dc.Path, dc.InstructionsFile
	}
	return ac, nil
}
