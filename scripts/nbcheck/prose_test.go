package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// paperNB builds a notebook of the given paper (metadata dmlkit.paper; "" for none) from cells.
func paperNB(t *testing.T, paper string, cells ...map[string]any) []byte {
	t.Helper()
	md := map[string]any{}
	if paper != "" {
		md["dmlkit"] = map[string]any{"paper": paper}
	}
	b, err := json.Marshal(map[string]any{"cells": cells, "metadata": md, "nbformat": 4, "nbformat_minor": 5})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tagged(c map[string]any, tags ...string) map[string]any {
	md := c["metadata"].(map[string]any)
	md["tags"] = tags
	for _, tag := range tags {
		switch tag {
		case TagHideInput:
			md["jupyter"] = map[string]any{"source_hidden": true}
		case TagHideCell:
			md["jupyter"] = map[string]any{"source_hidden": true, "outputs_hidden": true}
		}
	}
	return c
}

func markdownOut(md string) map[string]any {
	return map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{"text/markdown": md}}
}

// opening is a paper notebook's opening that passes: title, hidden setup, abstract, first result.
func opening(paper string) []map[string]any {
	return []map[string]any{
		mdCell("# Seed 001 — CIT\n\nThe paper proposes a loss."),
		tagged(lintCell("!*go mod edit …\n%env GOMLX_BACKEND=go", nil, stdout("Set: GOMLX_BACKEND=\"go\"\n")), TagHideCell),
		tagged(lintCell(strings.Repeat("// helper\n", 90)+`var P = notebook.FromEnv(root, "`+paper+`")`, map[string]any{"dmlkit": map[string]any{"no_output": true}}), TagHideInput),
		tagged(lintCell("%%\nShowAbstract()", nil, markdownOut("**Abstract.** Of 12 claims, 3 held, 4 contradicted and 5 were inconclusive.")), TagAbstract, TagHideInput),
		mdCell("## 1. Table 1 — re-identification"),
		tagged(lintCell("%%\nShowTables(\"table1_reid\")", nil, markdownOut("| loss | mAP |\n|---|---|\n| CIT | 50 |")), TagFirstResult),
	}
}

