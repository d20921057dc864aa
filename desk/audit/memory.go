package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/diff"
)

// dayFold is a fold of notes into Memory.md recorded in a session of the
// day (the model's answer, recorded by the rollover of that session).
type dayFold struct {
	session string
	at      time.Time // when the model answered
	result  string    // what it answered: the Memory.md it proposed
	end     time.Time // when the rollover was done (the next session started); zero when none has
}

// addMemory adds Memory.md as the day's fold read it and as it wrote it,
// and their diff. The day's fold is the fold recorded in the day's
// sessions (several on a day of manual rollovers: then the first one's
// read and the last one's write). What a fold read and wrote is found,
// in this order, in the rollover journal (rollover.json: fold_before and
// fold_result, for the desk's last rollover), then in history/memory/ (the
// version the fold replaced, kept when it wrote; none when Memory.md did
// not exist and the fold created it). Without a fold, the day's "before"
// is Memory.md at the end of the trading day and its "after" Memory.md when
// the session that followed the day's began.
func addMemory(b *Bundle, folder *memory.Folder, all, day []memory.SessionInfo, folds []dayFold, dayEnd, now time.Time, loc *time.Location) error {
	versions, err := memoryVersions(folder)
	if err != nil {
		return err
	}
	journal, _, err := folder.ReadRollover()
	if err != nil {
		return err
	}
	var beforeText, beforeSrc, afterText, afterSrc, beforeLabel, afterLabel string
	if n := len(folds); n > 0 {
		first, last := folds[0], folds[n-1]
		if first.session == journal.Session && journal.FoldResult != nil && *journal.FoldResult == first.result {
			beforeText, beforeSrc = journal.FoldBefore, memory.RolloverFile+" (fold_before: what the fold read)"
		} else {
			beforeText, beforeSrc, err = foldRead(folder, versions, first)
			if err != nil {
				return err
			}
		}
		afterText, afterSrc, err = foldWrote(folder, versions, last)
		if err != nil {
			return err
		}
		which := "the day's fold of notes"
		if n > 1 {
			which = fmt.Sprintf("the first of the day's %d folds of notes", n)
		}
		beforeLabel = fmt.Sprintf("Memory.md as %s read it (session %s, %s)", which, first.session, first.at.In(loc).Format(time.RFC3339Nano))
		which = "the day's fold"
		if n > 1 {
			which = fmt.Sprintf("the last of the day's %d folds", n)
		}
		afterLabel = fmt.Sprintf("Memory.md as %s left it (session %s, %s)", which, last.session, last.at.In(loc).Format(time.RFC3339Nano))
	} else {
		before, beforeWhy := dayEnd, "at the end of the trading day (no fold of the day's notes is recorded)"
		if now.Before(before) {
			before, beforeWhy = now, "now (the trading day has not ended)"
		}
		after, afterWhy := now, "now (no session has followed the day's sessions yet)"
		if n := len(day); n > 0 {
			if end := rolloverEnd(all, day[n-1].ID); !end.IsZero() {
				after, afterWhy = end, "when the day's rollover had finished (the session that followed started)"
			}
		}
		if after.Before(before) {
			after = before
		}
		if beforeText, beforeSrc, err = memoryAt(folder, versions, before); err != nil {
			return err
		}
		if afterText, afterSrc, err = memoryAt(folder, versions, after); err != nil {
			return err
		}
		beforeLabel = fmt.Sprintf("Memory.md %s, %s", beforeWhy, before.In(loc).Format(time.RFC3339Nano))
		afterLabel = fmt.Sprintf("Memory.md %s, %s", afterWhy, after.In(loc).Format(time.RFC3339Nano))
	}
	b.add("memory/Memory.before.md", []byte(beforeText), beforeLabel+"; from "+beforeSrc)
	b.add("memory/Memory.after.md", []byte(afterText), afterLabel+"; from "+afterSrc)
	delta := diff.Unified("a/Memory.md", "b/Memory.md", beforeText, afterText)
	what := "unified diff of Memory.md, before to after"
	if delta == "" {
		what += " (empty: no change)"
	}
	b.add("memory/Memory.diff", []byte(delta), what)
	b.note("memory before: %s; from %s", beforeLabel, beforeSrc)
	b.note("memory after: %s; from %s", afterLabel, afterSrc)
	return nil
}

