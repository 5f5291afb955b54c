package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// The checks of what a notebook says and how it opens (issue #32, items 2 and 6), part of [Lint]:
//
//   - "paper": a paper notebook declares its paper in the notebook metadata,
//     "dmlkit": {"paper": "<name>"}, the name it passes to notebook.FromEnv;
//   - "command": a `dmlkit reproduce|run|tables|figures <paper>` command (in prose, code or
//     output) names the notebook's own paper — every paper notebook used to tell its reader to run
//     `dmlkit reproduce tcm`;
//   - "link": a link (Markdown or HTML) or a `../…` path in code quotes leads to a file of the
//     repository that exists — not to ../shared/notes/…, which lies outside it (copy what a
//     reader needs into docs/);
//   - "hidden": the tags the HTML export honours and the metadata JupyterLab honours agree: a cell
//     tagged hide-input has "jupyter": {"source_hidden": true}, one tagged hide-cell also
//     "outputs_hidden": true, and no cell hides its source without the tag;
//   - "layout": a paper notebook opens on its abstract and first result within one screen (see
//     [OpeningLines]);
//   - "wide-table": a table (Markdown or HTML, in prose or output) needs more than the page's
//     width ([PageWidth], width.go).

// The cell tags of the notebook layout (notebooks/README.md). scripts/export-notebooks.sh removes
// the input of hide-input cells and the whole of hide-cell cells from the HTML export.
const (
	TagAbstract    = "abstract"
	TagFirstResult = "first-result"
	TagHideInput   = "hide-input"
	TagHideCell    = "hide-cell"
)

// "One screen", concretely. A paper notebook's cells, from the top down to and including the input
// of the cell tagged first-result, may show at most OpeningLines lines (a Markdown source line
// counts once per WrapWidth characters; a visible code line once; an output text line once; an
// image ImageLines) — about 1,000 px of the HTML export, which browsercheck -exports measures — and
// no visible code cell longer than OpeningCodeLines lines. The abstract (a code cell tagged
// abstract, whose output gives the verdict counts) comes before the first result (a code cell tagged
// first-result, whose output holds a table or a figure).
const (
	OpeningLines     = 45
	OpeningCodeLines = 8
	WrapWidth        = 110
	ImageLines       = 20
)

// paperCommand matches a dmlkit command that names a paper.
var paperCommand = regexp.MustCompile("\\bdmlkit (reproduce|run|tables|figures) ([a-z][a-z0-9_]*)\\b")

// fromEnv matches the paper a notebook's code reads: notebook.FromEnv(root, "<paper>").
var fromEnv = regexp.MustCompile(`notebook\.FromEnv\([^\n]*,\s*"([a-z0-9_]+)"\)`)

