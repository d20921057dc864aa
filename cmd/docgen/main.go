// Command docgen writes the reference pages of docs/ that the code
// defines, so that they cannot drift from it: docs/EVENTS.md, the
// catalogue of events, from desk/event's catalogue (every type with a
// Topic method, its doc comment and its JSON fields); docs/openapi.json,
// the OpenAPI 3.1 description of the HTTP API (httpapi.OpenAPI); and
// docs/CONFIG-REFERENCE.md, every key of the main file and of a desk
// file, from the doc comments of package config's types.
//
//	go run ./cmd/docgen          # rewrite the pages
//	go run ./cmd/docgen -check   # exit 1 if a page is stale
//
// The tests of this package fail when a committed page is stale, when a
// key the config loader accepts is not documented, and when a relative
// link of README.md or docs/*.md does not resolve.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// page is one generated page: its path under the repository's root and
// the function that renders it from the sources there.
type page struct {
	path   string
	render func(root string) ([]byte, error)
}

// pages are the generated pages.
var pages = []page{
	{path: "docs/EVENTS.md", render: renderEvents},
	{path: "docs/openapi.json", render: renderOpenAPI},
	{path: "docs/CONFIG-REFERENCE.md", render: renderConfigReference},
}

func main() {
	check := flag.Bool("check", false, "report stale pages and exit 1, writing nothing")
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	stale, err := generate(*root, !*check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
	for _, p := range stale {
		if *check {
			fmt.Fprintf(os.Stderr, "docgen: %s is stale: run go run ./cmd/docgen\n", p)
		} else {
			fmt.Printf("wrote %s\n", p)
		}
	}
	if *check && len(stale) > 0 {
		os.Exit(1)
	}
}

// generate renders every page under root and returns the paths of those
// whose file differs from the rendering; with write, it rewrites them.
func generate(root string, write bool) (stale []string, err error) {
	for _, p := range pages {
		want, err := p.render(root)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", p.path, err)
		}
		path := filepath.Join(root, p.path)
		have, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read %s: %w", p.path, err)
		}
		if bytes.Equal(have, want) {
			continue
		}
		stale = append(stale, p.path)
		if write {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				return nil, fmt.Errorf("write %s: %w", p.path, err)
			}
		}
	}
	return stale, nil
}
