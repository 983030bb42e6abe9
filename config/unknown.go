package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// unknownKeys reports the keys the typed decode did not use. The decoder
// also fills a field from a key that matches it only case-insensitively, so
// "Priority" would pass silently (and beside "priority", which one wins
// depends on map order); such keys are reported too.
func (c *checker) unknownKeys(undecoded []toml.Key) {
	unused := make(map[string]bool, len(undecoded))
	for _, k := range undecoded {
		unused[k.String()] = true
	}
	reported := map[string]bool{}
	for _, e := range c.pos.entries {
		at, t, caseOnly := walkSchema(e.key)
		if at < 0 || !unused[e.key.String()] && !caseOnly {
			// Known, or inside a value whose wrong type is reported anyway.
			continue
		}
		if ancestorIn(e.path, reported) {
			continue // the table it is in was reported
		}
		reported[e.path] = true

		// Name the key as the reader sees it inside its owner.
		_, _, depth := c.owner(e.path)
		skip := min(depth, at)
		msg := fmt.Sprintf("unknown key %q", e.key[skip:].String())
		if s, ok := suggest(e.key[at], t); ok {
			fixed := slices.Clone(e.key)
			fixed[at] = s
			msg += fmt.Sprintf(" (did you mean %q?)", fixed[skip:].String())
		}
		c.add(e.path, "%s", msg)
	}
}

// walkSchema follows key through the raw types. It returns the index of the
// first name the schema does not have, or -1 when all are known or the key
// runs into a leaf's value; t is the table where that name was looked up;
// caseOnly says the name matches a known one except for case.
func walkSchema(key toml.Key) (at int, t reflect.Type, caseOnly bool) {
	t = reflect.TypeFor[rawConfig]()
	for i, name := range key {
		f, exact, ok := lookup(t, name)
		if !ok || !exact {
			return i, t, ok
		}
		tt, isTable := f.table()
		if !isTable {
			return -1, nil, false
		}
		t = tt
	}
	return -1, nil, false
}

func ancestorIn(p string, set map[string]bool) bool {
	for p != "" {
		p = parentPath(p)
		if set[p] {
			return true
		}
	}
	return false
}

// suggest finds the known key in table t that name was probably meant to be:
// the same but for case, one or two typos away, or the only key it begins.
func suggest(name string, t reflect.Type) (string, bool) {
	limit := 2
	if len(name) <= 4 {
		limit = 1
	}
	best, bestDist := "", limit+1
	var prefixed []string
	for f := range schemaFields(t) {
		if strings.EqualFold(f.name, name) {
			return f.name, true
		}
		if d := editDistance(strings.ToLower(name), f.name); d < bestDist {
			best, bestDist = f.name, d
		}
		if len(name) >= 4 && strings.HasPrefix(f.name, strings.ToLower(name)) {
			prefixed = append(prefixed, f.name)
		}
	}
	if best != "" {
		return best, true
	}
	if len(prefixed) == 1 {
		return prefixed[0], true
	}
	return "", false
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each count one.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
