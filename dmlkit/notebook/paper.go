package notebook

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
)

// The paper notebook's verdicts, discussion and conclusion (issue #32, item 2): computed from the
// claims report like the abstract, so that no number in them is typed.

// VerdictsHTML is the notebook's verdict table, grouped by the table or figure of the paper each
// claim tests, one line per claim and the details folded ([judge.ClaimsReport.GroupedHTML]).
func (p *Paper) VerdictsHTML() (string, error) {
	rep, err := p.Report()
	if err != nil {
		return "", err
	}
	return rep.GroupedHTML(), nil
}

// DiscussionMarkdown says what the small-scale stand-in can and cannot say about the paper, from
// the claims report: the regimes and seeds the verdicts rest on, how many the interval could not
// decide, which verdicts rest on unequal arms, an arm that did not train or a weak baseline, which
// claims have no runs here, and where the regime changes a verdict.
func (p *Paper) DiscussionMarkdown() (string, error) {
	rep, err := p.Report()
	if err != nil {
		return "", err
	}
	recs, err := p.allRecords()
	if err != nil {
		return "", err
	}
	runs := map[string]int{}
	for _, r := range recs {
		runs[r.Scale]++
	}
	return discussionMarkdown(rep, runs), nil
}

// ConclusionMarkdown is the text of the notebook's conclusion (under its heading): the verdict counts and the verdicts of the
// paper's central claims (claims.yaml's central list) with their effects, and how many verdicts the
// pretrained regime changes — two to four sentences, every number from the claims report.
func (p *Paper) ConclusionMarkdown() (string, error) {
	rep, err := p.Report()
	if err != nil {
		return "", err
	}
	return conclusionMarkdown(rep), nil
}

// ids lists claim ids as code, comma-separated, with an optional note after each.
func ids(vs []*judge.ClaimVerdict, note func(v *judge.ClaimVerdict) string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = "`" + v.Claim.ID + "`"
		if note != nil {
			if n := note(v); n != "" {
				out[i] += " (" + n + ")"
			}
		}
	}
	return strings.Join(out, ", ")
}

