package memory_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/deskd/deskd/memory"
)

// markOf is the mark of text as a whole.
func markOf(text string) memory.NotesMark {
	sum := sha256.Sum256([]byte(text))
	return memory.NotesMark{Offset: int64(len(text)), Sum: hex.EncodeToString(sum[:])}
}

func TestReadNotesFrom(t *testing.T) {
	d := date("2025-01-03")
	const first = "bought NIFTY calls\nsold half\n"
	tests := []struct {
		name          string
		file          string // the notes file when read
		mark          memory.NotesMark
		wantText      string
		wantFrom      memory.NotesMark
		wantRewritten bool
	}{
		{"from the start", first, memory.NotesMark{}, first, memory.NotesMark{}, false},
		{"nothing new", first, markOf(first), "", markOf(first), false},
		{"two notes appended", first + "hedged\nflat by close\n", markOf(first), "hedged\nflat by close\n", markOf(first), false},
		{"appended after a hand edit without newline", "typed by hand" + "\nnext\n", markOf("typed by hand"), "\nnext\n", markOf("typed by hand"), false},
		{"shrank below the mark", "bought NIFTY calls\n", markOf(first), "bought NIFTY calls\n", memory.NotesMark{}, true},
		{"edited before the mark", "bought BANKNIFTY calls\nsold half\nhedged\n", markOf(first), "bought BANKNIFTY calls\nsold half\nhedged\n", memory.NotesMark{}, true},
		{"a mark without its sum", first + "hedged\n", memory.NotesMark{Offset: int64(len(first))}, first + "hedged\n", memory.NotesMark{}, true},
		{"a negative mark", first, memory.NotesMark{Offset: -1}, first, memory.NotesMark{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFolder(t)
			writeFile(t, f.Path("notes/2025-01-03.md"), tt.file)
			got, ok, err := f.ReadNotesFrom(d, tt.mark)
			if err != nil || !ok {
				t.Fatalf("ReadNotesFrom = %+v, %v, %v", got, ok, err)
			}
			want := memory.NotesTail{Text: tt.wantText, From: tt.wantFrom, To: markOf(tt.file), Rewritten: tt.wantRewritten}
			if got != want {
				t.Errorf("ReadNotesFrom(%+v) =\n%+v\nwant\n%+v", tt.mark, got, want)
			}
		})
	}
}

func TestReadNotesFromFollowsAppends(t *testing.T) {
	f := newFolder(t)
	d := date("2025-01-03")
	if _, ok, err := f.ReadNotesFrom(d, memory.NotesMark{}); ok || err != nil {
		t.Fatalf("ReadNotesFrom of a date without notes: ok %v, err %v; want false, nil", ok, err)
	}
	var mark memory.NotesMark
	for _, batch := range [][]string{{"one"}, {"two", "three"}, {}, {"four"}} {
		for _, line := range batch {
			if err := f.AppendNote(d, line); err != nil {
				t.Fatal(err)
			}
		}
		tail, ok, err := f.ReadNotesFrom(d, mark)
		if err != nil || !ok {
			t.Fatalf("ReadNotesFrom: ok %v, err %v", ok, err)
		}
		want := ""
		for _, line := range batch {
			want += line + "\n"
		}
		if tail.Text != want || tail.Rewritten || tail.From != mark {
			t.Errorf("after appending %q: tail %+v, want text %q from %+v", batch, tail, want, mark)
		}
		mark = tail.To
	}
	whole, _, _ := f.ReadNotes(d)
	if mark != markOf(whole) {
		t.Errorf("last mark = %+v, want the whole file's %+v", mark, markOf(whole))
	}
	if _, _, err := f.ReadNotesFrom(memory.Date{Year: 2025, Month: 2, Day: 30}, memory.NotesMark{}); err == nil {
		t.Error("ReadNotesFrom of 2025-02-30: want an error")
	}
	if err := os.Remove(f.Path("notes/2025-01-03.md")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.ReadNotesFrom(d, mark); ok || err != nil {
		t.Errorf("ReadNotesFrom of a removed file: ok %v, err %v; want false, nil", ok, err)
	}
}
