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
func secureHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", apiCSP)
	h.Set("Referrer-Policy", "no-referrer")
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
