package judge

import (
	"fmt"
	"math"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// ClaimsReport is the rendered outcome of a claims file: every verdict, in file order.
type ClaimsReport struct {
	Paper    string
	Scale    string
	Verdicts []ClaimVerdict
	// Central lists the paper's central claims ([ClaimSet.Central]).
	Central []CentralClaim
	// Labels is the spec's labels map (set by [ClaimSet.Report] when the options carry the spec):
	// the configuration keys and values that the comparability notes and reasons name are written
	// with it ([LabelMap.Humanize]).
	Labels sweep.LabelMap
}

// WeakBaseline reports whether an arm of the verdict is a baseline below its level ([ClaimSet.Weak]).
func (v *ClaimVerdict) WeakBaseline() bool {
	for _, f := range v.Facts {
		if f.Weak != "" {
			return true
		}
	}
	return false
}

// CauseCounts returns how many verdicts each cause decided ([ClaimVerdict.Cause]).
func (r *ClaimsReport) CauseCounts() map[string]int {
	out := map[string]int{}
	for _, v := range r.Verdicts {
		out[v.Cause]++
	}
	return out
}

// Counts returns how many verdicts are held, contradicted and inconclusive.
func (r *ClaimsReport) Counts() (held, contradicted, inconclusive int) {
	return countVerdicts(r.Verdicts, func(v ClaimVerdict) string { return v.Verdict })
}

// OutcomeText is the verdicts' outcomes in words: "3 held, 1 contradicted, 2 where the method did
// not train here, 10 inconclusive" — the method's own failure to train ([CauseMethodUntrained]) is
// counted apart from the inconclusive verdicts (and left out when there is none).
func (r *ClaimsReport) OutcomeText() string { return OutcomeText(r.Verdicts) }

// OutcomeText is [ClaimsReport.OutcomeText] of any verdicts.
func OutcomeText(vs []ClaimVerdict) string {
	h, c, i := countVerdicts(vs, func(v ClaimVerdict) string { return v.Verdict })
	m := 0
	for _, v := range vs {
		if v.Cause == CauseMethodUntrained {
			m++
		}
	}
	if m == 0 {
		return fmt.Sprintf("%d held, %d contradicted, %d inconclusive", h, c, i)
	}
	return fmt.Sprintf("%d held, %d contradicted, %d where the method did not train here, %d inconclusive", h, c, m, i-m)
}

// countVerdicts counts the verdicts that verdict(v) reads as held, contradicted and otherwise.
func countVerdicts(vs []ClaimVerdict, verdict func(ClaimVerdict) string) (held, contradicted, inconclusive int) {
	for _, v := range vs {
		tallyVerdict(verdict(v), &held, &contradicted, &inconclusive)
	}
	return
}

// tallyVerdict adds one verdict to its count: held, contradicted, or else inconclusive.
func tallyVerdict(verdict string, held, contradicted, inconclusive *int) {
	switch verdict {
	case VerdictHeld:
		*held++
	case VerdictContradicted:
		*contradicted++
	default:
		*inconclusive++
	}
}

// num formats x×factor with a sign when signed, "−" for negatives; "n/a" for NaN.
func claimNum(x float64, digits int, signed bool) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	s := FmtNum(math.Abs(x), digits)
	switch {
	case x < 0 && s != FmtNum(0, digits):
		return "−" + s
	case signed:
		return "+" + s
	}
	return s
}