// foldReplaced returns the index of the version of Memory.md that fold f
// replaced when it wrote its result: the first kept after the model
// answered and by the time its rollover was done. -1 when there is none
// (the fold wrote nothing, or created Memory.md).
func foldReplaced(versions []memory.MemoryVersion, f dayFold) int {
	for i, v := range versions {
		if v.At.Before(f.at) {
			continue
		}
		if !f.end.IsZero() && v.At.After(f.end) {
			return -1
		}
		return i
	}
	return -1
}

// foldRead returns the Memory.md that fold f read, and where it was found.
func foldRead(folder *memory.Folder, versions []memory.MemoryVersion, f dayFold) (text, source string, err error) {
	if i := foldReplaced(versions, f); i >= 0 {
		text, err := folder.ReadMemoryVersion(versions[i].ID)
		if err != nil {
			return "", "", err
		}
		return text, versionName(versions[i]) + ", the version the fold replaced", nil
	}
	// Nothing was replaced: the fold created Memory.md, or left it as it was.
	text, source, err = memoryAt(folder, versions, f.at)
	if err != nil {
		return "", "", err
	}
	if text == f.result {
		return "", "no Memory.md: there was none, and the fold created it (no earlier version was replaced)", nil
	}
	return text, source + " (the fold did not write Memory.md: refused, failed, or an operator's edit was kept)", nil
}

// foldWrote returns the Memory.md that fold f left, and where it was found.
func foldWrote(folder *memory.Folder, versions []memory.MemoryVersion, f dayFold) (text, source string, err error) {
	i := foldReplaced(versions, f)
	if i < 0 {
		text, source, err := memoryAt(folder, versions, f.at)
		if err != nil {
			return "", "", err
		}
		if text == f.result {
			return text, source + ", the Memory.md the fold created", nil
		}
		return text, source + " (the fold did not write Memory.md: refused, failed, or an operator's edit was kept)", nil
	}
	if i+1 < len(versions) {
		text, err = folder.ReadMemoryVersion(versions[i+1].ID)
		source = versionName(versions[i+1]) + ", what the fold wrote, kept when it was replaced in turn"
	} else {
		text, err = folder.ReadMemory()
		source = memory.MemoryFile + ", the current file, which the fold wrote"
	}
	if err != nil {
		return "", "", err
	}
	if text != f.result {
		source += " (it differs from the fold's answer recorded in the session: the version after the fold is shown)"
	}
	return text, source, nil
}

// versionName names a kept version of Memory.md in the manifest.
func versionName(v memory.MemoryVersion) string {
	return path.Join(memory.HistoryDir, "memory", v.ID+".md") + " (replaced at " + v.At.Format(time.RFC3339Nano) + ")"
}

// memoryVersions lists the kept versions of Memory.md whose names say
// when they were replaced, oldest replacement first.
func memoryVersions(folder *memory.Folder) ([]memory.MemoryVersion, error) {
	all, err := folder.MemoryHistory()
	if err != nil {
		return nil, err
	}
	var vs []memory.MemoryVersion
	for _, v := range all {
		if !v.At.IsZero() {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool {
		if !vs[i].At.Equal(vs[j].At) {
			return vs[i].At.Before(vs[j].At)
		}
		return vs[i].Seq < vs[j].Seq
	})
	return vs, nil
}

// memoryAt returns the text Memory.md had at instant t, and where it was
// found: the first version replaced at or after t, or the current file.
func memoryAt(folder *memory.Folder, versions []memory.MemoryVersion, t time.Time) (text, source string, err error) {
	for _, v := range versions {
		if v.At.Before(t) {
			continue
		}
		text, err := folder.ReadMemoryVersion(v.ID)
		if err != nil {
			return "", "", err
		}
		return text, path.Join(memory.HistoryDir, "memory", v.ID+".md") + ", the version replaced at " + v.At.Format(time.RFC3339Nano), nil
	}
	text, err = folder.ReadMemory()
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(folder.Path(memory.MemoryFile)); errors.Is(err, fs.ErrNotExist) {
		return "", "no Memory.md (the file does not exist)", nil
	}
	return text, memory.MemoryFile + ", the current file", nil
}
