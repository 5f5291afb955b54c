package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Prose only from records. A README states no verdict and no result number by hand: results reach
// its prose only through the generated blocks that `dmlkit tables` / `dmlkit summary` (and
// `gpucheck readme`) write from the stored records, so a change of the records or of the judging
// rules cannot leave a typed sentence contradicting the rows beside it.
//
// TestProseOnlyFromRecords checks the hand-written prose of proseDocs. What it checks is the file
// with these parts blanked out (line numbers kept):
//
//   - generated blocks: from a line holding "<!-- dmlkit:NAME:begin" to the line holding
//     "<!-- dmlkit:NAME:end -->", both included (an unclosed block is itself an error);
//   - fenced code: from a line starting with ``` or ~~~ (after up to 3 spaces) to the closing fence;
//   - inline code spans (`…`, “…“) and HTML comments.
//
// The rest fails, naming file:line, when it has
//
//	(a) a verdict word: "held", "contradicted"/"contradict(s|ing)", "inconclusive" or "did not
//	    train", in any case, as a word. "held out" / "held-out" (a split of the training classes)
//	    is not a verdict. A sentence that explains the verdict rule names the verdicts as code
//	    (`held`, `contradicted`, `inconclusive`, `the method did not train here`): a verdict's
//	    name is an identifier of the rule, a bare word in prose is a verdict. There is no
//	    allowlist of sentences;
//	(b) a result-like number (resultPatterns):
//	    - a percentage with a decimal point, "52.7 %", "57.3%";
//	    - "±" beside a digit, "44.95 ± 2.61";
//	    - a signed decimal, "+1.8", "−2.9", "-0.3" (not inside a word or a number: "m0.9-0.5",
//	      "1.6e-2" pass);
//	    - an interval of two decimals, "[−5.5, −0.3]";
//	    - a rank correlation or metric set to a number ("=", "≈", ":", "of", "is", "was"):
//	      "τ-b = 0.68", "Kendall's τ = …", "Spearman's ρ ≈ …", "R@1 = …", "MAP@R: …", "OPIS of 6.0",
//	      "mAP is 50" (a bare τ or γ is a hyper-parameter: "τ = 5" passes);
//	    - a decimal followed by "points" or "pp", "1.8 points";
//	    - "reach(es|ed)" followed by a percentage, "reaches 63 %";
//	    - a count of verdicts, "7 verdicts", "3 of 12 verdicts".
//
// The protocol's numbers pass by rule because they are integers or not of these shapes: batch
// 128, 10 % of the training classes, 5 seeds, 2 epochs, learning rates 1.6e-2, margins (0.9, 0.5),
// grids [16, 32, 64], the paper's "up to 12 points". A decimal percentage the paper gives must be
// written in a generated block (paper.yaml's numbers are printed beside ours by `dmlkit tables`),
// not typed.
//
// The README.md at the top is checked up to its "## Quick start" heading (the verdicts and the
// benchmark); its performance measurements (step times, memory, GPU ratios) are measurements of the
// code, not results of the papers, and lie below.
func TestProseOnlyFromRecords(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, d := range proseDocs {
		b, err := os.ReadFile(filepath.Join(root, d.path))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if d.until != "" {
			i := strings.Index(text, "\n"+d.until+"\n")
			if i < 0 {
				t.Fatalf("%s: no heading %q, where the checked part ends", d.path, d.until)
			}
			text = text[:i+1]
		}
		for _, p := range proseProblems(text) {
			t.Errorf("%s:%d: %s", d.path, p.line, p.msg)
		}
	}
}

// proseDocs are the READMEs TestProseOnlyFromRecords checks, each up to the line until ("" for the
// whole file).
var proseDocs = []struct{ path, until string }{
	{"README.md", "## Quick start (a fresh machine with Go ≥ 1.21 and internet access to the Go module proxy)"},
	{"reproductions/README.md", ""},
	{"reproductions/tcm/README.md", ""},
	{"reproductions/cit/README.md", ""},
	{"reproductions/idml/README.md", ""},
	{"reproductions/rsk/README.md", ""},
	{"reproductions/contextual/README.md", ""},
	{"reproductions/benchmark/README.md", ""},
}

