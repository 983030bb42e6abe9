package keepalived

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Pos is where a word was read: a file as it was opened and a line, from 1.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Word is one word of a statement, its quotes removed and escapes decoded.
type Word struct {
	Text string
	Pos  Pos
}

// Node is one statement: a keyword, the words after it on its line, and
// the block that follows it, if any.
type Node struct {
	Pos      Pos
	Key      string
	Args     []Word
	HasBlock bool
	Block    []*Node
}

// Words returns the keyword and its arguments as one list.
func (n *Node) Words() []Word {
	return append([]Word{{Text: n.Key, Pos: n.Pos}}, n.Args...)
}

// Config is a parsed keepalived.conf, its include files read in place.
type Config struct {
	Nodes []*Node
	// Files lists the files read, the main file first.
	Files []string
	// Skipped lists the lines the parser did not take: conditional lines
	// it cannot decide, multi-line parameter definitions, includes that
	// matched nothing.
	Skipped []Item
}

// ParseOptions adjust how a file is read.
type ParseOptions struct {
	// ConfigID decides the conditional lines (@ID, @^ID) as keepalived
	// -i ID would; "" reports them as skipped.
	ConfigID string
}

// SyntaxError is a file that cannot be read as keepalived.conf.
type SyntaxError struct {
	Pos Pos
	Msg string
}

func (e *SyntaxError) Error() string { return e.Pos.String() + ": " + e.Msg }

// maxIncludeDepth bounds nested includes: a file that includes itself would
// otherwise never end.
const maxIncludeDepth = 16

// includeKeywords are include and its variants, which differ only in the
// checks keepalived makes on the files.
var includeKeywords = map[string]bool{"include": true, "includer": true, "includem": true, "includew": true, "includeb": true, "includea": true}