func (v *ClaimVerdict) kindLabel() string {
	c := v.Claim
	switch c.Kind {
	case KindEquivalent:
		return fmt.Sprintf("equivalent (δ = %s%s)", claimNum(c.Delta*c.factor(), c.digits(), false), unitSuffix(c.Unit))
	case KindTrend:
		dir := "increasing"
		if c.Direction == "lower" {
			dir = "decreasing"
		}
		if c.Sweep.Log {
			dir += ", log x"
		}
		return "trend (" + dir + ")"
	case KindArgmax:
		return "argmax (" + sweep.FormatValue(c.Sweep.Best) + ")"
	}
	return c.Kind + " (" + c.Direction + ")"
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

// armsText renders "label m ± se" for each arm.
func (v *ClaimVerdict) armsText() string {
	c := v.Claim
	parts := make([]string, len(v.Arms))
	for i, a := range v.Arms {
		s := a.Label + " " + claimNum(a.Mean*c.factor(), c.digits(), false)
		if !math.IsNaN(a.SE) {
			s += " ± " + claimNum(a.SE*c.factor(), c.digits(), false)
		}
		parts[i] = s
	}
	return strings.Join(parts, "; ")
}

// effectText renders "mean [lo, hi] unit" of the paired quantity (×factor), with what the
// quantity is for a trend or an argmax.
func (v *ClaimVerdict) effectText() string {
	s := v.effectTextPlain()
	if len(v.Diffs) == 0 {
		return s
	}
	switch v.Claim.Kind {
	case KindTrend:
		switch {
		case v.Claim.Sweep != nil && v.Claim.Sweep.Log:
			s += " per decade"
		case !strings.Contains(v.Claim.Unit, " per "): // a unit of x named by the claim ("points per degree") stays
			s += " per unit"
		}
	case KindArgmax:
		s += " (margin over the best other value)"
	}
	return s
}

func (v *ClaimVerdict) seedsText() string {
	n := len(v.Seeds)
	if v.Claim.Kind == KindRank {
		return fmt.Sprintf("n = %d", n)
	}
	return fmt.Sprintf("%d of %d (need %d)", v.Toward, n, v.Need)
}

// Markdown renders the verdict table with the rule above it and one details line per claim below:
// tables/claims.md, every column.
func (r *ClaimsReport) Markdown() string { return r.markdown(false) }

// ReadmeMarkdown is [ClaimsReport.Markdown] for the paper's README, whose tables GitHub lays out
// in a 980-px column: five columns — the claim (its id, the paper's words and where), the regime,
// the arms, the effect and the verdict with its reason — which the full table's ten (with the
// kind, the seeds agreeing and the comparability note) overflow; a line above the table says
// where the full table is.
func (r *ClaimsReport) ReadmeMarkdown() string { return r.markdown(true) }

func (r *ClaimsReport) markdown(narrow bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Claims of the paper (%s), tested at %s scale: %s%s.** ",
		MdEscape(r.Paper), MdEscape(r.Scale), r.OutcomeText(), r.InconclusiveSplit())
	b.WriteString("Generated by `dmlkit tables` from the stored records and `claims.yaml`; do not edit.\n\n")
	if r.provisional() {
		b.WriteString("> **Provisional:** records written from a tree with uncommitted changes are included in these verdicts.\n\n")
	}
	b.WriteString("Rule: " + VerdictRule + "\n\n")
	if narrow {
		b.WriteString("Each claim's kind, seeds agreeing and comparability note (tuning, budget, training of the arms) are in the full table, `tables/claims.md`; a verdict decided by a comparability or training rule gives it as its reason.\n\n")
		b.WriteString("| claim | regime | arms: mean ± SE | effect [95 % CI] | verdict |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| id | the paper's claim | where | regime | kind | arms: mean ± SE | effect [95 % CI] | seeds agreeing | comparability | verdict |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, v := range r.Verdicts {
		forms := v.Forms
		if len(forms) == 0 {
			forms = []ClaimVerdict{v}
		}
		var arms, effect, seeds, comp, verdict []string
		for _, f := range forms {
			pre := ""
			if f.Form != "" {
				pre = f.Form + ": "
			}
			arms = append(arms, MdEscape(pre+f.armsText()))
			effect = append(effect, MdEscape(pre+f.effectText()))
			seeds = append(seeds, MdEscape(pre+f.seedsText()))
			comp = append(comp, MdEscape(pre+r.Labels.Humanize(f.ComparabilityNote())))
			vs := MdEscape(pre) + "**" + f.Verdict + "** (" + MdEscape(r.Labels.Humanize(f.Reason)) + ")"
			if f.WeakBaseline() {
				vs += " — weak baseline"
			}
			verdict = append(verdict, vs)
		}
		if narrow {
			fmt.Fprintf(&b, "| `%s`: %s (%s) | %s | %s | %s | %s |\n",
				v.Claim.ID, MdEscape(v.Claim.Paper), MdEscape(v.Claim.Source), MdEscape(v.Regime()),
				strings.Join(arms, "<br>"), strings.Join(effect, "<br>"), strings.Join(verdict, "<br>"))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			MdEscape(v.Claim.ID), MdEscape(v.Claim.Paper), MdEscape(v.Claim.Source), MdEscape(v.Regime()), MdEscape(v.kindLabel()),
			strings.Join(arms, "<br>"), strings.Join(effect, "<br>"), strings.Join(seeds, "<br>"),
			strings.Join(comp, "<br>"), strings.Join(verdict, "<br>"))
	}
	b.WriteString("\nDetails:\n\n")
	for _, v := range r.Verdicts {
		b.WriteString("- " + MdEscape(v.Details()) + "\n")
	}
	return b.String()
}

// InconclusiveSplit is ", of which N unequal comparisons, M with an arm that did not train" for the
// headline ("" when the interval decided every inconclusive verdict).
func (r *ClaimsReport) InconclusiveSplit() string {
	cc := r.CauseCounts()
	var parts []string
	if n := cc[CauseUnequal]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d unequal comparison%s", n, map[bool]string{true: "s"}[n != 1]))
	}
	if n := cc[CauseUntrained]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d with an arm that did not train", n))
	}
	if n := cc[CauseNotRecorded]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d with an arm whose training is not recorded", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (of which " + strings.Join(parts, ", ") + ")"
}

