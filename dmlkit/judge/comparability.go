package judge

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Comparability and training rules of a verdict (reproducing.md §1, "Comparable arms" and
// "Trained arms"). A verdict compares arms, so before the interval is read the engine asks of
// every arm, from its records and the spec's plan:
//
//   - where its hyper-parameters came from: the tuning steps of its own configuration
//     ([TuningOwn]), steps that tuned another configuration ([TuningBorrowed]: the step's runs
//     differ from the arm outside the tuned keys, e.g. CIT γ = 0.5 at the rate tuned for γ = 1, or a
//     rate tuned at 20 epochs used at 60), or no step at all ([TuningNone]: fixed values);
//   - its budget: optimizer steps, epochs and images (steps × batch) of its runs, and the runs and
//     steps per run of its tuning (compared for the hyper-parameters every arm tunes: a method's
//     own extra ones, e.g. TCM's margins, belong to the method);
//   - whether it trained: its training-split R@1 ("train/R@1", eval.train) and whether its logged
//     loss fell.
//
// Arms that differ in tuning (one borrowed, one tuned and one not, unequal tuning budgets) or in
// the budget the claim holds equal give "inconclusive — unequal comparison (what differs)" unless
// the claim declares the difference deliberate with a reason; an arm below the training floor
// gives "inconclusive — <arm> did not train". The verdict the interval alone gives stays in
// [ClaimVerdict.Raw].

// Tuning provenances of an arm ([ArmFacts.Tuning]).
const (
	TuningNone      = "none"     // no tuning step: fixed values (the paper's, the library's or the spec's)
	TuningOwn       = "own"      // selected by tuning steps run on the arm's own configuration
	TuningBorrowed  = "borrowed" // selected by steps that tuned another configuration
	TuningUnknown   = "unknown"  // the record is not in the spec's plan
	TuningUnchecked = ""         // no spec was given: the tuning rule is not applied
	tuningMixed     = "mixed"    // the arm's records differ in provenance
)

// Budget units a claim may hold equal ([ClaimSpec.Budget]).
const (
	BudgetSteps  = "steps"  // optimizer steps
	BudgetEpochs = "epochs" // passes over the training set (the default: the papers train for epochs)
	BudgetImages = "images" // steps × batch size
)

// BudgetUnits lists the budget units.
var BudgetUnits = []string{BudgetSteps, BudgetEpochs, BudgetImages}

// Causes of a verdict ([ClaimVerdict.Cause]).
const (
	CauseInterval  = "interval"  // the verdict the interval rule gives (held, contradicted or inconclusive)
	CauseUnequal   = "unequal"   // inconclusive: the arms differ in tuning or budget
	CauseUntrained = "untrained" // inconclusive: an arm did not train (a comparator, or an arm of a claim without a treatment)
	// CauseMethodUntrained: inconclusive as a comparison, and counted as its own outcome — the
	// paper's own method (the claim's treatment, or its base when the treatment is the ablation) did
	// not train here.
	CauseMethodUntrained = "method untrained"
	// CauseNotRecorded: the interval was decisive, but an arm's training is not recorded (no
	// training-split R@1), so nothing shows that it trained.
	CauseNotRecorded = "not recorded"
	// CauseFailureEffect: held — the claim predicts that the ablation breaks the method
	// (failure_is_effect) and the ablated arm did not train while the method did.
	CauseFailureEffect = "failure is the effect"
	CauseNoRecords     = "no records"
)

// CauseLabel is a cause in a few words for tables and notes ("" for [CauseInterval]).
func CauseLabel(cause string) string {
	return map[string]string{
		CauseUnequal:         "unequal comparison",
		CauseUntrained:       "an arm did not train",
		CauseMethodUntrained: "the method did not train here",
		CauseNotRecorded:     "training not recorded",
		CauseFailureEffect:   "the ablated arm did not train: the claimed effect",
		CauseNoRecords:       "no records",
	}[cause]
}

// RuleDecided reports whether a rule other than the interval decided the verdict (any cause but
// [CauseInterval]).
func RuleDecided(cause string) bool { return cause != CauseInterval && cause != "" }

// MinTrainGain is the training rule's step-0 margin: an arm whose training R@1 is not at least
// this much above its own untrained model's ("init/train/R@1", recorded by the training
// measurement) did not train.
const MinTrainGain = 0.05

// ArmFacts is what the comparability and training rules read about one arm, from its records at
// the verdict's paired seeds (all of the arm's records when no seed is paired).
type ArmFacts struct {
	Label    string
	Tuning   string         // TuningNone, TuningOwn, TuningBorrowed, TuningUnknown or "mixed"
	Steps    []string       // the tuning steps behind its selected values (transitively), sorted
	Differs  []string       // borrowed: how the steps' runs differ from the arm, e.g. "loss.set.gamma: tuned at unset, this arm 0.5"
	TuneRuns int            // runs of those steps (grid points × seeds)
	KeyRuns  map[string]int // per tuned key: the runs of the step(s) that tuned it
	TuneLen  float64        // optimizer steps of one tuning run (NaN: no tuning run stored)
	Edge     []string       // selections at their grid's edge: "optimizer.lr = 0.008 (lr-cit)"
	Budget   map[string]float64
	TrainR1  float64 // mean training-split R@1 (NaN when not recorded for every record)
	InitR1   float64 // mean training-split R@1 of its untrained models, step 0 (NaN when not recorded for every record)
	// Reference is the training R@1 of the best configuration of the arm's setting — the final
	// runs that share its regime, data, batch and steps, whatever their loss ([provenance.reference]);
	// NaN without a spec or when none of them records it. RefN counts those configurations.
	Reference float64
	RefN      int
	LossSeeds int      // seeds with a logged loss of ≥ 2 points
	LossFell  int      // of those, seeds whose loss fell below its first logged value
	N         int      // records the facts come from
	Records   []string // their hashes, in seed order
	Weak      string   // the reason, when the arm is a baseline below its level ([ClaimSet.Weak])
	Regime    string   // how its backbone started and whether it trained ([RegimeOf]); "mixed" when its records differ
}

// recorded reports whether the arm has training evidence: train R@1 or a logged loss.
func (f *ArmFacts) recorded() bool { return !math.IsNaN(f.TrainR1) || f.LossSeeds > 0 }

// provenance maps the records of one scale to their planned runs: the context the tuning rule needs.
type provenance struct {
	spec    *sweep.Spec
	planned bool                   // the plan resolved: runs holds every planned run
	runs    map[string]sweep.Run   // hash → run
	tuneOf  map[string][]sweep.Run // tuning step → its planned runs
	recs    map[string]*sweep.Record
	sel     map[string]sweep.Selected
	flat    map[string]map[string]any // run hash → resolvedFlat of its configuration, computed once
	refs    map[string][2]float64     // setting → its training R@1 reference and configurations (reference)
}

// newProvenance plans the scale with the stored records ([Spec.PlanWith]); when the plan cannot be
// made, every arm's tuning is unknown.
func newProvenance(s *sweep.Spec, scale string, records []sweep.Record) *provenance {
	p := &provenance{spec: s, runs: map[string]sweep.Run{}, tuneOf: map[string][]sweep.Run{}, recs: map[string]*sweep.Record{}, sel: map[string]sweep.Selected{},
		flat: map[string]map[string]any{}}
	plan, err := s.PlanWith(scale, records)
	if err != nil {
		return p
	}
	p.planned = true
	for _, r := range plan.Runs {
		p.runs[r.Hash] = r
		if r.Tune != "" {
			p.tuneOf[r.Tune] = append(p.tuneOf[r.Tune], r)
		}
		for _, t := range r.Also {
			p.tuneOf[t] = append(p.tuneOf[t], r)
		}
	}
	for i := range records {
		if records[i].Scale == scale {
			p.recs[records[i].Hash] = &records[i]
		}
	}
	for _, st := range s.Selections(plan, records) {
		p.sel[st.Name] = st
	}
	return p
}

// resolved returns the run's configuration with the trainer's defaults as dotted keys
// (resolvedFlat), computed once per run: every seed of every arm of every claim compares with the
// same few tuning runs.
func (p *provenance) resolved(r sweep.Run) map[string]any {
	if f, ok := p.flat[r.Hash]; ok {
		return f
	}
	f := sweep.ResolvedFlat(r.Config)
	p.flat[r.Hash] = f
	return f
}

// inPlan reports whether a record's hash is a run of the spec's current plan.
func (p *provenance) inPlan(hash string) bool {
	_, ok := p.runs[hash]
	return ok
}

// ignoredForTuning reports whether a configuration key is left out when an arm's configuration is
// compared with its tuning runs': the seed, the informational name, the validation split and what
// is measured or logged (not what is trained).
func ignoredForTuning(key string) bool {
	switch key {
	case "seed", "name", "data.val_classes", "data.val_folds":
		return true
	}
	return strings.HasPrefix(key, "eval.") || strings.HasPrefix(key, "log.")
}

// stepsOf returns the named steps and those their points are tuned at, transitively, sorted.
func (p *provenance) stepsOf(names []string) []string {
	seen := map[string]bool{}
	var add func(n string)
	add = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		if t := p.spec.TuneStep(n); t != nil {
			deps, _ := sweep.TunedNames(t.Point)
			for _, d := range deps {
				add(d)
			}
		}
	}
	for _, n := range names {
		add(n)
	}
	return slices.Sorted(maps.Keys(seen))
}

