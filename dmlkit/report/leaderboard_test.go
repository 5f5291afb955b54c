package report

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// loadBoard loads the hand-made fixture testdata/leaderboard (spec and results/small.jsonl).
func loadBoard(t *testing.T) (*sweep.Spec, []sweep.Record) {
	t.Helper()
	s, err := sweep.Load("testdata/leaderboard/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	recs, rep, err := sweep.NewStore("testdata/leaderboard/results").Load()
	if err != nil || len(rep.Bad) > 0 || len(recs) != 20 {
		t.Fatalf("fixture: %d records, bad %q, err %v; want 20", len(recs), rep.Bad, err)
	}
	return s, recs
}

// TestTInterval: mean ± t(0.975, n − 1) · sd / √n, against values worked by hand.
//
//	n = 5, 0.60 … 0.68 by 0.02: mean 0.64, sd = √(0.001) = 0.0316228, se = 0.0141421, t = 2.7764451,
//	    half-width 0.0392648 → [0.6007352, 0.6792648]
//	n = 3, 0.50, 0.55, 0.60: mean 0.55, sd 0.05, se 0.0288675, t = 4.3026527, half-width 0.1242069
//	n = 2, 1 and 3: mean 2, sd √2, se 1, t = 12.7062047 → [−10.7062047, 14.7062047]
//	n = 1: no interval; n = 0: no mean
func TestTInterval(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name         string
		vals         []float64
		mean, lo, hi float64
	}{
		{"five", []float64{0.60, 0.62, 0.64, 0.66, 0.68}, 0.64, 0.6007352, 0.6792648},
		{"three", []float64{0.50, 0.55, 0.60}, 0.55, 0.4257931, 0.6742069},
		{"two", []float64{1, 3}, 2, -10.7062047, 14.7062047},
		{"one", []float64{0.7}, 0.7, nan, nan},
		{"none", nil, nan, nan, nan},
	} {
		t.Run(c.name, func(t *testing.T) {
			iv := TInterval(c.vals)
			same := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-6 }
			if !same(iv.Mean, c.mean) || !same(iv.Lo, c.lo) || !same(iv.Hi, c.hi) || iv.N != len(c.vals) {
				t.Errorf("TInterval(%v) = %+v, want mean %v [%v, %v], n %d", c.vals, iv, c.mean, c.lo, c.hi, len(c.vals))
			}
		})
	}
}

// TestKendallTauB: τ-b on hand examples, the concordant (C) and discordant (D) pairs and the ties
// counted by hand in the comments.
func TestKendallTauB(t *testing.T) {
	for _, c := range []struct {
		name string
		x, y []float64
		want float64
	}{
		// 6 pairs, all concordant: 6 / √(6·6)
		{"same order", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		// all discordant
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		// pairs (0,1) C, (0,2) C, (0,3) C, (1,2) tied in x, (1,3) C, (2,3) C: C 5, D 0, n1 1, n2 0 →
		// 5 / √(5·6) = 0.9128709
		{"tie in x", []float64{1, 2, 2, 3}, []float64{1, 3, 2, 4}, 5 / math.Sqrt(30)},
		// (0,1) tied in both, (0,2) C, (0,3) C, (1,2) C, (1,3) C, (2,3) D: C 4, D 1, n1 = n2 = 1 →
		// 3 / √(5·5) = 0.6
		{"tie in both", []float64{1, 1, 2, 3}, []float64{1, 1, 3, 2}, 0.6},
		// (0,1) D, (0,2) C, (0,3) D, (1,2) C, (1,3) tied in y, (2,3) D: C 2, D 3, n1 0, n2 1 →
		// −1 / √(6·5) = −0.1825742
		{"tie in y", []float64{1, 2, 3, 4}, []float64{3, 1, 4, 1}, -1 / math.Sqrt(30)},
		// every pair tied in x: undefined
		{"all tied", []float64{2, 2, 2}, []float64{1, 2, 3}, math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := KendallTauB(c.x, c.y)
			if math.IsNaN(c.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-c.want) > 1e-12 {
				t.Errorf("τ-b = %v, want %v", got, c.want)
			}
		})
	}
}

// TestRanks: best first, ties share their average rank; lower-is-better reverses the order.
func TestRanks(t *testing.T) {
	if got := Ranks([]float64{0.5, 0.7, 0.7, 0.1}, false); !slices.Equal(got, []float64{3, 1.5, 1.5, 4}) {
		t.Errorf("higher is better: %v, want [3 1.5 1.5 4]", got)
	}
	if got := Ranks([]float64{0.5, 0.7, 0.7, 0.1}, true); !slices.Equal(got, []float64{2, 3.5, 3.5, 1}) {
		t.Errorf("lower is better: %v, want [2 3.5 3.5 1]", got)
	}
}

