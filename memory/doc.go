// Package memory is a desk's folder on disk: sessions, summaries, notes,
// Memory.md, skills; atomic writes; the state-dir lock.
//
// The folder of desk <desk> is <state_dir>/desks/<desk>/:
//
//	Memory.md                    lasting lessons (operators may edit it at any time)
//	notes/YYYY-MM-DD.md          the day's notes, append-only
//	summaries/YYYY-MM-DD.md      one summary per trading date
//	sessions/<id>.jsonl          one session, append-only JSON lines
//	skills/<name>/SKILL.md       the desk's own skills (front matter name, description)
//	history/memory/<stamp>.md    earlier versions of Memory.md
//	history/summaries/<date>/<stamp>.md   earlier versions of a summary
//	*.json                       small state files (ReadJSON, WriteJSON)
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
