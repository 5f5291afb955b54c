package experiments

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// claimRecords: loss.set.expr ∈ {smoothap, smoothap+tcm, rsk, rsk+tcm} × data.name ∈ {mnist,
// omniglot}, seeds in config "seed", a constant model.dim, and loss.tcm.margin only on the TCM
// side (a treatment-only key, which must not split settings).
//
//	setting                       seed  OPIS base→tcm  R@1 base→tcm
//	A smoothap @ mnist               0     10 → 8      .700 → .705
//	                                 1     12 → 13     .720 → .716
//	                                 2     11 → 9      .710 → .703
//	B smoothap @ omniglot            0     20 → 21     .600 → .590
//	                                 1     22 → 21     .610 → .600
//	                                 2     21 → –      .500 → –     (unpaired)
//	C rsk @ mnist                    0     30 → 27     .800 → .804
//	                                 1     31 → 30     .810 → .812
//	                                 2     32 → 30     .820 → .823
//	D rsk @ omniglot                 0,1   40, 41 → –  (no rsk+tcm records: missing)
func claimRecords() []Record {
	mk := func(expr, data string, seed int64, opis, r1 float64) Record {
		loss := map[string]any{"name": "combo", "set": map[string]any{"expr": expr}}
		if strings.HasSuffix(expr, "+tcm") {
			loss["tcm"] = map[string]any{"margin": 0.9}
		}
		cfg := map[string]any{"data": map[string]any{"name": data}, "loss": loss, "model": map[string]any{"dim": 128}, "seed": seed}
		h, _ := Hash(cfg)
		return Record{Hash: h, Scale: "small", Seed: seed, Config: cfg, Metrics: Metrics{"OPIS": opis, "R@1": r1}}
	}
	return []Record{
		mk("smoothap", "mnist", 0, 10, 0.700), mk("smoothap", "mnist", 1, 12, 0.720), mk("smoothap", "mnist", 2, 11, 0.710),
		mk("smoothap+tcm", "mnist", 0, 8, 0.705), mk("smoothap+tcm", "mnist", 1, 13, 0.716), mk("smoothap+tcm", "mnist", 2, 9, 0.703),
		mk("smoothap", "omniglot", 0, 20, 0.600), mk("smoothap", "omniglot", 1, 22, 0.610), mk("smoothap", "omniglot", 2, 21, 0.500),
		mk("smoothap+tcm", "omniglot", 0, 21, 0.590), mk("smoothap+tcm", "omniglot", 1, 21, 0.600),
		mk("rsk", "mnist", 0, 30, 0.800), mk("rsk", "mnist", 1, 31, 0.810), mk("rsk", "mnist", 2, 32, 0.820),
		mk("rsk+tcm", "mnist", 0, 27, 0.804), mk("rsk+tcm", "mnist", 1, 30, 0.812), mk("rsk+tcm", "mnist", 2, 30, 0.823),
		mk("rsk", "omniglot", 0, 40, 0.900), mk("rsk", "omniglot", 1, 41, 0.910),
	}
}

func tcmClaim() Claim {
	yes := true
	return Claim{Text: "TCM lowers OPIS & keeps R@1", Key: "loss.set.expr",
		Pairs: [][]any{{"smoothap", "smoothap+tcm"}, {"rsk", "rsk+tcm"}}, Metric: "OPIS", Lower: &yes,
		Guard: "R@1", GuardFactor: 100, GuardUnit: "points", Tolerance: 0.5}
}

