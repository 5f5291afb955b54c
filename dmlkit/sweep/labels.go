package sweep

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// LabelMap is the spec's labels map: the words figures show for config keys, metrics, series and
// config values, in the order written (that order also fixes the paper's slots, see
// [PaperSlots]). A value's text is looked up as "key=value" (e.g. "sampler.batch_size=64"), then
// as the value alone (e.g. "smoothap+tcm", "[16,32,64]"); a key's or metric's text by its name.
// Anything not in the map is shown as written.
type LabelMap struct {
	Keys []string          // in the order of the spec
	Text map[string]string // key → text
}

// UnmarshalYAML reads a YAML mapping of strings, keeping its order.
func (m *LabelMap) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: labels: want a map of name → text", n.Line)
	}
	m.Text = map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: labels: want name: text", k.Line)
		}
		if _, dup := m.Text[k.Value]; dup {
			return fmt.Errorf("line %d: labels: %q given twice", k.Line, k.Value)
		}
		m.Keys = append(m.Keys, k.Value)
		m.Text[k.Value] = v.Value
	}
	return nil
}

// Check reports an empty text.
func (m LabelMap) Check() error {
	for _, k := range m.Keys {
		if strings.TrimSpace(m.Text[k]) == "" {
			return fmt.Errorf("field \"labels.%s\": empty text", k)
		}
	}
	return nil
}

// Name is the text of a config key, metric or series name ([LabelMap.Key]).
func (m LabelMap) Name(key string) string { return m.Key(key) }

// Lookup is the text of the value v of config key key that the spec's map gives ("key=value",
// then the value alone), else the shared vocabulary ([CommonWord], in the same order); false when
// neither names it.
func (m LabelMap) Lookup(key string, v any) (string, bool) {
	fv := FormatValue(v)
	for _, words := range []func(string) (string, bool){m.text, CommonWord} {
		if t, ok := words(key + "=" + fv); ok {
			return t, true
		}
		if t, ok := words(fv); ok {
			return t, true
		}
	}
	return "", false
}

// text is the spec's map's entry for name.
func (m LabelMap) text(name string) (string, bool) {
	t, ok := m.Text[name]
	return t, ok
}

// Of is the text of the value v of a config key ([LabelMap.Value]).
func (m LabelMap) Of(key string, v any) string { return m.Value(key, v) }

