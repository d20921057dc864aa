package httpapi

import "context"

// The Client's requests of the desk page's endpoints that change a desk's
// files (deskfiles.go).

// RestoreMemory asks deskd to make a kept version of desk's Memory.md
// (its id or a unique prefix) the current one; deskd announces it
// (memory.restored).
func (c *Client) RestoreMemory(ctx context.Context, deskName string, req RestoreRequest) (RestoreResponse, error) {
	var out RestoreResponse
	err := c.do(ctx, "POST", deskPath(deskName, "memory/restore"), req, &out)
	return out, err
}

// UndoSkillChange asks deskd to undo one of the curator's changes of
// desk's skills and returns the undo's entry; deskd announces it
// (skills.undone).
func (c *Client) UndoSkillChange(ctx context.Context, deskName string, req UndoRequest) (SkillChange, error) {
	var out SkillChange
	err := c.do(ctx, "POST", deskPath(deskName, "skills/undo"), req, &out)
	return out, err
}