func TestEvaluateClaimHandWorked(t *testing.T) {
	no := false
	type setting struct {
		label     string
		change    float64 // mean OPIS change (factor 1)
		moved     int     // seeds moving the claimed way
		paired    int
		guard     float64 // mean R@1 change × 100
		guardHeld bool
		held      bool
	}
	for _, c := range []struct {
		name        string
		claim       func() Claim
		where       map[string]any
		settings    []setting
		missing     []string // Label (Reason)
		moved, held int
		seeds       [2]int // moved, paired
		verdict     string
	}{
		{
			// A: OPIS −2, +1, −2 → mean −1, 2 of 3 seeds lower; R@1 +.5, −.4, −.7 points → −0.2 ≥ −0.5.
			// B: OPIS +1, −1 → mean 0, not strictly lower, 1 of 2 seeds; R@1 −1, −1 → −1 < −0.5.
			// C: OPIS −3, −1, −2 → −2, 3 of 3; R@1 +.4, +.2, +.3 → +0.3. D: missing.
			// Moved A, C; held A, C (B neither) → 2 of 3: partly held; seeds 2+1+3 of 3+2+3.
			name: "partly", claim: tcmClaim,
			settings: []setting{
				{"smoothap → smoothap+tcm at data.name=mnist", -1, 2, 3, -0.2, true, true},
				{"smoothap → smoothap+tcm at data.name=omniglot", 0, 1, 2, -1, false, false},
				{"rsk → rsk+tcm at data.name=mnist", -2, 3, 3, 0.3, true, true},
			},
			missing: []string{"rsk → rsk+tcm at data.name=omniglot (no loss.set.expr = rsk+tcm records)"},
			moved:   2, held: 2, seeds: [2]int{6, 8}, verdict: VerdictPartlyHeld,
		},
		{
			// Only MNIST: settings A and C, both held; data.name no longer varies, so the
			// settings carry no other keys.
			name: "held", claim: tcmClaim, where: map[string]any{"data.name": "mnist"},
			settings: []setting{
				{"smoothap → smoothap+tcm", -1, 2, 3, -0.2, true, true},
				{"rsk → rsk+tcm", -2, 3, 3, 0.3, true, true},
			},
			moved: 2, held: 2, seeds: [2]int{5, 6}, verdict: VerdictHeld,
		},
		{
			// "TCM raises OPIS", no guard: A −1, B 0, C −2 → none; seeds with OPIS raised: A seed 1,
			// B seed 0 → 2 of 8.
			name: "not held", claim: func() Claim {
				c := tcmClaim()
				c.Lower, c.Guard, c.GuardFactor, c.GuardUnit, c.Tolerance = &no, "", 0, "", 0
				return c
			},
			settings: []setting{
				{"smoothap → smoothap+tcm at data.name=mnist", -1, 1, 3, math.NaN(), true, false},
				{"smoothap → smoothap+tcm at data.name=omniglot", 0, 1, 2, math.NaN(), true, false},
				{"rsk → rsk+tcm at data.name=mnist", -2, 0, 3, math.NaN(), true, false},
			},
			missing: []string{"rsk → rsk+tcm at data.name=omniglot (no loss.set.expr = rsk+tcm records)"},
			seeds:   [2]int{2, 8}, verdict: VerdictNotHeld,
		},
		{
			name: "untested", claim: func() Claim {
				c := tcmClaim()
				c.Pairs = [][]any{{"contrastive", "contrastive+tcm"}}
				return c
			},
			missing: []string{"contrastive → contrastive+tcm (no records with loss.set.expr = contrastive or contrastive+tcm)"},
			verdict: VerdictUntested,
		},
	} {
		recs := Select(claimRecords(), "", c.where)
		v := EvaluateClaim(c.claim(), recs, 1)
		if len(v.Settings) != len(c.settings) {
			t.Fatalf("%s: %d settings, want %d: %+v", c.name, len(v.Settings), len(c.settings), v.Settings)
		}
		const tol = 1e-9 // sums of three products of short decimals
		for i, w := range c.settings {
			s := v.Settings[i]
			gotGuard := s.GuardChange
			if math.IsNaN(w.guard) != math.IsNaN(gotGuard) || (!math.IsNaN(w.guard) && math.Abs(gotGuard-w.guard) > tol) ||
				s.Label() != w.label || math.Abs(s.Change-w.change) > tol || s.Effect.Improved != w.moved ||
				len(s.Effect.Seeds) != w.paired || s.GuardHeld != w.guardHeld || s.Held != w.held {
				t.Errorf("%s: setting %d = %s change %v moved %d/%d guard %v (held %v) held %v; want %+v",
					c.name, i, s.Label(), s.Change, s.Effect.Improved, len(s.Effect.Seeds), gotGuard, s.GuardHeld, s.Held, w)
			}
		}
		var missing []string
		for _, m := range v.Missing {
			missing = append(missing, m.Label()+" ("+m.Reason+")")
		}
		if !reflect.DeepEqual(missing, c.missing) {
			t.Errorf("%s: missing %q, want %q", c.name, missing, c.missing)
		}
		if v.Moved != c.moved || v.Held != c.held || v.SeedsMoved != c.seeds[0] || v.SeedsPaired != c.seeds[1] || v.Verdict != c.verdict {
			t.Errorf("%s: moved %d held %d seeds %d/%d verdict %q; want %d %d %v %q",
				c.name, v.Moved, v.Held, v.SeedsMoved, v.SeedsPaired, v.Verdict, c.moved, c.held, c.seeds, c.verdict)
		}
	}
}

