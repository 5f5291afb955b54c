package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// Mathematics in the HTML exports (issue #32, item 3). nbconvert leaves the TeX of Markdown cells
// and Markdown outputs in the page as text ($…$, $$…$$) for MathJax to typeset in the browser;
// the MathJax it links (Debian's nbconvert) is a file:// path of the exporting machine, so the
// formulas showed as raw LaTeX everywhere else. scripts/export-notebooks.sh therefore links the
// public CDN copies nbconvert upstream links (pinned versions, [cdnFlags]) and, with
// `nbcheck -render-math`, replaces every formula by KaTeX's MathML ([RenderMath]), which every
// current browser draws without any script, font or network. [Lint] fails on a file:// script or
// stylesheet and on a formula left as text.

// Math is one formula found in the text of an HTML page.
type Math struct {
	Start, End int    // byte offsets of the formula with its delimiters in the page
	TeX        string // the TeX between the delimiters, HTML entities decoded
	Display    bool   // $$…$$
}

// skipElements are elements whose content is not prose: a $ there is code, data or already
// typeset mathematics.
var skipElements = map[string]bool{"script": true, "style": true, "code": true, "pre": true, "textarea": true, "math": true, "svg": true, "kbd": true, "samp": true}

// textSegments calls f with the byte range of every run of text of page that lies outside tags and
// outside skipElements. It is a small scanner, not an HTML parser: enough for nbconvert's output
// (quoted attribute values may contain '>'; comments are skipped).
func textSegments(page []byte, f func(lo, hi int)) {
	i, n := 0, len(page)
	textStart := 0
	for i < n {
		if page[i] != '<' {
			i++
			continue
		}
		if textStart < i {
			f(textStart, i)
		}
		if bytes.HasPrefix(page[i:], []byte("<!--")) {
			end := bytes.Index(page[i+4:], []byte("-->"))
			if end < 0 {
				return
			}
			i += 4 + end + 3
			textStart = i
			continue
		}
		end := tagEnd(page, i)
		name := tagName(page[i+1 : end])
		i = end
		if skipElements[name] && !bytes.HasSuffix(bytes.TrimSpace(page[:end-1]), []byte("/")) {
			// Jump past the matching end tag (the skipped elements are not nested in nbconvert's output,
			// except <code> inside <pre>, which the </pre> search covers).
			closeTag := []byte("</" + name)
			k := indexFold(page[i:], closeTag)
			if k < 0 {
				return
			}
			i = tagEnd(page, i+k)
		}
		textStart = i
	}
	if textStart < n {
		f(textStart, n)
	}
}

// tagEnd returns the offset just past the '>' that ends the tag starting at page[start] == '<'.
func tagEnd(page []byte, start int) int {
	var quote byte
	for j := start + 1; j < len(page); j++ {
		c := page[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return j + 1
		}
	}
	return len(page)
}

// tagName is the lower-cased element name of a tag's inside ("p class=x" → "p"; "/p" → "").
func tagName(in []byte) string {
	if len(in) == 0 || in[0] == '/' || in[0] == '!' {
		return ""
	}
	k := bytes.IndexAny(in, " \t\r\n/>")
	if k < 0 {
		k = len(in)
	}
	return strings.ToLower(string(in[:k]))
}

func indexFold(b, sub []byte) int {
	return bytes.Index(bytes.ToLower(b), bytes.ToLower(sub))
}

// inlineMath and displayMath match TeX as pandoc and Jupyter's Markdown read it: $$…$$, or $…$
// where the opening $ is not followed by a space, the closing $ not preceded by one nor followed by
// a digit (so "$5 and $10" is not mathematics), and neither $ is escaped.
var (
	displayMath = regexp.MustCompile(`(?s)\$\$(.+?)\$\$`)
	inlineMath  = regexp.MustCompile(`\$([^\s$](?:[^$\n]|\n[^$\n])*?)\$`)
)