// GroupName is the text of a group: its values' texts, joined by ", " ("" without keys).
// A group of several keys is first looked up whole, as "k1=v1, k2=v2" (one method that takes two
// keys to tell apart, e.g. "loss.name=contextual, loss.set.lambda=1"); parts for keys the group's
// records do not set ("—") are left out.
func (m LabelMap) GroupName(g *Group) string {
	if len(g.Keys) > 1 {
		whole := make([]string, len(g.Keys))
		for i, k := range g.Keys {
			whole[i] = k + "=" + FormatValue(g.Values[i])
		}
		if t, ok := m.Text[strings.Join(whole, ", ")]; ok {
			return t
		}
	}
	var parts []string
	for i, k := range g.Keys {
		if t := m.Of(k, g.Values[i]); t != "—" || len(g.Keys) == 1 {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, ", ")
}

// rank is the position in the map of a group's first value (len(Keys) when absent).
func (m LabelMap) rank(key string, v any) int {
	fv := FormatValue(v)
	for i, k := range m.Keys {
		if k == fv || k == key+"="+fv {
			return i
		}
	}
	return len(m.Keys)
}

// SortGroups orders groups as their first values appear in the map (others after them, in
// GroupBy's order), so that legends list the methods in the spec's order.
func (m LabelMap) SortGroups(gs []*Group) []*Group {
	if len(m.Keys) == 0 {
		return gs
	}
	sort.SliceStable(gs, func(a, b int) bool {
		if len(gs[a].Keys) == 0 {
			return false
		}
		return m.rank(gs[a].Keys[0], gs[a].Values[0]) < m.rank(gs[b].Keys[0], gs[b].Values[0])
	})
	return gs
}

// Human labels. Every key and value that reaches a table, a legend, an axis or a caption goes
// through the spec's labels map ([LabelMap]); what the map does not name is written in words by
// the fallbacks below (an unset key as "—", booleans as yes/no, learning-rate groups as their
// multiplier, a loss expression term by term through the map), never as the raw config. What is
// still raw after that — a key with dots or underscores, JSON, null, a run hash, a config
// expression — is found by [RawTexts], which the layout and table tests apply to every generated
// text: add the missing entry to the spec's labels map.

// Key is the text of a config key, metric or series name: the map's entry, else the shared
// vocabulary's ([CommonWord]: data.name is "dataset"), else the name in words ([humanKey]).
func (m LabelMap) Key(key string) string {
	if t, ok := m.Text[key]; ok {
		return t
	}
	if t, ok := CommonWord(key); ok {
		return t
	}
	return humanKey(key)
}

// Value is the text of the value v of config key key: the map's entry "key=value" or "value", else
// [humanValue] (an unset key is "—", a boolean yes/no, a loss expression its terms' texts); a run
// group (key name) named after the paper's figure or table is written as it ("fig8" → "Fig. 8").
func (m LabelMap) Value(key string, v any) string {
	if t, ok := m.Lookup(key, v); ok {
		return t
	}
	if s, ok := v.(string); ok && key == "name" {
		if g := runGroup.FindStringSubmatch(s); g != nil {
			return runGroupWords(g)
		}
	}
	return m.humanValue(v)
}

// runGroup matches a run group's name (config key name) that names the paper's figure or table
// ("fig8", "table4-qir", "fig6-authors").
var runGroup = regexp.MustCompile(`^(fig|table)(\d+[a-z]?)(?:-(.+))?$`)

// runGroupWords writes a run group's name in words: "fig8" → "Fig. 8", "table4-qir" → "Table 4
// (qir)".
func runGroupWords(g []string) string {
	s := "Fig. " + g[2]
	if g[1] == "table" {
		s = "Table " + g[2]
	}
	if g[3] != "" {
		s += " (" + strings.ReplaceAll(g[3], "-", " ") + ")"
	}
	return s
}

// metricPrefixes are the words of the prefixes of series and metric names.
var metricPrefixes = []struct{ prefix, text string }{
	{"val/", "validation "}, {"train/", "training "}, {"test/", "test "}, {"curve/", ""}, {"steplog/", ""},
}

// humanKey writes a key not in the labels map in words: a metric's prefix as a word
// ("val/R@1" → "validation R@1"), a dotted config key as its last part, underscores as spaces
// ("loss.set.pos_margin" → "pos margin").
func humanKey(key string) string {
	s := key
	for again := true; again; {
		again = false
		for _, p := range metricPrefixes {
			if rest, ok := strings.CutPrefix(s, p.prefix); ok && rest != "" {
				s, again = p.text+rest, true
			}
		}
	}
	if i := strings.LastIndexByte(s, '.'); i >= 0 && i+1 < len(s) && !strings.ContainsAny(s, " @") {
		s = s[i+1:]
	}
	return strings.ReplaceAll(s, "_", " ")
}

// lrGroup matches one learning-rate group of optimizer.groups as FormatValue writes it.
var lrGroup = regexp.MustCompile(`^\{"lr_mul":([0-9.eE+-]+),"match":"([^"]*)"\}$`)

// humanValue writes a value not in the labels map: nil (the key unset) as "—", booleans as
// yes/no, learning-rate groups ([{"lr_mul":10,"match":"/loss/"}]) as "×10", a loss expression
// ("0.9*contrastive+0.1*simreg") term by term with the map's texts ("0.9 · Contrastive + 0.1 ·
// similarity regulariser"); anything else as FormatValue writes it.
func (m LabelMap) humanValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		var parts []string
		for _, e := range x {
			g := lrGroup.FindStringSubmatch(FormatValue(e))
			if g == nil {
				return FormatValue(v)
			}
			p := "×" + g[1]
			if g[2] != "/loss/" {
				p += " (" + g[2] + ")"
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			return strings.Join(parts, ", ")
		}
	case string:
		return m.exprText(x)
	}
	return FormatValue(v)
}

// exprTerm is one term of a loss expression: an optional weight and a name with options.
var exprTerm = regexp.MustCompile(`^(?:([0-9.]+)\*)?([a-z][a-z0-9_]*(?:\([^()]*\))?)$`)

