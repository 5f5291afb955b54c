package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Student-t critical values (two-sided 95 %) from printed tables (e.g. NIST/SEMATECH e-Handbook
// 1.3.6.7.2), to 4 decimals.
func TestTCrit95(t *testing.T) {
	for df, want := range map[int]float64{1: 12.7062, 2: 4.3027, 4: 2.7764, 9: 2.2622, 30: 2.0423} {
		if got := judge.TCrit95(df); math.Abs(got-want) > 1e-4 {
			t.Errorf("tCrit95(%d) = %.5f, want %.4f", df, got, want)
		}
	}
	for n, want := range map[int]int{1: 1, 3: 3, 5: 4, 10: 8, 11: 9} {
		if got := judge.NeedSeeds(n); got != want {
			t.Errorf("needSeeds(%d) = %d, want %d", n, got, want)
		}
	}
}

// claimRec is a record of one arm and seed, its training R@1 0.6 (every arm trained, so that
// the interval rule decides); env marks it dirty when dirty is true.
func claimRec(arm string, x any, seed int64, metric float64, dirty bool) sweep.Record {
	cfg := map[string]any{"arm": arm, "seed": seed}
	if x != nil {
		cfg["x"] = x
	}
	r := sweep.Record{Hash: arm + sweep.FormatValue(x) + sweep.FormatValue(seed), Scale: "small", Seed: seed, Config: cfg, Metrics: sweep.Metrics{"m": metric, "train/R@1": 0.6}}
	if dirty {
		r.Env = map[string]any{"git_dirty": true}
	}
	return r
}

// armRecs returns records of arm with the given per-seed values (seed i gets vals[i]).
func armRecs(arm string, vals ...float64) []sweep.Record {
	var out []sweep.Record
	for i, v := range vals {
		out = append(out, claimRec(arm, nil, int64(i), v, false))
	}
	return out
}

func arm(name string) *judge.Arm { return &judge.Arm{Label: name, Where: map[string]any{"arm": name}} }

func better(dir string) judge.ClaimSpec {
	return judge.ClaimSpec{ID: "c", Paper: "p", Source: "Table 1", Kind: judge.KindBetter, Metric: "m", Direction: dir, Base: arm("B"), Treatment: arm("T")}
}

func join(rs ...[]sweep.Record) []sweep.Record {
	var out []sweep.Record
	for _, r := range rs {
		out = append(out, r...)
	}
	return out
}

// TestBetterVerdicts works the rule by hand: mean, SE = sd/√n, interval mean ± t(n−1)·SE and the
// ⌈0.8 n⌉ seed count.
func TestBetterVerdicts(t *testing.T) {
	ten := func(vals ...float64) []float64 { return vals }
	cases := []struct {
		name     string
		dir      string
		base, tr []float64
		verdict  string
		reason   string
		mean, lo float64 // of the paired differences (NaN: not checked)
		n        int
	}{
		// d = [2, 3, 4]: mean 3, SE 1/√3, t(2) = 4.3027 → [0.5159, 5.4841].
		{"held n=3", "higher", ten(10, 10, 10), ten(12, 13, 14), judge.VerdictHeld, "claimed side", 3, 0.515862, 3},
		// d = [1, 2, 3]: [−0.484, 4.484] includes 0.
		{"includes zero", "higher", ten(10, 10, 10), ten(11, 12, 13), judge.VerdictInconclusive, "includes 0", 2, -0.484138, 3},
		// The same differences against a "lower" claim are a significant reversal.
		{"contradicted", "lower", ten(10, 10, 10), ten(12, 13, 14), judge.VerdictContradicted, "opposite side", 3, 0.515862, 3},
		// All differences 0 (ties): the interval is [0, 0], which touches zero → not wholly on one side.
		{"interval ends at zero", "higher", ten(5, 6, 7), ten(5, 6, 7), judge.VerdictInconclusive, "includes 0", 0, 0, 3},
		// n = 1: no interval.
		{"n=1", "higher", ten(1), ten(5), judge.VerdictInconclusive, "n = 1", 4, math.NaN(), 1},
		// 7 of 10 seeds +10, 3 seeds −0.1: mean 6.97, SE 1.5428, t(9) = 2.2622 → lo 3.4799 > 0, but
		// only 7 seeds point the claimed way and ⌈0.8·10⌉ = 8 are needed.
		{"too few seeds", "higher", ten(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ten(10, 10, 10, 10, 10, 10, 10, -0.1, -0.1, -0.1), judge.VerdictInconclusive, "only 7 of 10 seeds (need 8)", 6.97, 3.479943, 10},
	}
	for _, c := range cases {
		recs := join(armRecs("B", c.base...), armRecs("T", c.tr...))
		v, err := judge.EvaluateClaim(better(c.dir), nil, recs, judge.ClaimOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if v.Verdict != c.verdict || !strings.Contains(v.Reason, c.reason) || len(v.Seeds) != c.n {
			t.Errorf("%s: verdict %q (%s), n %d; want %q (%s), n %d", c.name, v.Verdict, v.Reason, len(v.Seeds), c.verdict, c.reason, c.n)
		}
		if math.Abs(v.Mean-c.mean) > 1e-9 {
			t.Errorf("%s: mean %v, want %v", c.name, v.Mean, c.mean)
		}
		if !math.IsNaN(c.lo) && math.Abs(v.Lo-c.lo) > 1e-5 || math.IsNaN(c.lo) != math.IsNaN(v.Lo) {
			t.Errorf("%s: lo %v, want %v", c.name, v.Lo, c.lo)
		}
	}
}

// TestSideRuleBoundaries: intervals that end exactly at zero are not wholly on one side, in
// either direction, even when every seed points one way.
func TestSideRuleBoundaries(t *testing.T) {
	cases := []struct {
		side, lo, hi    float64
		toward, against int
		want            string
	}{
		{+1, 0, 2, 5, 0, judge.VerdictInconclusive},
		{+1, 1e-12, 2, 5, 0, judge.VerdictHeld},
		{+1, -2, 0, 0, 5, judge.VerdictInconclusive},
		{+1, -2, -1e-12, 0, 5, judge.VerdictContradicted},
		{-1, -2, 0, 5, 0, judge.VerdictInconclusive},
		{-1, -2, -1e-12, 5, 0, judge.VerdictHeld},
		{-1, 0, 2, 0, 5, judge.VerdictInconclusive},
		{-1, 1e-12, 2, 0, 5, judge.VerdictContradicted},
		{+1, 1, 2, 3, 2, judge.VerdictInconclusive}, // 3 of 5 seeds, 4 needed
		{+1, 1, 2, 4, 1, judge.VerdictHeld},
	}
	for _, c := range cases {
		if got, reason := judge.SideRule(c.side, c.lo, c.hi, c.toward, c.against, 5); got != c.want {
			t.Errorf("side %+v [%v, %v] toward %d against %d: %s (%s), want %s", c.side, c.lo, c.hi, c.toward, c.against, got, reason, c.want)
		}
	}
}

func TestMissingSeedAndDirtyRecords(t *testing.T) {
	recs := join(armRecs("B", 10, 10, 10, 10), armRecs("T", 12, 13, 14))
	recs = append(recs, claimRec("T", nil, 3, 100, true)) // seed 3 of T is dirty
	v, err := judge.EvaluateClaim(better("higher"), nil, recs, judge.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Seeds) != 3 || v.Excluded != 1 || len(v.Unpaired) != 1 || v.Unpaired[0] != "seed 3 (no T)" || v.Verdict != judge.VerdictHeld {
		t.Errorf("seeds %v excluded %d unpaired %q verdict %s", v.Seeds, v.Excluded, v.Unpaired, v.Verdict)
	}
	// Arms are summarised over the paired seeds only: B = 10 ± 0, T = 13 ± 1/√3.
	if v.Arms[0].Mean != 10 || v.Arms[0].SE != 0 || v.Arms[1].Mean != 13 || math.Abs(v.Arms[1].SE-1/math.Sqrt(3)) > 1e-12 {
		t.Errorf("arms %+v", v.Arms)
	}
	v, _ = judge.EvaluateClaim(better("higher"), nil, recs, judge.ClaimOptions{IncludeDirty: true})
	if len(v.Seeds) != 4 || v.Excluded != 0 || !v.Provisional {
		t.Errorf("with dirty records: seeds %v excluded %d provisional %v", v.Seeds, v.Excluded, v.Provisional)
	}
	// IncludeDirty on clean records only: not provisional.
	if v, _ = judge.EvaluateClaim(better("higher"), nil, recs[:7], judge.ClaimOptions{IncludeDirty: true}); v.Provisional {
		t.Error("clean records marked provisional")
	}
	// No record at all for an arm: inconclusive, saying which arm.
	v, _ = judge.EvaluateClaim(better("higher"), nil, armRecs("B", 1, 2), judge.ClaimOptions{})
	if v.Verdict != judge.VerdictInconclusive || v.Reason != "no records for T" {
		t.Errorf("missing arm: %s (%s)", v.Verdict, v.Reason)
	}
	// Two records of one seed in an arm: the claim is ambiguous, an error.
	dup := join(armRecs("B", 1, 2), armRecs("T", 1, 2))
	dup = append(dup, claimRec("T", 7, 0, 3, false))
	if _, err := judge.EvaluateClaim(better("higher"), nil, dup, judge.ClaimOptions{}); err == nil || !strings.Contains(err.Error(), "two records of seed 0") {
		t.Errorf("ambiguous arm: err %v", err)
	}
}

func TestEquivalentVerdicts(t *testing.T) {
	c := judge.ClaimSpec{ID: "e", Paper: "p", Source: "s", Kind: judge.KindEquivalent, Metric: "m", Delta: 1, Base: arm("B"), Treatment: arm("T")}
	// d = [0.1, −0.1, 0.2, 0, 0.1]: mean 0.06, SE 0.05099, t(4) = 2.7764 → [−0.0816, 0.2016] ⊂ (−1, 1).
	v, _ := judge.EvaluateClaim(c, nil, join(armRecs("B", 0, 0, 0, 0, 0), armRecs("T", 0.1, -0.1, 0.2, 0, 0.1)), judge.ClaimOptions{})
	if v.Verdict != judge.VerdictHeld || math.Abs(v.Lo+0.0815715) > 1e-6 || math.Abs(v.Hi-0.2015715) > 1e-6 || v.Toward != 5 {
		t.Errorf("inside: %s [%v, %v] toward %d", v.Verdict, v.Lo, v.Hi, v.Toward)
	}
	// d = [3, 3.5, 4]: [1.758, 4.742] lies wholly above δ = 1.
	v, _ = judge.EvaluateClaim(c, nil, join(armRecs("B", 0, 0, 0), armRecs("T", 3, 3.5, 4)), judge.ClaimOptions{})
	if v.Verdict != judge.VerdictContradicted {
		t.Errorf("outside: %s (%s)", v.Verdict, v.Reason)
	}
	// d = [0.5, 0.9, 0.7]: mean 0.7, SE 0.11547 → [0.2032, 1.1968] crosses δ.
	v, _ = judge.EvaluateClaim(c, nil, join(armRecs("B", 0, 0, 0), armRecs("T", 0.5, 0.9, 0.7)), judge.ClaimOptions{})
	if v.Verdict != judge.VerdictInconclusive || v.Reason != "interval not inside ±δ" {
		t.Errorf("straddling δ: %s (%s)", v.Verdict, v.Reason)
	}
}

// sweepRecs returns records over x values: vals[seed][j] at x = xs[j].
func sweepRecs(xs []any, vals [][]float64) []sweep.Record {
	var out []sweep.Record
	for s, row := range vals {
		for j, x := range xs {
			out = append(out, claimRec("S", x, int64(s), row[j], false))
		}
	}
	return out
}

func TestTrendVerdict(t *testing.T) {
	// Per-seed slopes by hand: [1,2,3] → 1; [2,4,6] → 2; [0,3,3] → ((−1)(−2) + 0 + (1)(1))/2 = 1.5.
	// d = [1, 2, 1.5]: mean 1.5, SE 0.2887 → lo = 1.5 − 4.3027·0.2887 = 0.2579 > 0.
	vals := [][]float64{{1, 2, 3}, {2, 4, 6}, {0, 3, 3}}
	for _, log := range []bool{false, true} {
		xs := []any{1.0, 2.0, 3.0}
		if log { // log10 of 1, 10, 100 is 0, 1, 2: the same slopes
			xs = []any{1.0, 10.0, 100.0}
		}
		c := judge.ClaimSpec{ID: "t", Paper: "p", Source: "s", Kind: judge.KindTrend, Metric: "m", Direction: "higher",
			Where: map[string]any{"arm": "S"}, Sweep: &judge.ClaimSweep{Key: "x", Values: xs, Log: log}}
		if err := c.Check(); err != nil {
			t.Fatal(err)
		}
		v, _ := judge.EvaluateClaim(c, nil, sweepRecs(xs, vals), judge.ClaimOptions{})
		want := []float64{1, 2, 1.5}
		for i := range want {
			if math.Abs(v.Diffs[i]-want[i]) > 1e-12 {
				t.Errorf("log %v: slopes %v, want %v", log, v.Diffs, want)
			}
		}
		if v.Verdict != judge.VerdictHeld || math.Abs(v.Lo-0.257924) > 1e-5 {
			t.Errorf("log %v: %s lo %v", log, v.Verdict, v.Lo)
		}
		c.Direction = "lower"
		if v, _ := judge.EvaluateClaim(c, nil, sweepRecs(xs, vals), judge.ClaimOptions{}); v.Verdict != judge.VerdictContradicted {
			t.Errorf("log %v, decreasing claimed: %s", log, v.Verdict)
		}
	}
}

func TestInteractionVerdict(t *testing.T) {
	// Treatment's gain under X: [3, 4, 5]; under Y: [1, 1, 1] → d = [2, 3, 4], held as "higher".
	var recs []sweep.Record
	add := func(arm, cond string, vals ...float64) {
		for i, v := range vals {
			r := claimRec(arm, nil, int64(i), v, false)
			r.Config["cond"] = cond
			recs = append(recs, r)
		}
	}
	add("B", "X", 10, 10, 10)
	add("T", "X", 13, 14, 15)
	add("B", "Y", 20, 21, 22)
	add("T", "Y", 21, 22, 23)
	c := judge.ClaimSpec{ID: "i", Paper: "p", Source: "s", Kind: judge.KindInteraction, Metric: "m", Direction: "higher", Base: arm("B"), Treatment: arm("T"),
		Conditions: []judge.Arm{{Label: "X", Where: map[string]any{"cond": "X"}}, {Label: "Y", Where: map[string]any{"cond": "Y"}}}}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	v, _ := judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{})
	if v.Verdict != judge.VerdictHeld || v.Mean != 3 || len(v.Arms) != 4 || v.Arms[2].Label != "B | Y" || v.Arms[2].Mean != 21 {
		t.Errorf("%s mean %v arms %+v", v.Verdict, v.Mean, v.Arms)
	}
}

func TestArgmaxVerdict(t *testing.T) {
	xs := []any{"a", "b", "c"}
	c := judge.ClaimSpec{ID: "a", Paper: "p", Source: "s", Kind: judge.KindArgmax, Metric: "m", Direction: "higher",
		Where: map[string]any{"arm": "S"}, Sweep: &judge.ClaimSweep{Key: "x", Values: xs, Best: "b"}}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	// Margins of b over the best other value: 5−2, 6−2, 7−2 = [3, 4, 5] → lo 1.516 > 0.
	v, _ := judge.EvaluateClaim(c, nil, sweepRecs(xs, [][]float64{{1, 5, 2}, {1, 6, 2}, {2, 7, 1}}), judge.ClaimOptions{})
	if v.Verdict != judge.VerdictHeld || v.Mean != 4 || v.Observed != "b" {
		t.Errorf("b best: %s mean %v observed %q", v.Verdict, v.Mean, v.Observed)
	}
	// c beats b by [3, 4, 5]: contradicted through the part "c vs b".
	v, _ = judge.EvaluateClaim(c, nil, sweepRecs(xs, [][]float64{{1, 2, 5}, {1, 2, 6}, {1, 2, 7}}), judge.ClaimOptions{})
	if v.Verdict != judge.VerdictContradicted || !strings.HasPrefix(v.Reason, "x = c vs x = b") || v.Observed != "c" {
		t.Errorf("c best: %s (%s) observed %q", v.Verdict, v.Reason, v.Observed)
	}
	// A claimed best at the grid's edge is rejected when the claim is read.
	c.Sweep.Best = "c"
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "edge") {
		t.Errorf("edge best: %v", err)
	}
}

func TestRankVerdict(t *testing.T) {
	c := judge.ClaimSpec{ID: "r", Paper: "p", Source: "s", Kind: judge.KindRank, Metric: "m", Direction: "higher",
		Order: []judge.Arm{*arm("A"), *arm("B"), *arm("C")}}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	// A − B = [1, 1.1, 0.9] and B − C = [2, 2.1, 1.9]: both held.
	recs := join(armRecs("A", 11, 11.1, 10.9), armRecs("B", 10, 10, 10), armRecs("C", 8, 7.9, 8.1))
	v, _ := judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{})
	if v.Verdict != judge.VerdictHeld || len(v.Parts) != 2 || v.Observed != "A > B > C" {
		t.Errorf("%s parts %d observed %q", v.Verdict, len(v.Parts), v.Observed)
	}
	// C above B in every seed: the pair B over C is contradicted, so the ranking is.
	recs = join(armRecs("A", 11, 11.1, 10.9), armRecs("B", 10, 10, 10), armRecs("C", 12, 12.1, 11.9))
	v, _ = judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{})
	if v.Verdict != judge.VerdictContradicted || !strings.Contains(v.Reason, "B over C contradicted") {
		t.Errorf("%s (%s)", v.Verdict, v.Reason)
	}
}