// tuning returns the provenance of one record's hyper-parameters. A borrowed selection's diffs
// list how the tuning runs' configurations differ from the record's ("k: tuned at v, this run w").
func (p *provenance) tuning(r *sweep.Record) (kind string, steps []string, diffs []string, runs int, keyRuns map[string]int, runLen float64, edge []string) {
	runLen = math.NaN()
	if p == nil {
		return TuningUnchecked, nil, nil, 0, nil, runLen, nil
	}
	run, ok := p.runs[r.Hash]
	if !ok {
		return TuningUnknown, nil, nil, 0, nil, runLen, nil
	}
	if len(run.Tuned) == 0 || len(run.Taken) == 0 {
		return TuningNone, nil, nil, 0, nil, runLen, nil
	}
	steps = p.stepsOf(run.Tuned)
	tuned := map[string]bool{}
	keyRuns = map[string]int{}
	for _, n := range steps {
		if t := p.spec.TuneStep(n); t != nil {
			runs += t.Budget()
			for k := range t.Grid {
				tuned[k] = true
				keyRuns[k] += t.Budget()
			}
		}
		if st, ok := p.sel[n]; ok {
			for _, k := range st.Row.Edge {
				// The selected value with its key: a margin selected at m− = 0.95 says that the
				// negative term is nearly off, which the key alone hides.
				e := k
				if v, ok := st.Values[k]; ok {
					e += " = " + sweep.FormatValue(v)
				}
				edge = append(edge, e+" ("+n+")")
			}
		}
	}
	arm := p.resolved(run)
	for _, n := range run.Tuned {
		trs := p.tuneOf[n]
		if len(trs) == 0 {
			continue
		}
		tr := trs[0]
		if rec := p.recs[tr.Hash]; rec != nil {
			if x, ok := rec.Metrics["steps"]; ok && math.IsNaN(runLen) {
				runLen = x
			}
		}
		for _, d := range TuningDiff(arm, p.resolved(tr), tuned) {
			if !slices.Contains(diffs, d) {
				diffs = append(diffs, d)
			}
		}
	}
	slices.Sort(diffs)
	kind = TuningOwn
	if len(diffs) > 0 {
		kind = TuningBorrowed
	}
	return kind, steps, diffs, runs, keyRuns, runLen, edge
}