func (r *ClaimsReport) provisional() bool {
	for _, v := range r.Verdicts {
		if v.Provisional {
			return true
		}
	}
	return false
}

// Details is one sentence: stand-in, seeds, unpaired, excluded, parts, observed.
func (v *ClaimVerdict) Details() string {
	c := v.Claim
	var parts []string
	s := "`" + c.ID + "`"
	if c.StandIn != "" {
		s += " stand-in: " + c.StandIn
	}
	parts = append(parts, s)
	if len(v.Seeds) > 0 {
		ss := make([]string, len(v.Seeds))
		for i, x := range v.Seeds {
			ss[i] = fmt.Sprint(x)
		}
		parts = append(parts, "seeds "+strings.Join(ss, ", "))
	}
	if len(v.Unpaired) > 0 {
		parts = append(parts, "left out: "+strings.Join(v.Unpaired, ", "))
	}
	if v.Excluded > 0 {
		parts = append(parts, fmt.Sprintf("%d records from a dirty tree excluded", v.Excluded))
	}
	if v.ExcludedFailed > 0 {
		parts = append(parts, fmt.Sprintf("%d records of failed runs (e.g. diverged) excluded", v.ExcludedFailed))
	}
	if v.Superseded > 0 {
		parts = append(parts, fmt.Sprintf("%d superseded records (no longer runs of the spec) left out", v.Superseded))
	}
	if v.Observed != "" {
		parts = append(parts, "observed by mean: "+v.Observed)
	}
	for _, p := range v.Parts {
		pc := p
		pc.Claim = c
		parts = append(parts, fmt.Sprintf("%s: %s → %s", p.partLabel, pc.effectTextPlain(), p.Verdict))
	}
	if c.Deliberate != "" {
		parts = append(parts, "tuning differs on purpose: "+c.Deliberate)
	}
	for _, f := range v.Facts {
		if f.Tuning == TuningOwn || f.Tuning == TuningBorrowed {
			parts = append(parts, fmt.Sprintf("%s tuned by %s", f.Label, strings.Join(f.Steps, " + ")))
		}
	}
	if c.Note != "" {
		parts = append(parts, c.Note)
	}
	return strings.Join(parts, "; ")
}

