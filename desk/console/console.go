// Package console is deskd's web console: the page, its script and its
// style sheet, embedded in the binary (no CDN, no build step), served at
// "/" and under "/console/" of the API's listener. The page talks to the
// HTTP API alone (desk/httpapi), with the operator's credential.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// Handler serves the console: GET / the page, GET /console/NAME its
// assets. Its responses forbid framing and inline scripts (a strict
// Content-Security-Policy): the page's script is a file of its own.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	assets := http.StripPrefix("/console/", http.FileServerFS(static))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.URL.Path == "/" {
			h.Set("Cache-Control", "no-cache")
			http.ServeFileFS(w, r, static, "index.html")
			return
		}
		assets.ServeHTTP(w, r)
	})
}
