package config

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// A path names one place in a document: table and key names, each array
// element numbered from 0, rendered like instance[1].garp.repeat. Names are
// quoted as toml.Key.String quotes them, so a path never becomes ambiguous.

// keyPath appends a key or table name to a path.
func keyPath(parent, name string) string {
	k := toml.Key{name}.String()
	if parent == "" {
		return k
	}
	return parent + "." + k
}

// elemPath appends an array element number to a path.
func elemPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// parentPath drops the last name or element number of a path; it returns ""
// for a top-level name.
func parentPath(p string) string {
	cut, quoted := 0, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case quoted && c == '\\':
			i++ // the escaped byte cannot end the quote
		case c == '"':
			quoted = !quoted
		case !quoted && (c == '.' || c == '['):
			cut = i
		}
	}
	return p[:cut]
}

// An entry is one key or table header, in document order.
type entry struct {
	key  toml.Key // as MetaData.Keys reports it: names only
	path string   // with element numbers
}

// positions knows the line of every table, array-of-tables element and key of
// a document. BurntSushi/toml keeps one position per key name, so all
// [[instance]] blocks would share the last one's lines; and it keeps none at
// all for keys that are absent. This index is built by a small scanner of our
// own, checked against the decoder's own list of keys before it is trusted.
type positions struct {
	lines   map[string]int // path → line of its first definition
	folded  map[string]int // the same with paths in lower case; built on first use
	entries []entry        // every key and table header, as MetaData.Keys lists them
}

// line returns the line of path or, when path is not in the document (a
// missing key), of the nearest table that contains it; 0 when nothing is
// known. The decoder matches names case-insensitively when no name matches
// exactly, so a path is looked up that way too.
func (p *positions) line(path string) int {
	for {
		if l, ok := p.lines[path]; ok {
			return l
		}
		if p.folded == nil {
			p.folded = make(map[string]int, len(p.lines))
			for q, l := range p.lines {
				if f := strings.ToLower(q); p.folded[f] == 0 || l < p.folded[f] {
					p.folded[f] = l
				}
			}
		}
		if l, ok := p.folded[strings.ToLower(path)]; ok {
			return l
		}
		if path == "" {
			return 0
		}
		path = parentPath(path)
	}
}

// agrees reports whether the scanner saw exactly the keys the decoder saw, in
// the same order. If it did not, its lines cannot be trusted.
func (p *positions) agrees(keys []toml.Key) bool {
	if len(keys) != len(p.entries) {
		return false
	}
	for i, k := range keys {
		if !slices.Equal(k, p.entries[i].key) {
			return false
		}
	}
	return true
}

// positionsFromKeys is the fallback index when the scanner cannot be trusted:
// it keeps the keys for reporting unknown ones but knows no lines.
func positionsFromKeys(keys []toml.Key) *positions {
	p := &positions{lines: map[string]int{}}
	for _, k := range keys {
		path := ""
		for _, name := range k {
			path = keyPath(path, name)
		}
		p.entries = append(p.entries, entry{key: k, path: path})
	}
	return p
}

var errScan = errors.New("unexpected input while indexing positions")

// scanPositions indexes a document that BurntSushi/toml has already accepted,
// so it only needs to find where things are, not to validate them. It
// follows the decoder's rules for what MetaData.Keys lists: table headers,
// and every key at any depth of inline tables, including inline tables in
// arrays (listed under the array's key, without element numbers).
func scanPositions(src string) (*positions, error) {
	src = stripBOM(src)
	s := &scanner{
		src:    src,
		arrays: map[string]int{},
		pos:    &positions{lines: map[string]int{}},
	}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			s.newlines = append(s.newlines, i)
		}
	}
	if err := s.document(); err != nil {
		return nil, err
	}
	return s.pos, nil
}

// stripBOM drops a byte-order mark as the decoder does before it counts
// offsets; a mark holds no newline, so lines are not affected.
func stripBOM(src string) string {
	for _, bom := range []string{"\xef\xbb\xbf", "\xff\xfe", "\xfe\xff"} {
		if s, ok := strings.CutPrefix(src, bom); ok {
			return s
		}
	}
	return src
}

type scanner struct {
	src      string
	i        int
	newlines []int          // offsets of '\n', to turn offsets into lines
	arrays   map[string]int // path of an array of tables → elements so far
	pos      *positions
}

func (s *scanner) lineAt(off int) int {
	l, _ := slices.BinarySearch(s.newlines, off)
	return l + 1
}

func (s *scanner) peek() byte {
	if s.i < len(s.src) {
		return s.src[s.i]
	}
	return 0
}

func (s *scanner) mark(path string, off int) {
	if _, ok := s.pos.lines[path]; !ok {
		s.pos.lines[path] = s.lineAt(off)
	}
}

func (s *scanner) record(path string, key toml.Key, off int) {
	s.mark(path, off)
	s.pos.entries = append(s.pos.entries, entry{key: key, path: path})
}

// skipSpace skips blanks within a line.
func (s *scanner) skipSpace() {
	for s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
}

// skipBlank skips blanks, comments and line ends.
func (s *scanner) skipBlank() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '#':
			if n := strings.IndexByte(s.src[s.i:], '\n'); n >= 0 {
				s.i += n
			} else {
				s.i = len(s.src)
			}
		default:
			return
		}
	}
}

