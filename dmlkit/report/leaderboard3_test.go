package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// threeRegimeRecords are the records of TestThreeRegimes: four methods ranked by test R@1 in the
// three regimes of testdata/leaderboard3 as
//
//	          small  pretrained  converged
//	alpha       1        2          3
//	beta        2        1          4
//	gamma       3        4          1
//	delta       4        3          2
//
// (Epsilon is run nowhere). A method of rank k has the seeds' R@1 {1 − 0.2k, +0.01, +0.02}: the
// ranks' seed ranges never overlap, so every bootstrap replicate ranks the methods alike and each
// interval is its τ-b; every method trains (train R@1 0.9). Kendall's τ-b by hand, over the 6
// pairs of methods (no ties: τ-b = (C − D) / 6):
//
//	small–pretrained      discordant (alpha, beta), (gamma, delta); the other 4 concordant: (4 − 2) / 6 = 1/3
//	small–converged       concordant (alpha, beta), (gamma, delta); the other 4 discordant: (2 − 4) / 6 = −1/3
//	pretrained–converged  every pair discordant: −1
func threeRegimeRecords() []sweep.Record {
	ids := []string{"alpha", "beta", "gamma", "delta"}
	seeds := func(ranks ...int) [][]float64 {
		var out [][]float64
		for _, k := range ranks {
			v := 1 - 0.2*float64(k)
			out = append(out, []float64{v, v + 0.01, v + 0.02})
		}
		return out
	}
	recs := boardRecords("small", ids, seeds(1, 2, 3, 4))
	recs = append(recs, boardRecords("pretrained", ids, seeds(2, 1, 4, 3))...)
	return append(recs, boardRecords("converged", ids, seeds(3, 4, 1, 2))...)
}