const claimsYAML = `paper: demo
scale: small
where: {fixed: 1}
claims:
  - id: gain-${b}
    for: [{b: 64, name: small}, {b: 256, name: large}]
    paper: "T beats B at batch ${b} (${name})"
    source: Table 2
    kind: better
    metric: m
    direction: higher
    where: {batch: "${b}"}
    base: {label: B, where: {arm: B}}
    treatment: {label: T, where: {arm: T}}
`

func TestParseClaims(t *testing.T) {
	cs, err := judge.ParseClaims([]byte(claimsYAML), "claims.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Claims) != 2 || cs.Claims[1].ID != "gain-256" || cs.Claims[1].Paper != "T beats B at batch 256 (large)" {
		t.Fatalf("claims %+v", cs.Claims)
	}
	// "${b}" alone keeps the number's type.
	if b, ok := cs.Claims[0].Where["batch"].(int); !ok || b != 64 {
		t.Errorf("where batch = %#v, want int 64", cs.Claims[0].Where["batch"])
	}
	bad := []struct{ name, yaml, want string }{
		{"unknown field", strings.Replace(claimsYAML, "metric: m", "metrik: m", 1), "field metrik not found"},
		{"duplicate id", strings.Replace(claimsYAML, "id: gain-${b}", "id: gain", 1), `"gain" is also the id`},
		{"unbound var", strings.Replace(claimsYAML, "    for: [{b: 64, name: small}, {b: 256, name: large}]\n", "", 1), "${b} used without"},
		{"bad kind", strings.Replace(claimsYAML, "kind: better", "kind: partly", 1), `"partly" is not one of`},
		{"no direction", strings.Replace(claimsYAML, "direction: higher", "direction: up", 1), `field "direction"`},
		{"equivalent without delta", strings.Replace(strings.Replace(claimsYAML, "kind: better", "kind: equivalent", 1), "    direction: higher\n", "", 1), `field "delta"`},
	}
	for _, c := range bad {
		if _, err := judge.ParseClaims([]byte(c.yaml), "claims.yaml"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "claims.yaml") {
			t.Errorf("%s: err %v, want it to name claims.yaml and say %q", c.name, err, c.want)
		}
	}
}

