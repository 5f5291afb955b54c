package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// compSpec: losses a, b and d, each with its own learning-rate step on a validation split (d's
// with 2 runs, the others' 3; b also tunes its own margin m), and sweep points that are tuned for
// themselves (a, b, d), borrow b's rate for another configuration
// (b with g = 0.5), take no tuning (c), or run at a label-noise condition neither step saw (a and
// b at noise 0.2: both borrow the same way). compSpecToy2 adds a and b on another dataset, toy2, at
// their toy rates: alike, but not in the claim's own condition.
const compSpec = `
paper: toy
base: {opt: {lr: 1}, loss: {name: a}, data: {name: toy}}
tune:
  - name: lr-a
    point: {data.val_classes: 0.1, loss.name: a}
    grid: {opt.lr: [0.1, 0.3, 1.0]}
    select: {metric: val/acc}
  - name: lr-b
    point: {data.val_classes: 0.1, loss.name: b}
    grid: {opt.lr: [0.1, 0.3, 1.0]}
    select: {metric: val/acc}
  - name: m-b
    point: {data.val_classes: 0.1, loss.name: b, tuned: lr-b}
    grid: {loss.m: [1, 2]}
    select: {metric: val/acc}
  - name: lr-d
    point: {data.val_classes: 0.1, loss.name: d}
    grid: {opt.lr: [0.1, 0.3]}
    select: {metric: val/acc}
sweep:
  list:
    - {loss.name: a, tuned: lr-a}
    - {loss.name: b, tuned: [lr-b, m-b]}
    - {loss.name: d, tuned: lr-d}
    - {loss.name: b, loss.g: 0.5, tuned: lr-b}
    - {loss.name: c}
    - {loss.name: a, data.corrupt.label_noise: 0.2, tuned: lr-a}
    - {loss.name: b, data.corrupt.label_noise: 0.2, tuned: lr-b}
  seeds: [0, 1, 2]
`

var compSpecToy2 = strings.Replace(compSpec, "  seeds: [0, 1, 2]\n",
	"    - {loss.name: a, data.name: toy2, tuned: lr-a}\n    - {loss.name: b, data.name: toy2, tuned: lr-b}\n  seeds: [0, 1, 2]\n", 1)

// armKey names a sweep point's configuration: "a", "b", "b-g", "c", "a-noise", "b-noise".
func armKey(cfg map[string]any) string {
	name, _ := sweep.Get(cfg, "loss.name")
	k := sweep.FormatValue(name)
	if _, ok := sweep.Get(cfg, "loss.g"); ok {
		k += "-g"
	}
	if _, ok := sweep.Get(cfg, "data.corrupt.label_noise"); ok {
		k += "-noise"
	}
	if d, _ := sweep.Get(cfg, "data.name"); d == "toy2" {
		k += "-toy2"
	}
	return k
}

// compRecords stores the whole plan of compSpec: tuning runs (validation accuracy best at
// lr 0.3) and the sweep points with test metric "acc" (b beats a by 3, 3 and 3.5 points at seeds
// 0-2, the others a's values), "train/R@1", "steps", "epochs", a logged loss, as set per arm
// by edit.
func compRecords(t *testing.T, s *sweep.Spec, edit func(arm string, seed int64, r *sweep.Record)) []sweep.Record {
	t.Helper()
	var recs []sweep.Record
	stored := map[string]bool{}
	var p *sweep.Plan
	for range 4 { // each round stores the tuning runs the last selections unblocked
		var err error
		if p, err = s.PlanWith("", recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			if r.Tune != "" && !stored[r.Hash] {
				stored[r.Hash] = true
				lr, _ := sweep.Get(r.Config, "opt.lr")
				l, _ := sweep.Numeric(lr)
				recs = append(recs, sweep.Record{Hash: r.Hash, Seed: r.Seed, Config: r.Config, Params: r.Params,
					Metrics: sweep.Metrics{"val/acc": 1 - (l-0.3)*(l-0.3), "steps": 100}})
			}
		}
	}
	if len(p.Pending) > 0 {
		t.Fatalf("pending %+v", p.Pending)
	}
	for _, r := range p.Runs {
		if r.Tune != "" {
			continue
		}
		arm := armKey(r.Config)
		acc := 10 + float64(r.Seed)
		if strings.HasPrefix(arm, "b") || arm == "d" {
			acc += []float64{3, 3, 3.5}[r.Seed]
		}
		rec := sweep.Record{Hash: r.Hash, Seed: r.Seed, Config: r.Config, Params: r.Params,
			Metrics: sweep.Metrics{"acc": acc, "train/R@1": 0.6, "steps": 100, "epochs": 2},
			Series:  sweep.Series{"steplog/loss": {2, 1.5, 1.2}}}
		if edit != nil {
			edit(arm, r.Seed, &rec)
		}
		recs = append(recs, rec)
	}
	return recs
}