func lintProseOf(t *testing.T, data []byte) []Problem {
	t.Helper()
	ps, err := lintProse(data, LintOptions{NotebookDir: "notebooks", Exists: func(p string) bool {
		return p == "docs/reproducing.md" || p == "notebooks/README.md" || p == "figures/cit/x.png"
	}})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestLintProseGood(t *testing.T) {
	cells := append(opening("cit"),
		mdCell("Rerun with `dmlkit reproduce cit --scale small`; the rule is [docs/reproducing.md](../docs/reproducing.md), "+
			"see [the README](README.md#checks), [the paper](https://arxiv.org/abs/1) and `../docs/reproducing.md`."),
		lintCell("%%\nfmt.Println(\"dmlkit tables cit\")", nil, stdout("dmlkit figures cit draws them\n")))
	if ps := lintProseOf(t, paperNB(t, "cit", cells...)); len(ps) != 0 {
		t.Errorf("a good paper notebook: %v", ps)
	}
	// The tour declares no paper: it may name any.
	if ps := lintProseOf(t, paperNB(t, "", mdCell("Then run `dmlkit reproduce tcm`."))); len(ps) != 0 {
		t.Errorf("the tour: %v", ps)
	}
}

// Today's defects, each of which must fail.
func TestLintProseDefects(t *testing.T) {
	for _, c := range []struct {
		name  string
		paper string
		extra []map[string]any
		want  string // kind and a substring of the message
	}{
		{"another paper's command (every non-TCM notebook)", "cit",
			[]map[string]any{mdCell("`dmlkit reproduce tcm --scale small --workers 2` does the same from the command line.")}, "command: \"dmlkit reproduce tcm\" names paper \"tcm\""},
		{"another paper's command in an output", "rsk",
			[]map[string]any{lintCell("%%\nhint()", nil, stdout("run dmlkit tables cit\n"))}, "command"},
		{"a link outside the repository (four notebooks)", "cit",
			[]map[string]any{mdCell("with the rule of `../shared/notes/reproducing.md` (per-seed paired differences)")}, "link: link \"../shared/notes/reproducing.md\" leads outside the repository"},
		{"a Markdown link outside", "cit", []map[string]any{mdCell("[notes](../../notes/x.md)")}, "leads outside"},
		{"a link to a missing file", "cit", []map[string]any{mdCell("[the rule](../docs/missing.md)")}, "does not exist"},
		{"an absolute link", "cit", []map[string]any{mdCell(`<a href="/usr/share/doc/x.html">x</a>`)}, "absolute path"},
		{"a file URL", "cit", []map[string]any{mdCell(`[x](file:///usr/share/x)`)}, "a file of one machine"},
		{"a link in a Markdown output", "cit", []map[string]any{lintCell("%%\nshow()", nil, markdownOut("see [notes](../shared/notes/x.md)"))}, "leads outside"},
	} {
		cells := append(opening(c.paper), c.extra...)
		ps := lintProseOf(t, paperNB(t, c.paper, cells...))
		if len(ps) != 1 || !strings.Contains(ps[0].Kind+": "+ps[0].Msg, c.want) {
			t.Errorf("%s: got %v, want one problem %q", c.name, ps, c.want)
		}
	}
	// The code reads one paper, the metadata declares none (or another).
	for _, paper := range []string{"", "tcm"} {
		cells := opening("cit")
		ps := lintProseOf(t, paperNB(t, paper, cells...))
		if len(ps) == 0 || ps[0].Kind != "paper" {
			t.Errorf("metadata paper %q, code cit: %v", paper, ps)
		}
	}
}

func TestLintHidden(t *testing.T) {
	c := lintCell("x()", nil, stdout("1\n"))
	c["metadata"].(map[string]any)["tags"] = []string{TagHideInput}
	if ps := lintProseOf(t, paperNB(t, "", c)); kinds(ps) != "hidden" {
		t.Errorf("hide-input without source_hidden: %v", ps)
	}
	c = lintCell("x()", map[string]any{"jupyter": map[string]any{"source_hidden": true}}, stdout("1\n"))
	if ps := lintProseOf(t, paperNB(t, "", c)); kinds(ps) != "hidden" {
		t.Errorf("source_hidden without the tag: %v", ps)
	}
	c = lintCell("x()", map[string]any{"jupyter": map[string]any{"source_hidden": true}}, stdout("1\n"))
	c["metadata"].(map[string]any)["tags"] = []string{TagHideCell}
	if ps := lintProseOf(t, paperNB(t, "", c)); kinds(ps) != "hidden" {
		t.Errorf("hide-cell with outputs shown: %v", ps)
	}
}

// TestLintOpening: today's layout (setup, a 92-line helper cell, the setting's 74-line cell, the
// retraining cell, the verdict table, ... and no abstract) fails; so do the near misses.
func TestLintOpening(t *testing.T) {
	helpers := strings.Repeat("// helper\n", 91) + `var P = notebook.FromEnv(root, "cit")`
	today := []map[string]any{
		mdCell("# Seed 001 — CIT\n\nThe paper proposes a loss."),
		mdCell("## Setup"),
		lintCell("!*go mod edit …\n!*go get …\n%env GOMLX_BACKEND=go", nil, stdout("Set: GOMLX_BACKEND=\"go\"\n")),
		lintCell(helpers, map[string]any{"dmlkit": map[string]any{"no_output": true}}),
		mdCell("## 1. The setting"),
		lintCell("%%\n"+strings.Repeat("row()\n", 73), nil, markdownOut("| | omniglot |\n|---|---|\n| runs | 100 |")),
	}
	ps := lintProseOf(t, paperNB(t, "cit", today...))
	var msgs []string
	for _, p := range ps {
		msgs = append(msgs, p.Kind+": "+p.Msg)
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"no cell tagged abstract", "no cell tagged first-result"} {
		if !strings.Contains(got, want) {
			t.Errorf("today's layout: want %q in\n%s", want, got)
		}
	}
	// Tagged, but the 92-line helper cell is shown before the first result.
	cells := opening("cit")
	cells[2] = lintCell(helpers, map[string]any{"dmlkit": map[string]any{"no_output": true}})
	if ps := lintProseOf(t, paperNB(t, "cit", cells...)); kinds(ps) != "layout,layout" || !strings.Contains(ps[0].Msg, "a 92-line code cell before the first result") {
		t.Errorf("a long visible cell first: %v", ps)
	}
	// The setting's long prose before the first result: more than one screen.
	cells = opening("cit")
	cells = append(cells[:4], append([]map[string]any{mdCell(strings.Repeat("A long paragraph about the setting. ", 150))}, cells[4:]...)...)
	if ps := lintProseOf(t, paperNB(t, "cit", cells...)); kinds(ps) != "layout" || !strings.Contains(ps[0].Msg, "more than one screen") {
		t.Errorf("a long opening: %v", ps)
	}
	// An abstract with a typed sentence and no computed counts.
	cells = opening("cit")
	cells[3] = tagged(mdCell("**Abstract.** Most claims held."), TagAbstract)
	if ps := lintProseOf(t, paperNB(t, "cit", cells...)); kinds(ps) != "layout" || !strings.Contains(ps[0].Msg, "verdict counts") {
		t.Errorf("a typed abstract: %v", ps)
	}
	// A first result that is prose only.
	cells = opening("cit")
	cells[5] = tagged(lintCell("%%\nfmt.Println(1)", nil, stdout("1\n")), TagFirstResult)
	if ps := lintProseOf(t, paperNB(t, "cit", cells...)); kinds(ps) != "layout" || !strings.Contains(ps[0].Msg, "no table or figure") {
		t.Errorf("a first result without a table: %v", ps)
	}
	// The first result before the abstract.
	cells = opening("cit")
	cells[3], cells[5] = cells[5], cells[3]
	if ps := lintProseOf(t, paperNB(t, "cit", cells...)); !strings.Contains(kinds(ps), "layout") {
		t.Errorf("first result before the abstract: %v", ps)
	}
}