// varDef is a parameter definition, $NAME=VALUE with no space before '='.
var varDef = regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// ParseFile reads the keepalived.conf at path and the files it includes.
func ParseFile(path string, opts ParseOptions) (*Config, error) {
	p := &parser{opts: opts, vars: map[string]string{}, cfg: &Config{}}
	p.stack = []*[]*Node{&p.cfg.Nodes}
	if err := p.file(path, Pos{}, 0); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

// parser holds the state that spans files: an included file's statements go
// into the block that was open where it was included.
type parser struct {
	opts  ParseOptions
	vars  map[string]string
	cfg   *Config
	stack []*[]*Node // the open blocks, innermost last
	opens []Pos      // where each open block (but the top level) was opened
}

func (p *parser) file(path string, from Pos, depth int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if from.File == "" {
			return err
		}
		return &SyntaxError{from, fmt.Sprintf("include: %v", err)}
	}
	p.cfg.Files = append(p.cfg.Files, path)
	base := len(p.stack)
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		at := Pos{path, i + 1}
		line := lines[i]
		joined := false
		for strings.HasSuffix(strings.TrimRight(line, " \t"), `\`) && i+1 < len(lines) {
			line = strings.TrimSuffix(strings.TrimRight(line, " \t"), `\`) + " " + lines[i+1]
			i++
			joined = true
		}
		if err := p.line(line, at, joined, depth); err != nil {
			return err
		}
	}
	if len(p.stack) > base {
		open := p.opens[len(p.opens)-1]
		last := len(lines)
		if last > 1 && lines[last-1] == "" {
			last-- // the file's final newline ends its last line
		}
		return &SyntaxError{Pos{path, last}, fmt.Sprintf("the block opened at %s is not closed (a '}' is missing)", open)}
	}
	return nil
}

// line reads one logical line (continuations joined).
func (p *parser) line(line string, at Pos, joined bool, depth int) error {
	line = strings.TrimLeft(line, " \t")
	if strings.HasPrefix(line, "@") {
		id, rest := cutWord(line[1:])
		not := strings.HasPrefix(id, "^")
		id = strings.TrimPrefix(id, "^")
		switch {
		case p.opts.ConfigID == "":
			p.skip(at, "conditional line @%s: which hosts it applies to depends on keepalived's config-id; give --config-id to choose, or resolve it by hand", id)
			return nil
		case (id == p.opts.ConfigID) == not:
			return nil
		}
		line = strings.TrimLeft(rest, " \t")
	}
	line = stripComment(line)
	if strings.TrimSpace(line) == "" {
		return nil
	}
	if m := varDef.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
		if joined {
			p.skip(at, "multi-line parameter definition $%s is not supported: expand it by hand", m[1])
			return nil
		}
		p.vars[m[1]] = strings.TrimSpace(m[2])
		return nil
	}
	line = p.substitute(line, filepath.Dir(at.File))

	if kw, rest := cutWord(strings.TrimSpace(line)); includeKeywords[kw] {
		return p.include(kw, strings.TrimSpace(rest), at, depth)
	}

	words, braces, err := tokenize(line, at)
	if err != nil {
		return err
	}
	var cur *Node // the statement this line is building
	for i, w := range words {
		target := p.stack[len(p.stack)-1]
		switch braces[i] {
		case '{':
			if cur == nil {
				// A '{' on a line of its own opens the block of the
				// statement before.
				if n := len(*target); n > 0 && !(*target)[n-1].HasBlock {
					cur = (*target)[n-1]
				} else {
					return &SyntaxError{at, "'{' without a keyword before it"}
				}
			}
			cur.HasBlock = true
			p.stack = append(p.stack, &cur.Block)
			p.opens = append(p.opens, cur.Pos)
			cur = nil
		case '}':
			if len(p.stack) == 1 {
				return &SyntaxError{at, "'}' closes no block"}
			}
			p.stack, p.opens = p.stack[:len(p.stack)-1], p.opens[:len(p.opens)-1]
			cur = nil
		default:
			if cur == nil {
				cur = &Node{Pos: at, Key: w.Text}
				*target = append(*target, cur)
			} else {
				cur.Args = append(cur.Args, w)
			}
		}
	}
	return nil
}

func (p *parser) skip(at Pos, format string, args ...any) {
	p.cfg.Skipped = append(p.cfg.Skipped, Item{Pos: at, Kind: Unconverted, Message: fmt.Sprintf(format, args...)})
}

// include reads the files a pattern names, relative to the directory of the
// including file as keepalived does.
func (p *parser) include(kw, pattern string, at Pos, depth int) error {
	if depth >= maxIncludeDepth {
		return &SyntaxError{at, fmt.Sprintf("includes nested more than %d deep (does a file include itself?)", maxIncludeDepth)}
	}
	if words, _, err := tokenize(pattern, at); err == nil && len(words) == 1 {
		pattern = words[0].Text
	}
	if pattern == "" {
		return &SyntaxError{at, kw + " names no file"}
	}
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(at.File), pattern)
	}
	var files []string
	for _, pat := range expandBraces(pattern) {
		m, err := filepath.Glob(pat)
		if err != nil {
			return &SyntaxError{at, fmt.Sprintf("%s %q: %v", kw, pat, err)}
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		p.cfg.Skipped = append(p.cfg.Skipped, Item{Pos: at, Kind: Warning, Message: fmt.Sprintf("%s %s matches no file", kw, pattern)})
	}
	for _, f := range files {
		if err := p.file(f, at, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// expandBraces expands csh-style {a,b} alternatives, which keepalived's
// glob(3) accepts and Go's filepath.Glob does not.
func expandBraces(s string) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	level, parts, start := 0, []string{}, open+1
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			level++
		case '}':
			level--
			if level == 0 {
				parts = append(parts, s[start:i])
				var out []string
				for _, alt := range parts {
					for _, rest := range expandBraces(s[i+1:]) {
						out = append(out, expandBraces(s[:open] + alt)[0]+rest)
					}
				}
				return out
			}
		case ',':
			if level == 1 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return []string{s} // unbalanced: taken literally
}

// cutWord splits off the first word of s, up to a space or tab.
func cutWord(s string) (word, rest string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// stripComment cuts a line at the first '#' or '!' outside quotes.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' || c == '!':
			return line[:i]
		}
	}
	return line
}

// varRef is a use of a parameter: ${NAME}, or $NAME before whitespace or the
// end of the line.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)(?:$|[ \t])`)

// substitute replaces the parameters defined so far; an undefined one stays,
// as keepalived leaves it. Replacement is recursive, to a bound.
func (p *parser) substitute(line, dir string) string {
	for range 10 {
		changed := false
		line = varRef.ReplaceAllStringFunc(line, func(m string) string {
			sub := varRef.FindStringSubmatch(m)
			name, tail := sub[1], ""
			if name == "" {
				name, tail = sub[2], m[len(sub[2])+1:]
			}
			v, ok := p.vars[name]
			if name == "_PWD" {
				v, ok = dir, true
			}
			if !ok {
				return m
			}
			changed = true
			return v + tail
		})
		if !changed {
			break
		}
	}
	return line
}

// tokenize splits a line into words. Quotes (" or ') group words with their
// whitespace, are removed and may decode escapes; an unquoted '{' or '}' is a
// word of its own, marked in braces.
func tokenize(line string, at Pos) (words []Word, braces []byte, err error) {
	var (
		cur    strings.Builder
		inWord bool
	)
	end := func() {
		if inWord {
			words = append(words, Word{Text: cur.String(), Pos: at})
			braces = append(braces, 0)
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch c {
		case ' ', '\t', '\v', '\f', '\r':
			end()
		case '{', '}':
			end()
			words = append(words, Word{Text: string(c), Pos: at})
			braces = append(braces, c)
		case '"', '\'':
			inWord = true
			j := i + 1
			for ; j < len(line) && line[j] != c; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					n, s := unescape(line[j+1:])
					cur.WriteString(s)
					j += n
					continue
				}
				cur.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, nil, &SyntaxError{at, fmt.Sprintf("the quote %c opened here is not closed on this line", c)}
			}
			i = j
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	end()
	return words, braces, nil
}

// unescape decodes the escape after a backslash in a quoted string and says
// how many bytes it used: \a \b \E \f \n \r \t \v, \nnn (octal), \xXX, \cC,
// and \C for any other C.
func unescape(s string) (int, string) {
	simple := map[byte]string{'a': "\a", 'b': "\b", 'E': "\x1b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v"}
	c := s[0]
	if r, ok := simple[c]; ok {
		return 1, r
	}
	switch {
	case c >= '0' && c <= '7':
		n := 1
		for n < 3 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(s[:n], 8, 16)
		return n, string([]byte{byte(v)})
	case c == 'x':
		n := 1
		for n < 3 && n < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[n]) >= 0 {
			n++
		}
		if n == 1 {
			return 1, "x"
		}
		v, _ := strconv.ParseUint(s[1:n], 16, 8)
		return n, string([]byte{byte(v)})
	case c == 'c' && len(s) > 1:
		return 2, string([]byte{s[1] & 0x1f})
	}
	return 1, string(c)
}