// TuningDiff lists, sorted, how the tuning run's flattened configuration differs from the arm's
// outside the tuned and ignored keys: "k: tuned at v, this arm w" (v or w "unset").
func TuningDiff(arm, tune map[string]any, tuned map[string]bool) []string {
	keys := map[string]bool{}
	for k := range arm {
		keys[k] = true
	}
	for k := range tune {
		keys[k] = true
	}
	show := func(v any, ok bool) string {
		if !ok {
			return "unset"
		}
		return sweep.FormatValue(v)
	}
	// A run reference names the source run of the same seed: one value for the arm, not one per seed.
	runRef := func(v any) any {
		if str, ok := v.(string); ok && strings.HasPrefix(str, sweep.RunRefPrefix) {
			return sweep.RunRefPrefix + "…"
		}
		return v
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if tuned[k] || ignoredForTuning(k) || parentOfTuned(k, tuned) {
			continue
		}
		a, aok := arm[k]
		t, tok := tune[k]
		a, t = runRef(a), runRef(t)
		if aok == tok && (!aok || sweep.ValueEqual(a, t)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: tuned at %s, this arm %s", k, show(t, tok), show(a, aok)))
	}
	return out
}

// parentOfTuned reports whether key is the parent of a tuned key ("loss.set.options" of
// "loss.set.options.tcm.neg_margin"): a run without the tuned options flattens to the parent with
// a null value, the arm to the tuned children, and the tuning step covers that difference. The
// arm's other children stay compared as keys of their own.
func parentOfTuned(key string, tuned map[string]bool) bool {
	for t := range tuned {
		if strings.HasPrefix(t, key+".") {
			return true
		}
	}
	return false
}

// diffText says in a few words how an arm's configuration differs from the runs it borrowed its
// tuning from (diffs as [TuningDiff] writes them, sorted). It names the differences that decide
// whether a borrowed value fits, each once and in this order: the loss itself, the dataset, the
// batch, the training budget and the start (the weights the network starts from), each by its
// principal key (data.name before the training classes, sampler.batch_size before sampler.m) with
// the keys of the same aspect folded into it; the budget reads in epochs and steps ("budget: tuned
// at 2 epochs, this arm 1 epoch capped at 200 steps"), the start in words ("start: tuned at random
// weights, this arm a stored run's weights"). Where the loss itself differs, its options
// (loss.set.*) follow from it and are neither named nor counted. Other differences fill the text up
// to two parts, in key order; those left are counted ("and 3 other settings"). A difference between
// two unset values (a key set to null against a key absent) is no difference. The keys and values
// stay raw: [sweep.LabelMap.Humanize] writes them in words where the text is shown.
func diffText(diffs []string) string {
	type diff struct{ key, tuned, arm string }
	unset := func(v string) bool { return v == "unset" || v == "null" || v == "" }
	var ds []diff
	byKey := map[string]diff{}
	for _, d := range diffs {
		k, rest, ok := strings.Cut(d, ": tuned at ")
		t, a, ok2 := strings.Cut(rest, ", this arm ")
		if !ok || !ok2 {
			ds = append(ds, diff{key: d}) // not in TuningDiff's form: shown as it is
			continue
		}
		if unset(t) && unset(a) {
			continue
		}
		x := diff{k, t, a}
		ds = append(ds, x)
		byKey[k] = x
	}
	show := func(x diff) string {
		if x.tuned == "" && x.arm == "" {
			return x.key
		}
		t, a := x.tuned, x.arm
		if t == "" {
			t = "unset"
		}
		if a == "" {
			a = "unset"
		}
		return x.key + ": tuned at " + t + ", this arm " + a
	}
	_, lossDiffers := byKey["loss.name"]
	if _, ok := byKey["loss.set.expr"]; ok {
		lossDiffers = true
	}
	var parts []string
	folded := map[string]bool{}
	// aspect adds one part for the differences in: its first key of keys that differs (else its
	// first difference), the others folded into it.
	aspect := func(in func(string) bool, keys ...string) {
		first, found := diff{}, false
		for _, k := range keys {
			if x, ok := byKey[k]; ok {
				first, found = x, true
				break
			}
		}
		for _, x := range ds {
			if !in(x.key) || folded[x.key] {
				continue
			}
			if !found {
				first, found = x, true
			}
			folded[x.key] = true
		}
		if found {
			parts = append(parts, show(first))
		}
	}
	aspect(func(k string) bool {
		return k == "loss.name" || k == "loss.set.expr" || lossDiffers && strings.HasPrefix(k, "loss.set.")
	}, "loss.name", "loss.set.expr")
	aspect(func(k string) bool {
		return strings.HasPrefix(k, "data.") && !slices.ContainsFunc(conditionKeys, func(c string) bool { return k == c || strings.HasPrefix(k, c+".") })
	}, "data.name", "data.train_classes")
	aspect(func(k string) bool { return strings.HasPrefix(k, "sampler.") }, "sampler.batch_size", "sampler.m")
	if b := budgetText(byKey["epochs"].tuned, byKey["epochs"].arm, byKey["steps"].tuned, byKey["steps"].arm); b != "" {
		parts = append(parts, b)
		folded["epochs"], folded["steps"] = true, true
	}
	if x, ok := byKey["model.init_from"]; ok {
		parts = append(parts, "start: tuned at "+startText(x.tuned)+", this arm "+startText(x.arm))
		folded["model.init_from"], folded["model.init_head"] = true, true
	}
	aspect(func(k string) bool {
		return slices.Contains([]string{"model.pretrained", "model.freeze_backbone", "model.trainable_tail", "model.init_head"}, k)
	}, "model.pretrained", "model.freeze_backbone", "model.trainable_tail")
	rest := 0
	for _, x := range ds {
		switch {
		case folded[x.key]:
		case len(parts) < 2:
			parts = append(parts, show(x))
		default:
			rest++
		}
	}
	s := strings.Join(parts, "; ")
	switch {
	case rest == 1:
		s += " and 1 other setting"
	case rest > 1:
		s += fmt.Sprintf(" and %d other settings", rest)
	}
	return s
}

// budgetText is the budget part of [diffText] from the tuning runs' and the arm's epochs and steps
// as the differences give them ("" where a key does not differ; "" when neither does): a side with
// steps > 0 reads "N epochs capped at S steps" (the trainer stops at whichever comes first), else
// "N epochs"; a side whose epochs do not differ reads "a cap of S steps" or "no cap on steps".
func budgetText(epochsT, epochsA, stepsT, stepsA string) string {
	if epochsT == "" && epochsA == "" && stepsT == "" && stepsA == "" {
		return ""
	}
	side := func(epochs, steps string, stepsDiffer bool) string {
		e := ""
		switch epochs {
		case "", "unset", "null":
		case "1":
			e = "1 epoch"
		default:
			e = epochs + " epochs"
		}
		capped := stepsDiffer && steps != "0" && steps != "unset" && steps != "null"
		switch {
		case capped && e != "":
			return e + " capped at " + steps + " steps"
		case capped:
			return "a cap of " + steps + " steps"
		case e != "":
			return e
		}
		return "no cap on steps"
	}
	differ := stepsT != "" || stepsA != ""
	return "budget: tuned at " + side(epochsT, stepsT, differ) + ", this arm " + side(epochsA, stepsA, differ)
}

// startText is a side of the start part of [diffText], from model.init_from: the network's weights
// at the start of training.
func startText(initFrom string) string {
	switch {
	case initFrom == "" || initFrom == "unset" || initFrom == "null":
		return "random weights"
	case strings.HasPrefix(initFrom, sweep.RunRefPrefix):
		return "a stored run's weights"
	}
	return "a checkpoint's weights"
}

// weakFor returns the reason of the first weak baseline all of recs match ("" if none or no recs).
func weakFor(weak []WeakBaseline, recs []*sweep.Record) string {
	for _, w := range weak {
		all := len(recs) > 0
		for _, r := range recs {
			if !sweep.MatchRecord(r, w.Where) {
				all = false
				break
			}
		}
		if all {
			return w.Reason
		}
	}
	return ""
}

// armFacts computes an arm's facts from its records.
func armFacts(label string, recs []*sweep.Record, p *provenance) ArmFacts {
	f := ArmFacts{Label: label, TrainR1: math.NaN(), InitR1: math.NaN(), Reference: math.NaN(), TuneLen: math.NaN(), Budget: map[string]float64{}, N: len(recs)}
	var r1, init []float64
	sums := map[string]float64{}
	counts := map[string]int{}
	for i, r := range recs {
		kind, steps, differs, runs, keyRuns, runLen, edge := p.tuning(r)
		if i > 0 && kind == TuningBorrowed && f.Tuning == TuningBorrowed && !slices.Equal(differs, f.Differs) {
			kind = tuningMixed
		}
		if i == 0 {
			f.Tuning, f.Steps, f.Differs, f.TuneRuns, f.KeyRuns, f.TuneLen, f.Edge = kind, steps, differs, runs, keyRuns, runLen, edge
		} else if kind != f.Tuning {
			f.Tuning = tuningMixed
		}
		f.Records = append(f.Records, r.Hash)
		if g := RegimeOf(r); i == 0 {
			f.Regime = g
		} else if g != f.Regime {
			f.Regime = tuningMixed
		}
		if x, ok := r.Metrics[sweep.TrainMetric]; ok && !math.IsNaN(x) {
			r1 = append(r1, x)
		}
		if x, ok := r.Metrics["init/"+sweep.TrainMetric]; ok && !math.IsNaN(x) {
			init = append(init, x)
		}
		for unit, x := range recordBudget(r) {
			sums[unit] += x
			counts[unit]++
		}
		if fell, ok := lossFell(r); ok {
			f.LossSeeds++
			if fell {
				f.LossFell++
			}
		}
	}
	if len(r1) == len(recs) && len(r1) > 0 {
		f.TrainR1 = sweep.MeanStd(r1).Mean
	}
	if len(init) == len(recs) && len(init) > 0 {
		f.InitR1 = sweep.MeanStd(init).Mean
	}
	if len(recs) > 0 && p != nil {
		f.Reference, f.RefN = p.reference(recs[0])
	}
	for unit, s := range sums {
		if counts[unit] == len(recs) {
			f.Budget[unit] = s / float64(counts[unit])
		}
	}
	return f
}

// recordBudget returns a record's steps, epochs and images (steps × sampler.batch_size), those it
// has.
func recordBudget(r *sweep.Record) map[string]float64 {
	out := map[string]float64{}
	steps, hasSteps := r.Metrics["steps"]
	if hasSteps {
		out[BudgetSteps] = steps
	}
	if e, ok := r.Metrics["epochs"]; ok {
		out[BudgetEpochs] = e
	}
	if b, ok := sweep.Get(r.Config, "sampler.batch_size"); ok && hasSteps {
		if x, ok := sweep.Numeric(b); ok {
			out[BudgetImages] = steps * x
		}
	}
	return out
}

// lossFell reports whether the record's logged loss (steplog/loss, else trace/loss, else curve/loss; NaN values
// left out, at least 2 points) ever fell below its first value. A trained model's loss does; one
// that never fell did not train. (Whether it fell by much says little: a pair loss on mined batches
// stays near its first value while the model trains.)
func lossFell(r *sweep.Record) (fell, ok bool) {
	for _, k := range []string{"steplog/loss", "trace/loss", "curve/loss"} {
		xs := slices.DeleteFunc(slices.Clone(r.Series[k]), math.IsNaN)
		if len(xs) < 2 {
			continue
		}
		return slices.Min(xs[1:]) < xs[0], true
	}
	return false, false
}

// ruleGroups returns the sets of arms the rules compare: all arms, or for an interaction claim
// (four arms: a condition's pair, then the other's) each condition's pair.
func (v *ClaimVerdict) ruleGroups() [][]ArmFacts {
	if v.Claim.Kind == KindInteraction && len(v.Facts) == 4 {
		return [][]ArmFacts{v.Facts[:2], v.Facts[2:]}
	}
	return [][]ArmFacts{v.Facts}
}

// applyRules applies the comparability and training rules to a verdict whose interval rule has
// run. In order: an arm below the training floor ([floorOf]) makes the verdict inconclusive —
// "the method did not train here" when it is the claim's treatment, the claimed effect (held)
// when the claim says the ablation breaks the method (failure_is_effect), the ablated arm failed
// and the method trained; then a held or contradicted verdict with an arm whose training is not
// recorded becomes inconclusive; then unequal arms (tuning, budget) make it inconclusive.
func (v *ClaimVerdict) applyRules(budget string, minTrain *float64) {
	v.Raw, v.RawReason = v.Verdict, v.Reason
	v.Cause = CauseInterval
	if len(v.Seeds) == 0 {
		v.Cause = CauseNoRecords
		return
	}
	c := v.Claim
	frac := sweep.DefaultMinTrain
	if minTrain != nil {
		frac = *minTrain
	}
	// The arms a paired difference compares: all of them, or for an interaction each condition's
	// pair (the gain under X and the gain under Y are each a comparison; the conditions may
	// differ, e.g. 20 % noisy labels lower every arm's training R@1, 50 % of the classes give
	// fewer steps).
	var unequal []string
	for _, g := range v.ruleGroups() {
		unequal = append(unequal, unequalArms(g, c.Deliberate != "", budget, c.ownKeys())...)
	}
	floors := floorOf(v.Facts, frac)
	method := v.methodArms()
	ablated := v.ablatedArm()
	var untrained, unrecorded []string
	methodFailed, otherFailed, onlyAblated := false, false, true
	for i, f := range floors {
		switch {
		case f.below != "":
			untrained = append(untrained, f.below)
			if slices.Contains(method, i) {
				methodFailed = true
			} else {
				otherFailed = true
			}
			if i != ablated {
				onlyAblated = false
			}
		case !f.recorded:
			unrecorded = append(unrecorded, f.label)
		}
	}
	decisive := v.Raw == VerdictHeld || v.Raw == VerdictContradicted
	switch {
	case len(untrained) > 0 && c.FailureIsEffect != "" && onlyAblated && len(unrecorded) == 0 && v.Raw != VerdictContradicted:
		v.Verdict, v.Cause = VerdictHeld, CauseFailureEffect
		v.Reason = strings.Join(untrained, "; ") + ": the ablation breaks the method, the claimed effect (" + c.FailureIsEffect + ")"
	case len(untrained) > 0:
		v.Verdict, v.Cause = VerdictInconclusive, CauseUntrained
		if methodFailed {
			v.Cause = CauseMethodUntrained
		}
		v.Reason = strings.Join(untrained, "; ")
		if methodFailed && otherFailed {
			v.Reason += " (a comparator did not train either)"
		}
		if len(unequal) > 0 {
			v.Reason += "; also unequal comparison (" + strings.Join(unequal, "; ") + ")"
		}
	case decisive && len(unrecorded) > 0:
		v.Verdict, v.Cause = VerdictInconclusive, CauseNotRecorded
		v.Reason = "training not recorded for " + strings.Join(unrecorded, ", ")
		if len(unequal) > 0 {
			v.Reason += "; also unequal comparison (" + strings.Join(unequal, "; ") + ")"
		}
	case len(unequal) > 0:
		v.Verdict, v.Cause = VerdictInconclusive, CauseUnequal
		v.Reason = "unequal comparison (" + strings.Join(unequal, "; ") + ")"
	}
	if v.Cause != CauseInterval && v.Raw != VerdictInconclusive && v.Cause != CauseFailureEffect {
		v.Reason += "; the interval alone: " + v.Raw
	}
}

// BelowTrainFloor is the training rule's test, shared by the verdicts and the leaderboard: a
// training R@1 below frac × the best comparable one's did not train (frac 0: the rule is off).
func BelowTrainFloor(trainR1, best, frac float64) bool {
	return frac > 0 && trainR1 < frac*best
}

// unequalArms lists how the arms differ in tuning (unless the claim declares that deliberate) and
// in the budget the claim holds equal; it is empty when they are comparable.
func unequalArms(facts []ArmFacts, deliberate bool, budget string, own []string) []string {
	var unequal []string
	if !deliberate {
		kinds := map[string]bool{}
		sigs := map[string]bool{}
		for _, f := range facts {
			kinds[f.Tuning] = true
			if f.Tuning == TuningBorrowed {
				sigs[strings.Join(f.Differs, "|")] = true
			}
		}
		// Arms that all borrow the same way (every arm at a condition its tuning did not see, e.g.
		// all at 20 % label noise with rates tuned on clean labels) are tuned alike; arms that
		// borrow differently, or where some borrow and others do not, are not.
		// Alike is comparable only where the arms differ from their tuning in nothing but the
		// claim's own condition (conditionOnly): a rate tuned on another dataset, batch, budget or
		// start is another configuration's rate.
		sameBorrow := len(sigs) == 1 && !kinds[TuningOwn] && !kinds[TuningNone] && conditionOnly(facts[0].Differs, own)
		for _, f := range facts {
			switch f.Tuning {
			case TuningBorrowed:
				if !sameBorrow {
					unequal = append(unequal, f.Label+": borrowed tuning ("+diffText(f.Differs)+")")
				}
			case TuningUnknown:
				unequal = append(unequal, f.Label+": tuning unknown (not in the spec's plan)")
			case tuningMixed:
				unequal = append(unequal, f.Label+": its seeds differ in tuning")
			}
		}
		if kinds[TuningOwn] && kinds[TuningNone] {
			var tuned, fixed []string
			for _, f := range facts {
				if f.Tuning == TuningOwn {
					tuned = append(tuned, f.Label)
				} else if f.Tuning == TuningNone {
					fixed = append(fixed, f.Label)
				}
			}
			unequal = append(unequal, "tuned: "+strings.Join(tuned, ", ")+"; fixed values: "+strings.Join(fixed, ", "))
		}
		tunedArm := func(f ArmFacts) bool { return f.Tuning == TuningOwn || f.Tuning == TuningBorrowed }
		// Tuning budgets: the hyper-parameters every tuned arm tunes (the learning rate, say) must
		// be tuned with as many runs; a method's own extra hyper-parameters (TCM's margins, a
		// baseline's margin) are part of the method and not compared.
		var common []string
		for i, f := range facts {
			if !tunedArm(f) {
				common = nil
				break
			}
			if i == 0 {
				common = slices.Sorted(maps.Keys(f.KeyRuns))
				continue
			}
			common = slices.DeleteFunc(common, func(k string) bool { _, ok := f.KeyRuns[k]; return !ok })
		}
		for _, k := range common {
			if d := armSpread(facts, func(f ArmFacts) (float64, bool) { return float64(f.KeyRuns[k]), true }, 0); d != "" {
				unequal = append(unequal, "tuning runs of "+k+" "+d)
			}
		}
		if d := armSpread(facts, func(f ArmFacts) (float64, bool) { return f.TuneLen, tunedArm(f) && !math.IsNaN(f.TuneLen) }, 0.01); d != "" {
			unequal = append(unequal, "steps per tuning run "+d)
		}
	}
	// Budget.
	if d := armSpread(facts, func(f ArmFacts) (float64, bool) { x, ok := f.Budget[budget]; return x, ok }, 0.01); d != "" {
		unequal = append(unequal, budget+" "+d)
	}
	return unequal
}

// armSpread renders the values of the arms that have one when they differ by more than rel (relative
// to the largest): "6 vs 10" (per arm, in order); "" when they agree or fewer than 2 arms have one.
func armSpread(facts []ArmFacts, get func(ArmFacts) (float64, bool), rel float64) string {
	var xs []float64
	for _, f := range facts {
		if x, ok := get(f); ok {
			xs = append(xs, x)
		}
	}
	if len(xs) < 2 {
		return ""
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if hi-lo <= rel*math.Abs(hi) {
		return ""
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = FmtNum(x, 2)
	}
	return strings.Join(compactRuns(parts), " vs ")
}

// budgetPhrase is the arms' budget in unit: "2 epochs each" when they agree (within 1 %), "epochs 2
// vs 4" when they do not, "" when none is recorded.
func budgetPhrase(facts []ArmFacts, unit string) string {
	get := func(f ArmFacts) (float64, bool) { x, ok := f.Budget[unit]; return x, ok }
	if d := armSpread(facts, get, 0.01); d != "" {
		return unit + " " + d
	}
	for _, f := range facts {
		if x, ok := get(f); ok {
			return compactRuns([]string{FmtNum(x, 2)})[0] + " " + unit + " each"
		}
	}
	return ""
}

// compactRuns drops trailing zeros of formatted numbers ("2.00" → "2", "1.50" → "1.5").
func compactRuns(xs []string) []string {
	out := make([]string, len(xs))
	for i, s := range xs {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		out[i] = s
	}
	return out
}

// perCondition is phrase of the arms the rules compare together ([ClaimVerdict.ruleGroups]): of all
// arms, or for an interaction of each condition's pair — said once when both conditions read alike
// (or one is empty), else "per condition: <first> / <second>" (an interaction's conditions may differ,
// e.g. another dataset, while each pair is equal). "" when every phrase is.
func (v *ClaimVerdict) perCondition(phrase func([]ArmFacts) string) string {
	var ps []string
	for _, g := range v.ruleGroups() {
		if p := phrase(g); p != "" && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	if len(ps) > 1 {
		return "per condition: " + strings.Join(ps, " / ")
	}
	return strings.Join(ps, "")
}

// tuningPhrase says in a few words where the arms' hyper-parameters came from: "own tuning",
// "fixed settings", "borrowed tuning, alike (…)" when every arm borrows the same way, "borrowed
// tuning, differently", or each arm's provenance.
func tuningPhrase(facts []ArmFacts) string {
	kinds := map[string]bool{}
	for _, f := range facts {
		kinds[f.Tuning] = true
	}
	if len(kinds) != 1 {
		var each []string
		for _, f := range facts {
			each = append(each, f.Tuning)
		}
		return "tuning " + strings.Join(each, "/")
	}
	switch facts[0].Tuning {
	case TuningOwn:
		return "own tuning"
	case TuningUnchecked:
		return "tuning not checked"
	case TuningNone:
		return "fixed settings"
	case TuningBorrowed:
		sigs := map[string]bool{}
		for _, f := range facts {
			sigs[strings.Join(f.Differs, "|")] = true
		}
		if len(sigs) == 1 {
			return "borrowed tuning, alike (" + diffText(facts[0].Differs) + ")"
		}
		return "borrowed tuning, differently"
	}
	return "tuning " + facts[0].Tuning
}

// ComparabilityNote is the compact note of a verdict row: tuning, budget and training of the arms,
// e.g. "own tuning · 2 epochs · train R@1 0.55–0.71".
func (v *ClaimVerdict) ComparabilityNote() string {
	if len(v.Facts) == 0 || len(v.Seeds) == 0 {
		return "—"
	}
	// Tuning and budget are read per set of arms the rule compares (v.perCondition).
	parts := []string{v.perCondition(tuningPhrase)}
	// "(deliberate)" marks a difference the claim declares; arms all tuned for themselves need none.
	if v.Claim.Deliberate != "" && slices.ContainsFunc(v.Facts, func(f ArmFacts) bool { return f.Tuning != TuningOwn }) {
		parts[0] += " (deliberate)"
	}
	for _, f := range v.Facts {
		if f.Weak != "" {
			parts = append(parts, "weak baseline: "+f.Label+" ("+f.Weak+")")
		}
	}
	var edges []string
	for _, f := range v.Facts {
		for _, e := range f.Edge {
			if !slices.Contains(edges, e) {
				edges = append(edges, e)
			}
		}
	}
	if len(edges) > 0 {
		parts = append(parts, "at grid edge: "+strings.Join(edges, ", "))
	}
	unit := v.budget
	if unit == "" {
		unit = BudgetEpochs
	}
	if b := v.perCondition(func(g []ArmFacts) string { return budgetPhrase(g, unit) }); b != "" {
		parts = append(parts, b)
	}
	var r1 []float64
	notRecorded := 0
	for _, f := range v.Facts {
		if math.IsNaN(f.TrainR1) {
			if !f.recorded() {
				notRecorded++
			}
			continue
		}
		r1 = append(r1, f.TrainR1)
	}
	switch {
	case len(r1) == len(v.Facts):
		lo, hi := slices.Min(r1), slices.Max(r1)
		if FmtNum(lo, 2) == FmtNum(hi, 2) {
			parts = append(parts, "train R@1 "+FmtNum(lo, 2))
		} else {
			parts = append(parts, "train R@1 "+FmtNum(lo, 2)+"–"+FmtNum(hi, 2))
		}
	case notRecorded == len(v.Facts):
		parts = append(parts, "training not recorded")
	case notRecorded == 0:
		parts = append(parts, "loss fell")
	default:
		parts = append(parts, fmt.Sprintf("training not recorded for %d of %d arms", notRecorded, len(v.Facts)))
	}
	return strings.Join(parts, " · ")
}
