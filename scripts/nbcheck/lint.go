package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The lint of committed notebooks (notebooks/README.md, "Committed with outputs"): a notebook in
// notebooks/ is committed executed from stored results, so that it reads on GitHub and in
// JupyterLab without a kernel, with an HTML export beside it. [Lint] checks that without running
// anything; scripts/export-notebooks.sh produces notebooks that pass it.

// machinePath matches an absolute path of a development machine or CI runner: /work/, /root/,
// /home/ or /tmp/ at the start of a path (not inside a URL such as https://host/home/…).
var machinePath = regexp.MustCompile(`(^|[^A-Za-z0-9_.~%+-])/(work|root|home|tmp)/`)

// dataURI matches an inline data: URI (base64 image data in HTML outputs).
var dataURI = regexp.MustCompile(`data:[A-Za-z0-9.+/-]+;base64,[A-Za-z0-9+/=\s]*`)

// noiseLines are output lines a committed notebook must not show: they say a table had nothing
// to show instead of leaving it out.
var noiseLines = []string{"no stored results match"}

// binaryMIME are output MIME types whose values are base64, not text (a path-like run of base64
// characters there means nothing).
var binaryMIME = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "application/pdf": true}

// stampName is the <meta> name scripts/export-notebooks.sh writes into an HTML export: the
// [ContentHash] of the notebook it was exported from.
const stampName = "dmlkit-notebook-content"

// Lint checks a committed notebook (nbformat v4 JSON) and its HTML export (nil when the file is
// missing) and lists every problem:
//
//   - "no-output": a non-empty code cell without outputs, unless its metadata says
//     "dmlkit": {"no_output": true} (a cell that legitimately prints nothing);
//   - "not-executed": a non-empty code cell without an execution_count;
//   - "error": an error output (a committed notebook must have run cleanly);
//   - "path": an absolute machine path (/work/, /root/, /home/, /tmp/) anywhere in the notebook's
//     text — cell sources, text outputs, metadata (base64 image data is skipped);
//   - "noise": an output line such as "no stored results match";
//   - "html": the export is missing, carries no content stamp, or was made from other content
//     than the notebook's ([ContentHash]): re-run scripts/export-notebooks.sh;
//   - "setup": a cell that `go get`s modules into GoNB's temporary module (`!*go get …`) without
//     first writing the checkout's checksums into it ([SetupGoSum]): the go command would then
//     verify each module against the checksum database, which fails with no network;
//   - "html-source": the export loads a script, stylesheet or image from a file:// URL (a file
//     of the machine that exported it: Debian's nbconvert links its MathJax that way);
//   - "math": a formula ($…$, $$…$$) left as TeX text in the export's prose instead of typeset
//     ([FindMath], [RenderMath]).
//
// And what the notebook says and how it opens: "paper", "command", "link", "hidden", "layout"
// (prose.go). Links are checked against the checkout the notebook lies in ([LintWith] takes
// other options).
//
// It returns an error only when data is not a notebook.
func Lint(name string, data, html []byte) ([]Problem, error) {
	return LintWith(name, data, html, defaultLintOptions(name))
}

