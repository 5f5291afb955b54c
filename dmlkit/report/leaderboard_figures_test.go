package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// bigBoard is a leaderboard of 22 methods with long labels (the size of issue 31's field), with
// records at both regimes: R@1 spread from 0.30 to 0.86 with overlapping seeds, OPIS over two
// decades, the pretrained ranking shuffled, one method not run at pretrained, one that did not
// train.
func bigBoard() (*sweep.Spec, []sweep.Record) {
	names := []string{
		"Contrastive (L2)", "Contrastive (cosine)", "Triplet (semi-hard)", "Margin (distance-weighted)", "Lifted structure",
		"N-pair", "Multi-similarity", "Circle", "ProxyNCA", "ProxyNCA++", "Proxy Anchor", "SoftTriple", "ArcFace", "CosFace",
		"Smooth-AP", "FastAP", "RS@k", "RS@k + SiMix", "Smooth-AP + TCM", "Contextual (Proxy Anchor)", "IDML (Proxy Anchor)", "CIT (Smooth-AP)",
	}
	origins := map[int]string{17: "rsk", 16: "rsk", 18: "tcm", 19: "contextual", 20: "idml", 21: "cit"}
	l := &sweep.LeaderboardSpec{Metrics: []string{"R@1", "MAP@R", "OPIS"}, Factors: map[string]float64{"R@1": 100, "MAP@R": 100, "OPIS": 1000},
		LowerBetter: []string{"OPIS"},
		Regimes:     []sweep.LeaderboardRegime{{Scale: "small", Label: "from scratch: small CNN, Omniglot 964/659"}, {Scale: "pretrained", Label: "ImageNet MobileNetV2, frozen, CIFAR-10 5/5"}}}
	var recs []sweep.Record
	for i, n := range names {
		id := fmt.Sprintf("m%02d", i)
		l.Methods = append(l.Methods, sweep.LeaderboardMethod{ID: id, Label: n, Paper: "Someone et al., CVPR", Year: 2000 + i, Seeds: []string{"tcm"}, Origin: origins[i]})
		for si, sc := range []string{"small", "pretrained"} {
			if sc == "pretrained" && i == 5 {
				continue // not run
			}
			base := 0.30 + 0.025*float64(i)
			if si == 1 {
				base = 0.40 + 0.02*float64((i*7)%22)
			}
			for seed := range 5 {
				r1 := base + 0.01*float64((seed*3+i)%5-2)
				train := 0.9
				if i == 0 && si == 0 {
					train = 0.3 // did not train
				}
				recs = append(recs, sweep.Record{Hash: fmt.Sprintf("%s-%s-%d", sc, id, seed), Scale: sc, Seed: int64(seed), Config: map[string]any{"name": id},
					Metrics: sweep.Metrics{"R@1": r1, "MAP@R": r1 / 2, "OPIS": 0.0005 * math.Pow(1.25, float64((i*5)%22)) * (1 + 0.05*float64(seed%3)), sweep.TrainMetric: train}})
			}
		}
	}
	return &sweep.Spec{Paper: "big", Scales: map[string]map[string]any{"small": {}, "pretrained": {}}, Leaderboard: l}, recs
}

// checkFigure fails on layout problems and raw texts of a drawn chart.
func checkFigure(t *testing.T, name string, ch *plots.Chart) {
	t.Helper()
	problems, texts := plots.CheckLayout(ch, ch.Style)
	for _, p := range problems {
		t.Errorf("%s: %s", name, p)
	}
	if raw := sweep.RawTexts(strings.Join(texts, "\n")); len(raw) > 0 {
		t.Errorf("%s: raw texts %q", name, raw)
	}
}

// TestLeaderboardFigures draws the three figures of the 22-method board and of the small fixture:
// no overlapping, clipped or small text, no legend over data, no raw keys; the leaderboard lists
// the ranked methods best first, and the rank agreement's title carries τ-b and its interval.
func TestLeaderboardFigures(t *testing.T) {
	s, recs := bigBoard()
	for _, sc := range []string{"small", "pretrained"} {
		lb, err := BuildLeaderboard(s, sc, recs)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := LeaderboardFigure(lb, s.Labels)
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, sc+" leaderboard", ch)
		_, texts := plots.CheckLayout(ch, ch.Style)
		if sc == "small" && !slices.Contains(texts, "Contrastive (L2) (did not train)") {
			t.Errorf("small leaderboard: no \"did not train\" label among %q", texts)
		}
		pc, ok, err := ParetoFigure(lb, s.Labels)
		if err != nil || !ok {
			t.Fatalf("pareto: ok %v, err %v", ok, err)
		}
		checkFigure(t, sc+" pareto", pc)
		if _, texts := plots.CheckLayout(pc, pc.Style); !slices.Contains(texts, "OPIS (× 1000, lower is better, log scale)") {
			t.Errorf("%s pareto: OPIS spans two decades, want a log axis; texts %q", sc, texts)
		}
	}
	ra, err := Agreement(s, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.Methods) != 21 {
		t.Errorf("%d common methods, want 21", len(ra.Methods))
	}
	ac, err := AgreementFigure(ra, s.Leaderboard, s.Labels)
	if err != nil {
		t.Fatal(err)
	}
	checkFigure(t, "rank agreement", ac)
	if _, texts := plots.CheckLayout(ac, ac.Style); !slices.Contains(texts, "Kendall's "+ra.TauText()+" (95 % CI)") {
		t.Errorf("rank agreement: no title with τ among %q", texts)
	}

	fs, frecs := loadBoard(t)
	lb, err := BuildLeaderboard(fs, "small", frecs)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := LeaderboardFigure(lb, fs.Labels)
	if err != nil {
		t.Fatal(err)
	}
	checkFigure(t, "fixture leaderboard", ch)
	_, texts := plots.CheckLayout(ch, ch.Style)
	var order []string
	for _, tx := range texts {
		if strings.HasSuffix(tx, "loss") || strings.HasSuffix(tx, "(did not train)") {
			order = append(order, tx)
		}
	}
	// The y ticks in row order, top to bottom: the best first.
	if want := []string{"Beta loss", "Alpha loss", "Epsilon loss", "Gamma loss (did not train)"}; !slices.Equal(order, want) {
		t.Errorf("leaderboard rows %q, want %q (top to bottom)", order, want)
	}
	pt, err := BuildLeaderboard(fs, "pretrained", frecs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LeaderboardFigure(pt, fs.Labels); !errors.Is(err, ErrNoRecords) {
		t.Errorf("a regime without runs: err %v, want ErrNoRecords", err)
	}
}

