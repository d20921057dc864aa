// Package diff makes the unified diff of two texts, as diff -u prints it:
// what `deskd memory --diff` shows of Memory.md against a kept version,
// and what the audit bundle holds of Memory.md before and after a day's
// fold. It keeps a longest common subsequence of lines, so a change reads
// as a person would write it.
package diff

import (
	"fmt"
	"strconv"
	"strings"
)

// contextLines is how many unchanged lines a hunk shows around a change.
const contextLines = 3

// maxCells bounds the LCS table; past it, the changed middle of the
// two texts is shown as removed and added whole.
const maxCells = 16 << 20

// edit is one line of a diff: ' ' kept, '-' removed, '+' added. Lines
// keep their '\n', so that a missing last newline is a difference.
type edit struct {
	kind byte
	line string
}

// Unified returns the unified diff (as diff -u prints it, with three
// lines of context, the files named aName and bName) that turns a into b,
// "" when they are equal.
func Unified(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	ops := lineOps(splitLines(a), splitLines(b))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	// aAt[k], bAt[k]: the lines of a and b before ops[k].
	aAt, bAt := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for k, op := range ops {
		aAt[k+1], bAt[k+1] = aAt[k], bAt[k]
		if op.kind != '+' {
			aAt[k+1]++
		}
		if op.kind != '-' {
			bAt[k+1]++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start, end := max(0, k-contextLines), k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*contextLines {
				end = min(end+contextLines, run)
				break
			}
			end = run
		}
		aLen, bLen := aAt[end]-aAt[start], bAt[end]-bAt[start]
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aAt[start], aLen), hunkRange(bAt[start], bLen))
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return out.String()
}

// hunkRange formats a hunk's start and length as diff -u does.
func hunkRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	if n == 1 {
		return strconv.Itoa(before + 1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// splitLines splits s into lines, each keeping its '\n'.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineOps returns the ops that turn a into b, keeping a longest common
// subsequence of lines.
func lineOps(a, b []string) []edit {
	var head, tail []edit
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		head = append(head, edit{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		tail = append(tail, edit{' ', a[len(a)-1]})
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	ops := head
	n, m := len(a), len(b)
	if n*m > maxCells {
		for _, l := range a {
			ops = append(ops, edit{'-', l})
		}
		for _, l := range b {
			ops = append(ops, edit{'+', l})
		}
	} else {
		// lcs[i*(m+1)+j] is the LCS length of a[i:] and b[j:].
		lcs := make([]int32, (n+1)*(m+1))
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i*(m+1)+j] = lcs[(i+1)*(m+1)+j+1] + 1
				} else {
					lcs[i*(m+1)+j] = max(lcs[(i+1)*(m+1)+j], lcs[i*(m+1)+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n && j < m {
			switch {
			case a[i] == b[j]:
				ops = append(ops, edit{' ', a[i]})
				i, j = i+1, j+1
			case lcs[(i+1)*(m+1)+j] >= lcs[i*(m+1)+j+1]:
				ops = append(ops, edit{'-', a[i]})
				i++
			default:
				ops = append(ops, edit{'+', b[j]})
				j++
			}
		}
		for ; i < n; i++ {
			ops = append(ops, edit{'-', a[i]})
		}
		for ; j < m; j++ {
			ops = append(ops, edit{'+', b[j]})
		}
	}
	for k := len(tail) - 1; k >= 0; k-- {
		ops = append(ops, tail[k])
	}
	return ops
}