func TestRenderClaimsAndReadmeBlock(t *testing.T) {
	cs, err := judge.ParseClaims([]byte(claimsYAML), "claims.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var recs []sweep.Record
	for _, b := range []int{64, 256} {
		for s, d := range []float64{2, 3, 4} {
			for _, a := range []struct {
				arm string
				v   float64
			}{{"B", 10}, {"T", 10 + d}} {
				r := claimRec(a.arm, nil, int64(s), a.v, false)
				r.Config["batch"], r.Config["fixed"] = b, 1
				r.Hash += sweep.FormatValue(b)
				recs = append(recs, r)
			}
		}
	}
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	os.WriteFile(readme, []byte("# Demo\n\n<!-- dmlkit:claims:begin (generated by `dmlkit tables`; do not edit) -->\nSTALE\n<!-- dmlkit:claims:end -->\n\ntail\n"), 0o644)
	rep, files, err := RenderClaims(nil, cs, recs, judge.ClaimOptions{Scale: "small"}, dir, readme)
	if err != nil {
		t.Fatal(err)
	}
	if h, c, i := rep.Counts(); h != 2 || c != 0 || i != 0 || len(files) != 3 {
		t.Fatalf("counts %d %d %d files %v", h, c, i, files)
	}
	md := rep.Markdown()
	// d = [2, 3, 4]: +3.00 [+0.52, +5.48]; arms 10.00 ± 0.00 and 13.00 ± 0.58.
	for _, want := range []string{"2 held, 0 contradicted, 0 inconclusive", "| gain-64 | T beats B at batch 64 (small) | Table 2 | from scratch | better (higher) | B 10.00 ± 0.00; T 13.00 ± 0.58 | +3.00 [+0.52, +5.48] | 3 of 3 (need 3) | tuning not checked · train R@1 0.60 | **held**", "Rule: Verdicts come from per-seed paired differences"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	b, _ := os.ReadFile(readme)
	// The README's block is the narrower table (ReadmeMarkdown): the claim cell starts with its id.
	if !strings.Contains(string(b), "| `gain-256`: T beats B at batch 256 (large) (Table 2) | from scratch |") || strings.Contains(string(b), "STALE") || !strings.HasSuffix(string(b), "<!-- dmlkit:claims:end -->\n\ntail\n") {
		t.Errorf("README block not replaced:\n%s", b)
	}
	// A second render changes nothing (byte-identical), and the README is not rewritten.
	_, files, _ = RenderClaims(nil, cs, recs, judge.ClaimOptions{Scale: "small"}, dir, readme)
	if len(files) != 2 {
		t.Errorf("second render rewrote %v", files)
	}
}

// TestArmMetric: both arms select the same runs and read two metrics of each ("early" and "late"
// counts): per seed late − early = −2, −3, −4 → mean −3, interval −3 ± 4.3027/√3 = [−5.4841,
// −0.5159], held for "lower". An interaction arm with its own metric is refused.
func TestArmMetric(t *testing.T) {
	var recs []sweep.Record
	for i, v := range [][2]float64{{10, 8}, {10, 7}, {10, 6}} {
		r := claimRec("A", nil, int64(i), 0, false)
		r.Metrics = sweep.Metrics{"early": v[0], "late": v[1], "train/R@1": 0.6}
		recs = append(recs, r)
	}
	c := judge.ClaimSpec{ID: "c", Paper: "p", Source: "Fig. 1", Kind: judge.KindBetter, Metric: "late", Direction: "lower",
		Base:      &judge.Arm{Label: "early", Where: map[string]any{"arm": "A"}, Metric: "early"},
		Treatment: &judge.Arm{Label: "late", Where: map[string]any{"arm": "A"}}}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	v, err := judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != judge.VerdictHeld || math.Abs(v.Mean+3) > 1e-12 || math.Abs(v.Hi+0.515862) > 1e-5 {
		t.Errorf("verdict %s, mean %v, hi %v; want held, -3, -0.515862", v.Verdict, v.Mean, v.Hi)
	}
	same := c
	same.Base = &judge.Arm{Label: "early", Where: map[string]any{"arm": "A"}}
	if err := same.Check(); err == nil {
		t.Error("two identical arms with one metric: want an error")
	}
	inter := judge.ClaimSpec{ID: "i", Paper: "p", Source: "s", Kind: judge.KindInteraction, Metric: "m", Direction: "higher",
		Base: &judge.Arm{Label: "B", Where: map[string]any{"arm": "B"}, Metric: "x"}, Treatment: arm("T"),
		Conditions: []judge.Arm{*arm("X"), *arm("Y")}}
	if err := inter.Check(); err == nil || !strings.Contains(err.Error(), "base.metric") {
		t.Errorf("interaction arm with a metric: err %v, want one naming base.metric", err)
	}
}