type proseProblem struct {
	line int
	msg  string
}

var (
	genBegin   = regexp.MustCompile(`<!-- dmlkit:([a-z0-9_-]+):begin`)
	fenceLine  = regexp.MustCompile("^ {0,3}(```|~~~)")
	codeSpan   = regexp.MustCompile("``[^`]+``|`[^`\n]+`")
	htmlNote   = regexp.MustCompile(`(?s)<!--.*?-->`)
	notNewline = regexp.MustCompile(`[^\n]`)
	verdictRe  = regexp.MustCompile(`(?i)\b(held|contradict(?:s|ed|ing)?|inconclusive|did not train)\b`)
	heldOutRe  = regexp.MustCompile(`(?i)^held(?:\s+|-)out\b`)
	num        = `\d+(?:[.,]\d+)*`
	dec        = `\d+\.\d+`
	signedDec  = `[+−-]\d+\.\d+`
	resultsRes = []struct {
		what string
		re   *regexp.Regexp
	}{
		{"a percentage with a decimal point", regexp.MustCompile(dec + `\s?%`)},
		{"a ± over numbers", regexp.MustCompile(`\d\s*±|±\s*\d`)},
		{"a signed decimal (an effect)", regexp.MustCompile(`(?:^|[^\w.@])` + signedDec)},
		{"an interval of decimals", regexp.MustCompile(`\[\s*[+−-]?` + dec + `\s*,\s*[+−-]?` + dec + `\s*\]`)},
		{"a statistic or metric set to a number", regexp.MustCompile(`(?:τ-b|\b(?:Kendall|Spearman)(?:'s)?\s+[τρ]|\b(?:R@\d+|MAP@R|mAP|OPIS|NMI|AMI|R-Precision))\s*(?:=|≈|:|\bof\b|\bis\b|\bwas\b)\s*[+−-]?` + num)},
		{"a decimal in points", regexp.MustCompile(dec + `\s*(?:points?|pp)\b`)},
		{"a level reached", regexp.MustCompile(`(?i)\breach(?:es|ed|ing)?\s+(?:about\s+|~)?` + num + `\s?%`)},
		{"a count of verdicts", regexp.MustCompile(`(?i)\b\d+\s+(?:of\s+(?:the\s+)?\d+\s+)?verdicts?\b`)},
	}
)

// proseStrip blanks the parts of a Markdown text that are not hand-written prose (generated blocks,
// fenced code, inline code, HTML comments), keeping every newline so that offsets keep their line.
func proseStrip(text string) (string, []proseProblem) {
	var probs []proseProblem
	lines := strings.Split(text, "\n")
	open, fence := "", ""
	for i, l := range lines {
		switch {
		case open != "":
			if strings.Contains(l, "<!-- dmlkit:"+open+":end -->") {
				open = ""
			}
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(strings.TrimSpace(l), fence) {
				fence = ""
			}
			lines[i] = ""
		case genBegin.MatchString(l):
			open = genBegin.FindStringSubmatch(l)[1]
			lines[i] = ""
		case fenceLine.MatchString(l):
			fence = fenceLine.FindStringSubmatch(l)[1]
			lines[i] = ""
		}
	}
	if open != "" {
		probs = append(probs, proseProblem{len(lines), fmt.Sprintf("generated block %q is not closed", open)})
	}
	s := strings.Join(lines, "\n")
	blank := func(m string) string { return notNewline.ReplaceAllString(m, " ") }
	s = htmlNote.ReplaceAllStringFunc(s, blank)
	s = codeSpan.ReplaceAllStringFunc(s, blank)
	return s, probs
}