// TestBootstrapTau: well-separated per-seed values in the same order in both regimes give τ = 1
// in every replicate, so the interval is [1, 1]; in the reversed order [−1, −1]; overlapping values
// give a proper interval, the same on every call, and another one with another generator seed.
func TestBootstrapTau(t *testing.T) {
	var a, same, rev [][]float64
	for i := range 5 {
		v := []float64{10 * float64(i), 10*float64(i) + 1, 10*float64(i) + 2}
		a = append(a, v)
		same = append(same, []float64{100 + 10*float64(i), 101 + 10*float64(i)})
		rev = append(rev, []float64{-10 * float64(i), -10*float64(i) + 1, -10*float64(i) + 2, -10*float64(i) + 0.5})
	}
	if lo, hi, used := BootstrapTau(a, same, 500, 1); lo != 1 || hi != 1 || used != 500 {
		t.Errorf("same order: [%v, %v] from %d replicates, want [1, 1] from 500", lo, hi, used)
	}
	if lo, hi, used := BootstrapTau(a, rev, 500, 1); lo != -1 || hi != -1 || used != 500 {
		t.Errorf("reversed: [%v, %v] from %d replicates, want [−1, −1] from 500", lo, hi, used)
	}
	noisy := [][]float64{{1, 5, 3}, {2, 4, 6}, {3, 1, 2}, {5, 6, 1}}
	noisy2 := [][]float64{{2, 1, 6}, {3, 5, 2}, {1, 6, 4}, {4, 2, 5}}
	lo1, hi1, _ := BootstrapTau(noisy, noisy2, 2000, sweep.BootstrapSeed)
	lo2, hi2, _ := BootstrapTau(noisy, noisy2, 2000, sweep.BootstrapSeed)
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("not deterministic: [%v, %v] then [%v, %v]", lo1, hi1, lo2, hi2)
	}
	if !(lo1 < hi1) || lo1 < -1 || hi1 > 1 {
		t.Errorf("overlapping values: interval [%v, %v], want a proper interval inside [−1, 1]", lo1, hi1)
	}
	lo3, hi3, _ := BootstrapTau(noisy, noisy2, 2000, sweep.BootstrapSeed+1)
	if lo3 == lo1 && hi3 == hi1 {
		t.Logf("another seed gave the same interval [%v, %v] (possible with 4 methods)", lo3, hi3)
	}
}