// Link targets: Markdown [text](target), HTML href/src, and `../…` in code quotes.
var (
	mdLink    = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlLink  = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*["']([^"']+)["']`)
	codeUpDir = regexp.MustCompile("`(\\.\\./[^`\\s]*)`")
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// notInRepository are top-level directories that exist beside or inside some checkouts but are no
// part of the repository: the workplace's shared notes and data, build outputs.
var notInRepository = map[string]bool{"shared": true, "out": true}

// LintOptions configures the checks that look outside the notebook.
type LintOptions struct {
	// Exists reports whether a path of the repository (slash-separated, relative to its root)
	// exists. Nil: links are not checked for existence, only for leaving the repository.
	Exists func(repoPath string) bool
	// NotebookDir is the notebook's directory relative to the repository root ("notebooks").
	NotebookDir string
}

// defaultLintOptions checks links against the files of the checkout the notebook lies in: its
// directory's parent is the repository root.
func defaultLintOptions(name string) LintOptions {
	dir := filepath.Dir(name)
	root := filepath.Dir(dir)
	return LintOptions{
		NotebookDir: filepath.Base(dir),
		Exists: func(p string) bool {
			_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
			return err == nil
		},
	}
}

type proseCell struct {
	CellType string          `json:"cell_type"`
	Source   json.RawMessage `json:"source"`
	Metadata struct {
		Tags    []string `json:"tags"`
		Jupyter struct {
			SourceHidden  bool `json:"source_hidden"`
			OutputsHidden bool `json:"outputs_hidden"`
		} `json:"jupyter"`
	} `json:"metadata"`
	Outputs []struct {
		OutputType string                     `json:"output_type"`
		Text       json.RawMessage            `json:"text"`
		Data       map[string]json.RawMessage `json:"data"`
		Metadata   map[string]json.RawMessage `json:"metadata"`
	} `json:"outputs"`
}

func (c *proseCell) tagged(tag string) bool {
	for _, t := range c.Metadata.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// texts returns the cell's source and its outputs' text (streams; of rich outputs the first of
// text/markdown, text/plain, text/html).
func (c *proseCell) texts() (src string, outs []string) {
	src, _ = multiline(c.Source)
	for _, o := range c.Outputs {
		if o.OutputType == "stream" {
			t, _ := multiline(o.Text)
			outs = append(outs, t)
			continue
		}
		for _, mime := range []string{"text/markdown", "text/plain", "text/html"} {
			if raw, ok := o.Data[mime]; ok {
				t, _ := multiline(raw)
				outs = append(outs, t)
				break // one representation per output
			}
		}
	}
	return src, outs
}

// lintProse runs the checks above on a notebook.
func lintProse(data []byte, opts LintOptions) ([]Problem, error) {
	var nb struct {
		Metadata struct {
			Dmlkit struct {
				Paper string `json:"paper"`
			} `json:"dmlkit"`
		} `json:"metadata"`
		Cells []proseCell `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, err
	}
	paper := nb.Metadata.Dmlkit.Paper
	var out []Problem
	// The declared paper.
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		src, _ := multiline(c.Source)
		for _, m := range fromEnv.FindAllStringSubmatch(src, -1) {
			if m[1] != paper {
				out = append(out, Problem{i, "paper", fmt.Sprintf("the code reads paper %q (notebook.FromEnv) but the notebook metadata declares \"dmlkit\": {\"paper\": %q}", m[1], paper)})
			}
		}
	}
	for i := range nb.Cells {
		c := &nb.Cells[i]
		src, outs := c.texts()
		// Commands naming another paper.
		if paper != "" {
			for _, t := range append([]string{src}, outs...) {
				for _, m := range paperCommand.FindAllStringSubmatch(t, -1) {
					if m[2] != paper {
						out = append(out, Problem{i, "command", fmt.Sprintf("%q names paper %q in the %s notebook: name this notebook's paper", m[0], m[2], paper)})
					}
				}
			}
		}
		// Links.
		var prose []string
		if c.CellType == "markdown" {
			prose = append(prose, src)
		}
		for _, o := range c.Outputs {
			if raw, ok := o.Data["text/markdown"]; ok {
				t, _ := multiline(raw)
				prose = append(prose, t)
			}
		}
		for _, t := range prose {
			var targets []string
			for _, re := range []*regexp.Regexp{mdLink, htmlLink, codeUpDir} {
				for _, m := range re.FindAllStringSubmatch(t, -1) {
					targets = append(targets, m[1])
				}
			}
			for _, target := range targets {
				if msg := checkLink(target, opts); msg != "" {
					out = append(out, Problem{i, "link", msg})
				}
			}
		}
		// Tables wider than the page (width.go).
		out = append(out, lintWidth(i, c)...)
		// Hidden cells: the export's tags and JupyterLab's metadata agree.
		hideIn, hideCell := c.tagged(TagHideInput), c.tagged(TagHideCell)
		j := c.Metadata.Jupyter
		switch {
		case hideCell && !(j.SourceHidden && j.OutputsHidden):
			out = append(out, Problem{i, "hidden", `tagged hide-cell (removed from the HTML export) but not hidden in JupyterLab: set "jupyter": {"source_hidden": true, "outputs_hidden": true}`})
		case hideIn && !j.SourceHidden:
			out = append(out, Problem{i, "hidden", `tagged hide-input (input removed from the HTML export) but not hidden in JupyterLab: set "jupyter": {"source_hidden": true}`})
		case j.SourceHidden && !hideIn && !hideCell:
			out = append(out, Problem{i, "hidden", `source hidden in JupyterLab but shown in the HTML export: tag it hide-input`})
		}
	}
	if paper != "" {
		out = append(out, lintOpening(nb.Cells)...)
	}
	out = append(out, lintReadable(nb.Cells)...)
	return out, nil
}

// checkLink returns why a link target is wrong ("" when it is fine).
func checkLink(target string, opts LintOptions) string {
	if target == "" || strings.HasPrefix(target, "#") || urlScheme.MatchString(target) {
		if strings.HasPrefix(strings.ToLower(target), "file:") {
			return fmt.Sprintf("link %q: a file of one machine; link a file of the repository", target)
		}
		return ""
	}
	p, _, _ := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	if strings.HasPrefix(p, "/") {
		return fmt.Sprintf("link %q: an absolute path; link a file of the repository, relative to the notebook", target)
	}
	dir := opts.NotebookDir
	if dir == "" {
		dir = "notebooks"
	}
	rel := path.Clean(path.Join(dir, p))
	top, _, _ := strings.Cut(rel, "/")
	if rel == ".." || strings.HasPrefix(rel, "../") || notInRepository[top] {
		return fmt.Sprintf("link %q leads outside the repository: copy what the reader needs into docs/ and link that", target)
	}
	if opts.Exists != nil && !opts.Exists(rel) {
		return fmt.Sprintf("link %q: %s does not exist in the repository", target, rel)
	}
	return ""
}

// lintOpening checks that a paper notebook opens on its abstract and first result (see
// [OpeningLines]).
func lintOpening(cells []proseCell) []Problem {
	abstract, first := -1, -1
	for i := range cells {
		if cells[i].tagged(TagAbstract) && abstract < 0 {
			abstract = i
		}
		if cells[i].tagged(TagFirstResult) && first < 0 {
			first = i
		}
	}
	var out []Problem
	if abstract < 0 {
		out = append(out, Problem{-1, "layout", "no cell tagged abstract: a paper notebook opens on an abstract whose verdict counts a code cell computes"})
	} else {
		c := &cells[abstract]
		_, outs := c.texts()
		all := strings.ToLower(strings.Join(outs, "\n"))
		if c.CellType != "code" || !(strings.Contains(all, "held") && strings.Contains(all, "contradicted") && strings.Contains(all, "inconclusive")) {
			out = append(out, Problem{abstract, "layout", "the abstract is not a code cell whose output gives the verdict counts (held, contradicted, inconclusive)"})
		}
	}
	if first < 0 {
		return append(out, Problem{-1, "layout", "no cell tagged first-result: a paper notebook shows its first result (a table or figure) right after the abstract"})
	}
	if abstract > first {
		out = append(out, Problem{first, "layout", "the first result comes before the abstract"})
	}
	fc := &cells[first]
	_, fouts := fc.texts()
	hasResult := strings.Contains(strings.Join(fouts, "\n"), "|---")
	for _, o := range fc.Outputs {
		if _, ok := o.Data["image/png"]; ok {
			hasResult = true
		}
	}
	if fc.CellType != "code" || !hasResult {
		out = append(out, Problem{first, "layout", "the cell tagged first-result shows no table or figure"})
	}
	lines := 0
	for i := 0; i <= first; i++ {
		c := &cells[i]
		if c.tagged(TagHideCell) {
			continue
		}
		src, outs := c.texts()
		switch {
		case c.CellType == "markdown":
			lines += wrappedLines(src)
		case c.CellType == "code" && !c.tagged(TagHideInput) && strings.TrimSpace(src) != "":
			n := strings.Count(strings.TrimRight(src, "\n"), "\n") + 1
			if n > OpeningCodeLines {
				out = append(out, Problem{i, "layout", fmt.Sprintf("a %d-line code cell before the first result (at most %d lines, or tag it hide-input, or move it after the results)", n, OpeningCodeLines)})
			}
			lines += n
		}
		if i == first {
			break
		}
		for _, t := range outs {
			lines += wrappedLines(t)
		}
		for _, o := range c.Outputs {
			if _, ok := o.Data["image/png"]; ok {
				lines += ImageLines
			}
		}
	}
	if lines > OpeningLines {
		out = append(out, Problem{first, "layout", fmt.Sprintf("the first result starts after %d lines (title, abstract and everything shown before it), more than one screen (%d lines)", lines, OpeningLines)})
	}
	return out
}

// wrappedLines counts the lines text takes at WrapWidth characters a line (blank lines count).
func wrappedLines(text string) int {
	text = strings.TrimRight(text, "\n")
	if strings.TrimSpace(text) == "" {
		return 0
	}
	n := 0
	for _, l := range strings.Split(text, "\n") {
		n += max(1, (len([]rune(l))+WrapWidth-1)/WrapWidth)
	}
	return n
}