// proseProblems is the check of TestProseOnlyFromRecords on one Markdown text.
func proseProblems(text string) []proseProblem {
	s, probs := proseStrip(text)
	lineOf := func(off int) int { return strings.Count(s[:off], "\n") + 1 }
	for _, m := range verdictRe.FindAllStringIndex(s, -1) {
		if heldOutRe.MatchString(s[m[0]:]) {
			continue
		}
		probs = append(probs, proseProblem{lineOf(m[0]), fmt.Sprintf("verdict word %q in hand-written prose (results reach prose only through generated blocks; name a verdict of the rule as code)", s[m[0]:m[1]])})
	}
	for _, r := range resultsRes {
		for _, m := range r.re.FindAllStringIndex(s, -1) {
			probs = append(probs, proseProblem{lineOf(m[0]), fmt.Sprintf("%s, %q, in hand-written prose (results reach prose only through generated blocks)", r.what, strings.TrimSpace(s[m[0]:m[1]]))})
		}
	}
	return probs
}

// TestProseChecker: the checker of TestProseOnlyFromRecords on hand-written snippets, so that the
// test cannot pass by finding nothing.
func TestProseChecker(t *testing.T) {
	gen := func(name, body string) string {
		return "<!-- dmlkit:" + name + ":begin (generated by `dmlkit tables`; do not edit) -->\n" + body + "\n<!-- dmlkit:" + name + ":end -->\n"
	}
	for _, c := range []struct {
		name string
		text string
		want []int // lines of the problems, in the checker's order
	}{
		{"a verdict sentence", "# T\n\nAll 12 C1 claims contradicted.\n", []int{3}},
		{"held as a verdict", "TCM keeps R@1 above TCM′ (held in both).\n", []int{1}},
		{"inconclusive, capitalised", "Inconclusive on RS@k.\n", []int{1}},
		{"did not train", "The contextual loss did not train here.\n", []int{1}},
		{"a typed percentage", "Fine-tuning lifts test R@1 from\n52.7 → 35.9 %.\n", []int{2}},
		{"a mean over seeds", "IDML reaches 50.2 ± 0.8 %, 3 seeds each.\n", []int{1, 1}},
		{"an effect with its interval", "Smooth-AP −2.9 [−5.5, −0.3] ×1e-3.\n", []int{1, 1, 1, 1}},
		{"a τ-b", "the two rankings agree with τ-b = 0.68.\n", []int{1}},
		{"a Kendall's τ", "Kendall's τ ≈ 0.7\n", []int{1}},
		{"a metric set to a number", "its R@1 of 36.46 on the test classes\n", []int{1}},
		{"points", "a gain of 1.8 points\n", []int{1}},
		{"an integer level reached", "RS@k's margin reaches 63 %.\n", []int{1}},
		{"verdicts counted", "7 verdicts changed when the rules came in.\n", []int{1}},
		{"a number split over lines", "RS@k 72.8 ±\n1.2 and Smooth-AP\n", []int{1}},
		{"an unclosed block", "<!-- dmlkit:claims:begin -->\nheld\n", []int{3}},
		{"the protocol", "Omniglot, the small CNN with block widths [16, 32, 64], Adam for 2 epochs of batch 128, " +
			"selected on 10 % of the training characters held out (held-out classes), 5 seeds, margins (0.9, 0.5), " +
			"rates 1.6e-2 and 4e-3, IDML at τ = 5, γ = 0, m0.9-0.5, Tables 2–9, the paper's \"up to 12 points\", MAP@R at k = 10.\n", nil},
		{"the rule, its verdicts as code", "A claim is `held` when its interval excludes zero, `contradicted` when " +
			"it excludes zero the other way, `inconclusive` otherwise.\n", nil},
		{"a generated block", "# T\n\n" + gen("claims", "| c1 | held | +1.8 [+0.6, +3.0] | 57.3 % | τ-b = 0.68 |") + "\nafter\n", nil},
		{"a code fence", "```sh\n# held: 57.3 %, +1.8 [+0.6, +3.0]\n```\n~~~\ncontradicted\n~~~\n", nil},
		{"an HTML comment", "<!-- held 57.3 % -->\n", nil},
		{"a code span", "`dmlkit tables` writes `held` and `57.3 %`.\n", nil},
	} {
		var got []int
		for _, p := range proseProblems(c.text) {
			got = append(got, p.line)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: problems on lines %v, want %v: %v", c.name, got, c.want, proseProblems(c.text))
		}
	}
}