// effectTextPlain renders "mean [lo, hi] unit" of the paired quantity (×factor); "—" without one.
func (v *ClaimVerdict) effectTextPlain() string {
	c := v.Claim
	if len(v.Diffs) == 0 {
		return "—"
	}
	f, d := c.factor(), c.digits()
	s := claimNum(v.Mean*f, d, true)
	if !math.IsNaN(v.Lo) {
		s += " [" + claimNum(v.Lo*f, d, true) + ", " + claimNum(v.Hi*f, d, true) + "]"
	}
	return s + unitSuffix(c.effectUnit())
}

// effectUnit is the unit of the paired quantity: for a trend on a log axis, the claim's unit
// without a denominator of its own ("points per doubling" → "points"), since the slope is per
// decade and [ClaimVerdict.effectText] says so.
func (c *ClaimSpec) effectUnit() string {
	if c.Kind == KindTrend && c.Sweep != nil && c.Sweep.Log {
		if i := strings.Index(c.Unit, " per "); i >= 0 {
			return c.Unit[:i]
		}
	}
	return c.Unit
}

// verdictShort is the verdict with its cause when a rule other than the interval decided it
// ("inconclusive (unequal)"), per form for a claim with forms.
func (v *ClaimVerdict) verdictShort() string {
	one := func(f ClaimVerdict) string {
		s := f.Verdict
		if RuleDecided(f.Cause) && f.Cause != CauseNoRecords {
			s += " (" + f.Cause + ")"
		}
		if f.Form != "" {
			s = f.Form + ": " + s
		}
		return s
	}
	if len(v.Forms) == 0 {
		return one(*v)
	}
	var parts []string
	for _, f := range v.Forms {
		parts = append(parts, one(f))
	}
	return strings.Join(parts, "; ")
}

// LaTeX renders the verdict table as a booktabs longtable-free table (one row per claim).
func (r *ClaimsReport) LaTeX(label string) string {
	var b strings.Builder
	b.WriteString("% Generated by `dmlkit tables` from stored records and claims.yaml; do not edit.\n")
	b.WriteString("\\begin{table*}[t]\n\\centering\\footnotesize\n")
	fmt.Fprintf(&b, "\\caption{Claims of the paper (%s) tested at %s scale: %s. Arms: mean $\\pm$ SE over the paired seeds; effect: mean paired difference with its 95\\%% $t$-interval.}\n",
		TexEscape(r.Paper), TexEscape(r.Scale), r.OutcomeText())
	if label != "" {
		fmt.Fprintf(&b, "\\label{%s}\n", label)
	}
	b.WriteString("\\begin{tabular}{p{0.11\\linewidth}p{0.2\\linewidth}lp{0.08\\linewidth}lp{0.2\\linewidth}p{0.14\\linewidth}ll}\n\\toprule\n")
	b.WriteString("id & claim & where & regime & kind & arms & effect [95\\% CI] & seeds & verdict \\\\\n\\midrule\n")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "%s & %s & %s & %s & %s & %s & %s & %s & \\textbf{%s} \\\\\n",
			TexEscape(v.Claim.ID), TexEscape(v.Claim.Paper), TexEscape(v.Claim.Source), TexEscape(v.Regime()), TexEscape(v.kindLabel()),
			TexEscape(v.armsText()), TexEscape(v.effectText()), TexEscape(v.seedsText()), TexEscape(v.verdictShort()))
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n\\end{table*}\n")
	return b.String()
}

func (r *ClaimsReport) Verdict(id string) *ClaimVerdict {
	for i := range r.Verdicts {
		if r.Verdicts[i].Claim.ID == id {
			return &r.Verdicts[i]
		}
	}
	return nil
}

