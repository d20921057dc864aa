// Package memory is a desk's folder on disk: sessions, summaries, notes,
// Memory.md, skills; atomic writes; the state-dir lock.
//
// The folder of desk <desk> is <state_dir>/desks/<desk>/:
//
//	Memory.md                    lasting lessons (operators may edit it at any time)
//	notes/YYYY-MM-DD.md          the day's notes, append-only
//	summaries/YYYY-MM-DD.md      one summary per trading date
//	sessions/<id>.jsonl          one session, append-only JSON lines
//	sessions/<id>.title          an operator's title of a session (SessionTitle)
//	skills/<name>/SKILL.md       the desk's own skills (front matter name, description)
//	history/memory/<stamp>.md    earlier versions of Memory.md (MemoryHistory)
//	history/summaries/<date>/<stamp>.md   earlier versions of a summary (SummaryVersions)
//	state.json                   the router's current session (StateFile, ReadState)
//	rollover.json                the keeper's rollover journal (RolloverFile, ReadRollover)
//	folded-notes.json            how much of each notes file is folded (ReadFolded, WriteFolded)
//	*.json                       other small state files (ReadJSON, WriteJSON)
//
// Each file of the folder has one owner that defines its format and
// exports its reader: this package for the files above (a writer that
// keeps more in state.json or rollover.json embeds State or Rollover);
// triggers for triggers.jsonl, curator for curator/, desk for pause.json.
// Everyone else calls the owner's reader.
//
// Nothing this package replaces is lost: an older Memory.md or summary is
// kept under history/ before it is overwritten, notes are never rewritten,
// and the damaged tail of a session file is saved next to it before the
// file is truncated. Every whole-file write is atomic (temp file in the same
// directory, fsync, rename, fsync of the directory).
//
// The package reads no clock of its own: a Folder gets a now function from
// its caller. One deskd owns a state dir at a time (LockStateDir).
package memory
