package judge

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"gonum.org/v1/gonum/stat/distuv"
)

// Claim verdicts (reproducing.md §1). There is no "partly held": a claim that may hold in one
// setting and not in another is written as one claim per setting.
const (
	VerdictHeld         = "held"
	VerdictContradicted = "contradicted"
	VerdictInconclusive = "inconclusive"
)

// VerdictRule states how verdicts are reached; tables print it beside every verdict table.
const VerdictRule = "Verdicts come from per-seed paired differences: **held** when the 95 % Student-t " +
	"interval (n − 1 degrees of freedom) of the mean paired difference lies wholly on the claimed side " +
	"of zero and at least ⌈0.8 n⌉ seeds point that way; **contradicted** when the same holds on the " +
	"opposite side; **inconclusive** otherwise (the reason is given). An interval that touches zero is " +
	"not wholly on one side. `equivalent` holds when the whole interval lies inside ±δ (and ⌈0.8 n⌉ " +
	"seeds do), and is contradicted when it lies wholly outside. `trend`: the paired quantity is each " +
	"seed's least-squares slope over the sweep. `interaction`: each seed's difference of differences. " +
	"`argmax`: each seed's margin of the claimed value over the best other value (held); contradicted " +
	"when some other value beats it by the same rule. `rank`: every adjacent pair as `better`; " +
	"contradicted when any pair is. Records written from a tree with uncommitted changes are excluded. " +
	"Before the interval is read, the arms must be comparable and trained: arms that differ in tuning (one " +
	"at values tuned for another configuration, one tuned and one not, unequal tuning budgets) or in the " +
	"budget the claim holds equal (epochs unless it says steps or images) give **inconclusive — unequal " +
	"comparison**, unless claims.yaml declares the difference deliberate with a reason; values tuned on another " +
	"dataset, batch, budget or start count as tuned for another configuration, whoever borrows them (only the " +
	"claim's own condition — noise, class fraction, the key it varies — may differ from the tuning). An arm " +
	"trained when its training-split R@1 (2,000 training images) is at least 0.05 above its own untrained " +
	"model's (where recorded) and at least half its setting's reference (the best configuration's among the " +
	"final runs of the same regime, data, batch and steps, whatever their loss): the same answer in every " +
	"claim. Below it: **inconclusive — an arm did not train**, or, where the arm is the paper's own method, " +
	"**the method did not train here**, counted apart; where the claim predicts that its ablation breaks the " +
	"method and the ablated arm fails while the method trains, **held** (the failure is the effect). A held " +
	"or contradicted verdict with an arm whose training is not recorded is **inconclusive — training not " +
	"recorded**. The column \"comparability\" shows what was checked."

// ClaimOptions control [ClaimSet.Evaluate].
type ClaimOptions struct {
	// Scale is used for claims whose set and entry name none (normally the scale asked for).
	Scale string
	// IncludeDirty counts records written from a tree with uncommitted changes (excluded by
	// default; see [Record.Dirty]). Verdicts computed so are marked provisional.
	IncludeDirty bool
	// Spec is the paper's spec: with it the tuning rule knows which tuning steps each record's
	// values came from ([ArmFacts]) and records that are no longer runs of the spec are left out;
	// without it the tuning rule is not applied (the comparability note says "tuning not checked").
	Spec *sweep.Spec

	prov map[string]*provenance // per scale, shared by the claims of one Evaluate
}

// ArmStat is one arm's metric over the seeds the verdict pairs: mean ± standard error.
type ArmStat struct {
	Label string
	Mean  float64
	SE    float64 // standard error of the mean (sample std / √n); NaN when n < 2
	N     int
}

