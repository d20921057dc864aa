package desk

// The files a desk reads as it starts, and what a damaged one does. One
// desk's damaged file never stops the other desks (nor deskd): the desk's
// start either mends it or fails, and a desk that fails to start is a
// failed desk of the set (Set.Fail), listed with the file and the reason.
//
// The files, in the order of the start:
//
//   - triggers.jsonl, the trigger ledger: a torn tail is set aside
//     (triggers.jsonl.torn-<offset>) and cut off, bad lines before the last
//     good record skipped (file.torn); an empty file is an empty ledger.
//   - triggers.jsonl.idx, the ledger's persisted index: a cache, used only
//     when it describes the file; otherwise the ledger is read whole.
//   - state.json, the router's mark into the current session's file: it
//     can be rebuilt from the session files, and is (mendStartFiles): the
//     damaged file is set aside as state.json.damaged-<UTC time>, and
//     file.rebuilt announced. The current session is the one begun last;
//     its exchanges and spend are counted from its file (the spend of
//     earlier sessions of the same trading date is lost with the file).
//   - sessions/<current>.jsonl: a torn tail is cut off and announced
//     (session.torn); a file that is missing or not the one the mark was
//     taken of is read whole.
//   - folded-notes.json, how much of the notes is in Memory.md, and
//     rollover.json, the journal of the last rollover: neither can be
//     rebuilt (without them a fold would take in notes twice, a rollover cut
//     short would summarise twice), so a damaged one fails the desk, left in
//     place for an operator to mend (or move away, which forgets it), then
//     reload (or restart) deskd.
//   - pause.json: a damaged one keeps the desk paused (a kill switch fails
//     safe), saying so in its status, until it is resumed.
//   - tool-limits.json (the counts of limited MCP tools' calls): a damaged
//     one refuses the limited calls until it is mended; the desk runs.
//
// Memory.md, the skills, the notes and the summaries are read at a turn,
// not at the start: one that cannot be read is left out of the prompt and
// listed (memory.unreadable).

import (
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
)

// mendStartFiles rebuilds the desk's files that its start reads and that
// can be rebuilt, when they are damaged: state.json, from the session
// files. A state file that cannot be read at all (its permissions) is left
// for the start to report.
func (f *fleet) mendStartFiles(folder *memory.Folder) error {
	var raw json.RawMessage
	_, err := folder.ReadJSON(memory.StateFile, &raw)
	var damaged *memory.DamagedError
	if !errors.As(err, &damaged) {
		return nil
	}
	aside, err := folder.SetAside(memory.StateFile)
	if err != nil {
		return err
	}
	st, _, err := folder.RebuildState()
	if err != nil {
		return err
	}
	event.Publish(f.bus, event.FileRebuilt{Header: event.Header{At: f.clk.Now(), Desk: folder.Desk()},
		Path: damaged.Path, SetAside: aside, Reason: damaged.Err.Error(), Session: st.Session})
	return nil
}

// failedFile returns the file a desk's start failure names: a damaged
// file, or the path of a file system error; "" when it names none.
func failedFile(err error) string {
	var damaged *memory.DamagedError
	if errors.As(err, &damaged) {
		return damaged.Path
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}