// counted is "n thing" or "n things".
func counted(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// discussionMarkdown: runs counts the stored runs per scale (those of the scales the verdicts read
// are named).
func discussionMarkdown(rep *judge.ClaimsReport, runs map[string]int) string {
	var b strings.Builder
	// Regimes and seeds.
	regimes := map[string]int{}
	var order []string
	minN, maxN := -1, -1
	for i := range rep.Verdicts {
		v := &rep.Verdicts[i]
		if v.Cause == judge.CauseNoRecords {
			continue
		}
		g := v.Regime()
		if regimes[g] == 0 {
			order = append(order, g)
		}
		regimes[g]++
		if n := len(v.Seeds); n > 0 {
			if minN < 0 || n < minN {
				minN = n
			}
			maxN = max(maxN, n)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return regimes[order[a]] > regimes[order[b]] })
	var rs []string
	for _, g := range order {
		rs = append(rs, fmt.Sprintf("%s %d", g, regimes[g]))
	}
	var scales []string
	seen := map[string]bool{}
	for _, v := range rep.Verdicts {
		if sc := v.Scale; sc != "" && !seen[sc] {
			seen[sc] = true
			scales = append(scales, fmt.Sprintf("%d of the %s scale", runs[sc], sc))
		}
	}
	if len(scales) == 0 {
		scales = []string{fmt.Sprintf("%d of the %s scale", runs[rep.Scale], rep.Scale)}
	}
	seeds := ""
	switch {
	case minN < 0:
	case minN == maxN:
		seeds = fmt.Sprintf(", each on %d seeds", minN)
	default:
		seeds = fmt.Sprintf(", each on %d to %d seeds", minN, maxN)
	}
	tested := 0
	for _, g := range order {
		tested += regimes[g]
	}
	fmt.Fprintf(&b, "- **Scale and regime.** The verdicts read the stored runs (%s). Of the %d claims with runs, by the regime of their arms: %s%s.\n",
		strings.Join(scales, ", "), tested, strings.Join(rs, "; "), seeds)

	var interval, unequal, untrained, method, unrecorded, effect, none, weak []*judge.ClaimVerdict
	for i := range rep.Verdicts {
		v := &rep.Verdicts[i]
		switch {
		case v.Cause == judge.CauseNoRecords:
			none = append(none, v)
		case v.Cause == judge.CauseUnequal:
			unequal = append(unequal, v)
		case v.Cause == judge.CauseUntrained:
			untrained = append(untrained, v)
		case v.Cause == judge.CauseMethodUntrained:
			method = append(method, v)
		case v.Cause == judge.CauseNotRecorded:
			unrecorded = append(unrecorded, v)
		case v.Cause == judge.CauseFailureEffect:
			effect = append(effect, v)
		case v.Verdict == judge.VerdictInconclusive:
			interval = append(interval, v)
		}
		if v.WeakBaseline() {
			weak = append(weak, v)
		}
	}
	if len(interval) > 0 {
		fmt.Fprintf(&b, "- **What the seeds cannot resolve.** %s inconclusive because the 95 %% interval reaches the other side of zero or too few seeds agree: with so few seeds only large effects are decided, and these claims may hold or fail with more seeds.\n",
			counted(len(interval), "verdict is", "verdicts are"))
	}
	if len(unequal) > 0 {
		raw := map[string]int{}
		for _, v := range unequal {
			raw[v.Raw]++
		}
		var decided []*judge.ClaimVerdict
		for _, v := range unequal {
			if v.Raw != judge.VerdictInconclusive {
				decided = append(decided, v)
			}
		}
		fmt.Fprintf(&b, "- **Unequal arms.** %s compare arms tuned or trained unequally (borrowed tuning, another budget) and stay inconclusive whatever their interval: %s.",
			counted(len(unequal), "verdict", "verdicts"), ids(unequal, nil))
		if len(decided) > 0 {
			fmt.Fprintf(&b, " The interval rule alone would have decided %d of them (%d held, %d contradicted: %s); they need each arm tuned in its own setting before they say so.",
				len(decided), raw[judge.VerdictHeld], raw[judge.VerdictContradicted], ids(decided, func(v *judge.ClaimVerdict) string { return v.Raw }))
		}
		b.WriteString("\n")
	}
	if len(method) > 0 {
		fmt.Fprintf(&b, "- **The method did not train here.** In %s the paper's own method stays below the training floor in this stand-in: a finding about the method at this scale, not a comparison: %s.\n",
			counted(len(method), "claim", "claims"), ids(method, nil))
	}
	if len(untrained) > 0 {
		fmt.Fprintf(&b, "- **An arm that did not train.** %s: %s.\n", counted(len(untrained), "verdict rests on one", "verdicts rest on one"), ids(untrained, nil))
	}
	if len(effect) > 0 {
		fmt.Fprintf(&b, "- **The ablation breaks the method.** %s held because the ablated arm did not train while the method did, as the paper predicts: %s.\n",
			counted(len(effect), "claim is", "claims are"), ids(effect, nil))
	}
	if len(unrecorded) > 0 {
		fmt.Fprintf(&b, "- **Training not recorded.** %s decisive by the interval but an arm has no training-split R@1, so nothing shows that it trained: %s.\n",
			counted(len(unrecorded), "verdict was", "verdicts were"), ids(unrecorded, func(v *judge.ClaimVerdict) string { return v.Raw }))
	}
	if len(weak) > 0 {
		reasons := map[string][]*judge.ClaimVerdict{}
		var ro []string
		for _, v := range weak {
			for _, f := range v.Facts {
				if f.Weak != "" {
					if reasons[f.Weak] == nil {
						ro = append(ro, f.Weak)
					}
					reasons[f.Weak] = append(reasons[f.Weak], v)
					break
				}
			}
		}
		var parts []string
		for _, r := range ro {
			parts = append(parts, ids(reasons[r], nil)+" — "+r)
		}
		fmt.Fprintf(&b, "- **Weak baselines.** %s on a baseline below its level, so a verdict against it says little about the paper's comparison: %s.\n",
			counted(len(weak), "verdict rests", "verdicts rest"), strings.Join(parts, "; "))
	}
	if len(none) > 0 {
		fmt.Fprintf(&b, "- **Not tested here yet.** %s no stored runs: %s.\n", counted(len(none), "claim has", "claims have"), ids(none, nil))
	}
	if pairs := rep.RegimePairs(); len(pairs) > 0 {
		var changed []*judge.ClaimVerdict
		for _, pr := range pairs {
			if pr.Changed() {
				changed = append(changed, pr.Retest)
			}
		}
		s := fmt.Sprintf("- **From scratch and pretrained.** %s tested in both regimes; the verdict changes with the regime for %d", counted(len(pairs), "claim is", "claims are"), len(changed))
		if len(changed) > 0 {
			s += ": " + ids(changed, func(v *judge.ClaimVerdict) string {
				o := rep.Verdicts[slicesIndex(rep, v.Claim.Twin)]
				return o.Verdict + " from scratch, " + v.Verdict + " pretrained"
			})
		}
		if len(changed) > 0 {
			s += ". Where it changes, the small CNN trained from scratch and the pretrained features disagree, and neither is the paper's setting"
		}
		b.WriteString(s + ".\n")
	}
	return b.String()
}

// slicesIndex is the index of the verdict of claim id in the report (the twin of a re-test exists:
// RegimePairs found it).
func slicesIndex(rep *judge.ClaimsReport, id string) int {
	for i := range rep.Verdicts {
		if rep.Verdicts[i].Claim.ID == id {
			return i
		}
	}
	return -1
}

func conclusionMarkdown(rep *judge.ClaimsReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Of the paper's %d claims tested at the %s scale: %s.",
		len(rep.Verdicts), rep.Scale, rep.OutcomeText())
	by := map[string][]string{}
	n := 0
	for _, cc := range rep.Central {
		k := slicesIndex(rep, cc.ID)
		if k < 0 {
			continue
		}
		v := &rep.Verdicts[k]
		n++
		what := v.Claim.Paper
		if len(v.Arms) >= 2 && (v.Claim.Kind == judge.KindBetter || v.Claim.Kind == judge.KindEquivalent) {
			what = v.Arms[1].Label + " vs " + v.Arms[0].Label + " (" + v.Claim.Metric + ")"
		} else {
			what = judge.ShortClaim(what, 60)
		}
		if cc.Note != "" {
			what += ", " + cc.Note
		}
		s := "`" + v.Claim.ID + "`: " + what + ", " + v.EffectText()
		if judge.RuleDecided(v.Cause) {
			s += " (" + judge.CauseLabel(v.Cause) + ")"
		}
		if why := v.Why(); why != "" {
			s += " — " + why
		}
		by[v.Verdict] = append(by[v.Verdict], s)
	}
	if n > 0 {
		var parts []string
		for _, vd := range []string{judge.VerdictHeld, judge.VerdictContradicted, judge.VerdictInconclusive} {
			if len(by[vd]) > 0 {
				parts = append(parts, fmt.Sprintf("%d %s (%s)", len(by[vd]), vd, strings.Join(by[vd], "; ")))
			}
		}
		fmt.Fprintf(&b, " Of its %d central claims, %s.", n, strings.Join(parts, ", "))
	}
	if pairs := rep.RegimePairs(); len(pairs) > 0 {
		changed := 0
		for _, pr := range pairs {
			if pr.Changed() {
				changed++
			}
		}
		fmt.Fprintf(&b, " With a pretrained backbone instead of training from scratch, the verdict changes for %d of the %d claims tested in both regimes.", changed, len(pairs))
	}
	b.WriteString("\n")
	return b.String()
}