// exprText writes a loss expression ("0.9*smoothap+0.1*simreg", "rsk+tcm") term by term, each
// term's name through the map; an expression with a term the map does not name, or any other
// string, is returned unchanged (for [RawTexts] to find).
func (m LabelMap) exprText(s string) string {
	if !strings.ContainsAny(s, "+*") || strings.ContainsAny(s, " ") {
		return s
	}
	terms := SplitTop(s, '+')
	out := make([]string, len(terms))
	for i, t := range terms {
		g := exprTerm.FindStringSubmatch(t)
		if g == nil {
			return s
		}
		name, ok := m.Text[g[2]]
		if !ok {
			return s
		}
		if g[1] != "" {
			name = g[1] + " · " + name
		}
		out[i] = name
	}
	return strings.Join(out, " + ")
}

// SplitTop splits s at sep outside parentheses.
func SplitTop(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// rawPatterns are what a reader should never see in a table, a legend, an axis or a caption, each
// with what it is.
var rawPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"JSON", regexp.MustCompile(`\[\{|\{"|":`)},
	{"a null value", regexp.MustCompile(`(?:^|[|(\s])null(?:$|[|)\s,;])`)},
	{"a run hash", regexp.MustCompile(`run:[0-9a-f]{6,}|\b[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*\b`)},
	{"a config expression", regexp.MustCompile(`\b[a-z][a-z0-9_]*\([a-z_]+=|\b\d*\.?\d+\*[a-z(]|[a-z)]\*\d|\b[a-z][a-z0-9]+\+[a-z][a-z0-9]+\b`)},
	{"a dotted config key", regexp.MustCompile(`\b[a-z_]{2,}\.[a-z_]{2,}(?:\.[a-z_]+)*\b`)},
	{"an identifier with an underscore", regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_{}]+\b`)},
	{"a series name", regexp.MustCompile(`\b(?:val|train|curve|steplog|emb2d|dist|opis|fig1)/[A-Za-z]`)},
	{"a unit with two denominators", regexp.MustCompile(`\bper \w+ per \w+`)},
	{"a run group's name", regexp.MustCompile(`\b(?:fig|table)\d+[a-z]?\b`)},
	// A tuning difference's remainder counted, not named ("…, this arm yes and 25 more"): the
	// differences that matter are named, the others counted as "other settings".
	{"a count of unnamed differences", regexp.MustCompile(`\bthis arm [^;()]*? and \d+ more\b`)},
	// A tuning difference named by the last part of a dotted key ("name: tuned at omniglot", of
	// data.name): the key's words are missing from the labels map and the shared vocabulary.
	{"a config key's last part", regexp.MustCompile(`(?:^|[(;,] ?)(?:name|m|set|options): tuned at\b`)},
}

// RawTexts returns, for text s shown to a reader (a table cell or header, a caption, a legend or
// axis text), what it shows raw instead of in words: JSON, null, run hashes, config expressions
// ("rsk+tcm(no_indicator=true)", "0.9*contrastive+0.1*simreg"), dotted keys, identifiers with
// underscores ("L_e", "S_an", "no_indicator"), series names ("val/R@1") and units with two
// denominators ("points per doubling per decade"), and the names of the spec's run groups ("fig6",
// "table1", say "Fig. 6 setting"). Hash-like words must hold 12 hex digits or
// more; a file name with an extension (".md", ".png") is not a dotted key.
func RawTexts(s string) []string {
	var out []string
	for _, p := range rawPatterns {
		for _, m := range p.re.FindAllString(s, -1) {
			if p.what == "a run hash" && !strings.HasPrefix(m, "run:") && len(m) < 12 {
				continue
			}
			if p.what == "a dotted config key" && fileExt.MatchString(m) {
				continue
			}
			out = append(out, fmt.Sprintf("%s %q", p.what, strings.TrimSpace(m)))
		}
	}
	return out
}

// tuningSides are the two values of a tuning difference in a sentence: "tuned at v, this arm w".
var tuningSides = regexp.MustCompile(`tuned at ([^,;()]*), this arm ([^,;()]*?)(?: and \d+ [a-z ]+)?(?:[;),]|$| \()`)

// rawID is a configuration value written as the configuration spells it: lower case, digits,
// "-", "_", "+" ("fashion-mnist", "proxyanchor", "smoothap+tcm", "m_per_class").
var rawID = regexp.MustCompile(`^[a-z][a-z0-9_+-]*$`)

// RawValue reports whether v is a configuration value as the configuration spells it that the map
// (an entry "v" or "key=v") or the shared vocabulary ([CommonWord]) writes in other words, and
// those words: "omniglot" → "Omniglot", "idml" → "+ IDML". Numbers and words the map does not
// name are not raw.
func (m LabelMap) RawValue(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if !rawID.MatchString(v) {
		return "", false
	}
	words := func(t string) (string, bool) {
		t = SymbolPrefix.ReplaceAllString(t, "")
		return t, t != v
	}
	if t, ok := m.Text[v]; ok {
		return words(t)
	}
	for _, k := range m.Keys {
		if strings.HasSuffix(k, "="+v) && !strings.Contains(k, ", ") {
			return words(m.Text[k])
		}
	}
	if t, ok := CommonWord(v); ok {
		return words(t)
	}
	for k, t := range commonWords {
		if strings.HasSuffix(k, "="+v) {
			return words(t)
		}
	}
	return "", false
}

// UnwordedTexts returns the values of the tuning differences in s ("tuned at v, this arm w") that
// are written as the configuration spells them although the map or the shared vocabulary has
// words for them ([LabelMap.RawValue]): "name: tuned at omniglot, this arm fashion-mnist" gives
// both values. [RawTexts] finds what is raw whatever the map; this finds what the map would have
// written.
func (m LabelMap) UnwordedTexts(s string) []string {
	var out []string
	for _, g := range tuningSides.FindAllStringSubmatch(s, -1) {
		for _, v := range g[1:] {
			if t, ok := m.RawValue(v); ok {
				out = append(out, fmt.Sprintf("a value the labels write as %q: %q in %q", t, strings.TrimSpace(v), g[0]))
			}
		}
	}
	return out
}

var fileExt = regexp.MustCompile(`\.(md|png|svg|pdf|tex|yaml|jsonl|ipynb|html|go)$`)

// tunedAt is one difference of a comparability note: "key: tuned at v, this arm w" (v empty: an
// unset string), the last one of a list perhaps followed by the count of those not named ("and 3
// other settings").
var tunedAt = regexp.MustCompile(`\b([a-z_]+(?:\.[a-z0-9_]+)+): tuned at (\[[^\]]*\]|[^,;()]*?), this arm (\[[^\]]*\]|[^,;()]+?)( and \d+ (?:more|other settings?))?([;)]|$)`)

// keyEquals is "key = value" inside a sentence (a selection at its grid's edge:
// "optimizer.groups = [{"lr_mul":10,"match":"/loss/"}] (lr-softtriple)").
var keyEquals = regexp.MustCompile(`\b([a-z_]+(?:\.[a-z0-9_]+)+) = (\[[^\]]*\]|[^,;() ]+)`)

// dottedKey is a dotted configuration key inside a sentence.
var dottedKey = regexp.MustCompile(`\b[a-z_]{2,}(?:\.[a-z0-9_]+)+\b`)

// Humanize writes the configuration keys and values a generated sentence names (a comparability
// note, a verdict's reason: "loss.set.margin: tuned at 0.3, this arm 0.05", "at grid edge:
// optimizer.lr") in the words of the map: each "key: tuned at v, this arm w" and "key = v" with the
// key's and the values' texts (an unset value — "unset", null or "" — as the map's text of the
// key's null, "all classes", else "unset"; JSON as [LabelMap.Value] writes it), then every other
// dotted key with its text ([LabelMap.Key]). Keys and values the spec's map does not name are
// written in the shared vocabulary ([CommonWord]). File names ("spec.yaml") are left alone.
func (m LabelMap) Humanize(s string) string {
	val := func(key, v string) string {
		switch v {
		case "unset", "null", "":
			// The key unset: what the map calls its default ("key=null": "γ = 1 (default)",
			// "all classes"), else "unset".
			if t, ok := m.Lookup(key, nil); ok {
				return SymbolPrefix.ReplaceAllString(t, "")
			}
			return "unset"
		case "true":
			return SymbolPrefix.ReplaceAllString(m.Value(key, true), "")
		case "false":
			return SymbolPrefix.ReplaceAllString(m.Value(key, false), "")
		}
		if t, ok := m.Lookup(key, v); ok {
			return SymbolPrefix.ReplaceAllString(t, "") // the key is named before: "γ: tuned at 0.1 (…)"
		}
		var x any // a JSON value (learning-rate groups, [{"lr_mul":10,"match":"/loss/"}]): its words
		if strings.HasPrefix(v, "[{") && json.Unmarshal([]byte(v), &x) == nil {
			return m.Value(key, x)
		}
		return m.exprText(v)
	}
	s = tunedAt.ReplaceAllStringFunc(s, func(x string) string {
		g := tunedAt.FindStringSubmatch(x)
		return m.Key(g[1]) + ": tuned at " + val(g[1], g[2]) + ", this arm " + val(g[1], g[3]) + g[4] + g[5]
	})
	s = keyEquals.ReplaceAllStringFunc(s, func(x string) string {
		g := keyEquals.FindStringSubmatch(x)
		return m.Key(g[1]) + " = " + val(g[1], g[2])
	})
	return dottedKey.ReplaceAllStringFunc(s, func(k string) string {
		if fileExt.MatchString(k) {
			return k
		}
		return m.Key(k)
	})
}

// SymbolPrefix is a short symbol and " = " at the start of a value's text ("γ = ", "m = ").
var SymbolPrefix = regexp.MustCompile(`^[^\s=]{1,3} = `)

// Spans of a generated Markdown or HTML text that are references, not words: code spans
// (`c3-beats-proxynca`, `figures/tcm/x.png`), <code> elements, link targets, HTML tags and
// Markdown escapes are removed before [ReaderRawTexts] reads the text.
var (
	mdCodeSpan   = regexp.MustCompile("`[^`\n]*`")
	htmlCodeSpan = regexp.MustCompile(`(?s)<code>.*?</code>`)
	mdLinkTarget = regexp.MustCompile(`\]\([^)\s]*\)`)
	htmlTagSpan  = regexp.MustCompile(`<[^>]*>`)
	mdUnescape   = strings.NewReplacer(`\_`, "_", `\*`, "*", `\|`, "|", `\[`, "[", `\]`, "]", "&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`, "&#34;", `"`, "&#39;", "'")
	quotedColon  = regexp.MustCompile(`"[^"\n{}\[\]]*[ '][^"\n{}\[\]]*":`) // a quoted phrase before a colon (`form "paper text":`), not JSON
)

// ReaderRawTexts is [RawTexts] of a generated Markdown or HTML text a reader reads (a notebook's
// tables, claim lines and captions; the front page), line by line, without its references (code
// spans, links, markup) and without identifiers with an underscore (the papers' symbols, L_context,
// and the names of tables a caption points to: "table tune_margins").
func ReaderRawTexts(s string) []string {
	s = htmlCodeSpan.ReplaceAllString(s, " ")
	s = mdCodeSpan.ReplaceAllString(s, " ")
	s = mdLinkTarget.ReplaceAllString(s, "]")
	s = htmlTagSpan.ReplaceAllString(s, " ")
	s = mdUnescape.Replace(s)
	s = quotedColon.ReplaceAllStringFunc(s, func(q string) string { return strings.TrimSuffix(q, ":") + " :" })
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, p := range RawTexts(line) {
			if strings.HasPrefix(p, "an identifier with an underscore") {
				continue
			}
			// The words around the match: 60 runes either side.
			ctx := []rune(line)
			if q := strings.LastIndexByte(p, ' '); q >= 0 {
				if m, err := strconv.Unquote(p[q+1:]); err == nil {
					if k := strings.Index(line, m); k >= 0 {
						lo := len([]rune(line[:k]))
						ctx = ctx[max(0, lo-60):min(len(ctx), lo+len([]rune(m))+60)]
					}
				}
			}
			out = append(out, p+" in "+strconv.Quote(strings.TrimSpace(string(ctx))))
		}
	}
	return out
}
