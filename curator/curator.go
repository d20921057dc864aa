// Package curator reviews a desk's own skills after the day's summary.
//
// Each review first takes stock (Inventory): it lists the desk's skills
// (skills/<name>/SKILL.md) and records what it saw. The Reviewer then asks
// the desk's model for operations (keep, patch, merge, retire), applies at
// most a few, never touching pinned or scheduled skills, archives what it
// retires, and records every change in its ledger, from which any change
// can be undone.
package curator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
)

// InventoryFile is where the curator records what it saw: one JSON line
// per review, every skill with its hash.
const InventoryFile = "curator/inventory.jsonl"

// Entry is one line of the inventory.
type Entry struct {
	At      time.Time    `json:"at"`
	Date    memory.Date  `json:"trading_date"`
	Session string       `json:"session"`
	Action  string       `json:"action"`
	Skills  []SkillStock `json:"skills"`
}

// SkillStock is what the curator saw of one skill.
type SkillStock struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Hash        string `json:"sha256"`
	Size        int64  `json:"size"`
	Pinned      bool   `json:"pinned,omitempty"`
}

// Inventory takes stock of a desk's skills; it changes nothing.
type Inventory struct {
	// Folder is the desk's folder.
	Folder *memory.Folder
	// Now returns deskd's time.
	Now func() time.Time
	// OnTorn, if set, is told of a torn tail found (and set aside) in the
	// inventory file before an append.
	OnTorn func(durable.Torn)
}

// Review lists the desk's skills and records them in the inventory.
func (c *Inventory) Review(ctx context.Context, date memory.Date, session string) (memory.SkillReview, error) {
	skills, err := c.Folder.Skills()
	if err != nil {
		return memory.SkillReview{}, fmt.Errorf("review skills of %s: %w", c.Folder.Desk(), err)
	}
	e := Entry{At: c.Now(), Date: date, Session: session, Action: "inventory", Skills: []SkillStock{}}
	var r memory.SkillReview
	for _, s := range skills {
		e.Skills = append(e.Skills, SkillStock{Name: s.Name, Description: s.Description, Hash: s.Hash, Size: s.Size, Pinned: s.Pinned})
		r.Skills = append(r.Skills, s.Name)
	}
	if err := appendLine(c.Folder, InventoryFile, e, c.OnTorn); err != nil {
		return memory.SkillReview{}, fmt.Errorf("review skills of %s: %w", c.Folder.Desk(), err)
	}
	return r, nil
}

// appendLine appends v as one JSON line to the append-only file rel of
// folder and fsyncs it, through the folder's file layer: a failed write is
// cut back (durable.Log), and a torn tail an earlier crash left is set
// aside first and reported to onTorn (when set).
func appendLine(folder *memory.Folder, rel string, v any, onTorn func(durable.Torn)) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s entry: %w", rel, err)
	}
	path := folder.Path(rel)
	l, sc, err := durable.OpenLog(folder.FS, path, 0o640, json.Valid)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if sc.Torn != nil && onTorn != nil {
		onTorn(*sc.Torn)
	}
	err = l.Append(b, true)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}