func TestClaimDuplicateSeedIsMissingNotDropped(t *testing.T) {
	// A second smoothap+tcm record for seed 0 at MNIST (differing only in a key the treatment
	// alone has) makes the seed pairing ambiguous: that setting is listed as missing with the
	// reason, the others are still evaluated.
	recs := claimRecords()
	dup := recs[3]
	dup.Config = Clone(dup.Config)
	SetPath(dup.Config, "loss.tcm.margin", 0.8)
	recs = append(recs, dup)
	v := EvaluateClaim(tcmClaim(), recs, 1)
	if len(v.Settings) != 2 || len(v.Missing) != 2 ||
		v.Missing[0].Label() != "smoothap → smoothap+tcm at data.name=mnist" ||
		!strings.Contains(v.Missing[0].Reason, "several records with seed 0") {
		t.Fatalf("settings %d, missing %+v", len(v.Settings), v.Missing)
	}
}

func TestClaimLinesMarkdownAndLaTeX(t *testing.T) {
	spec := TableSpec{Name: "opis", Rows: []string{"loss.set.expr"}, Metrics: []string{"OPIS"}, Claims: []Claim{tcmClaim()},
		Where: map[string]any{"data.name": []any{"mnist", "omniglot"}}}
	tab := BuildTable(spec, claimRecords(), nil)
	if len(tab.Claims) != 1 || tab.Claims[0].Verdict != VerdictPartlyHeld {
		t.Fatalf("claims %+v", tab.Claims)
	}
	wantMD := "Claim (paper): TCM lowers OPIS & keeps R@1. At this scale: OPIS lower in 2 of 3 settings " +
		"(seed-paired: 6 of 8 seeds; mean change −2.00 … +0.00); R@1 change −1.00 … +0.30 points " +
		"(needs ≥ −0.50 in every setting); missing: rsk → rsk+tcm at data.name=omniglot " +
		"(no loss.set.expr = rsk+tcm records) → **partly held**."
	md := tab.Markdown()
	if !strings.Contains(md, "|\n\n"+wantMD+"\n") {
		t.Errorf("Markdown:\n%s\nwant the line below the table:\n%s", md, wantMD)
	}
	wantTeX := `\par\smallskip\footnotesize Claim (paper): TCM lowers OPIS \& keeps R@1. At this scale: OPIS lower in ` +
		`2 of 3 settings (seed-paired: 6 of 8 seeds; mean change $-2.00$ \dots{} $+0.00$); R@1 change $-1.00$ \dots{} ` +
		`$+0.30$ points (needs $\geq$ $-0.50$ in every setting); missing: rsk $\rightarrow$ rsk+tcm at data.name=omniglot ` +
		`(no loss.set.expr = rsk+tcm records) $\rightarrow$ \textbf{partly held}.` + "\n"
	tex := tab.LaTeX("tab:x")
	if !strings.Contains(tex, "\\end{tabular}\n"+wantTeX+"\\end{table}\n") {
		t.Errorf("LaTeX:\n%s\nwant the line below the tabular:\n%s", tex, wantTeX)
	}
	// One setting, a lower-is-better guard, no unit, and the claim's own factor: the MNIST rsk pair
	// only; OPIS change −2 ×10 = −20; guard "OPIS must not rise" on R@1 as if lower were better:
	// +0.3 points ≤ +0.5 holds.
	yes := true
	one := Claim{Text: "RS@k+TCM lowers OPIS.", Key: "loss.set.expr", Pairs: [][]any{{"rsk", "rsk+tcm"}}, Metric: "OPIS",
		Lower: &yes, Factor: 10, Guard: "R@1", GuardFactor: 100, GuardLower: true, Tolerance: 0.5}
	v := EvaluateClaim(one, Select(claimRecords(), "", map[string]any{"data.name": "mnist"}), 1)
	want := "Claim (paper): RS@k+TCM lowers OPIS. At this scale: OPIS lower in 1 of 1 setting (seed-paired: 3 of 3 seeds; " +
		"mean change −20.0); R@1 change +0.3 (needs ≤ +0.5 in every setting) → **held**."
	if got := claimLine(v, 1, false); got != want {
		t.Errorf("line\n%s\nwant\n%s", got, want)
	}
}