// TestQuantile: linear interpolation between order statistics, h = (n − 1) p.
func TestQuantile(t *testing.T) {
	xs := []float64{0, 10, 20, 30, 40}
	for _, c := range []struct{ p, want float64 }{{0, 0}, {0.025, 1}, {0.5, 20}, {0.975, 39}, {1, 40}} {
		if got := quantile(xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

// TestLeaderboardTable: the fixture's small regime by hand. Beta (R@1 0.68-0.72, mean 0.70, sd
// 0.0158114, half-width 2.7764451 × 0.0070711 = 0.0196324) ranks first, Alpha (mean 0.64 ± 0.0392648)
// second, Epsilon (3 seeds, mean 0.55 ± 4.3026527 × 0.0288675 = 0.1242069; no train R@1) third, Gamma
// (mean 0.14 ± 0.0392648; train R@1 0.2 < 0.5 × 0.9, Beta's) fourth and did not train; Delta has only
// a run stored as failed: not run, and listed below the table. The record of "other" (not a method)
// is left out.
func TestLeaderboardTable(t *testing.T) {
	s, recs := loadBoard(t)
	lb, err := BuildLeaderboard(s, "small", recs)
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := []string{"rank", "method", "proposed in", "used by (seed papers)", "R@1 (%) [95 % CI]", "MAP@R (%) [95 % CI]",
		"OPIS (× 1000) [95 % CI]", "n", "train R@1 (%)", "trained?"}
	if h := lb.Header(s.Labels); !slices.Equal(h, wantHeader) {
		t.Errorf("header\n%q\nwant\n%q", h, wantHeader)
	}
	want := [][]string{
		{"1", "Beta loss", "Poe, ICCV 2019", "RS@k", "70.0 [68.0, 72.0]", "35.0 [35.0, 35.0]", "4.0 [4.0, 4.0]", "5", "90.0", "yes"},
		{"2", "Alpha loss", "Doe & Roe, CVPR 2006", "TCM, Contextual", "64.0 [60.1, 67.9]", "30.0 [30.0, 30.0]", "2.0 [2.0, 2.0]", "5", "80.0", "yes"},
		{"3", "Epsilon loss", "2022", "—", "55.0 [42.6, 67.4]", "25.0 [25.0, 25.0]", "3.0 [3.0, 3.0]", "3", "—", "not recorded"},
		{"4", "Gamma loss", "Moe, ECCV 2020", "CIT", "14.0 [10.1, 17.9]", "5.0 [5.0, 5.0]", "10.0 [10.0, 10.0]", "5", "20.0", "did not train"},
		{"—", "Delta loss", "Zoe, NeurIPS 2021", "IDML", "—", "—", "—", "0", "—", "not run"},
	}
	rows := lb.Rows()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%q", len(rows), len(want), rows)
	}
	for i := range want {
		if !slices.Equal(rows[i], want[i]) {
			t.Errorf("row %d\n%q\nwant\n%q", i, rows[i], want[i])
		}
	}
	if lb.Records != 18 {
		t.Errorf("%d final runs used, want 18 (5 + 5 + 5 + 3)", lb.Records)
	}
	md := lb.Markdown(s.Labels)
	for _, w := range []string{
		"**Leaderboard — from scratch, Omniglot: 4 of 5 methods run, ranked by the mean test R@1 over seeds (highest first",
		"R@1 and MAP@R in %, OPIS (lower is better) × 1000",
		"below 0.50 × the best method's (best 90.0) did not train",
		"| 4 | Gamma loss | Moe, ECCV 2020 | CIT | 14.0 [10.1, 17.9] |",
		"Left out: runs stored as failed — Delta loss 1.",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q:\n%s", w, md)
		}
	}
	if raw := sweep.RawTexts(strings.Join(append(lb.Header(s.Labels), lb.Caption(s.Labels)), "\n")); len(raw) > 0 {
		t.Errorf("raw texts in the table: %q", raw)
	}
	tex := lb.LaTeX(s.Labels, "tab:board-leaderboard-small")
	for _, w := range []string{"\\label{tab:board-leaderboard-small}", "Doe \\& Roe, CVPR 2006", "-- & -- & -- & 0 & -- & not run \\\\", "OPIS ($\\times$ 1000)"} {
		if !strings.Contains(tex, w) {
			t.Errorf("LaTeX lacks %q:\n%s", w, tex)
		}
	}
	// The pretrained regime has no records: every method is listed, not run, in the spec's order.
	pt, err := BuildLeaderboard(s, "pretrained", recs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range pt.Entries {
		if e.Rank != 0 || e.Trained != TrainedNotRun {
			t.Errorf("pretrained %s: rank %d, %q; want not run", e.Method.ID, e.Rank, e.Trained)
		}
		ids = append(ids, e.Method.ID)
	}
	if !slices.Equal(ids, []string{"alpha", "beta", "gamma", "delta", "eps"}) {
		t.Errorf("not-run order %v, want the spec's", ids)
	}
}

// TestLeaderboardLowerBetterTies: ranking by a lower-is-better metric puts the smallest mean first,
// a tie shares its rank and keeps the spec's order; where filters the final runs.
func TestLeaderboardLowerBetterTies(t *testing.T) {
	s, recs := loadBoard(t)
	s.Leaderboard.Metrics = []string{"OPIS", "R@1"}
	s.Leaderboard.Where = map[string]any{"seed": []any{int64(0), int64(1), int64(2)}}
	recs = append(recs, sweep.Record{Hash: "z0", Scale: "small", Seed: 0, Config: map[string]any{"name": "delta"}, Metrics: sweep.Metrics{"OPIS": 0.002, "R@1": 0.5}})
	lb, err := BuildLeaderboard(s, "small", recs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range lb.Entries {
		got = append(got, fmt.Sprintf("%d %s n=%d", e.Rank, e.Method.ID, len(e.Seeds)))
	}
	want := []string{"1 alpha n=3", "1 delta n=1", "3 eps n=3", "4 beta n=3", "5 gamma n=3"}
	if !slices.Equal(got, want) {
		t.Errorf("ranking %q, want %q", got, want)
	}
}

// TestLeaderboardTuningRunsLeftOut: a record of a tuning step's run is not a final run, even when
// its configuration carries a method's id; two final runs of one seed are an error.
func TestLeaderboardTuningRunsLeftOut(t *testing.T) {
	s, recs := loadBoard(t)
	p, err := s.Resolve("small")
	if err != nil {
		t.Fatal(err)
	}
	var tune *sweep.Run
	for i := range p.Runs {
		if p.Runs[i].Tune == "lr-alpha" {
			tune = &p.Runs[i]
			break
		}
	}
	if tune == nil {
		t.Fatal("no run of lr-alpha in the plan")
	}
	cfg := sweep.Clone(tune.Config)
	cfg["name"] = "alpha"
	recs = append(recs, sweep.Record{Hash: tune.Hash, Scale: "small", Seed: 7, Config: cfg, Metrics: sweep.Metrics{"R@1": 0.99, "val/R@1": 0.99}})
	lb, err := BuildLeaderboard(s, "small", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range lb.Entries {
		if e.Method.ID == "alpha" && len(e.Seeds) != 5 {
			t.Errorf("alpha has seeds %v: the tuning run was counted", e.Seeds)
		}
	}
	dup := append(slices.Clone(recs), sweep.Record{Hash: "a0bis", Scale: "small", Seed: 0, Config: map[string]any{"name": "alpha", "x": 1}, Metrics: sweep.Metrics{"R@1": 0.5}})
	if _, err := BuildLeaderboard(s, "small", dup); err == nil || !strings.Contains(err.Error(), "two records of seed 0") {
		t.Errorf("duplicate seed: err = %v", err)
	}
}

// boardRecords makes final runs of the fixture's methods at scale: method i's per-seed R@1 values
// are vals[i] (nil: no runs), with a train R@1 of 0.9.
func boardRecords(scale string, ids []string, vals [][]float64) []sweep.Record {
	var out []sweep.Record
	for i, id := range ids {
		for s, v := range vals[i] {
			out = append(out, sweep.Record{Hash: fmt.Sprintf("%s-%s-%d", scale, id, s), Scale: scale, Seed: int64(s), Config: map[string]any{"name": id},
				Metrics: sweep.Metrics{"R@1": v, "MAP@R": v / 2, "OPIS": 0.01 * (1 - v), sweep.TrainMetric: 0.9}})
		}
	}
	return out
}

// TestRankAgreement: four methods with well-separated seeds in the same order in both regimes
// (Epsilon not run at pretrained: three common methods) give τ-b = 1 [1, 1]; reversed, −1 [−1, −1];
// two common methods are too few. The table and the README summary say so.
func TestRankAgreement(t *testing.T) {
	s, _ := loadBoard(t)
	ids := []string{"alpha", "beta", "gamma", "eps"}
	small := boardRecords("small", ids, [][]float64{{0.80, 0.81, 0.82}, {0.60, 0.61, 0.62}, {0.40, 0.41, 0.42}, {0.2, 0.21}})
	same := boardRecords("pretrained", ids, [][]float64{{0.90, 0.91}, {0.70, 0.71, 0.72}, {0.50, 0.52, 0.51}, nil})
	rev := boardRecords("pretrained", ids, [][]float64{{0.50, 0.52}, {0.70, 0.71, 0.72}, {0.90, 0.91, 0.92}, nil})
	for _, c := range []struct {
		name       string
		pre        []sweep.Record
		tau        float64
		text, rank string
	}{
		{"same", same, 1, "τ-b = 1.00 [1.00, 1.00]", "| Gamma loss | 3 | 3 |"},
		{"reversed", rev, -1, "τ-b = −1.00 [−1.00, −1.00]", "| Gamma loss | 3 | 1 |"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ra, err := Agreement(s, append(slices.Clone(small), c.pre...))
			if err != nil {
				t.Fatal(err)
			}
			if len(ra.Trained) != 3 || ra.TrainedTau != c.tau || !(ra.TrainedLo <= c.tau && c.tau <= ra.TrainedHi) {
				t.Errorf("trained: %d methods, τ %v [%v, %v]; want 3, %v inside", len(ra.Trained), ra.TrainedTau, ra.TrainedLo, ra.TrainedHi, c.tau)
			}
			if len(ra.Methods) != 3 || ra.Tau != c.tau || ra.Lo != c.tau || ra.Hi != c.tau || ra.B != sweep.DefaultBootstrap || ra.Used != sweep.DefaultBootstrap {
				t.Errorf("%d methods, τ %v [%v, %v], B %d (%d used); want 3, %v [%v, %v], %d", len(ra.Methods), ra.Tau, ra.Lo, ra.Hi, ra.B, ra.Used, c.tau, c.tau, c.tau, sweep.DefaultBootstrap)
			}
			md := ra.Markdown(s.Labels)
			for _, w := range []string{c.text, c.rank, "B = 2000", "| method | rank: from scratch, Omniglot | rank: pretrained, CIFAR-10 |"} {
				if !strings.Contains(md, w) {
					t.Errorf("rank agreement lacks %q:\n%s", w, md)
				}
			}
			sum, err := LeaderboardSummary(s, map[string][]sweep.Record{"small": small, "pretrained": c.pre})
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(sum, "\n"); n < 3 || n > 5 {
				t.Errorf("summary has %d lines, want 3-5:\n%s", n, sum)
			}
			for _, w := range []string{
				"- **from scratch, Omniglot** (4 of 5 methods run): 1. Alpha loss 81.0 [78.5, 83.5] · 2. Beta loss 61.0 [58.5, 63.5] · 3. Gamma loss 41.0 [38.5, 43.5] (test R@1 in %, mean [95 % CI] over seeds).",
				"- **pretrained, CIFAR-10** (3 of 5 methods run): ",
				// Over the trained methods τ is the same (all 3 trained); its interval resamples methods too.
				"- Rank agreement of the two regimes over 3 methods: Kendall's " + c.text + " (95 % bootstrap over seeds, B = 2000); τ-b = " + c.text[len("τ-b = "):len("τ-b = ")+strings.Index(c.text[len("τ-b = "):], " ")] + " [",
				"over the 3 methods that trained in both regimes (95 % bootstrap over methods and seeds).",
			} {
				if !strings.Contains(sum, w) {
					t.Errorf("summary lacks %q:\n%s", w, sum)
				}
			}
		})
	}
	// Two common methods: not computed, and said so.
	two := boardRecords("pretrained", ids, [][]float64{{0.9}, {0.7}, nil, nil})
	ra, err := Agreement(s, append(slices.Clone(small), two...))
	if err != nil {
		t.Fatal(err)
	}
	if ra.Computed() || !math.IsNaN(ra.Tau) || !strings.Contains(ra.Markdown(s.Labels), "not computed: 2 methods ranked in both regimes, fewer than 3") {
		t.Errorf("two common methods: computed %v, τ %v:\n%s", ra.Computed(), ra.Tau, ra.Markdown(s.Labels))
	}
}

// TestRenderLeaderboard writes the small regime's table and the rank agreement, byte-identically
// on a second run.
func TestRenderLeaderboard(t *testing.T) {
	s, recs := loadBoard(t)
	dir := t.TempDir()
	_, files, err := RenderLeaderboard(nil, s, recs, "small", filepath.Join(dir, "t"), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "t", "leaderboard.md"), filepath.Join(dir, "t", "leaderboard.tex"), filepath.Join(dir, "rank_agreement.md")}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	first := map[string][]byte{}
	for _, f := range files {
		first[f], _ = os.ReadFile(f)
	}
	if _, _, err := RenderLeaderboard(nil, s, recs, "small", filepath.Join(dir, "t"), dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if b, _ := os.ReadFile(f); string(b) != string(first[f]) {
			t.Errorf("%s differs on a second run", f)
		}
	}
	// A scale outside the regimes (a smoke run) gets its table, no rank agreement.
	_, files, err = RenderLeaderboard(nil, s, recs, "smoke", filepath.Join(dir, "smoke"), filepath.Join(dir, "smoke"))
	if err != nil || len(files) != 2 {
		t.Errorf("smoke: files %v, err %v; want the two table files", files, err)
	}
}

// TestLeaderboardSpecErrors: the section is checked at load, errors naming the field.
func TestLeaderboardSpecErrors(t *testing.T) {
	b, err := os.ReadFile("testdata/leaderboard/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := string(b)
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"unknown method id", "{id: gamma,", "{id: gama,", `field "leaderboard.methods[2].id": "gama" does not occur in the sweep as a value of name (values: alpha, beta, delta, eps, gamma)`},
		{"unknown scale", "{scale: pretrained,", "{scale: pretrain,", `field "leaderboard.regimes[1].scale": unknown scale "pretrain" (defined: pretrained, small)`},
		{"method twice", "{id: gamma,", "{id: beta,", `field "leaderboard.methods[2].id": "beta" listed twice`},
		{"no label", `label: "Gamma loss", `, "", `field "leaderboard.methods[2].label": missing`},
		{"unknown seed paper", "seeds: [cit]", "seeds: [cti]", `field "leaderboard.methods[2].seeds[0]": unknown seed paper "cti"`},
		{"unknown origin", "origin: idml", "origin: imdl", `field "leaderboard.methods[3].origin": unknown seed paper "imdl"`},
		{"lower_better", "lower_better: [OPIS]", "lower_better: [opis]", `field "leaderboard.lower_better[0]": "opis" is not one of metrics`},
		{"factor", "OPIS: 1000}", "NMI: 1000}", `field "leaderboard.factors.NMI": not one of metrics`},
		{"no metrics", "metrics: [R@1, MAP@R, OPIS]", "metrics: []", `field "leaderboard.metrics": missing`},
		{"min_train", "lower_better: [OPIS]", "lower_better: [OPIS]\n  min_train: 2", `field "leaderboard.min_train": 2: want a fraction in [0, 1]`},
		{"pareto", "lower_better: [OPIS]", "lower_better: [OPIS]\n  pareto: [R@1]", `field "leaderboard.pareto": want two different metrics`},
		// Three regimes are allowed (every pair is compared); a scale twice is not.
		{"regime twice", "    - {scale: pretrained, label: \"pretrained, CIFAR-10\"}", "    - {scale: pretrained, label: \"pretrained, CIFAR-10\"}\n    - {scale: small, label: again}", `field "leaderboard.regimes[2].scale": "small" listed twice`},
		{"no regimes", "  regimes:\n    - {scale: small, label: \"from scratch, Omniglot\"}\n    - {scale: pretrained, label: \"pretrained, CIFAR-10\"}", "  regimes: []", `field "leaderboard.regimes": missing`},
		{"unknown field", "lower_better: [OPIS]", "lower_better: [OPIS]\n  lowerbetter: [OPIS]", "field lowerbetter not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.old) {
				t.Fatalf("fixture lacks %q", c.old)
			}
			_, err := sweep.Parse([]byte(strings.Replace(base, c.old, c.new, 1)), "board.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "board.yaml") {
				t.Errorf("err = %v\nwant one naming board.yaml and %q", err, c.want)
			}
		})
	}
	if _, err := sweep.Parse([]byte(base), "board.yaml"); err != nil {
		t.Errorf("the fixture itself: %v", err)
	}
}

