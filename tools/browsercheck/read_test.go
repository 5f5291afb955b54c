package main

import (
	"strings"
	"testing"
)

func TestPageVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   PageState
		want string // substring of the error; "" means it passes
	}{
		// The TCM export as committed before the reading check: 47,388 px, its Appendix A at 40,230.
		{"results too long", PageState{Kind: "notebook", Height: 47388, Appendix: 40230}, "its results take 40230 px, up to its first Appendix heading"},
		{"results within, appendices long", PageState{Kind: "notebook", Height: 36000, Appendix: 19999}, ""},
		{"no appendix: the whole page counts", PageState{Kind: "notebook", Height: 20001, Appendix: -1}, "the whole page (no Appendix heading)"},
		{"a README is not held to it", PageState{Kind: "readme", Height: 47387, Appendix: -1}, ""},
		// reproductions/rsk/README.md: its 10-column claims table scrolls sideways in GitHub's column.
		{"wide table", PageState{Kind: "readme", Height: 40199, Appendix: -1, WideTables: []string{"id the paper's claim where regime kind arms: mean : 1527 px"}}, "1 tables wider than the text"},
		{"image missing", PageState{Kind: "readme", Appendix: -1, BadImages: []string{"figures/summary/central_claims.png"}}, "1 images did not load"},
		{"label cut", PageState{Kind: "notebook", Appendix: -1, Elided: []string{"ResNet-50 pretrai…"}}, "1 table cells cut"},
	} {
		err := tc.st.Verdict()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want pass", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestPageName(t *testing.T) {
	for in, want := range map[string]string{
		"notebooks/cit.html":              "cit",
		"README.md":                       "README",
		"reproductions/cit/README.md":     "reproductions-cit-README",
		"./notebooks/../notebooks/x.html": "x",
	} {
		if got := pageName(in); got != want {
			t.Errorf("pageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 47387.6: "47,388", 1234567: "1,234,567", -2500: "-2,500"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestRenderReadme: GitHub Flavored Markdown (a table, raw HTML) in GitHub's column, relative
// images resolved from the README's directory.
func TestRenderReadme(t *testing.T) {
	md := "# Title\n\n| a | b |\n|---|--:|\n| x | 1 |\n\n<details><summary>more</summary>\n\nhidden\n\n</details>\n\n![fig](figures/a.png)\n"
	b, err := RenderReadme([]byte(md), "/repo/reproductions/cit")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<base href="file:///repo/reproductions/cit/">`,
		`<article class="markdown-body">`,
		"width: 980px",
		`<th>a</th>`,
		`<td style="text-align:right">1</td>`, // goldmark's alignment, as GitHub's
		"<details><summary>more</summary>",
		`<img src="figures/a.png" alt="fig">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("rendered README lacks %q:\n%s", want, page)
		}
	}
}

func TestReadReport(t *testing.T) {
	got := ReadReport([]PageState{
		{Name: "notebooks/cit.html", Kind: "notebook", Height: 36463, Appendix: 28969, Results: 28969, Images: 13, Problems: []string{"its results take 28969 px"}},
		{Name: "README.md", Kind: "readme", Height: 28017, Appendix: -1, Results: 28017, Images: 1},
		{Name: "reproductions/rsk/README.md", Kind: "readme", Height: 40199, Appendix: -1, Results: 40199, WideTables: []string{"a", "b"},
			Problems: []string{"2 tables wider than the text: id the paper's claim: 1527 px | claim regime: 1070 px"}},
	})
	for _, want := range []string{
		"| `notebooks/cit.html` | 36,463 | 28,969 | 13 | 0 | its results take 28969 px |",
		"| `README.md` | 28,017 | — | 1 | 0 | reads |",
		"at most 20,000 px",
		// A "|" inside a verdict would split its cell.
		"| `reproductions/rsk/README.md` | 40,199 | — | 0 | 2 | 2 tables wider than the text: id the paper's claim: 1527 px \\| claim regime: 1070 px |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ReadReport lacks %q:\n%s", want, got)
		}
	}
}
