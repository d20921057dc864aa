package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// linkPattern is a Markdown link or image: [text](target), the target
// without spaces (deskd's pages give no link titles).
var linkPattern = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// guidePages are the pages whose relative links brokenLinks checks, as
// globs under the repository's root.
var guidePages = []string{"README.md", "docs/*.md"}

// brokenLinks returns, for every page of guidePages under root, each
// relative link whose file does not exist or whose #anchor names no
// heading of the Markdown page it points at, as "page:line: link: why".
// Links in fenced code blocks are not links; absolute URLs are not
// checked.
func brokenLinks(root string) ([]string, error) {
	var pagesFound []string
	for _, g := range guidePages {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return nil, fmt.Errorf("glob %s: %w", g, err)
		}
		pagesFound = append(pagesFound, m...)
	}
	if len(pagesFound) == 0 {
		return nil, fmt.Errorf("no page of %v under %s", guidePages, root)
	}
	anchors := map[string]map[string]bool{} // page path -> its anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, nil
	}
	var bad []string
	for _, page := range pagesFound {
		b, err := os.ReadFile(page)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", page, err)
		}
		rel, _ := filepath.Rel(root, page)
		for i, line := range outsideCode(string(b)) {
			for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(dest); err != nil {
						bad = append(bad, fmt.Sprintf("%s:%d: %s: no such file", rel, i+1, target))
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					return nil, fmt.Errorf("read %s: %w", dest, err)
				}
				if !a[frag] {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: no heading of %s has the anchor #%s", rel, i+1, target, filepath.Base(dest), frag))
				}
			}
		}
	}
	return bad, nil
}

// outsideCode returns the page's lines, those inside fenced code blocks
// blanked, so that line numbers stay the page's.
func outsideCode(text string) []string {
	lines := strings.Split(text, "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			lines[i] = ""
			continue
		}
		if fence {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives the page's headings:
// lower case, spaces as hyphens, every other character but letters,
// digits, '-' and '_' dropped, and a repeated anchor suffixed -1, -2, ...
func headingAnchors(text string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	for _, l := range outsideCode(text) {
		h := strings.TrimLeft(l, "#")
		if len(h) == len(l) || len(l)-len(h) > 6 || !strings.HasPrefix(h, " ") {
			continue
		}
		id := githubAnchor(strings.TrimSpace(h))
		if n := seen[id]; n > 0 {
			a[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			a[id] = true
		}
		seen[id]++
	}
	return a
}

// githubAnchor is GitHub's anchor of one heading's text.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