// TestLeaderboardCheckSelections: a metric, arm key or where key that no record or spec item has is
// a typo, refused with the field named; the fixture as written passes.
func TestLeaderboardCheckSelections(t *testing.T) {
	s, recs := loadBoard(t)
	if err := judge.CheckSelections(s, recs); err != nil {
		t.Fatalf("the fixture: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(l *sweep.LeaderboardSpec)
		want string
	}{
		{"metric", func(l *sweep.LeaderboardSpec) { l.Metrics = []string{"R@1", "OPSI"} }, `leaderboard: field "metrics[1]": metric "OPSI": none of the stored records has it`},
		{"where", func(l *sweep.LeaderboardSpec) { l.Where = map[string]any{"loss.nam": "x"} }, `leaderboard: field "where"`},
		{"arm", func(l *sweep.LeaderboardSpec) { l.Arm = "nmae" }, `leaderboard: field "arm"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := loadBoard(t)
			c.edit(s.Leaderboard)
			if err := judge.CheckSelections(s, recs); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestBootstrapTauMethods: methods with the same value at every seed, in the same order in both
// regimes, give τ-b = 1 in every replicate (a method drawn twice ties with itself in both regimes
// and counts for neither side), so the interval is [1, 1]; reversed, [−1, −1]. Worked by hand: any
// draw of ≥ 2 distinct methods is concordant (resp. discordant) on every untied pair. (With seed
// noise two draws of one method differ and can order either way: the interval widens.)
func TestBootstrapTauMethods(t *testing.T) {
	a := [][]float64{{0.1, 0.1}, {0.3, 0.3}, {0.5, 0.5}, {0.7, 0.7}}
	b := [][]float64{{0.2, 0.2}, {0.4, 0.4}, {0.6, 0.6}, {0.8, 0.8}}
	lo, hi, used := BootstrapTauMethods(a, b, 500, 7)
	if lo != 1 || hi != 1 || used == 0 || used > 500 {
		t.Errorf("concordant: [%v, %v], %d replicates used", lo, hi, used)
	}
	rev := [][]float64{b[3], b[2], b[1], b[0]}
	lo, hi, _ = BootstrapTauMethods(a, rev, 500, 7)
	if lo != -1 || hi != -1 {
		t.Errorf("reversed: [%v, %v]", lo, hi)
	}
	// Some replicates draw one method four times: τ undefined, left out (4 methods: 4/256 of draws).
	if _, _, used := BootstrapTauMethods(a, b, 2000, 1); used == 2000 {
		t.Errorf("no replicate left out of 2000 (expected about 31 draws of a single method)")
	}
}

// withFloor is the fixture with two zero-shot floor arms in the small regime: floor-a at test R@1
// 0.601 on each of 5 seeds (MAP@R 0.2, OPIS 0.005, and a train R@1 of 0.95, above every method's:
// a floor arm is no method, so it must not become the training rule's best) and floor-b at 0.50.
func withFloor(t *testing.T) (*sweep.Spec, []sweep.Record) {
	t.Helper()
	s, recs := loadBoard(t)
	s.Leaderboard.Floor = []sweep.LeaderboardMethod{{ID: "floor-a", Label: "Frozen A"}, {ID: "floor-b", Label: "Untrained B"}}
	for seed := range 5 {
		for _, f := range []struct {
			id string
			r1 float64
		}{{"floor-a", 0.601}, {"floor-b", 0.50}} {
			recs = append(recs, sweep.Record{Hash: fmt.Sprintf("%s-%d", f.id, seed), Scale: "small", Seed: int64(seed),
				Config: map[string]any{"name": f.id, "seed": int64(seed)}, Metrics: sweep.Metrics{"R@1": f.r1, "MAP@R": 0.2, "OPIS": 0.005, "train/R@1": 0.95}})
		}
	}
	return s, recs
}

// TestLeaderboardFloor: the floor rows and the flag, worked by hand. The best floor arm is floor-a
// (mean 0.601 > 0.50). Beta's interval [0.6803676, 0.7196324] lies above it: yes; Alpha's mean
// 0.64 does too, but its lower end 0.6007352 does not (the rule reads the interval): not above;
// Epsilon (lower end 0.4257931) and Gamma (0.1007352) not above; Delta is not run: "—". The
// floor rows sit where their means fall in the ranking (0.601 after Alpha's 0.64, 0.50 after
// Epsilon's 0.55), unranked, and leave the training rule's best at Beta's 0.9.
func TestLeaderboardFloor(t *testing.T) {
	s, recs := withFloor(t)
	lb, err := BuildLeaderboard(s, "small", recs)
	if err != nil {
		t.Fatal(err)
	}
	if best, ok := lb.BestFloor(); !ok || best.Method.ID != "floor-a" {
		t.Fatalf("best floor %q (%v), want floor-a", best.Method.ID, ok)
	}
	if lb.BestTrain != 0.9 || lb.Records != 28 {
		t.Errorf("best train R@1 %v, %d runs; want 0.9 (Beta's: floor arms are not methods) and 28 (18 + 10)", lb.BestTrain, lb.Records)
	}
	if h := lb.Header(s.Labels); h[len(h)-1] != "above the floor?" || len(h) != 11 {
		t.Errorf("header %q: want 11 columns ending in \"above the floor?\"", h)
	}
	floorRow := func(label, r1 string) []string {
		return []string{"floor", "Floor: " + label, "no training (zero-shot floor)", "—", r1, "20.0 [20.0, 20.0]", "5.0 [5.0, 5.0]", "5", "95.0", "—", "—"}
	}
	want := [][]string{
		{"1", "Beta loss", "Poe, ICCV 2019", "RS@k", "70.0 [68.0, 72.0]", "35.0 [35.0, 35.0]", "4.0 [4.0, 4.0]", "5", "90.0", "yes", "yes"},
		{"2", "Alpha loss", "Doe & Roe, CVPR 2006", "TCM, Contextual", "64.0 [60.1, 67.9]", "30.0 [30.0, 30.0]", "2.0 [2.0, 2.0]", "5", "80.0", "yes", "not above"},
		floorRow("Frozen A", "60.1 [60.1, 60.1]"),
		{"3", "Epsilon loss", "2022", "—", "55.0 [42.6, 67.4]", "25.0 [25.0, 25.0]", "3.0 [3.0, 3.0]", "3", "—", "not recorded", "not above"},
		floorRow("Untrained B", "50.0 [50.0, 50.0]"),
		{"4", "Gamma loss", "Moe, ECCV 2020", "CIT", "14.0 [10.1, 17.9]", "5.0 [5.0, 5.0]", "10.0 [10.0, 10.0]", "5", "20.0", "did not train", "not above"},
		{"—", "Delta loss", "Zoe, NeurIPS 2021", "IDML", "—", "—", "—", "0", "—", "not run", "—"},
	}
	rows := lb.Rows()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%q", len(rows), len(want), rows)
	}
	for i := range want {
		if !slices.Equal(rows[i], want[i]) {
			t.Errorf("row %d\n%q\nwant\n%q", i, rows[i], want[i])
		}
	}
	if n := len(lb.NotAboveFloor()); n != 3 {
		t.Errorf("%d methods not above the floor, want 3 (Alpha, Epsilon, Gamma)", n)
	}
	md := lb.Markdown(s.Labels)
	for _, w := range []string{
		"below 0.50 × the best method's (best 90.0) did not train",
		"Floor rows: the zero-shot floor, the network with no optimiser step (Frozen A; Untrained B)",
		"the lower end of its 95 % t-interval of test R@1 lies above the best floor arm's mean",
		"(the best arm here: Frozen A, 60.1 %)",
		"| floor | Floor: Frozen A | no training (zero-shot floor) |",
		"---:|:---|:---|\n", // trained? and above the floor? left-aligned
	} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q:\n%s", w, md)
		}
	}
	sum, err := LeaderboardSummary(s, map[string][]sweep.Record{"small": recs})
	if err != nil {
		t.Fatal(err)
	}
	if w := "zero-shot floor (no training): Frozen A 60.1 [60.1, 60.1], 1 of 4 ranked methods above it"; !strings.Contains(sum, w) {
		t.Errorf("summary lacks %q:\n%s", w, sum)
	}
	// The rank agreement and the ranking know nothing of the floor.
	for _, e := range lb.Entries {
		if strings.HasPrefix(e.Method.ID, "floor") {
			t.Errorf("floor arm %s among the entries", e.Method.ID)
		}
	}
	// The figures draw each floor arm as a line with its legend entry.
	ch, err := LeaderboardFigure(lb, s.Labels)
	if err != nil {
		t.Fatal(err)
	}
	var legend []string
	for _, e := range ch.Entries {
		legend = append(legend, e.Text)
	}
	for _, w := range []string{"floor: Frozen A, 60.1 %", "floor: Untrained B, 50.0 %"} {
		if !slices.Contains(legend, w) {
			t.Errorf("leaderboard figure legend %q lacks %q", legend, w)
		}
	}
	// Without floor runs nothing changes: no column, no sentence.
	plain, err := BuildLeaderboard(s, "small", recs[:20])
	if err != nil {
		t.Fatal(err)
	}
	if h := plain.Header(s.Labels); len(h) != 10 || strings.Contains(plain.Caption(s.Labels), "Floor rows") {
		t.Errorf("without floor runs: header %q, caption %q", h, plain.Caption(s.Labels))
	}
}

// TestFloorAbove: the rule on hand cases. Higher is better: the lower end must exceed the floor
// (0.61 > 0.6: yes; 0.6 = 0.6: not above); one seed (no interval) reads the mean. Lower is better
// (OPIS): the upper end must lie below the floor. No floor or no value: no answer.
func TestFloorAbove(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		iv    Interval
		f     float64
		lower bool
		want  string
	}{
		{Interval{Mean: 0.7, Lo: 0.61, Hi: 0.79, N: 5}, 0.6, false, FloorAbove},
		{Interval{Mean: 0.7, Lo: 0.6, Hi: 0.8, N: 5}, 0.6, false, FloorNotAbove},
		{Interval{Mean: 0.7, Lo: nan, Hi: nan, N: 1}, 0.69, false, FloorAbove},
		{Interval{Mean: 0.7, Lo: nan, Hi: nan, N: 1}, 0.7, false, FloorNotAbove},
		{Interval{Mean: 3, Lo: 2, Hi: 4, N: 5}, 5, true, FloorAbove},
		{Interval{Mean: 3, Lo: 2, Hi: 4, N: 5}, 3.5, true, FloorNotAbove},
		{Interval{Mean: 3, Lo: 2, Hi: 4, N: 5}, nan, false, ""},
		{Interval{Mean: nan, Lo: nan, Hi: nan, N: 0}, 0.5, false, ""},
	} {
		if got := floorAbove(c.iv, c.f, c.lower); got != c.want {
			t.Errorf("floorAbove(%+v, %v, lower %v) = %q, want %q", c.iv, c.f, c.lower, got, c.want)
		}
	}
}

// TestLeaderboardStepsToBest: records of early-stopped runs (best_step, steps) add a "steps to
// best" column after the metrics. Worked by hand: alpha's seeds 0…4 report their evaluations at
// steps 1000, 1500, 2000, 2695, 2695 having run 2000, 2500, 2695, 2695, 2695 steps → mean 9890 / 5
// = 1978, and seeds 3 and 4 were still improving at the cap (best = last); beta records it for
// seeds 0…2 only (500, 700, 900 → 700, none at the cap); the other methods have none (—).
func TestLeaderboardStepsToBest(t *testing.T) {
	s, recs := loadBoard(t)
	best := map[string][]float64{"alpha": {1000, 1500, 2000, 2695, 2695}, "beta": {500, 700, 900}}
	ran := map[string][]float64{"alpha": {2000, 2500, 2695, 2695, 2695}, "beta": {1500, 1700, 1900}}
	for i := range recs {
		id, _ := recs[i].Config["name"].(string)
		if b, ok := best[id]; ok && recs[i].Seed < int64(len(b)) {
			m := maps.Clone(recs[i].Metrics)
			m["best_step"], m["steps"] = b[recs[i].Seed], ran[id][recs[i].Seed]
			recs[i].Metrics = m
		}
	}
	lb, err := BuildLeaderboard(s, "small", recs)
	if err != nil {
		t.Fatal(err)
	}
	h := lb.Header(s.Labels)
	col := slices.Index(h, "steps to best")
	if col < 0 || h[col-1] != "OPIS (× 1000) [95 % CI]" || h[col+1] != "n" {
		t.Fatalf("header %q: want \"steps to best\" between the metrics and n", h)
	}
	want := map[string]string{"Alpha loss": "1978 (2 at the cap)", "Beta loss": "700 (n = 3)", "Gamma loss": "—", "Epsilon loss": "—", "Delta loss": "—"}
	for _, row := range lb.Rows() {
		if w, ok := want[row[1]]; !ok || row[col] != w {
			t.Errorf("%s: steps to best %q, want %q", row[1], row[col], w)
		}
	}
	if c := lb.Caption(s.Labels); !strings.Contains(c, "Steps to best: the mean over seeds of the optimiser step") {
		t.Errorf("caption does not say what the column is:\n%s", c)
	}
	// Without any such record the column is absent (TestLeaderboardTable's header).
	_, plainRecs := loadBoard(t)
	if plain, _ := BuildLeaderboard(s, "small", plainRecs); plain.HasBestSteps() {
		t.Error("a regime without best_step records shows the column")
	}
}
