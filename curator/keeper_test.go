package curator_test

import (
	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/keeper"
)

// The curator does not import the keeper (the import rules forbid it);
// these show that both of its reviews are still what a keeper takes.
var (
	_ keeper.Curator = (*curator.Reviewer)(nil)
	_ keeper.Curator = (*curator.Inventory)(nil)
)