func (s *scanner) document() error {
	var (
		table    string   // path of the current table
		tableKey toml.Key // its names
	)
	for {
		s.skipBlank()
		if s.i >= len(s.src) {
			return nil
		}
		if s.peek() != '[' {
			if err := s.keyValue(table, tableKey); err != nil {
				return err
			}
			continue
		}
		start := s.i
		array := strings.HasPrefix(s.src[s.i:], "[[")
		closing := "]"
		s.i++
		if array {
			closing = "]]"
			s.i++
		}
		parts, err := s.key()
		if err != nil {
			return err
		}
		s.skipSpace()
		if !strings.HasPrefix(s.src[s.i:], closing) {
			return errScan
		}
		s.i += len(closing)
		table = s.resolve(parts, array, start)
		tableKey = parts
		s.record(table, tableKey, start)
	}
}

// resolve turns a table header's names into a path: each array of tables it
// passes through means that array's latest element, and a [[header]] starts
// a new element.
func (s *scanner) resolve(parts []string, array bool, off int) string {
	p := ""
	for i, name := range parts {
		p = keyPath(p, name)
		if array && i == len(parts)-1 {
			n := s.arrays[p]
			s.arrays[p] = n + 1
			s.mark(p, off) // the array as a whole: its first element
			return elemPath(p, n)
		}
		if n, ok := s.arrays[p]; ok {
			p = elemPath(p, n-1)
		}
	}
	return p
}

// keyValue scans "a.b = value" in the table at path table.
func (s *scanner) keyValue(table string, tableKey toml.Key) error {
	start := s.i
	parts, err := s.key()
	if err != nil {
		return err
	}
	s.skipSpace()
	if s.peek() != '=' {
		return errScan
	}
	s.i++
	s.skipSpace()
	p := table
	for _, name := range parts {
		p = keyPath(p, name)
	}
	k := append(slices.Clip(tableKey), parts...)
	s.record(p, k, start)
	return s.value(p, k)
}

// key scans a possibly dotted key and returns its names.
func (s *scanner) key() ([]string, error) {
	var parts []string
	for {
		s.skipSpace()
		var name string
		switch c := s.peek(); c {
		case '"':
			start := s.i
			if err := s.basicString(); err != nil {
				return nil, err
			}
			// Let the decoder itself undo the escapes, so names match its own.
			var m map[string]string
			if _, err := toml.Decode("k = "+s.src[start:s.i], &m); err != nil {
				return nil, errScan
			}
			name = m["k"]
		case '\'':
			end := strings.IndexByte(s.src[s.i+1:], '\'')
			if end < 0 {
				return nil, errScan
			}
			name = s.src[s.i+1 : s.i+1+end]
			s.i += end + 2
		default:
			start := s.i
			for s.i < len(s.src) && isBareKeyChar(s.src[s.i]) {
				s.i++
			}
			if s.i == start {
				return nil, errScan
			}
			name = s.src[start:s.i]
		}
		parts = append(parts, name)
		s.skipSpace()
		if s.peek() != '.' {
			return parts, nil
		}
		s.i++
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value scans one value of the key at path p with names k.
func (s *scanner) value(p string, k toml.Key) error {
	switch s.peek() {
	case '"':
		if strings.HasPrefix(s.src[s.i:], `"""`) {
			return s.multiline(`"`, true)
		}
		return s.basicString()
	case '\'':
		if strings.HasPrefix(s.src[s.i:], `'''`) {
			return s.multiline(`'`, false)
		}
		end := strings.IndexByte(s.src[s.i+1:], '\'')
		if end < 0 {
			return errScan
		}
		s.i += end + 2
		return nil
	case '[':
		return s.array(p, k)
	case '{':
		return s.inlineTable(p, k)
	}
	// A number, boolean or date-time; a local date-time may hold a space.
	start := s.i
	for s.i < len(s.src) && !strings.ContainsRune(",]}#\r\n", rune(s.src[s.i])) {
		s.i++
	}
	if s.i == start {
		return errScan
	}
	return nil
}

// basicString scans "...", honouring backslash escapes.
func (s *scanner) basicString() error {
	for s.i++; s.i < len(s.src); s.i++ {
		switch s.src[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return nil
		case '\n':
			return errScan
		}
	}
	return errScan
}

// multiline scans a multi-line string, basic or literal, opened by three
// quotes. The closing run may be up to five quotes long: up to two belong to
// the content.
func (s *scanner) multiline(quote string, escapes bool) error {
	q := quote[0]
	for s.i += 3; s.i < len(s.src); s.i++ {
		switch c := s.src[s.i]; {
		case escapes && c == '\\':
			s.i++
		case c == q:
			n := 0
			for s.i+n < len(s.src) && s.src[s.i+n] == q {
				n++
			}
			if n >= 3 {
				s.i += n
				return nil
			}
			s.i += n - 1
		}
	}
	return errScan
}

func (s *scanner) array(p string, k toml.Key) error {
	s.i++ // [
	for n := 0; ; n++ {
		s.skipBlank()
		switch s.peek() {
		case ']':
			s.i++
			return nil
		case 0:
			return errScan
		}
		ep := elemPath(p, n)
		s.mark(ep, s.i)
		if err := s.value(ep, k); err != nil {
			return err
		}
		s.skipBlank()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errScan
		}
	}
}

// inlineTable scans {a = 1, b.c = 2}; since TOML 1.1 it may span lines.
func (s *scanner) inlineTable(p string, k toml.Key) error {
	s.i++ // {
	for {
		s.skipBlank()
		switch s.peek() {
		case '}':
			s.i++
			return nil
		case 0:
			return errScan
		}
		start := s.i
		parts, err := s.key()
		if err != nil {
			return err
		}
		s.skipSpace()
		if s.peek() != '=' {
			return errScan
		}
		s.i++
		s.skipSpace()
		kp := p
		for _, name := range parts {
			kp = keyPath(kp, name)
		}
		kk := append(slices.Clip(k), parts...)
		s.record(kp, kk, start)
		if err := s.value(kp, kk); err != nil {
			return err
		}
		s.skipBlank()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errScan
		}
	}
}