// ClaimVerdict is the outcome of one claim.
type ClaimVerdict struct {
	Claim   ClaimSpec
	Verdict string // VerdictHeld, VerdictContradicted or VerdictInconclusive
	Reason  string // why, in words (always set)
	Arms    []ArmStat
	Seeds   []int64   // the seeds present in every arm, ascending
	Diffs   []float64 // per seed: the paired quantity (unscaled); argmax: the claimed value's margin (positive: it wins)
	// Mean, SE: of Diffs. Lo, Hi: its 95 % t-interval (NaN for n < 2).
	Mean, SE, Lo, Hi float64
	Toward, Against  int      // seeds strictly on the claimed side / on the opposite side (equivalent: inside / outside ±δ)
	Need             int      // ⌈0.8 n⌉
	Unpaired         []string // seeds left out because an arm lacks them, e.g. "seed 3 (no RS@k + TCM)"
	Excluded         int      // records of the claim's arms excluded as written from a dirty tree
	ExcludedFailed   int      // records of the claim's arms excluded as failed runs (Record.Failed, e.g. diverged)
	Superseded       int      // records of the claim's arms left out as no longer runs of the spec (ClaimOptions.Spec given)
	Provisional      bool     // records from a dirty tree were used (ClaimOptions.IncludeDirty)
	Parts            []ClaimVerdict
	Observed         string // argmax: the best value by mean; rank: the order by mean
	partLabel        string // rank / argmax parts: "A vs B"

	// Raw and RawReason are the verdict of the interval rule alone; Verdict and Reason add the
	// comparability and training rules, and Cause says which decided (CauseInterval,
	// CauseUnequal, CauseUntrained or CauseNoRecords).
	Raw, RawReason, Cause string
	Facts                 []ArmFacts // per arm, in the order of Arms
	// Form is the label of the form this verdict evaluates ("" for a claim without forms); Forms
	// holds every form's verdict of a claim that has forms (the claim's verdict is the first's).
	Form  string
	Forms []ClaimVerdict
	// Scale is the scale whose records the verdict reads (the claim's, its set's or ClaimOptions').
	Scale  string
	budget string
}

// TCrit95 is the two-sided 95 % critical value of Student's t with df degrees of freedom.
func TCrit95(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}

// NeedSeeds is ⌈0.8 n⌉.
func NeedSeeds(n int) int { return int(math.Ceil(0.8*float64(n) - 1e-9)) }

// summarize sets Mean, SE, Lo, Hi of v.Diffs.
func (v *ClaimVerdict) summarize() {
	n := len(v.Diffs)
	v.Need = NeedSeeds(n)
	st := sweep.MeanStd(v.Diffs)
	v.Mean, v.SE, v.Lo, v.Hi = st.Mean, math.NaN(), math.NaN(), math.NaN()
	if n >= 2 {
		v.SE = st.Std / math.Sqrt(float64(n))
		h := TCrit95(n-1) * v.SE
		v.Lo, v.Hi = v.Mean-h, v.Mean+h
	}
}

// decideSide applies the rule for a claimed sign (+1: the paired quantity is claimed positive).
func (v *ClaimVerdict) decideSide(side float64) {
	v.summarize()
	v.Toward, v.Against = 0, 0
	for _, d := range v.Diffs {
		switch {
		case side*d > 0:
			v.Toward++
		case side*d < 0:
			v.Against++
		}
	}
	v.Verdict, v.Reason = SideRule(side, v.Lo, v.Hi, v.Toward, v.Against, len(v.Diffs))
}

// SideRule is the verdict for an interval [lo, hi] of a quantity claimed to have the sign of side,
// with toward / against seeds strictly on the claimed / opposite side out of n. An interval that
// ends exactly at zero is not wholly on one side.
func SideRule(side, lo, hi float64, toward, against, n int) (verdict, reason string) {
	if reason := smallN(n); reason != "" {
		return VerdictInconclusive, reason
	}
	need := NeedSeeds(n)
	lo, hi = side*lo, side*hi
	if side < 0 {
		lo, hi = hi, lo
	}
	switch {
	case lo > 0 && toward >= need:
		return VerdictHeld, "interval on the claimed side"
	case hi < 0 && against >= need:
		return VerdictContradicted, "interval on the opposite side"
	case lo > 0:
		return VerdictInconclusive, fmt.Sprintf("interval on the claimed side, but only %d of %d seeds (need %d)", toward, n, need)
	case hi < 0:
		return VerdictInconclusive, fmt.Sprintf("interval on the opposite side, but only %d of %d seeds (need %d)", against, n, need)
	}
	return VerdictInconclusive, "interval includes 0"
}