// TestThreeRegimes: with a third regime (testdata/leaderboard3: small, pretrained, converged) the
// rank agreement is computed for each pair in the spec's order, with τ-b worked by hand
// (threeRegimeRecords); the first pair keeps the file name rank_agreement, each further pair is
// rank_agreement-<a>-<b> beside it; the README summary has a line per pair naming it; the figure
// captions name the two regimes. The outputs of the two-regime fixture (testdata/leaderboard) on
// the same records are unchanged: its rank_agreement table and figure are byte-identical to the
// three-regime spec's first pair, and its summary and caption keep "the two regimes".
func TestThreeRegimes(t *testing.T) {
	s3, err := sweep.Load("testdata/leaderboard3/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := loadBoard(t)
	recs := threeRegimeRecords()

	ras, err := Agreements(s3, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		a, b, name, text string
		tau              float64
		header           string
	}{
		{"small", "pretrained", "rank_agreement", "τ-b = 0.33 [0.33, 0.33]", 1.0 / 3,
			"| method | rank: from scratch, Omniglot | rank: pretrained, CIFAR-10 |"},
		{"small", "converged", "rank_agreement-small-converged", "τ-b = −0.33 [−0.33, −0.33]", -1.0 / 3,
			"| method | rank: from scratch, Omniglot | rank: converged, frozen |"},
		{"pretrained", "converged", "rank_agreement-pretrained-converged", "τ-b = −1.00 [−1.00, −1.00]", -1,
			"| method | rank: pretrained, CIFAR-10 | rank: converged, frozen |"},
	}
	if len(ras) != len(want) {
		t.Fatalf("%d rank agreements, want %d (every pair of three regimes)", len(ras), len(want))
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	for i, w := range want {
		ra := ras[i]
		if ra.Regimes[0].Scale != w.a || ra.Regimes[1].Scale != w.b || ra.Name != w.name {
			t.Errorf("pair %d: %s–%s named %q, want %s–%s named %q", i, ra.Regimes[0].Scale, ra.Regimes[1].Scale, ra.Name, w.a, w.b, w.name)
		}
		if len(ra.Methods) != 4 || !near(ra.Tau, w.tau) || !near(ra.Lo, w.tau) || !near(ra.Hi, w.tau) || ra.Used != ra.B {
			t.Errorf("%s: %d methods, τ-b %v [%v, %v] (%d of %d replicates); want 4, %v with a point interval", w.name, len(ra.Methods), ra.Tau, ra.Lo, ra.Hi, ra.Used, ra.B, w.tau)
		}
		if len(ra.Trained) != 4 || !near(ra.TrainedTau, w.tau) {
			t.Errorf("%s: over the trained methods %d methods, τ-b %v; want 4, %v", w.name, len(ra.Trained), ra.TrainedTau, w.tau)
		}
		if got := AgreementName(s3.Leaderboard, w.a, w.b); got != w.name {
			t.Errorf("AgreementName(%s, %s) = %q, want %q", w.a, w.b, got, w.name)
		}
	}
	if first, err := Agreement(s3, recs); err != nil || first.Name != FigRankAgreement || first.Tau != ras[0].Tau {
		t.Errorf("Agreement: %+v, %v; want the first pair", first, err)
	}

	// Tables: at any of the three regimes' scales every pair's table goes to agreeDir.
	dir := t.TempDir()
	var tables map[string][]byte
	for _, scale := range []string{"small", "pretrained", "converged"} {
		_, files, err := RenderLeaderboard(nil, s3, recs, scale, filepath.Join(dir, scale), dir)
		if err != nil {
			t.Fatal(err)
		}
		wantFiles := []string{filepath.Join(dir, scale, "leaderboard.md"), filepath.Join(dir, scale, "leaderboard.tex")}
		for _, w := range want {
			wantFiles = append(wantFiles, filepath.Join(dir, w.name+".md"))
		}
		if !slices.Equal(files, wantFiles) {
			t.Errorf("%s: files %v, want %v", scale, files, wantFiles)
		}
		got := map[string][]byte{}
		for _, f := range files[2:] {
			got[f], _ = os.ReadFile(f)
		}
		if tables != nil {
			for f, b := range got {
				if !bytes.Equal(b, tables[f]) {
					t.Errorf("%s differs when written at scale %s", f, scale)
				}
			}
		}
		tables = got
	}
	for _, w := range want {
		md := string(tables[filepath.Join(dir, w.name+".md")])
		for _, s := range []string{"Kendall's " + w.text, w.header} {
			if !strings.Contains(md, s) {
				t.Errorf("%s.md lacks %q:\n%s", w.name, s, md)
			}
		}
	}
	// The two-regime spec on the same records writes its table and the first pair's, unchanged.
	dir2 := t.TempDir()
	_, files2, err := RenderLeaderboard(nil, s2, recs, "small", filepath.Join(dir2, "small"), dir2)
	if err != nil {
		t.Fatal(err)
	}
	if want2 := []string{filepath.Join(dir2, "small", "leaderboard.md"), filepath.Join(dir2, "small", "leaderboard.tex"), filepath.Join(dir2, "rank_agreement.md")}; !slices.Equal(files2, want2) {
		t.Errorf("two regimes: files %v, want %v", files2, want2)
	}
	for _, f := range []string{filepath.Join("small", "leaderboard.md"), "rank_agreement.md"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(dir2, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: two regimes and three differ:\n%s\n---\n%s", f, b, a)
		}
	}

	// The README summary: a line per pair, naming it; with two regimes the committed wording.
	by := map[string][]sweep.Record{}
	for _, r := range recs {
		by[r.Scale] = append(by[r.Scale], r)
	}
	sum3, err := LeaderboardSummary(s3, by)
	if err != nil {
		t.Fatal(err)
	}
	lines3 := strings.Split(strings.TrimSuffix(sum3, "\n"), "\n")
	if len(lines3) != 6 {
		t.Fatalf("three regimes: %d summary lines, want 6 (3 regimes, 3 pairs):\n%s", len(lines3), sum3)
	}
	for i, w := range []string{
		"- Rank agreement of **from scratch, Omniglot** and **pretrained, CIFAR-10** over 4 methods: Kendall's τ-b = 0.33 [0.33, 0.33] (95 % bootstrap over seeds, B = 2000); τ-b = 0.33 [",
		"- Rank agreement of **from scratch, Omniglot** and **converged, frozen** over 4 methods: Kendall's τ-b = −0.33 [−0.33, −0.33] (95 % bootstrap over seeds, B = 2000); τ-b = −0.33 [",
		"- Rank agreement of **pretrained, CIFAR-10** and **converged, frozen** over 4 methods: Kendall's τ-b = −1.00 [−1.00, −1.00] (95 % bootstrap over seeds, B = 2000); τ-b = −1.00 [",
	} {
		if !strings.HasPrefix(lines3[3+i], w) || !strings.HasSuffix(lines3[3+i], "over the 4 methods that trained in both regimes (95 % bootstrap over methods and seeds).") {
			t.Errorf("summary line %d = %q, want it to start with %q", 3+i, lines3[3+i], w)
		}
	}
	if !strings.HasPrefix(lines3[2], "- **converged, frozen** (4 of 5 methods run): 1. Gamma loss 81.0 [78.5, 83.5]") {
		t.Errorf("summary line 2 = %q, want the converged regime's top three", lines3[2])
	}
	sum2, err := LeaderboardSummary(s2, by)
	if err != nil {
		t.Fatal(err)
	}
	wantSum2 := lines3[0] + "\n" + lines3[1] + "\n" +
		strings.Replace(lines3[3], "of **from scratch, Omniglot** and **pretrained, CIFAR-10** over", "of the two regimes over", 1) + "\n"
	if sum2 != wantSum2 {
		t.Errorf("two regimes: summary\n%s\nwant\n%s", sum2, wantSum2)
	}

	// Figures: every pair's in agreeDir, captioned with its two regimes and its table's name;
	// the first pair's PNG byte-identical to the two-regime spec's, whose caption is unchanged.
	_, ags, err := RenderLeaderboardFigures(nil, s3, recs, "converged", filepath.Join(dir, "converged"), dir, "png")
	if err != nil {
		t.Fatal(err)
	}
	if len(ags) != 3 {
		t.Fatalf("%d rank agreement figures, want 3", len(ags))
	}
	for i, w := range want {
		r := ags[i]
		if r.Err != nil || r.Name != w.name || !slices.Equal(r.Files, []string{filepath.Join(dir, w.name+".png")}) {
			t.Errorf("figure %d: %s, files %v, err %v; want %s.png", i, r.Name, r.Files, r.Err, w.name)
		}
		labels := map[string]string{"small": "from scratch, Omniglot", "pretrained": "pretrained, CIFAR-10", "converged": "converged, frozen"}
		cap := "Rank agreement of " + labels[w.a] + " and " + labels[w.b] + " (tables: " + w.name + ".md): each method ranked in both, by its rank by mean test R@1 in the two regimes, " + labels[w.a] + " (x) and " + labels[w.b] + " (y);"
		if !strings.HasPrefix(r.Caption, cap) {
			t.Errorf("%s: caption %q, want it to start with %q", w.name, r.Caption, cap)
		}
	}
	per, ags, err := RenderLeaderboardFigures(nil, s3, recs, "small", filepath.Join(dir, "small"), filepath.Join(dir, "small"), "png")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := WriteFigureReadme(nil, s3, append(per, ags...), filepath.Join(dir, "small"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(readme); !strings.Contains(string(b), "## rank_agreement\n") || !strings.Contains(string(b), "## rank_agreement-small-converged\n") || !strings.Contains(string(b), "## rank_agreement-pretrained-converged\n") {
		t.Errorf("the first regime's figures README lacks a pair:\n%s", b)
	}
	_, ags2, err := RenderLeaderboardFigures(nil, s2, recs, "small", filepath.Join(dir2, "small"), dir2, "png")
	if err != nil {
		t.Fatal(err)
	}
	if len(ags2) != 1 || ags2[0].Err != nil || !strings.HasPrefix(ags2[0].Caption, "Rank agreement of the two regimes (tables: rank_agreement.md): each method ranked in both") {
		t.Fatalf("two regimes: figures %+v", ags2)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "rank_agreement.png"))
	b, _ := os.ReadFile(filepath.Join(dir2, "rank_agreement.png"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("rank_agreement.png: two regimes (%d bytes) and three (%d bytes) differ", len(b), len(a))
	}
}