// ChangesMarkdown is the table "What changed and why" of a paper's README. Without a baseline:
// every claim whose verdict (held, contradicted, inconclusive) the comparability and training
// rules changed, with the verdict the interval alone gives ([ClaimVerdict.Raw]: the verdict before
// those rules, on the same records), the new verdict and the cause. With a baseline (the claims
// table at a named commit, [Baseline]): every claim whose verdict differs from the baseline's, with
// the baseline's verdict, the interval alone's and today's, and the cause ([ClaimsReport.changesSince]).
// Claims with forms list each form that changed.
func (r *ClaimsReport) ChangesMarkdown(base *Baseline) string {
	if base != nil {
		return r.changesSinceMarkdown(base)
	}
	var b strings.Builder
	var rows []string
	for _, v := range r.Verdicts {
		forms := v.Forms
		if len(forms) == 0 {
			forms = []ClaimVerdict{v}
		}
		for _, f := range forms {
			if f.Raw == f.Verdict {
				continue
			}
			id := v.Claim.ID
			if f.Form != "" {
				id += " (" + f.Form + ")"
			}
			cause := CauseLabel(f.Cause)
			why, _, _ := strings.Cut(f.Reason, "; the interval alone: ")
			if inner, ok := strings.CutPrefix(why, "unequal comparison ("); ok {
				why = strings.TrimSuffix(inner, ")")
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s: %s |", MdEscape(id), MdEscape(v.Claim.Source), f.Raw, f.Verdict, cause, MdEscape(r.Labels.Humanize(why))))
		}
	}
	rh, rc, ri := r.RawCounts()
	fmt.Fprintf(&b, "Generated by `dmlkit tables` from the stored records; do not edit. The interval rule alone gives %d held, %d contradicted, %d inconclusive; with the comparability and training rules %s (%d verdicts changed).\n\n",
		rh, rc, ri, r.OutcomeText(), len(rows))
	if len(rows) == 0 {
		return b.String()
	}
	b.WriteString("| claim | where | interval alone | verdict | cause |\n|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
	return b.String()
}

// changesSinceMarkdown is ChangesMarkdown against a baseline.
func (r *ClaimsReport) changesSinceMarkdown(base *Baseline) string {
	var b strings.Builder
	rows, total := r.changesSince(base)
	bh, bc, bi := base.counts()
	rh, rc, ri := r.RawCounts()
	fmt.Fprintf(&b, "Generated by `dmlkit tables` from the stored records and the claims table at commit %s (`baseline-verdicts.tsv`); do not edit. "+
		"At %s: %d held, %d contradicted, %d inconclusive. Now the interval rule alone gives %d held, %d contradicted, %d inconclusive; "+
		"with the comparability and training rules %s. %d of %d verdicts differ from %s",
		MdEscape(base.Commit), MdEscape(base.Commit), bh, bc, bi, rh, rc, ri, r.OutcomeText(), len(rows), total, MdEscape(base.Commit))
	if len(rows) == 0 {
		b.WriteString(".\n")
		return b.String()
	}
	fmt.Fprintf(&b, " (%s): a cause \"rule\" means the interval alone gives today what %s gave and a comparability or training rule decides (or a rule of %s no longer applies); \"records\" means the records changed what the interval gives (new runs, reruns at an arm's own rate, other forms).\n\n",
		causeKinds(rows), MdEscape(base.Commit), MdEscape(base.Commit))
	fmt.Fprintf(&b, "| claim | where | at %s | interval alone now | verdict now | cause |\n|---|---|---|---|---|---|\n", MdEscape(base.Commit))
	for _, c := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", MdEscape(c.id), MdEscape(c.where), c.was, c.raw, c.now, MdEscape(r.Labels.Humanize(c.cause)))
	}
	return b.String()
}

// RawCounts returns how many verdicts the interval rule alone gives as held, contradicted and
// inconclusive (the verdicts before the comparability and training rules).
func (r *ClaimsReport) RawCounts() (held, contradicted, inconclusive int) {
	return countVerdicts(r.Verdicts, func(v ClaimVerdict) string { return v.Raw })
}
