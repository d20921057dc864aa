package httpapi_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestAPIUnknownDeskNamesTheDesksToTheOperatorOnly: a 404 for a desk the
// daemon does not run lists its desks to the operator, and to a feed's
// token (which may only post market triggers) names none.
func TestAPIUnknownDeskNamesTheDesksToTheOperatorOnly(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "op", FeedToken: "feed"})
	code, _, body := h.Call(http.MethodPost, "/v1/desks/nope/triggers", `{"text": "x"}`, "Authorization", "Bearer feed")
	if code != http.StatusNotFound || strings.Contains(body, "main") || !strings.Contains(body, `unknown desk \"nope\"`) {
		t.Errorf("a feed's POST to an unknown desk = %d %s, want 404 naming no desk of the daemon", code, body)
	}
	code, _, body = h.Call(http.MethodGet, "/v1/desks/nope", "", "Authorization", "Bearer op")
	if code != http.StatusNotFound || !strings.Contains(body, "(desks: main)") {
		t.Errorf("the operator's GET of an unknown desk = %d %s, want 404 listing desk main", code, body)
	}
}

// TestDeskFilesErrorsNameNoPath: a failure to read a desk's files (its
// Memory.md is a FIFO) answers 500 without the file's path, which only
// deskd's log holds.
func TestDeskFilesErrorsNameNoPath(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	if err := syscall.Mkfifo(filepath.Join(h.Dir, "Memory.md"), 0o640); err != nil {
		t.Fatal(err)
	}
	code, _, body := h.Call(http.MethodGet, "/v1/desks/main/memory", "")
	if code != http.StatusInternalServerError || strings.Contains(body, h.Dir) || strings.Contains(body, "Memory.md") {
		t.Errorf("GET memory with Memory.md a FIFO = %d %s, want 500 without the file's path", code, body)
	}
}