func TestClaimValidation(t *testing.T) {
	table := func(claim string) string {
		return "paper: x\ntables:\n  - {name: a, metrics: [R@1]}\n  - {name: t, metrics: [R@1], claims: [" + claim + "]}\n"
	}
	ok := "text: c, key: loss.set.expr, metric: OPIS, lower: true"
	for _, c := range []struct{ yaml, want string }{
		{table("{" + ok + "}"), `field "tables[1].claims[0].pairs" (t): missing`},
		{table("{" + ok + ", pairs: [[a]]}"), `field "tables[1].claims[0].pairs[0]" (t): want [baseline, treatment], got 1 values`},
		{table("{" + ok + ", pairs: [[a, b], [a, a]]}"), `field "tables[1].claims[0].pairs[1]" (t): baseline and treatment are both "a"`},
		{table("{" + ok + ", pairs: [[a, b], [a, b]]}"), `field "tables[1].claims[0].pairs[1]" (t): [a, b] listed twice`},
		{table("{text: c, key: k, metric: OPIS, pairs: [[a, b]]}"), `field "tables[1].claims[0].lower" (t): missing`},
		{table("{text: c, key: k, lower: false, pairs: [[a, b]]}"), `field "tables[1].claims[0].metric" (t): missing`},
		{table("{key: k, metric: m, lower: false, pairs: [[a, b]]}"), `field "tables[1].claims[0].text" (t): missing`},
		{table("{text: c, metric: m, lower: false, pairs: [[a, b]]}"), `field "tables[1].claims[0].key" (t): missing`},
		{table("{" + ok + ", pairs: [[a, b]], guard: R@1, tolerance: -1}"), `field "tables[1].claims[0].tolerance" (t): -1 is negative`},
		{table("{" + ok + ", pairs: [[a, b]], guard_factor: 100}"), `field "tables[1].claims[0].guard" (t): missing, but guard_factor`},
		{table("{" + ok + ", pairs: [[a, b]], guard: R@1, guard_factor: -2}"), `field "tables[1].claims[0].guard_factor" (t)`},
		{table("{" + ok + ", pairs: [[a, b]], factr: 2}"), "field factr not found"},
		{table("{" + ok + ", pairs: [[a, b]]}, {" + ok + "}"), `field "tables[1].claims[1].pairs" (t): missing`},
	} {
		_, err := Parse([]byte(c.yaml), "bad.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\nerror = %v, want it to contain %q", c.yaml, err, c.want)
		}
	}
	// The syntax of the issue parses, with numbers and strings as pair values.
	s, err := Parse([]byte(table(`{text: "TCM lowers OPIS without lowering R@1", key: loss.set.expr,
      pairs: [[smoothap, smoothap+tcm], [0.5, 1]], metric: OPIS, lower: true, guard: R@1, guard_factor: 100,
      guard_unit: points, tolerance: 0.5}`)), "good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := s.Tables[1].Claims[0]
	if !reflect.DeepEqual(c.Pairs, [][]any{{"smoothap", "smoothap+tcm"}, {0.5, 1}}) || c.Lower == nil || !*c.Lower ||
		c.GuardFactor != 100 || c.Tolerance != 0.5 || c.GuardUnit != "points" {
		t.Errorf("parsed claim %+v", c)
	}
}

