package plots

import (
	"slices"
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