// decideEquivalent applies the rule of an equivalent claim with margin delta.
func (v *ClaimVerdict) decideEquivalent(delta float64) {
	v.summarize()
	v.Toward, v.Against = 0, 0
	above, below := 0, 0
	for _, d := range v.Diffs {
		switch {
		case math.Abs(d) < delta:
			v.Toward++
		case d >= delta:
			above++
		default:
			below++
		}
	}
	v.Against = above + below
	n := len(v.Diffs)
	if reason := smallN(n); reason != "" {
		v.Verdict, v.Reason = VerdictInconclusive, reason
		return
	}
	switch {
	case v.Lo > -delta && v.Hi < delta && v.Toward >= v.Need:
		v.Verdict, v.Reason = VerdictHeld, "interval inside ±δ"
	case (v.Lo > delta && above >= v.Need) || (v.Hi < -delta && below >= v.Need):
		v.Verdict, v.Reason = VerdictContradicted, "interval outside ±δ"
	case v.Lo > -delta && v.Hi < delta:
		v.Verdict, v.Reason = VerdictInconclusive, fmt.Sprintf("interval inside ±δ, but only %d of %d seeds (need %d)", v.Toward, n, v.Need)
	default:
		v.Verdict, v.Reason = VerdictInconclusive, "interval not inside ±δ"
	}
}

func smallN(n int) string {
	switch n {
	case 0:
		return "no seed has every arm"
	case 1:
		return "n = 1: no interval"
	}
	return ""
}

// Report evaluates every claim on the records ([ClaimSet.Evaluate]) into a report of the claims'
// scale (opt.Scale unless claims.yaml names one).
func (cs *ClaimSet) Report(records []sweep.Record, opt ClaimOptions) (*ClaimsReport, error) {
	vs, err := cs.Evaluate(records, opt)
	if err != nil {
		return nil, err
	}
	rep := &ClaimsReport{Paper: cs.Paper, Scale: opt.Scale, Verdicts: vs, Central: cs.Central}
	if opt.Spec != nil {
		rep.Labels = opt.Spec.Labels
	}
	if cs.Scale != "" {
		rep.Scale = cs.Scale
	}
	return rep, nil
}

