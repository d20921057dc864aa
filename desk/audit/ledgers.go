package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// addLedgers adds the curator ledger's entries and the trigger ledger's
// records of trading date date, verbatim, each decoded with its owner's
// type to choose it.
func addLedgers(b *Bundle, folder *memory.Folder, day memory.TradingDay, date memory.Date, sessions map[string]bool) error {
	curPath := folder.Path(curator.LedgerFile)
	if _, err := os.Stat(curPath); errors.Is(err, fs.ErrNotExist) {
		b.note("curator ledger: none (%s does not exist)", curator.LedgerFile)
	} else {
		lines, skipped, err := ledgerLines(curPath, func(line []byte) (bool, error) {
			var e curator.LedgerEntry
			err := json.Unmarshal(line, &e)
			return e.Date == date, err
		})
		if err != nil {
			return err
		}
		b.add("curator/ledger.jsonl", lines, fmt.Sprintf("the curator ledger's entries of the trading date (from %s)", curator.LedgerFile))
		if skipped > 0 {
			b.note("curator ledger: %d %s that did not parse left out", skipped, plural(skipped, "line", "lines"))
		}
	}
	trigPath := folder.Path(triggers.LedgerFile)
	if _, err := os.Stat(trigPath); errors.Is(err, fs.ErrNotExist) {
		b.note("trigger ledger: none (%s does not exist)", triggers.LedgerFile)
	} else {
		lines, skipped, err := ledgerLines(trigPath, func(line []byte) (bool, error) {
			return triggerOfDay(line, day, date, sessions)
		})
		if err != nil {
			return err
		}
		b.add("triggers/"+triggers.LedgerFile, lines, "the trigger ledger's records of the trading date (by time, or by a session of the date)")
		if skipped > 0 {
			b.note("trigger ledger: %d %s that did not parse left out", skipped, plural(skipped, "line", "lines"))
		}
	}
	return nil
}

// ledgerLines returns the lines of the JSON-lines file at path that keep
// accepts, verbatim, and how many lines did not parse. A missing file has
// no lines.
func ledgerLines(path string, keep func(line []byte) (bool, error)) (kept []byte, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read ledger: %w", err)
	}
	defer f.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ok, err := keep(line)
		if err != nil {
			skipped++
			continue
		}
		if ok {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("read ledger %s: %w", path, err)
	}
	return out.Bytes(), skipped, nil
}

// triggerOfDay reports whether a trigger ledger line is of trading date
// date: one of its times falls in it, or it names a session of the date.
func triggerOfDay(line []byte, day memory.TradingDay, date memory.Date, sessions map[string]bool) (bool, error) {
	var r triggers.Record
	if err := json.Unmarshal(line, &r); err != nil {
		return false, err
	}
	if r.Session != "" && sessions[r.Session] {
		return true, nil
	}
	times := []time.Time{r.At, r.QueuedAt, r.StartedAt, r.SentAt}
	if r.Trigger != nil {
		times = append(times, r.Trigger.At)
	}
	for _, t := range times {
		if !t.IsZero() && day.DateOf(t) == date {
			return true, nil
		}
	}
	return false, nil
}