func TestComparabilityRules(t *testing.T) {
	s := mustParse(t, compSpecToy2)
	f := func(x float64) *float64 { return &x }
	better := func(base, treat string, mod func(*judge.ClaimSpec)) judge.ClaimSpec {
		c := judge.ClaimSpec{ID: "x", Paper: "p", Source: "T1", Kind: judge.KindBetter, Metric: "acc", Direction: "higher",
			Base:      &judge.Arm{Label: "A", Where: map[string]any{"loss.name": base, "loss.g": nil, "data.corrupt.label_noise": nil, "data.name": "toy"}},
			Treatment: &judge.Arm{Label: "B", Where: map[string]any{"loss.name": treat, "loss.g": nil, "data.corrupt.label_noise": nil, "data.name": "toy"}}}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	gHalf := func(c *judge.ClaimSpec) { c.Treatment.Where["loss.g"] = 0.5 }
	noise := func(c *judge.ClaimSpec) {
		c.Base.Where["data.corrupt.label_noise"] = 0.2
		c.Treatment.Where["data.corrupt.label_noise"] = 0.2
	}
	toy2 := func(c *judge.ClaimSpec) { c.Base.Where["data.name"] = "toy2"; c.Treatment.Where["data.name"] = "toy2" }
	ablation := func(c *judge.ClaimSpec) {
		c.Ablation, c.FailureIsEffect = "base", "The paper's Table 5 shows the ablated loss far below."
	}
	trainR1 := func(per map[string]float64) func(string, int64, *sweep.Record) {
		return func(arm string, _ int64, r *sweep.Record) {
			if x, ok := per[arm]; ok {
				r.Metrics["train/R@1"] = x
			}
		}
	}
	tests := []struct {
		name    string
		claim   judge.ClaimSpec
		set     *judge.ClaimSet
		edit    func(arm string, seed int64, r *sweep.Record)
		verdict string
		cause   string
		reason  string // a substring of Reason
		note    string // a substring of the comparability note
	}{
		{name: "own tuning on both sides, trained, equal budget", claim: better("a", "b", nil),
			verdict: judge.VerdictHeld, cause: judge.CauseInterval, reason: "interval on the claimed side",
			// m-b's validation accuracy does not depend on m: the tie selects the first value, 1, at the edge.
			note: "own tuning · at grid edge: loss.m = 1 (m-b) · 2 epochs each · train R@1 0.60"},
		{name: "fewer learning-rate tuning runs for one arm", claim: better("a", "d", nil),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUnequal, reason: "unequal comparison (tuning runs of opt.lr 3 vs 2)"},
		{name: "the treatment borrows the base loss's tuning of another configuration", claim: better("a", "b", gHalf),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUnequal,
			reason: "unequal comparison (B: borrowed tuning (loss.g: tuned at unset, this arm 0.5)); the interval alone: held",
			note:   "tuning own/borrowed"},
		{name: "a borrowed selection declared deliberate", claim: better("a", "b", func(c *judge.ClaimSpec) { gHalf(c); c.Deliberate = "g needs no tuning" }),
			verdict: judge.VerdictHeld, cause: judge.CauseInterval, note: "tuning own/borrowed (deliberate)"},
		{name: "a declaration on a claim whose arms are all tuned for themselves marks nothing", claim: better("a", "b", func(c *judge.ClaimSpec) { c.Deliberate = "another form borrows" }),
			verdict: judge.VerdictHeld, cause: judge.CauseInterval, note: "own tuning · at grid edge"},
		{name: "one arm tuned, the other at fixed values", claim: better("c", "b", nil),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUnequal, reason: "tuned: B; fixed values: A"},
		{name: "both arms at a condition neither tuning saw, borrowed alike", claim: better("a", "b", noise),
			verdict: judge.VerdictHeld, cause: judge.CauseInterval, note: "borrowed tuning, alike (data.corrupt.label_noise: tuned at unset, this arm 0.2)"},
		{name: "both arms on another dataset at rates tuned on the first: a cross-dataset borrowed rate", claim: better("a", "b", toy2),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUnequal,
			reason: "A: borrowed tuning (data.name: tuned at toy, this arm toy2); B: borrowed tuning (data.name: tuned at toy, this arm toy2)"},
		{name: "unequal epochs", claim: better("a", "b", nil),
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "b" {
					r.Metrics["epochs"] = 4
				}
			},
			verdict: judge.VerdictInconclusive, cause: judge.CauseUnequal, reason: "unequal comparison (epochs 2 vs 4)", note: "epochs 2 vs 4"},
		{name: "unequal epochs, but the claim holds steps equal", claim: better("a", "b", func(c *judge.ClaimSpec) { c.Budget = judge.BudgetSteps }),
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "b" {
					r.Metrics["epochs"] = 4
				}
			},
			verdict: judge.VerdictHeld, cause: judge.CauseInterval, note: "100 steps each"},
		{name: "the set's budget applies to its claims", claim: better("a", "b", nil), set: &judge.ClaimSet{Paper: "toy", Budget: judge.BudgetSteps},
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "b" {
					r.Metrics["epochs"] = 4
				}
			},
			verdict: judge.VerdictHeld, cause: judge.CauseInterval},
		{name: "a weak baseline is marked, the verdict stands", claim: better("a", "b", nil),
			set:     &judge.ClaimSet{Paper: "toy", Weak: []judge.WeakBaseline{{Where: map[string]any{"loss.name": "a"}, Reason: "a reaches 10 % where others reach 60 %"}}},
			verdict: judge.VerdictHeld, cause: judge.CauseInterval, note: "weak baseline: A (a reaches 10 % where others reach 60 %)"},
		{name: "an arm below half its setting's best train R@1", claim: better("a", "b", nil), edit: trainR1(map[string]float64{"a": 0.2}),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUntrained,
			reason: "A did not train (train R@1 0.200 < 0.50 × 0.600, its setting's best of 5); the interval alone: held", note: "train R@1 0.20–0.60"},
		// Setting "toy", clean: 5 configurations (a, b, d, b-g, c; the noisy ones and toy2 are
		// settings of their own); d reaches 0.9, so
		// the floor is 0.45 for every arm of the setting, whatever it is compared with.
		{name: "an arm below its setting's floor but above half its comparator's", claim: better("a", "b", nil),
			edit:    trainR1(map[string]float64{"a": 0.35, "d": 0.9}),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUntrained,
			reason: "A did not train (train R@1 0.350 < 0.50 × 0.900, its setting's best of 5)"},
		{name: "the method (the treatment) below the floor", claim: better("a", "b", nil), edit: trainR1(map[string]float64{"b": 0.25}),
			verdict: judge.VerdictInconclusive, cause: judge.CauseMethodUntrained,
			reason: "B did not train (train R@1 0.250 < 0.50 × 0.600, its setting's best of 5)"},
		{name: "the method no better than its untrained model",
			claim: better("a", "b", nil),
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "b" {
					r.Metrics["init/train/R@1"] = 0.58
				}
			},
			verdict: judge.VerdictInconclusive, cause: judge.CauseMethodUntrained,
			reason: "B did not train (train R@1 0.600, its untrained model's 0.580: less than 0.05 above)"},
		{name: "the ablated arm fails, the method trains: the claimed effect", claim: better("a", "b", ablation),
			edit:    trainR1(map[string]float64{"a": 0.2}),
			verdict: judge.VerdictHeld, cause: judge.CauseFailureEffect,
			reason: "A did not train (train R@1 0.200 < 0.50 × 0.600, its setting's best of 5): the ablation breaks the method, the claimed effect (The paper's Table 5"},
		{name: "the ablated arm and the method both fail", claim: better("a", "b", ablation),
			edit:    trainR1(map[string]float64{"a": 0.2, "b": 0.2}),
			verdict: judge.VerdictInconclusive, cause: judge.CauseMethodUntrained, reason: "(a comparator did not train either)"},
		{name: "the ablated arm fails without failure_is_effect", claim: better("a", "b", func(c *judge.ClaimSpec) { c.Ablation = "base" }),
			edit:    trainR1(map[string]float64{"a": 0.2}),
			verdict: judge.VerdictInconclusive, cause: judge.CauseUntrained},
		{name: "the training rule turned off", claim: better("a", "b", func(c *judge.ClaimSpec) { c.MinTrain = f(0) }),
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "a" {
					r.Metrics["train/R@1"] = 0.2
				}
			},
			verdict: judge.VerdictHeld, cause: judge.CauseInterval},
		{name: "at 0.4 of the best arm an arm at 0.3/0.6 trained", claim: better("a", "b", func(c *judge.ClaimSpec) { c.MinTrain = f(0.4) }),
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "a" {
					r.Metrics["train/R@1"] = 0.3
				}
			},
			verdict: judge.VerdictHeld, cause: judge.CauseInterval},
		{name: "no train R@1: a held verdict on arms whose training is not recorded", claim: better("a", "b", nil),
			edit: func(arm string, _ int64, r *sweep.Record) {
				if arm == "b" {
					delete(r.Metrics, "train/R@1")
				}
			},
			verdict: judge.VerdictInconclusive, cause: judge.CauseNotRecorded, reason: "training not recorded for B; the interval alone: held",
			note: "loss fell"},
		{name: "nothing recorded about training", claim: better("a", "b", nil),
			edit:    func(arm string, _ int64, r *sweep.Record) { delete(r.Metrics, "train/R@1"); r.Series = nil },
			verdict: judge.VerdictInconclusive, cause: judge.CauseNotRecorded, reason: "training not recorded for A, B", note: "training not recorded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := compRecords(t, s, tc.edit)
			tc.claim.Normalize()
			if err := tc.claim.Check(); err != nil {
				t.Fatal(err)
			}
			set := tc.set
			if set == nil {
				set = &judge.ClaimSet{Paper: "toy"}
			}
			set.Claims = []judge.ClaimSpec{tc.claim}
			vs, err := set.Evaluate(recs, judge.ClaimOptions{Spec: s})
			if err != nil {
				t.Fatal(err)
			}
			v := vs[0]
			if v.Verdict != tc.verdict || v.Cause != tc.cause {
				t.Fatalf("verdict %s (cause %s), want %s (%s); reason %q", v.Verdict, v.Cause, tc.verdict, tc.cause, v.Reason)
			}
			if v.Raw != judge.VerdictHeld {
				t.Errorf("raw verdict %s, want held (the interval rule alone)", v.Raw)
			}
			if !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", v.Reason, tc.reason)
			}
			if note := v.ComparabilityNote(); !strings.Contains(note, tc.note) {
				t.Errorf("note %q lacks %q", note, tc.note)
			}
		})
	}
}