// Evaluate computes a verdict for every claim from the records (normally a paper's whole store).
// It returns an error only for a claim the records cannot answer unambiguously (an arm with two
// records of one seed: the arm's where must be narrowed); a missing arm or seed gives an
// inconclusive verdict that says so.
func (cs *ClaimSet) Evaluate(records []sweep.Record, opt ClaimOptions) ([]ClaimVerdict, error) {
	var out []ClaimVerdict
	opt.prov = map[string]*provenance{}
	for _, c := range cs.Claims {
		v, err := EvaluateClaim(c, cs, records, opt)
		if err != nil {
			return nil, fmt.Errorf("experiments: claim %q: %w", c.ID, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// armValues is one arm's metric by seed.
type armValues struct {
	label string
	vals  map[int64]float64
	recs  map[int64]*sweep.Record
}

// EvaluateClaim computes one claim's verdict; set supplies the scale, the common where and the
// defaults of the budget and training rules (nil: none). A claim with forms is evaluated once per
// form ([ClaimSpec.Forms]); its verdict is the first form's, with every form's in Forms.
func EvaluateClaim(c ClaimSpec, set *ClaimSet, records []sweep.Record, opt ClaimOptions) (ClaimVerdict, error) {
	if len(c.Forms) == 0 {
		return evaluateForm(c, set, records, opt)
	}
	var forms []ClaimVerdict
	for _, f := range c.Forms {
		fc := c
		fc.Forms = nil
		fc.Where = maps.Clone(c.Where)
		if fc.Where == nil {
			fc.Where = map[string]any{}
		}
		maps.Copy(fc.Where, f.Where)
		if c.Base != nil {
			b := *c.Base
			b.Where = maps.Clone(b.Where)
			maps.Copy(b.Where, f.Base)
			fc.Base = &b
		}
		if c.Treatment != nil {
			t := *c.Treatment
			t.Where = maps.Clone(t.Where)
			maps.Copy(t.Where, f.Treatment)
			fc.Treatment = &t
		}
		v, err := evaluateForm(fc, set, records, opt)
		if err != nil {
			return v, fmt.Errorf("form %q: %w", f.Label, err)
		}
		v.Form = f.Label
		v.Claim = c
		forms = append(forms, v)
	}
	v := forms[0]
	v.Forms = forms
	return v, nil
}

// evaluateForm computes the verdict of a claim without forms.
func evaluateForm(c ClaimSpec, set *ClaimSet, records []sweep.Record, opt ClaimOptions) (ClaimVerdict, error) {
	v := ClaimVerdict{Claim: c, Mean: math.NaN(), SE: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	scale := opt.Scale
	common := map[string]any{}
	if set != nil {
		if set.Scale != "" {
			scale = set.Scale
		}
		maps.Copy(common, set.Where)
	}
	if c.Scale != "" {
		scale = c.Scale
	}
	v.Scale = scale
	maps.Copy(common, c.Where)
	excluded, failed, superseded := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var prov *provenance
	if opt.Spec != nil {
		prov = opt.provenanceFor(scale, records)
	}
	collect := func(label, metric string, wheres ...map[string]any) (armValues, error) {
		w := maps.Clone(common)
		for _, x := range wheres {
			maps.Copy(w, x)
		}
		a := armValues{label: label, vals: map[int64]float64{}, recs: map[int64]*sweep.Record{}}
		hashes := map[int64]string{}
		for _, r := range sweep.SelectRecords(records, scale, w, true) {
			if r.Failed != "" {
				failed[r.Hash] = true
				continue
			}
			if prov != nil && prov.planned && !prov.inPlan(r.Hash) {
				superseded[r.Hash] = true // no longer a run of the spec: kept in the store, out of verdicts
				continue
			}
			if r.Dirty() {
				if !opt.IncludeDirty {
					excluded[r.Hash+fmt.Sprint(r.Seed)] = true
					continue
				}
				v.Provisional = true
			}
			m, ok := r.Metrics[metric]
			if !ok {
				continue
			}
			if prev, dup := hashes[r.Seed]; dup {
				return a, fmt.Errorf("arm %q has two records of seed %d (%s and %s): narrow its where", label, r.Seed, prev, r.Hash)
			}
			hashes[r.Seed] = r.Hash
			a.vals[r.Seed] = m
			a.recs[r.Seed] = &r
		}
		return a, nil
	}
	var arms []armValues
	add := func(label string, wheres ...map[string]any) error {
		a, err := collect(label, c.Metric, wheres...)
		arms = append(arms, a)
		return err
	}
	// addArm is add for a better/equivalent arm, which may read its own metric (Arm.Metric).
	addArm := func(arm *Arm) error {
		metric := c.Metric
		if arm.Metric != "" {
			metric = arm.Metric
		}
		a, err := collect(arm.Label, metric, arm.Where)
		arms = append(arms, a)
		return err
	}
	var err error
	switch c.Kind {
	case KindBetter, KindEquivalent:
		err = firstErr(addArm(c.Base), addArm(c.Treatment))
	case KindInteraction:
		x, y := c.Conditions[0], c.Conditions[1]
		err = firstErr(
			add(c.Base.Label+" | "+x.Label, x.Where, c.Base.Where), add(c.Treatment.Label+" | "+x.Label, x.Where, c.Treatment.Where),
			add(c.Base.Label+" | "+y.Label, y.Where, c.Base.Where), add(c.Treatment.Label+" | "+y.Label, y.Where, c.Treatment.Where))
	case KindRank:
		for _, a := range c.Order {
			if e := add(a.Label, a.Where); e != nil && err == nil {
				err = e
			}
		}
	case KindTrend, KindArgmax:
		name := c.Sweep.Label
		if name == "" {
			name = c.Sweep.Key
		}
		for _, x := range c.Sweep.Values {
			if e := add(name+" = "+sweep.FormatValue(x), map[string]any{c.Sweep.Key: x}); e != nil && err == nil {
				err = e
			}
		}
	}
	if err != nil {
		return v, err
	}
	v.Excluded = len(excluded)
	v.ExcludedFailed = len(failed)
	v.Superseded = len(superseded)
	v.Seeds, v.Unpaired = pairSeeds(arms)
	for _, a := range arms {
		vals := make([]float64, len(v.Seeds))
		for i, s := range v.Seeds {
			vals[i] = a.vals[s]
		}
		st := sweep.MeanStd(vals)
		se := math.NaN()
		if st.N >= 2 {
			se = st.Std / math.Sqrt(float64(st.N))
		}
		v.Arms = append(v.Arms, ArmStat{Label: a.label, Mean: st.Mean, SE: se, N: st.N})
	}
	at := func(arm int, i int) float64 { return arms[arm].vals[v.Seeds[i]] }
	n := len(v.Seeds)
	switch c.Kind {
	case KindBetter, KindEquivalent:
		for i := range n {
			v.Diffs = append(v.Diffs, at(1, i)-at(0, i))
		}
		if c.Kind == KindBetter {
			v.decideSide(c.sign())
		} else {
			v.decideEquivalent(c.Delta)
		}
	case KindInteraction:
		for i := range n {
			v.Diffs = append(v.Diffs, (at(1, i)-at(0, i))-(at(3, i)-at(2, i)))
		}
		v.decideSide(c.sign())
	case KindTrend:
		xs := make([]float64, len(c.Sweep.Values))
		for j, x := range c.Sweep.Values {
			xs[j], _ = sweep.Numeric(x)
			if c.Sweep.Log {
				xs[j] = math.Log10(xs[j])
			}
		}
		for i := range n {
			ys := make([]float64, len(arms))
			for j := range arms {
				ys[j] = at(j, i)
			}
			v.Diffs = append(v.Diffs, slope(xs, ys))
		}
		v.decideSide(c.sign())
	case KindArgmax:
		best := slices.IndexFunc(c.Sweep.Values, func(x any) bool { return sweep.ValueEqual(x, c.Sweep.Best) })
		s := c.sign()
		for i := range n {
			other := math.Inf(-1)
			for j := range arms {
				if j != best {
					other = math.Max(other, s*at(j, i))
				}
			}
			v.Diffs = append(v.Diffs, s*at(best, i)-other)
		}
		v.decideSide(1)
		// Contradicted when some other value beats the claimed one by the rule.
		for j := range arms {
			if j == best {
				continue
			}
			p := ClaimVerdict{partLabel: arms[j].label + " vs " + arms[best].label}
			for i := range n {
				p.Diffs = append(p.Diffs, at(j, i)-at(best, i))
			}
			p.decideSide(s)
			v.Parts = append(v.Parts, p)
		}
		if v.Verdict == VerdictContradicted {
			v.Verdict, v.Reason = VerdictInconclusive, "another value beats it in most seeds, but no single value does by the rule"
		}
		if v.Verdict != VerdictHeld && n >= 2 {
			for _, p := range v.Parts {
				if p.Verdict == VerdictHeld {
					v.Verdict, v.Reason = VerdictContradicted, p.partLabel+": the other value is better by the rule"
					break
				}
			}
		}
		bi := 0
		for j := range v.Arms {
			if s*v.Arms[j].Mean > s*v.Arms[bi].Mean {
				bi = j
			}
		}
		if n > 0 {
			v.Observed = sweep.FormatValue(c.Sweep.Values[bi])
		}
	case KindRank:
		s := c.sign()
		held, contra := 0, 0
		var open []string
		for j := 0; j+1 < len(arms); j++ {
			p := ClaimVerdict{partLabel: arms[j].label + " over " + arms[j+1].label}
			for i := range n {
				p.Diffs = append(p.Diffs, at(j, i)-at(j+1, i))
			}
			p.decideSide(s)
			switch p.Verdict {
			case VerdictHeld:
				held++
			case VerdictContradicted:
				contra++
				open = append(open, p.partLabel+" contradicted")
			default:
				open = append(open, p.partLabel+": "+p.Reason)
			}
			v.Parts = append(v.Parts, p)
		}
		v.Need = NeedSeeds(n)
		switch {
		case smallN(n) != "":
			v.Verdict, v.Reason = VerdictInconclusive, smallN(n)
		case held == len(v.Parts):
			v.Verdict, v.Reason = VerdictHeld, "every adjacent pair held"
		case contra > 0:
			v.Verdict, v.Reason = VerdictContradicted, strings.Join(open, "; ")
		default:
			v.Verdict, v.Reason = VerdictInconclusive, strings.Join(open, "; ")
		}
		idx := make([]int, len(v.Arms))
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return s*v.Arms[idx[a]].Mean > s*v.Arms[idx[b]].Mean })
		labels := make([]string, len(idx))
		for j, k := range idx {
			labels[j] = v.Arms[k].Label
		}
		if n > 0 {
			v.Observed = strings.Join(labels, " > ")
		}
	}
	v.judge(arms, set, scale, records, opt)
	if n == 0 {
		var empty []string
		for _, a := range arms {
			if len(a.vals) == 0 {
				empty = append(empty, a.label)
			}
		}
		if len(empty) > 0 {
			v.Reason = "no records for " + strings.Join(empty, ", ")
			if v.Excluded > 0 {
				v.Reason += fmt.Sprintf(" (%d from a dirty tree excluded)", v.Excluded)
			}
			if v.ExcludedFailed > 0 {
				v.Reason += fmt.Sprintf(" (%d failed runs excluded)", v.ExcludedFailed)
			}
		}
	}
	return v, nil
}

// provenanceFor returns the provenance of the scale's records (cached per Evaluate).
func (opt ClaimOptions) provenanceFor(scale string, records []sweep.Record) *provenance {
	if p, ok := opt.prov[scale]; ok {
		return p
	}
	p := newProvenance(opt.Spec, scale, records)
	if opt.prov != nil {
		opt.prov[scale] = p
	}
	return p
}

// judge computes the arms' facts at the paired seeds (all their records when none is paired) and
// applies the comparability and training rules ([ClaimVerdict.applyRules]).
func (v *ClaimVerdict) judge(arms []armValues, set *ClaimSet, scale string, records []sweep.Record, opt ClaimOptions) {
	var prov *provenance
	if opt.Spec != nil {
		prov = opt.provenanceFor(scale, records)
	}
	c := v.Claim
	v.budget = BudgetEpochs
	minTrain := c.MinTrain
	if set != nil {
		if set.Budget != "" {
			v.budget = set.Budget
		}
		if minTrain == nil {
			minTrain = set.MinTrain
		}
	}
	if c.Budget != "" {
		v.budget = c.Budget
	}
	for _, a := range arms {
		var recs []*sweep.Record
		if len(v.Seeds) > 0 {
			for _, s := range v.Seeds {
				recs = append(recs, a.recs[s])
			}
		} else {
			for _, s := range slices.Sorted(maps.Keys(a.recs)) {
				recs = append(recs, a.recs[s])
			}
		}
		f := armFacts(a.label, recs, prov)
		if set != nil {
			f.Weak = weakFor(set.Weak, recs)
		}
		v.Facts = append(v.Facts, f)
	}
	v.applyRules(v.budget, minTrain)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// pairSeeds returns the seeds every arm has (ascending) and, for the others, which arms lack them.
func pairSeeds(arms []armValues) (paired []int64, unpaired []string) {
	all := map[int64]bool{}
	for _, a := range arms {
		for s := range a.vals {
			all[s] = true
		}
	}
	seeds := slices.Sorted(maps.Keys(all))
	for _, s := range seeds {
		var lack []string
		for _, a := range arms {
			if _, ok := a.vals[s]; !ok {
				lack = append(lack, a.label)
			}
		}
		if len(lack) == 0 {
			paired = append(paired, s)
		} else {
			unpaired = append(unpaired, fmt.Sprintf("seed %d (no %s)", s, strings.Join(lack, ", ")))
		}
	}
	return paired, unpaired
}

// slope is the least-squares slope of ys against xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	return sxy / sxx
}