// FindMath lists the formulas in the prose of an HTML page: the text outside tags and outside
// code, preformatted text, scripts, styles and <math> elements.
func FindMath(page []byte) []Math {
	var out []Math
	textSegments(page, func(lo, hi int) {
		text := string(page[lo:hi])
		taken := make([]bool, len(text))
		for _, m := range displayMath.FindAllStringSubmatchIndex(text, -1) {
			if escaped(text, m[0]) {
				continue
			}
			for k := m[0]; k < m[1]; k++ {
				taken[k] = true
			}
			out = append(out, Math{Start: lo + m[0], End: lo + m[1], TeX: strings.TrimSpace(html.UnescapeString(text[m[2]:m[3]])), Display: true})
		}
		for _, m := range inlineMath.FindAllStringSubmatchIndex(text, -1) {
			if taken[m[0]] || escaped(text, m[0]) {
				continue
			}
			inner := text[m[2]:m[3]]
			if strings.HasSuffix(inner, " ") || strings.HasSuffix(inner, "\\") || strings.HasSuffix(inner, "\n") {
				continue
			}
			if m[1] < len(text) && text[m[1]] >= '0' && text[m[1]] <= '9' {
				continue
			}
			out = append(out, Math{Start: lo + m[0], End: lo + m[1], TeX: html.UnescapeString(inner)})
		}
	})
	// Display and inline matches were collected per segment in two passes: order by position.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Start < out[j-1].Start; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// escaped reports whether the byte at i is preceded by a backslash.
func escaped(s string, i int) bool { return i > 0 && s[i-1] == '\\' }

// RenderMath replaces every formula [FindMath] finds in page by render's HTML for it (render gets
// all formulas at once and returns one HTML string each, in order).
func RenderMath(page []byte, render func([]Math) ([]string, error)) ([]byte, int, error) {
	ms := FindMath(page)
	if len(ms) == 0 {
		return page, 0, nil
	}
	htmls, err := render(ms)
	if err != nil {
		return nil, 0, err
	}
	if len(htmls) != len(ms) {
		return nil, 0, fmt.Errorf("the renderer returned %d formulas for %d", len(htmls), len(ms))
	}
	var b bytes.Buffer
	prev := 0
	for i, m := range ms {
		b.Write(page[prev:m.Start])
		b.WriteString(htmls[i])
		prev = m.End
	}
	b.Write(page[prev:])
	out := b.Bytes()
	if !bytes.Contains(out, []byte(`id="dmlkit-math"`)) {
		if k := bytes.Index(out, []byte("</head>")); k >= 0 {
			out = append(out[:k:k], append([]byte(mathStyle+"\n"), out[k:]...)...)
		}
	}
	return out, len(ms), nil
}

// mathStyle sizes the typeset formulas like the text around them (browsers draw MathML a little
// smaller than the page's sans-serif text); [RenderMath] puts it in the page's head once.
const mathStyle = `<style id="dmlkit-math">math{font-size:1.12em}math[display="block"]{margin:0.4em 0}</style>`

// KaTeX renders formulas with KaTeX under Node.js (scripts/katex-render.js), as MathML: the
// browser draws it natively, with no script, stylesheet or font to load. A formula KaTeX cannot
// parse is an error (the export fails rather than show a red error box).
func KaTeX(script string) func([]Math) ([]string, error) {
	return func(ms []Math) ([]string, error) {
		type item struct {
			TeX     string `json:"tex"`
			Display bool   `json:"display"`
		}
		in := make([]item, len(ms))
		for i, m := range ms {
			in[i] = item{m.TeX, m.Display}
		}
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		node := os.Getenv("NODE")
		if node == "" {
			node = "node"
		}
		cmd := exec.Command(node, script)
		cmd.Stdin = bytes.NewReader(data)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v: %s", node, script, err, strings.TrimSpace(stderr.String()))
		}
		var htmls []string
		if err := json.Unmarshal(out, &htmls); err != nil {
			return nil, fmt.Errorf("%s: %v", script, err)
		}
		return htmls, nil
	}
}

// fileSource matches a src or href attribute that loads a file:// URL (a file of the machine that
// exported the page, missing everywhere else).
var fileSource = regexp.MustCompile(`(?i)\b(src|href)\s*=\s*["']?\s*file:`)

// lintExport lists the problems of an HTML export's page itself: file:// sources ("html-source")
// and formulas left as TeX text ("math").
func lintExport(page []byte) []Problem {
	var out []Problem
	for _, m := range fileSource.FindAllIndex(page, -1) {
		lo, hi := m[0], min(len(page), m[1]+70)
		if k := bytes.IndexAny(page[m[1]:hi], "\"' >"); k >= 0 {
			hi = m[1] + k
		}
		out = append(out, Problem{-1, "html-source", fmt.Sprintf("the export loads %s: a file of the exporting machine; link a public URL (scripts/export-notebooks.sh)", page[lo:hi])})
	}
	ms := FindMath(page)
	for i, m := range ms {
		if i == 5 {
			out = append(out, Problem{-1, "math", fmt.Sprintf("… and %d more formulas left as TeX", len(ms)-i)})
			break
		}
		out = append(out, Problem{-1, "math", fmt.Sprintf("formula left as TeX in the export: %s (render it: nbcheck -render-math, as scripts/export-notebooks.sh does)", abbrev(string(page[m.Start:m.End]), 80))})
	}
	return out
}