// Without a spec the tuning rule is not applied (and says so); the others are.
func TestComparabilityWithoutSpec(t *testing.T) {
	s := mustParse(t, compSpec)
	recs := compRecords(t, s, nil)
	c := judge.ClaimSpec{ID: "x", Paper: "p", Source: "T1", Kind: judge.KindBetter, Metric: "acc", Direction: "higher",
		Base:      &judge.Arm{Label: "A", Where: map[string]any{"loss.name": "a", "data.corrupt.label_noise": nil}},
		Treatment: &judge.Arm{Label: "B", Where: map[string]any{"loss.name": "b", "loss.g": 0.5}}}
	v, err := judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != judge.VerdictHeld || !strings.HasPrefix(v.ComparabilityNote(), "tuning not checked") {
		t.Errorf("verdict %s, note %q", v.Verdict, v.ComparabilityNote())
	}
}

// A claim with two forms gets a verdict per form, the first the claim's, and both in its row.
func TestClaimForms(t *testing.T) {
	s := mustParse(t, compSpec)
	recs := compRecords(t, s, nil)
	cs, err := judge.ParseClaims([]byte(`
paper: toy
claims:
  - id: forms
    paper: "B beats A"
    source: Table 1
    kind: better
    metric: acc
    direction: higher
    base: {label: A, where: {loss.name: a, data.corrupt.label_noise: null}}
    treatment: {label: B, where: {loss.name: b, data.corrupt.label_noise: null}}
    forms:
      - {label: "paper text", treatment: {loss.g: null}}
      - {label: "authors' code", treatment: {loss.g: 0.5}}
`), "claims.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cs.Report(recs, judge.ClaimOptions{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verdicts[0]
	if len(v.Forms) != 2 || v.Forms[0].Form != "paper text" || v.Forms[1].Form != "authors' code" {
		t.Fatalf("forms %+v", v.Forms)
	}
	if v.Verdict != judge.VerdictHeld || v.Forms[1].Verdict != judge.VerdictInconclusive || v.Forms[1].Cause != judge.CauseUnequal {
		t.Errorf("verdicts %s / %s (%s)", v.Verdict, v.Forms[1].Verdict, v.Forms[1].Cause)
	}
	md := rep.Markdown()
	for _, want := range []string{"paper text: **held**", // The key in words: the spec has no label for loss.g, so its last part.
		"authors' code: **inconclusive** (unequal comparison (B: borrowed tuning (g: tuned at unset, this arm 0.5))",
		"1 held, 0 contradicted, 0 inconclusive"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if tex := rep.LaTeX(""); !strings.Contains(tex, "paper text: held; authors' code: inconclusive (unequal)") {
		t.Errorf("LaTeX lacks the forms' verdicts:\n%s", tex)
	}
	// The cross-paper summary counts each form's verdicts on a line of its own.
	sum := SummaryMarkdown([]*judge.ClaimsReport{rep})
	for _, want := range []string{`- toy, form "paper text": 1 held, 0 contradicted, 0 inconclusive`,
		`- toy, form "authors' code": 0 held, 0 contradicted, 1 inconclusive`} {
		if !strings.Contains(sum, want) {
			t.Errorf("SummaryMarkdown lacks %q:\n%s", want, sum)
		}
	}
}

func TestClaimRuleFieldsChecked(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"budget: hours\n", `field "budget": "hours" is not one of steps, epochs, images`},
		{"min_train: 2\n", `field "min_train": 2: want a fraction in [0, 1]`},
		{"claims:\n  - {id: x, paper: p, source: s, kind: better, metric: m, direction: higher, base: {label: A, where: {k: 1}}, treatment: {label: B, where: {k: 2}}, forms: [{label: only, where: {z: 1}}]}\n",
			`field "forms": one form`},
		{"claims:\n  - {id: x, paper: p, source: s, kind: better, metric: m, direction: higher, base: {label: A, where: {k: 1}}, treatment: {label: B, where: {k: 2}}, budget: minutes}\n",
			`field "budget": "minutes"`},
		// issue 43: a number is not a reason, and two forms selecting the same records are one form.
		{"claims:\n  - {id: x, paper: p, source: s, kind: better, metric: m, direction: higher, base: {label: A, where: {k: 1}}, treatment: {label: B, where: {k: 2}}, deliberate: 5}\n",
			`field "deliberate": "5": give the reason as a sentence`},
		{"claims:\n  - {id: x, paper: p, source: s, kind: better, metric: m, direction: higher, base: {label: A, where: {k: 1}}, treatment: {label: B, where: {k: 2}}, deliberate: \"n/a\"}\n",
			`field "deliberate": "n/a"`},
		{"claims:\n  - {id: x, paper: p, source: s, kind: better, metric: m, direction: higher, base: {label: A, where: {k: 1}}, treatment: {label: B, where: {k: 2}}, forms: [{label: text, where: {z: 1}}, {label: code, where: {z: 1}}]}\n",
			`field "forms[1]": selects what forms[0] ("text") selects`},
	} {
		body := "paper: toy\n" + tc.yaml
		if !strings.Contains(tc.yaml, "claims:") {
			body += "claims:\n  - {id: x, paper: p, source: s, kind: better, metric: m, direction: higher, base: {label: A, where: {k: 1}}, treatment: {label: B, where: {k: 2}}}\n"
		}
		_, err := judge.ParseClaims([]byte(body), "claims.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// A record of an arm that is no longer a run of the spec (its configuration changed, e.g. a new
// tuning step selected another rate) stays in the store but out of the verdict, and is counted.
func TestSupersededRecordsLeftOut(t *testing.T) {
	s := mustParse(t, compSpec)
	recs := compRecords(t, s, nil)
	for _, r := range recs {
		if armKey(r.Config) == "a" && r.Seed == 0 && r.Params["data.val_classes"] == nil {
			old := r
			old.Hash = "0000000000000000" // the same arm at its former configuration
			old.Config = sweep.Clone(r.Config)
			_ = sweep.SetPath(old.Config, "opt.lr", 0.05)
			old.Metrics = sweep.Metrics{"acc": 99, "steps": 100, "epochs": 2}
			recs = append(recs, old)
			break
		}
	}
	c := judge.ClaimSpec{ID: "x", Paper: "p", Source: "T1", Kind: judge.KindBetter, Metric: "acc", Direction: "higher",
		Base:      &judge.Arm{Label: "A", Where: map[string]any{"loss.name": "a", "data.corrupt.label_noise": nil}},
		Treatment: &judge.Arm{Label: "B", Where: map[string]any{"loss.name": "b", "loss.g": nil, "data.corrupt.label_noise": nil}}}
	set := &judge.ClaimSet{Paper: "toy", Claims: []judge.ClaimSpec{c}}
	vs, err := set.Evaluate(recs, judge.ClaimOptions{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if v := vs[0]; v.Verdict != judge.VerdictHeld || v.Superseded != 1 || !strings.Contains(v.Details(), "1 superseded record") {
		t.Errorf("verdict %s, superseded %d, details %q", v.Verdict, v.Superseded, v.Details())
	}
	// Without the spec nothing tells the two records of seed 0 apart: the arm is ambiguous.
	if _, err := set.Evaluate(recs, judge.ClaimOptions{}); err == nil || !strings.Contains(err.Error(), "two records of seed 0") {
		t.Errorf("without a spec: error %v, want two records of seed 0", err)
	}
}

// DropSuperseded keeps the runs of the current plan and records of scales the spec does not
// define, and drops a record whose configuration the spec no longer produces.
func TestDropSuperseded(t *testing.T) {
	s := mustParse(t, compSpec)
	recs := compRecords(t, s, nil)
	n := len(recs)
	old := recs[n-1]
	old.Hash = "0000000000000000"
	other := recs[n-2]
	other.Scale = "elsewhere"
	recs = append(recs, old, other)
	cur, sup := judge.DropSuperseded(s, recs)
	if len(cur) != n+1 || len(sup) != 1 || sup[0] != old.Hash {
		t.Errorf("kept %d of %d, superseded %v; want %d kept and %s superseded", len(cur), len(recs), sup, n+1, old.Hash)
	}
}

// An interaction compares the treatment's gain under two conditions: each condition's pair must be
// comparable, not all four arms alike. Here the clean pair is tuned for itself and the noisy pair
// borrows alike (both at a noise level their tuning did not see): comparable (all four arms judged
// together would mix own and borrowed tuning).
func TestComparabilityInteractionPairs(t *testing.T) {
	s := mustParse(t, compSpec)
	recs := compRecords(t, s, nil)
	c := judge.ClaimSpec{ID: "x", Paper: "p", Source: "T1", Kind: judge.KindInteraction, Metric: "acc", Direction: "higher",
		Base:       &judge.Arm{Label: "A", Where: map[string]any{"loss.name": "a"}},
		Treatment:  &judge.Arm{Label: "B", Where: map[string]any{"loss.name": "b", "loss.g": nil}},
		Conditions: []judge.Arm{{Label: "clean", Where: map[string]any{"data.corrupt.label_noise": nil}}, {Label: "noisy", Where: map[string]any{"data.corrupt.label_noise": 0.2}}}}
	v, err := judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if v.Cause != judge.CauseInterval || len(v.Facts) != 4 || v.Facts[0].Tuning != judge.TuningOwn || v.Facts[2].Tuning != judge.TuningBorrowed {
		t.Errorf("cause %s (%s), facts %+v", v.Cause, v.Reason, v.Facts)
	}
	// The row's note reads per condition as the rule judges (not "tuning own/own/borrowed/borrowed").
	if want := "per condition: own tuning / borrowed tuning, alike (data.corrupt.label_noise: tuned at unset, this arm 0.2)"; !strings.HasPrefix(v.ComparabilityNote(), want) {
		t.Errorf("note %q, want prefix %q", v.ComparabilityNote(), want)
	}
	// The budget likewise: the noisy pair trains 1 epoch, the clean pair 2; each pair is equal, so the
	// verdict stands and the note says so per condition (not "epochs 2 vs 2 vs 1 vs 1").
	recs = compRecords(t, s, func(arm string, _ int64, r *sweep.Record) {
		if strings.HasSuffix(arm, "-noise") {
			r.Metrics["epochs"] = 1
		}
	})
	v, err = judge.EvaluateClaim(c, nil, recs, judge.ClaimOptions{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if note := v.ComparabilityNote(); v.Cause != judge.CauseInterval || !strings.Contains(note, " · per condition: 2 epochs each / 1 epochs each") {
		t.Errorf("cause %s (%s), note %q", v.Cause, v.Reason, note)
	}
}

// ChangesMarkdown lists the claims whose verdict the rules changed (not a change of cause alone);
// SummaryMarkdown counts per paper by cause, with the interval-alone verdicts and the totals.
func TestChangesAndSummary(t *testing.T) {
	mk := func(id, raw, verdict, cause, reason string) judge.ClaimVerdict {
		return judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: id, Source: "Table 1"}, Raw: raw, Verdict: verdict, Cause: cause, Reason: reason}
	}
	a := &judge.ClaimsReport{Paper: "a", Scale: "small", Verdicts: []judge.ClaimVerdict{
		mk("x1", judge.VerdictHeld, judge.VerdictHeld, judge.CauseInterval, "interval on the claimed side"),
		mk("x2", judge.VerdictContradicted, judge.VerdictInconclusive, judge.CauseUnequal, "unequal comparison (B: borrowed tuning (k: tuned at 1, this arm 2)); the interval alone: contradicted"),
		mk("x3", judge.VerdictInconclusive, judge.VerdictInconclusive, judge.CauseUnequal, "unequal comparison (epochs 2 vs 4)"),
		mk("x4", judge.VerdictHeld, judge.VerdictInconclusive, judge.CauseUntrained, "A did not train (its loss fell in 0 of 3 seeds); the interval alone: held"),
	}}
	a.Verdicts[0].Facts = []judge.ArmFacts{{Label: "A", Weak: "A is weak"}}
	b := &judge.ClaimsReport{Paper: "b", Scale: "small", Verdicts: []judge.ClaimVerdict{
		mk("y1", judge.VerdictContradicted, judge.VerdictContradicted, judge.CauseInterval, "interval on the opposite side"),
		mk("y2", judge.VerdictInconclusive, judge.VerdictInconclusive, judge.CauseNoRecords, "no records for A"),
	}}
	md := a.ChangesMarkdown(nil)
	for _, want := range []string{
		"The interval rule alone gives 2 held, 1 contradicted, 1 inconclusive; with the comparability and training rules 1 held, 0 contradicted, 3 inconclusive (2 verdicts changed).",
		"| x2 | Table 1 | contradicted | inconclusive | unequal comparison: B: borrowed tuning (k: tuned at 1, this arm 2) |",
		"| x4 | Table 1 | held | inconclusive | an arm did not train: A did not train (its loss fell in 0 of 3 seeds) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("ChangesMarkdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| x3 |") || strings.Contains(md, "| x1 |") {
		t.Errorf("ChangesMarkdown lists a claim whose verdict did not change:\n%s", md)
	}
	sum := SummaryMarkdown([]*judge.ClaimsReport{a, b})
	for _, want := range []string{
		"| a | from scratch | 4 | 1 | 0 | 0 | 3: 2 unequal arms · 1 an arm did not train | 2 / 1 / 1 |",
		"| b | from scratch | 2 | 0 | 1 | 0 | 1: 1 no records | 0 / 1 / 1 |",
		"| **all** |  | 6 | 1 | 1 | 0 | 4: 2 unequal arms · 1 an arm did not train · 1 no records | 2 / 2 / 2 |",
		"Held or contradicted on a weak baseline (a baseline below its known level; see the papers' claims tables): a (from scratch) 1.",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("SummaryMarkdown lacks %q:\n%s", want, sum)
		}
	}
}

// TestTuningDiffParentOfTunedKeys: a tuning run without the tuned options flattens them to their
// parent with a null value ("loss.set.options": nil) while the arm carries the tuned children;
// that parent is not a difference, but an untuned child of it is (worked out by hand: the arm's
// extra lambda_neg is the only key outside the tuned ones that the run lacks).
func TestTuningDiffParentOfTunedKeys(t *testing.T) {
	tuned := map[string]bool{"loss.set.options.tcm.neg_margin": true, "loss.set.options.tcm.pos_margin": true, "optimizer.lr": true}
	run := map[string]any{"loss.set.expr": "smoothap+tcm", "loss.set.options": nil, "optimizer.lr": 0.016}
	for _, c := range []struct {
		name string
		arm  map[string]any
		want []string
	}{
		{"tuned children only", map[string]any{"loss.set.expr": "smoothap+tcm", "loss.set.options.tcm.neg_margin": 0.85, "loss.set.options.tcm.pos_margin": 0.9, "optimizer.lr": 0.016}, nil},
		{"an untuned child", map[string]any{"loss.set.expr": "smoothap+tcm", "loss.set.options.tcm.neg_margin": 0.85, "loss.set.options.tcm.lambda_neg": 0.0, "optimizer.lr": 0.016},
			[]string{"loss.set.options.tcm.lambda_neg: tuned at unset, this arm 0"}},
		{"another loss", map[string]any{"loss.set.expr": "rsk+tcm", "loss.set.options.tcm.neg_margin": 0.85, "optimizer.lr": 0.016},
			[]string{"loss.set.expr: tuned at smoothap+tcm, this arm rsk+tcm"}},
	} {
		if got := judge.TuningDiff(c.arm, run, tuned); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
