package plots

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestAgreement: ranks on both axes from 0.5 to n + 0.5 with a tick per rank, labels next to the
// points (or numbers with a key), the diagonal in the legend; ranks below 1 are refused.
func TestAgreement(t *testing.T) {
	pts := []Point{{X: 1, Y: 2, Label: "Alpha", Group: "A"}, {X: 2, Y: 1, Label: "Beta", Group: "B"}, {X: 3, Y: 3, Label: "Gamma", Group: "A"}}
	for _, numbered := range []bool{false, true} {
		ch, err := Agreement(DefaultStyle(), Labels{Title: "τ-b = 0.33", X: "rank, first", Y: "rank, second"}, pts, AgreementOptions{Numbered: numbered, DiagonalLabel: "equal ranks"})
		if err != nil {
			t.Fatal(err)
		}
		if ch.Plot.X.Min != 0.5 || ch.Plot.X.Max != 3.5 || ch.Plot.Y.Min != 0.5 || ch.Plot.Y.Max != 3.5 {
			t.Errorf("axes [%v, %v] × [%v, %v], want [0.5, 3.5] both", ch.Plot.X.Min, ch.Plot.X.Max, ch.Plot.Y.Min, ch.Plot.Y.Max)
		}
		problems, texts := CheckLayout(ch, ch.Style)
		if len(problems) > 0 {
			t.Errorf("numbered %v: %q", numbered, problems)
		}
		want := []string{"Alpha", "Beta", "Gamma", "equal ranks", "1", "2", "3"}
		for _, w := range want {
			if !slices.Contains(texts, w) {
				t.Errorf("numbered %v: no text %q among %q", numbered, w, texts)
			}
		}
	}
	if _, err := Agreement(DefaultStyle(), Labels{}, []Point{{X: 0, Y: 1, Label: "x"}}, AgreementOptions{}); err == nil {
		t.Error("rank 0 accepted")
	}
}

// TestForestNoZero: without the zero line the x range spans the rows' intervals only.
func TestForestNoZero(t *testing.T) {
	rows := []ForestRow{{Label: "a", Group: "g", X: 60, Lo: 55, Hi: 65}, {Label: "b", Group: "g", X: 70, Lo: 68, Hi: 72}}
	ch, err := ForestWith(DefaultStyle(), Labels{X: "R@1 (%)"}, rows, nil, ForestOptions{NoZero: true})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Plot.X.Min != 54.15 || ch.Plot.X.Max != 72.85 {
		t.Errorf("x range [%v, %v], want [54.15, 72.85] (55 … 72 padded by 5 %%)", ch.Plot.X.Min, ch.Plot.X.Max)
	}
	ch, err = Forest(DefaultStyle(), Labels{X: "effect"}, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Plot.X.Min >= 0 {
		t.Errorf("Forest: x min %v, want the zero line in range", ch.Plot.X.Min)
	}
}

// TestForestWrapsLongLabels: a label longer than Wrap runes is drawn whole on several lines (every
// word of it among the figure's texts, no "…"), the figure grows by the extra lines, and the
// layout check finds no overlapping or clipped text; without Wrap the same rows are one line each.
func TestForestWrapsLongLabels(t *testing.T) {
	long := "IDML · Margin (distance-weighted) + IDML vs Margin (distance-weighted) (R@1), pretrained, Omni-100"
	rows := []ForestRow{
		{Label: "TCM · RS@k + TCM vs RS@k (OPIS)", Group: "held", X: 1, Lo: 0.5, Hi: 1.5},
		{Label: long, Group: "held", X: -2, Lo: -3, Hi: -1},
		{Label: "CIT · CIT γ = 0.5 vs CIT γ = 1 (R@1)", Group: "held", X: 0.5, Lo: -1, Hi: 2},
	}
	flat, err := ForestWith(PageStyle(), Labels{X: "effect (%)"}, rows, nil, ForestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := ForestWith(PageStyle(), Labels{X: "effect (%)"}, rows, nil, ForestOptions{Wrap: 40})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ch.Style.Height-flat.Style.Height, 2*forestLineShare*forestRowHeight; math.Abs(float64(got-want)) > 1e-9 {
		t.Errorf("the wrapped figure is %v taller, want %v (two more lines of %v)", got, want, forestLineShare*forestRowHeight)
	}
	problems, texts := CheckLayout(ch, ch.Style)
	if len(problems) > 0 {
		t.Errorf("layout: %v", problems)
	}
	all := strings.Join(texts, " ")
	for _, w := range strings.Fields(long) {
		if !strings.Contains(all, w) {
			t.Errorf("word %q of the long label is not drawn (texts %q)", w, texts)
		}
	}
	if strings.Contains(all, "…") {
		t.Errorf("a label is cut: %q", texts)
	}
	if got := wrapLabel(long, 40); len(got) != 3 || strings.Join(got, " ") != long {
		t.Errorf("wrapLabel(%q, 40) = %q, want 3 lines that join back to it", long, got)
	}
}