// TestClaimIgnoreKeys: the baseline runs are evaluated every epoch (eval.every 1, eval.time_loss)
// and the treatment runs once (eval.every 0). Without ignore, eval.every splits the pair into two
// one-sided settings (untested); with ignore [eval.] the MNIST Smooth-AP pair is one setting and
// gives claimRecords' hand-worked result (OPIS −1, 2 of 3 seeds lower).
func TestClaimIgnoreKeys(t *testing.T) {
	var recs []Record
	for _, r := range claimRecords() {
		if d, _ := Get(r.Config, "data.name"); d != "mnist" || !strings.HasPrefix(r.Config["loss"].(map[string]any)["set"].(map[string]any)["expr"].(string), "smoothap") {
			continue
		}
		r.Config = Clone(r.Config)
		if e, _ := Get(r.Config, "loss.set.expr"); e == "smoothap" {
			r.Config["eval"] = map[string]any{"every": 1, "time_loss": true}
		} else {
			r.Config["eval"] = map[string]any{"every": 0}
		}
		recs = append(recs, r)
	}
	c := tcmClaim()
	c.Pairs = c.Pairs[:1]
	if v := EvaluateClaim(c, recs, 1); v.Verdict != VerdictUntested || len(v.Missing) != 2 {
		t.Errorf("without ignore: verdict %q, %d missing; want untested with 2 one-sided settings", v.Verdict, len(v.Missing))
	}
	c.Ignore = []string{"eval."}
	v := EvaluateClaim(c, recs, 1)
	if len(v.Settings) != 1 || len(v.Missing) != 0 || v.Settings[0].Change != -1 || v.SeedsMoved != 2 || v.SeedsPaired != 3 {
		t.Fatalf("with ignore: settings %+v, missing %+v", v.Settings, v.Missing)
	}
	c.Ignore = []string{"loss."}
	if err := c.check(); err == nil || !strings.Contains(err.Error(), "ignore[0]") {
		t.Errorf("ignoring the compared key: error %v, want one naming ignore[0]", err)
	}
}

// TestClaimSplitTreatments: TCM at two margins (loss.tcm.margin 0.9 from claimRecords and 0.5 added
// here) against one Smooth-AP baseline on MNIST. Without split the two treatments share seeds, so
// the setting is missing (ambiguous pairing); with split [loss.tcm.margin] each margin is a setting:
// 0.5: OPIS 10→9, 12→10, 11→8 (mean −2, 3 of 3 seeds lower); 0.9: mean −1, 2 of 3 (as in
// TestEvaluateClaimHandWorked).
func TestClaimSplitTreatments(t *testing.T) {
	var recs []Record
	for _, r := range claimRecords() {
		if d, _ := Get(r.Config, "data.name"); d != "mnist" {
			continue
		}
		if e, _ := Get(r.Config, "loss.set.expr"); e != "smoothap" && e != "smoothap+tcm" {
			continue
		}
		recs = append(recs, r)
		if e, _ := Get(r.Config, "loss.set.expr"); e == "smoothap+tcm" {
			r2 := r
			r2.Config = Clone(r.Config)
			SetPath(r2.Config, "loss.tcm.margin", 0.5)
			r2.Metrics = Metrics{"OPIS": []float64{9, 10, 8}[r.Seed], "R@1": r.Metrics["R@1"]}
			recs = append(recs, r2)
		}
	}
	c := tcmClaim()
	c.Pairs = c.Pairs[:1]
	c.Guard, c.GuardFactor, c.GuardUnit, c.Tolerance = "", 0, "", 0
	if v := EvaluateClaim(c, recs, 1); len(v.Settings) != 0 || len(v.Missing) != 1 {
		t.Errorf("without split: %d settings, %d missing; want the ambiguous pairing reported missing", len(v.Settings), len(v.Missing))
	}
	c.Split = []string{"loss.tcm.margin"}
	v := EvaluateClaim(c, recs, 1)
	if len(v.Settings) != 2 || len(v.Missing) != 0 || v.Verdict != VerdictHeld {
		t.Fatalf("with split: settings %+v, missing %+v, verdict %q", v.Settings, v.Missing, v.Verdict)
	}
	for i, want := range []struct {
		label  string
		change float64
		moved  int
	}{{"smoothap → smoothap+tcm at loss.tcm.margin=0.5", -2, 3}, {"smoothap → smoothap+tcm at loss.tcm.margin=0.9", -1, 2}} {
		s := v.Settings[i]
		if s.Label() != want.label || math.Abs(s.Change-want.change) > 1e-12 || s.Effect.Improved != want.moved {
			t.Errorf("setting %d: %s change %v moved %d; want %s %v %d", i, s.Label(), s.Change, s.Effect.Improved, want.label, want.change, want.moved)
		}
	}
}
