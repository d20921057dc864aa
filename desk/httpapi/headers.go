package httpapi

import (
	"fmt"
	"net/http"
)

// The Content-Security-Policy of the API's answers: nothing it serves is
// a page, so a browser that renders one anyway (a JSON error echoing a
// path, an export) loads nothing, runs nothing, is framed nowhere, and
// has an origin of its own (sandbox), never the console's.
const (
	// apiCSP is every answer's but the console's (which sets its own).
	apiCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"
	// attachmentCSP is an attachment's: an HTML export keeps its inline
	// style sheet and nothing else.
	attachmentCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"
)

// secureHeaders sets, on every answer of the API, the headers that keep
// a browser from sniffing it into another type (nosniff), framing it
// (X-Frame-Options, frame-ancestors) or running anything in it (apiCSP).
// The console's handler replaces the policy with its page's.
//
// The four values share one array (one allocation a request, not four),
// each a slice of capacity one, so that an Add to one header makes a new
// array instead of writing into its neighbour's value. The keys are in
// canonical form, as Set would make them.
func secureHeaders(h http.Header) {
	v := []string{"nosniff", "DENY", apiCSP, "no-referrer"}
	h["X-Content-Type-Options"] = v[0:1:1]
	h["X-Frame-Options"] = v[1:2:2]
	h["Content-Security-Policy"] = v[2:3:3]
	h["Referrer-Policy"] = v[3:4:4]
}

// writeAttachment answers data as a file to save, never to show: as an
// attachment named name, of contentType, that a browser may not sniff,
// and under a sandbox (attachmentCSP), should one show it anyway.
func writeAttachment(w http.ResponseWriter, contentType, name string, data []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", attachmentCSP)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}