// LintWith is [Lint] with the options of the checks that look outside the notebook.
func LintWith(name string, data, html []byte, opts LintOptions) ([]Problem, error) {
	var nb struct {
		Cells []struct {
			cell
			RawMetadata json.RawMessage `json:"metadata"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("%s: not a notebook: %v", name, err)
	}
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		return nil, fmt.Errorf("%s: not a notebook: %v", name, err)
	}
	var out []Problem
	for i, c := range nb.Cells {
		var md struct {
			Dmlkit struct {
				NoOutput bool `json:"no_output"`
			} `json:"dmlkit"`
		}
		_ = json.Unmarshal(c.RawMetadata, &md)
		if c.CellType != "code" {
			continue
		}
		src, err := multiline(c.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: cell %d: source: %v", name, i, err)
		}
		if strings.TrimSpace(src) == "" {
			continue
		}
		head := headline(src)
		if msg := lintSetup(src); msg != "" {
			out = append(out, Problem{i, "setup", msg})
		}
		if c.ExecutionCount == nil {
			out = append(out, Problem{i, "not-executed", fmt.Sprintf("%q has no execution_count: commit the notebook executed (scripts/export-notebooks.sh)", head)})
		}
		if len(c.Outputs) == 0 && !md.Dmlkit.NoOutput {
			out = append(out, Problem{i, "no-output", fmt.Sprintf("%q has no outputs: commit the notebook executed (scripts/export-notebooks.sh), or mark a cell that prints nothing with metadata \"dmlkit\": {\"no_output\": true}", head)})
		}
		for _, o := range c.Outputs {
			switch o.OutputType {
			case "error":
				out = append(out, Problem{i, "error", fmt.Sprintf("%s: %s", o.Ename, abbrev(strings.TrimSpace(o.Evalue), 200))})
			case "stream":
				text, _ := multiline(o.Text)
				for _, n := range noiseLines {
					if k := strings.Index(text, n); k >= 0 {
						line := text[strings.LastIndex(text[:k], "\n")+1:]
						line, _, _ = strings.Cut(line, "\n")
						out = append(out, Problem{i, "noise", fmt.Sprintf("output line %q: leave such tables out instead", abbrev(line, 120))})
					}
				}
			}
		}
	}
	// Paths: every string of the notebook, by its location.
	walkStrings(generic, "", func(loc, s string) {
		s = dataURI.ReplaceAllString(s, "data:…")
		if m := machinePath.FindStringIndex(s); m != nil {
			lo, hi := max(0, m[0]-30), min(len(s), m[1]+40)
			cellIdx := -1
			if _, err := fmt.Sscanf(loc, "cells[%d]", &cellIdx); err != nil {
				cellIdx = -1
			}
			out = append(out, Problem{cellIdx, "path", fmt.Sprintf("%s contains a machine path: …%s…", loc, strings.ReplaceAll(s[lo:hi], "\n", "⏎"))})
		}
	})
	// The HTML export.
	want, err := ContentHash(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	switch got, ok := htmlStamp(html); {
	case html == nil:
		out = append(out, Problem{-1, "html", "no HTML export beside the notebook: run scripts/export-notebooks.sh"})
	case !ok:
		out = append(out, Problem{-1, "html", fmt.Sprintf("the HTML export has no <meta name=%q>: export it with scripts/export-notebooks.sh", stampName)})
	case got != want:
		out = append(out, Problem{-1, "html", fmt.Sprintf("the HTML export was made from other content (%.19s…, notebook %.19s…): re-run scripts/export-notebooks.sh", got, want)})
	}
	if html != nil {
		out = append(out, lintExport(html)...)
	}
	prose, err := lintProse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: not a notebook: %v", name, err)
	}
	out = append(out, prose...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].Cell < out[b].Cell })
	return out, nil
}

// SetupGoSum is the line of a notebook's setup cell that writes dmlkit's go.sum and tools/go.sum
// (GoNB's gonbui is pinned there) into GoNB's temporary module before its `!*go get`: the modules
// the notebook builds are then verified against the checkout's checksums, from the module cache,
// and nothing is looked up in the checksum database — the notebooks run with no network
// (notebooks/README.md, "The setup cell").
const SetupGoSum = `!*cat "${GONB_DIR}/../go.sum" "${GONB_DIR}/../tools/go.sum" >> go.sum`

// lintSetup returns what is wrong with a code cell's module setup: a `!*go get` line with no
// [SetupGoSum] line before it, or one that gets GoNB's root package (the kernel, whose
// dependencies' checksums are in no go.sum of the checkout) instead of gonbui. "" when fine.
func lintSetup(src string) string {
	seeded := false
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == SetupGoSum {
			seeded = true
		}
		if !strings.HasPrefix(line, "!*go get ") {
			continue
		}
		if !seeded {
			return fmt.Sprintf("`!*go get` without the line %s before it: with no network the go command cannot verify the modules (checksum database unreachable)", SetupGoSum)
		}
		for _, arg := range strings.Fields(line)[2:] {
			if strings.HasPrefix(arg, "github.com/janpfeifer/gonb@") {
				return fmt.Sprintf("`!*go get %s` loads GoNB's kernel package, whose dependencies' checksums no go.sum of the checkout has: get github.com/janpfeifer/gonb/gonbui@… instead", arg)
			}
		}
	}
	return ""
}

// walkStrings calls f for every string in v (decoded JSON) with its location, skipping base64
// output data.
func walkStrings(v any, loc string, f func(loc, s string)) {
	switch x := v.(type) {
	case string:
		f(loc, x)
	case []any:
		// A multiline string is a list of lines: check it joined, so a match is reported once.
		if s, ok := joinLines(x); ok {
			f(loc, s)
			return
		}
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", loc, i), f)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if binaryMIME[k] {
				continue
			}
			sub := k
			if loc != "" {
				sub = loc + "." + k
			}
			walkStrings(x[k], sub, f)
		}
	}
}

// joinLines concatenates a list of strings (an nbformat multiline string).
func joinLines(xs []any) (string, bool) {
	if len(xs) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, e := range xs {
		s, ok := e.(string)
		if !ok {
			return "", false
		}
		b.WriteString(s)
	}
	return b.String(), true
}

// ContentHash is "sha256:" and the hex SHA-256 of what an HTML export shows of a notebook: each
// cell's type, source and outputs (multiline strings joined; an output's execution_count and the
// cells' metadata left out). The export's stamp must equal it.
func ContentHash(data []byte) (string, error) {
	var nb struct {
		Cells []struct {
			CellType string           `json:"cell_type"`
			Source   json.RawMessage  `json:"source"`
			Outputs  []map[string]any `json:"outputs"`
		} `json:"cells"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&nb); err != nil {
		return "", fmt.Errorf("not a notebook: %v", err)
	}
	type canon struct {
		Type    string           `json:"t"`
		Source  string           `json:"s"`
		Outputs []map[string]any `json:"o,omitempty"`
	}
	cells := make([]canon, len(nb.Cells))
	for i, c := range nb.Cells {
		src, err := multiline(c.Source)
		if err != nil {
			return "", fmt.Errorf("cell %d: source: %v", i, err)
		}
		cells[i] = canon{Type: c.CellType, Source: src}
		for _, o := range c.Outputs {
			co := map[string]any{}
			for k, v := range o {
				if k == "execution_count" {
					continue
				}
				co[k] = joinAll(v)
			}
			cells[i].Outputs = append(cells[i].Outputs, co)
		}
	}
	b, err := json.Marshal(cells)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// joinAll replaces every list of strings in v by the strings joined (nbformat multiline strings
// may be stored either way).
func joinAll(v any) any {
	switch x := v.(type) {
	case []any:
		if s, ok := joinLines(x); ok {
			return s
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = joinAll(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = joinAll(e)
		}
		return out
	}
	return v
}

var stampRe = regexp.MustCompile(`<meta name="` + stampName + `" content="([^"]*)"\s*/?>`)

// htmlStamp returns the content stamp of an HTML export.
func htmlStamp(html []byte) (string, bool) {
	m := stampRe.FindSubmatch(html)
	if m == nil {
		return "", false
	}
	return string(m[1]), true
}

// Stamp returns html with the content stamp set to hash: an existing stamp is replaced, else the
// <meta> goes right after <head>.
func Stamp(html []byte, hash string) ([]byte, error) {
	tag := []byte(`<meta name="` + stampName + `" content="` + hash + `"/>`)
	if stampRe.Match(html) {
		return stampRe.ReplaceAllLiteral(html, tag), nil
	}
	i := bytes.Index(html, []byte("<head>"))
	if i < 0 {
		return nil, fmt.Errorf("no <head> in the HTML export")
	}
	i += len("<head>")
	out := append([]byte(nil), html[:i]...)
	out = append(out, '\n')
	out = append(out, tag...)
	out = append(out, '\n')
	return append(out, html[i:]...), nil
}
