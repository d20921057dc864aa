package termview

// The status of the desks of a cluster (config cluster): each desk's
// owner, and the desks this host stands by for.

import (
	"fmt"
	"io"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
)

// clustered reports whether the desks are a cluster's: one has an owner
// or stands by. Without a cluster the status table has no OWNER column.
func clustered(desks []desk.Status) bool {
	for _, s := range desks {
		if s.Owner != nil || s.State == desk.StateStandby {
			return true
		}
	}
	return false
}

// ownerColumn is the OWNER cell of a desk, tab first, when cluster:
// "a (epoch 7, since 2026-12-02T10:40:00Z)", or "none" while no host
// owns it; "" without a cluster.
func ownerColumn(cluster bool, s desk.Status) string {
	if !cluster {
		return ""
	}
	if s.Owner == nil {
		return "\tnone"
	}
	return fmt.Sprintf("\t%s (epoch %d, since %s)", termsafe.Line(s.Owner.Host), s.Owner.Epoch, s.Owner.Since.UTC().Format(time.RFC3339))
}

// standbyNotes says which desks this host stands by for, and where each
// runs: their triggers are sent to the owner (deskd trigger follows).
func standbyNotes(w io.Writer, desks []desk.Status) {
	var n int
	for _, s := range desks {
		if s.State == desk.StateStandby {
			n++
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\nthis host stands by for %s (it takes one over when its owner's lease ends, or the owner releases it):\n", termsafe.Plural(n, "desk"))
	for _, s := range desks {
		switch {
		case s.State != desk.StateStandby:
		case s.Owner == nil:
			fmt.Fprintf(w, "  %s  no host owns it now: the hosts contend for it\n", termsafe.Line(s.Name))
		case s.Owner.Addr == "":
			fmt.Fprintf(w, "  %s  runs on host %s, which serves no TCP address\n", termsafe.Line(s.Name), termsafe.Line(s.Owner.Host))
		default:
			fmt.Fprintf(w, "  %s  runs on host %s at %s\n", termsafe.Line(s.Name), termsafe.Line(s.Owner.Host), termsafe.Line(s.Owner.Addr))
		}
	}
}
