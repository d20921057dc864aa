package memory

import "strings"

// An operator names a session or a kept version by its id or a prefix of
// it; ByID and Candidates are that rule, for both.

// MaxCandidates bounds the ids an ambiguous name's error lists.
const MaxCandidates = 5

// ByID returns what name names among items: the item whose id is name
// alone, else every item whose id begins with name, in order. One item is
// the answer; none or several are an unknown or an ambiguous name.
func ByID[T any](items []T, name string, id func(T) string) []T {
	var prefixed []T
	for _, it := range items {
		switch s := id(it); {
		case s == name:
			return []T{it}
		case strings.HasPrefix(s, name):
			prefixed = append(prefixed, it)
		}
	}
	return prefixed
}

// Candidates returns the ids of the first MaxCandidates of matches (an
// ambiguous name's, from ByID), and how many more there are.
func Candidates[T any](matches []T, id func(T) string) (ids []string, more int) {
	for i, it := range matches {
		if i == MaxCandidates {
			return ids, len(matches) - i
		}
		ids = append(ids, id(it))
	}
	return ids, 0
}
