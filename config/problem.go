package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Problem is one thing wrong with a config file.
type Problem struct {
	File    string
	Line    int // 0 when the problem concerns the whole file
	Message string
}

// String formats the problem as FILE:LINE: message, the form editors and
// CI logs turn into links.
func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Error lists every problem found in a config file, sorted by line. Parse
// and Load return it as *Error; use errors.As to get at the problems.
type Error struct {
	Problems []Problem
}

// Error returns one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// checker collects problems while a document is checked, and knows how to
// place and name them.
type checker struct {
	file        string
	pos         *positions
	labels      []string   // how each [[instance]] is named in messages
	trackLabels [][]string // how each [[instance.track]] is, per instance
	peerLabels  []string   // how each [[bgp.peer]] is
	problems    []Problem
}

// add records a problem about the key or table at path p. The message is
// prefixed with the instance (and tracker) it concerns, if any.
func (c *checker) add(p, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if owner, _, _ := c.owner(p); owner != "" {
		msg = owner + ": " + msg
	}
	c.problems = append(c.problems, Problem{File: c.file, Line: c.line(p), Message: msg})
}

func (c *checker) line(p string) int {
	if c.pos == nil {
		return 0
	}
	return c.pos.line(p)
}

// owner splits a path into the part a reader knows the problem by (global,
// instance "k8s-api", instance "k8s-api": track "apiserver") and the rest,
// for example garp.repeat; depth is the number of names of the path the
// owner stands for.
func (c *checker) owner(p string) (owner, rest string, depth int) {
	if i, r, ok := cutElem(p, "instance"); ok {
		owner, rest, depth = c.label(i), strings.TrimPrefix(r, "."), 1
		if j, r, ok := cutElem(rest, "track"); ok {
			owner, rest, depth = owner+": "+c.trackLabel(i, j), strings.TrimPrefix(r, "."), 2
		}
		return owner, rest, depth
	}
	if r, ok := strings.CutPrefix(p, "global."); ok {
		return "global", r, 1
	}
	if r, ok := strings.CutPrefix(p, "bgp."); ok {
		if j, r, ok := cutElem(r, "peer"); ok {
			label := fmt.Sprintf("peer #%d", j+1)
			if j < len(c.peerLabels) {
				label = c.peerLabels[j]
			}
			return "bgp: " + label, strings.TrimPrefix(r, "."), 2
		}
		return "bgp", r, 1
	}
	return "", p, 0
}

// cutElem splits name[i]rest off p.
func cutElem(p, name string) (i int, rest string, ok bool) {
	r, ok := strings.CutPrefix(p, name+"[")
	if !ok {
		return 0, "", false
	}
	end := strings.IndexByte(r, ']')
	if end <= 0 {
		return 0, "", false
	}
	i, err := strconv.Atoi(r[:end])
	if err != nil || i < 0 {
		return 0, "", false
	}
	return i, r[end+1:], true
}

// label names the i-th instance for messages.
func (c *checker) label(i int) string {
	if i < len(c.labels) {
		return c.labels[i]
	}
	return fmt.Sprintf("instance #%d", i+1)
}

// trackLabel names the j-th tracker of the i-th instance for messages.
func (c *checker) trackLabel(i, j int) string {
	if i < len(c.trackLabels) && j < len(c.trackLabels[i]) {
		return c.trackLabels[i][j]
	}
	return fmt.Sprintf("track #%d", j+1)
}

// rel names the key at path p as the reader sees it inside its owner.
func (c *checker) rel(p string) string {
	_, rest, _ := c.owner(p)
	return rest
}

// err returns the problems found, sorted by line, or nil.
func (c *checker) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	slices.SortStableFunc(c.problems, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	return &Error{Problems: c.problems}
}
