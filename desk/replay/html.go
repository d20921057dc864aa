package replay

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"strings"
	"time"
)

// pageHTML is report.html: one self-contained page (inline CSS, no
// script, nothing fetched: its Content-Security-Policy says so), every
// value escaped by html/template, so that markup in a reply shows as
// text.
//
//go:embed page.html
var pageHTML string

// pageData is what page.html shows.
type pageData struct {
	*Report
	Route     string
	Generated string
	Rows      []pageRow
}

// pageRow is one trigger on the page.
type pageRow struct {
	Row
	Index      int
	Time       string
	Orig, Cand pageSide
}

// pageSide is one side of a trigger on the page.
type pageSide struct {
	Class, Title string
	Side         Side
}

// HTML renders rep as report.html.
func HTML(rep *Report) ([]byte, error) {
	d := pageData{Report: rep, Route: strings.Join(rep.Candidate.Route, " → "), Generated: rep.Generated.UTC().Format(time.RFC3339)}
	for i, row := range rep.Triggers {
		pr := pageRow{Row: row, Index: i + 1, Time: row.At.UTC().Format(time.RFC3339),
			Orig: pageSide{Class: "original", Title: "Original", Side: row.Original}}
		if row.Candidate != nil {
			pr.Cand = pageSide{Class: "candidate", Title: "Candidate", Side: *row.Candidate}
		}
		d.Rows = append(d.Rows, pr)
	}
	tmpl, err := template.New("replay").Parse(pageHTML)
	if err != nil {
		return nil, fmt.Errorf("render replay report: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render replay report of %s %s: %w", rep.Desk, rep.Date, err)
	}
	return b.Bytes(), nil
}
