package main

// A cluster's 421s on the terminal: the client commands say on stderr
// when a host that stands by for a desk sent a read on to its owner, and
// deskd trigger which host took the trigger.

import (
	"fmt"
	"io"
	"sync"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
)

// hopNotes is a Client.OnHop that tells w of each owner a command's
// requests were sent on to, once per owner.
func hopNotes(w io.Writer) func(httpapi.Hop) {
	var mu sync.Mutex
	told := map[string]bool{}
	return func(h httpapi.Hop) {
		mu.Lock()
		defer mu.Unlock()
		if told[h.To] {
			return
		}
		told[h.To] = true
		fmt.Fprintf(w, "deskd: the host at %s does not run the desk; its owner is host %s: sent to %s\n",
			termsafe.Line(h.From), termsafe.Line(h.Owner), termsafe.Line(h.To))
	}
}

// ownerNote wraps c's OnHop to learn the last owner its requests were
// sent on to, and returns what deskd trigger calls once a host took the
// trigger: it says on stderr which host that was, when it was not the one
// asked.
func ownerNote(c *httpapi.Client, stderr io.Writer) func(id string) {
	var mu sync.Mutex
	var last httpapi.Hop
	note := c.OnHop
	c.OnHop = func(h httpapi.Hop) {
		mu.Lock()
		last = h
		mu.Unlock()
		if note != nil {
			note(h)
		}
	}
	return func(id string) {
		mu.Lock()
		defer mu.Unlock()
		if last.To != "" {
			fmt.Fprintf(stderr, "deskd: trigger %s taken by host %s at %s, the desk's owner\n",
				termsafe.Line(id), termsafe.Line(last.Owner), termsafe.Line(last.To))
		}
	}
}
