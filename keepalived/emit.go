package keepalived

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// table is one TOML table of the output, its keys in the order written.
type table struct {
	header  string   // "[global]", "[[instance]]", "[instance.garp]"
	comment []string // above the header
	keys    []kv
}

// kv is one key, its value already TOML text, with the comment lines above
// it; off writes it commented out, a suggestion.
type kv struct {
	comment []string
	key     string
	val     string
	off     bool
}

// set writes key, replacing its earlier value in place.
func (t *table) set(key, val string, comment ...string) {
	for i := range t.keys {
		if t.keys[i].key == key {
			t.keys[i].val, t.keys[i].off = val, false
			t.keys[i].comment = append(t.keys[i].comment, comment...)
			return
		}
	}
	t.keys = append(t.keys, kv{comment: comment, key: key, val: val})
}

// suggest writes key commented out.
func (t *table) suggest(key, val string, comment ...string) {
	t.keys = append(t.keys, kv{comment: comment, key: key, val: val, off: true})
}

func (t *table) get(key string) (string, bool) {
	for _, k := range t.keys {
		if k.key == key && !k.off {
			return k.val, true
		}
	}
	return "", false
}

// del removes key and returns its comments.
func (t *table) del(key string) []string {
	for i, k := range t.keys {
		if k.key == key {
			t.keys = append(t.keys[:i], t.keys[i+1:]...)
			return k.comment
		}
	}
	return nil
}

// comment adds lines above the next key written.
func (t *table) commentNext(lines ...string) {
	t.keys = append(t.keys, kv{comment: lines})
}

func (t *table) empty() bool {
	for _, k := range t.keys {
		if k.key != "" {
			return false
		}
	}
	return true
}

func (t *table) write(b *bytes.Buffer) {
	for _, l := range t.comment {
		writeComment(b, "", l)
	}
	fmt.Fprintln(b, t.header)
	for _, k := range t.keys {
		for _, l := range k.comment {
			writeComment(b, "", l)
		}
		switch {
		case k.key == "":
		case k.off:
			fmt.Fprintf(b, "# %s = %s\n", k.key, k.val)
		default:
			fmt.Fprintf(b, "%s = %s\n", k.key, k.val)
		}
	}
}

// writeComment writes a comment, wrapped at about 78 columns.
func writeComment(b *bytes.Buffer, indent, text string) {
	width := 78 - len(indent) - 2
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			fmt.Fprintf(b, "%s# %s\n", indent, line)
			line = "  " + w
			continue
		}
		if line == "" {
			line = w
		} else {
			line += " " + w
		}
	}
	if line == "" {
		fmt.Fprintf(b, "%s#\n", indent)
		return
	}
	fmt.Fprintf(b, "%s# %s\n", indent, line)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlStrings(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func tomlInt(n int) string { return strconv.Itoa(n) }

// render writes the output: a header listing what was not converted, then
// [global] and the instances. It returns how many instances it wrote.
func (c *converter) render(cfg *Config) ([]byte, int) {
	var b bytes.Buffer
	main := "keepalived.conf"
	if len(cfg.Files) > 0 {
		main = cfg.Files[0]
	}
	writeComment(&b, "", "vipd.toml converted from "+main+" by vipd import-keepalived. Each table names the keepalived block it comes from (FILE:LINE); NOTE and WARNING comments say where vipd behaves differently. Review it, then run vipd check on it.")
	var un []Item
	for _, it := range c.items {
		if it.Kind == Unconverted {
			un = append(un, it)
		}
	}
	if len(un) > 0 {
		b.WriteString("#\n")
		writeComment(&b, "", "NOT CONVERTED: keepalived did these and this file does not.")
		for _, it := range un {
			writeComment(&b, "", "- "+it.Pos.String()+": "+it.Message)
		}
	}
	if c.global != nil && !c.global.empty() {
		b.WriteString("\n")
		c.global.write(&b)
	}
	n := 0
	for _, in := range c.insts {
		if in.dropped {
			continue
		}
		n++
		b.WriteString("\n")
		in.main.write(&b)
		for _, t := range in.tracks {
			b.WriteString("\n")
			t.write(&b)
		}
		if in.garp != nil && !in.garp.empty() {
			b.WriteString("\n")
			in.garp.write(&b)
		}
		if in.notify != nil && !in.notify.empty() {
			b.WriteString("\n")
			in.notify.write(&b)
		}
	}
	return b.Bytes(), n
}
