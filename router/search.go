package router

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/deskd/deskd/memory"
)

// Hit is one result of SearchMemory.
type Hit struct {
	// Source is the file, relative to the desk folder.
	Source string
	// Line is the 1-based line number.
	Line  int
	Text  string
	Score float64
}

// SearchMemory ranks the lines of Memory.md, the notes and the summaries
// against query with BM25 and returns the best limit (default 8). Lines of
// Memory.md weigh a little more: they are the curated lessons.
func SearchMemory(folder *memory.Folder, query string, limit int) ([]Hit, error) {
	if limit <= 0 {
		limit = 8
	}
	terms := tokens(query)
	if len(terms) == 0 {
		return nil, nil
	}
	type doc struct {
		hit   Hit
		words []string
		boost float64
	}
	var docs []doc
	add := func(source, text string, boost float64) {
		for i, line := range strings.Split(text, "\n") {
			if w := tokens(line); len(w) > 0 {
				docs = append(docs, doc{Hit{Source: source, Line: i + 1, Text: strings.TrimSpace(line)}, w, boost})
			}
		}
	}
	mem, err := folder.ReadMemory()
	if err != nil {
		return nil, err
	}
	add(memory.MemoryFile, mem, 1.2)
	dates, err := folder.NoteDates()
	if err != nil {
		return nil, err
	}
	for _, d := range dates {
		text, _, err := folder.ReadNotes(d)
		if err != nil {
			return nil, err
		}
		add("notes/"+d.String()+".md", text, 1)
	}
	sdates, err := folder.SummaryDates()
	if err != nil {
		return nil, err
	}
	for _, d := range sdates {
		s, _, err := folder.ReadSummary(d)
		if err != nil {
			return nil, err
		}
		add("summaries/"+d.String()+".md", s.Text, 1)
	}
	if len(docs) == 0 {
		return nil, nil
	}
	df := map[string]int{}
	total := 0
	for _, d := range docs {
		total += len(d.words)
		seen := map[string]bool{}
		for _, w := range d.words {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	const k1, b = 1.2, 0.75
	var hits []Hit
	for _, d := range docs {
		tf := map[string]int{}
		for _, w := range d.words {
			tf[w]++
		}
		score := 0.0
		for _, t := range terms {
			if tf[t] == 0 {
				continue
			}
			idf := math.Log(1 + (float64(len(docs))-float64(df[t])+0.5)/(float64(df[t])+0.5))
			f := float64(tf[t])
			score += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(len(d.words))/avg))
		}
		if score > 0 {
			h := d.hit
			h.Score = score * d.boost
			hits = append(hits, h)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