// TestRenderLeaderboardFigures writes the figures of both regimes and their README captions,
// byte-identically on a second run; the rank agreement goes to the first regime's directory.
func TestRenderLeaderboardFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("renders PNG, SVG and PDF")
	}
	s, recs := bigBoard()
	dir := t.TempDir()
	small, pre := filepath.Join(dir, "big"), filepath.Join(dir, "big", "pretrained")
	render := func() map[string][]byte {
		out := map[string][]byte{}
		for _, c := range []struct{ scale, dir string }{{"small", small}, {"pretrained", pre}} {
			per, agree, err := RenderLeaderboardFigures(nil, s, recs, c.scale, c.dir, small, "png", "svg", "pdf")
			if err != nil {
				t.Fatal(err)
			}
			if len(agree) != 1 || agree[0].Err != nil || agree[0].Name != FigRankAgreement {
				t.Fatalf("%s: rank agreements %+v, want one, %s", c.scale, agree, FigRankAgreement)
			}
			results := per
			if c.dir == small {
				results = append(results, agree...)
			}
			for _, r := range results {
				if r.Err != nil || len(r.Files) != 3 {
					t.Fatalf("%s %s: files %v, err %v", c.scale, r.Name, r.Files, r.Err)
				}
				for _, f := range r.Files {
					out[f], _ = os.ReadFile(f)
				}
			}
			readme, err := WriteFigureReadme(nil, s, results, c.dir)
			if err != nil {
				t.Fatal(err)
			}
			out[readme], _ = os.ReadFile(readme)
		}
		return out
	}
	first := render()
	second := render()
	if len(first) != 3*3+2*3+2 {
		t.Errorf("%d files, want 17 (leaderboard and Pareto per regime, rank agreement once, 3 formats; 2 READMEs)", len(first))
	}
	for f, b := range first {
		if !bytes.Equal(b, second[f]) {
			t.Errorf("%s differs on a second run", f)
		}
	}
	md := string(first[filepath.Join(small, "README.md")])
	for _, w := range []string{"## leaderboard\n\n![leaderboard](leaderboard.png)", "## leaderboard_pareto", "## rank_agreement", "B = 2000 replicates", "Scale: small. Page width."} {
		if !strings.Contains(md, w) {
			t.Errorf("README lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "Other files") {
		t.Errorf("README lists the leaderboard's figures as other files:\n%s", md)
	}
}

// TestDumpLeaderboardFigures writes the 22-method board's figures to $DMLKIT_DUMP for a look.
func TestDumpLeaderboardFigures(t *testing.T) {
	dir := os.Getenv("DMLKIT_DUMP")
	if dir == "" {
		t.Skip("set DMLKIT_DUMP to a directory")
	}
	s, recs := bigBoard()
	for _, sc := range []string{"small", "pretrained"} {
		if _, _, err := RenderLeaderboardFigures(nil, s, recs, sc, filepath.Join(dir, sc), dir, "png"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParetoLeadingCluster: the x axis of the Pareto figure spans three times the leading cluster.
// In bigBoard's small regime method i's mean R@1 is 30 + 2.5·i % (its seed offsets cancel), so
// the leader has 82.5, the cluster within 5 % (≥ 78.375) is methods 20 and 21, 2.5 wide, and the
// axis starts at 82.5 − 3·2.5 = 75: methods 18-21 are drawn, the 18 others listed as off the axis.
func TestParetoLeadingCluster(t *testing.T) {
	s, recs := bigBoard()
	lb, err := BuildLeaderboard(s, "small", recs)
	if err != nil {
		t.Fatal(err)
	}
	pc, ok, err := ParetoFigure(lb, s.Labels)
	if err != nil || !ok {
		t.Fatalf("pareto: ok %v, err %v", ok, err)
	}
	checkFigure(t, "small pareto", pc)
	_, texts := plots.CheckLayout(pc, pc.Style)
	off := 0
	for _, tx := range texts {
		if strings.Contains(tx, "(off the axis") {
			off++
			for _, drawn := range []string{"Smooth-AP + TCM", "Contextual (Proxy Anchor)", "IDML (Proxy Anchor)", "CIT (Smooth-AP)"} {
				if strings.HasPrefix(tx, drawn+" (off") {
					t.Errorf("%q is in the leading cluster's span but listed off the axis", tx)
				}
			}
		}
	}
	if off != 18 || !slices.Contains(texts, "RS@k + SiMix (off the axis: R@1 72.5, OPIS 36)") {
		t.Errorf("%d methods off the axis, want 18, RS@k + SiMix (72.5) among them (texts %q)", off, texts)
	}
	if pc.Plot.X.Min > 75 || pc.Plot.X.Min < 70 {
		t.Errorf("x axis from %.2f, want just below 75", pc.Plot.X.Min)
	}
}
