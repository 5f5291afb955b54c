package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
)

// Findings are the three things a reader should take away from a paper's verdicts, each one
// sentence with its number, chosen from the central claims by one rule, in this order:
//
//  1. reversals: a central claim whose verdict is held in one regime or form and contradicted in
//     another (its re-test in the other regime, [judge.ClaimsReport.RegimePairs], or its forms);
//  2. the decisive central verdicts (held or contradicted, the failure-is-the-effect ablations
//     included), largest effect first — the effect relative to the base arm's mean
//     ([RelativeEffect]; claims without one after those with);
//  3. the claims where the paper's method did not train here, in one sentence that names the
//     method's arm and its training R@1.
//
// At most n findings (n ≤ 0: 3); fewer when the verdicts give fewer.
func Findings(r *judge.ClaimsReport, n int) []string {
	if n <= 0 {
		n = 3
	}
	central := map[string]bool{}
	for _, c := range r.Central {
		central[c.ID] = true
	}
	var out []string
	used := map[string]bool{}
	add := func(id, s string) {
		if len(out) < n && !used[id] {
			used[id] = true
			out = append(out, s)
		}
	}
	opposite := func(a, b string) bool {
		return a == judge.VerdictHeld && b == judge.VerdictContradicted || a == judge.VerdictContradicted && b == judge.VerdictHeld
	}
	// 1. Reversals between regimes, then between forms.
	for _, p := range r.RegimePairs() {
		o, t := p.Original, p.Retest
		if (central[o.Claim.ID] || central[t.Claim.ID]) && opposite(o.Verdict, t.Verdict) {
			add(o.Claim.ID, fmt.Sprintf("%s: %s %s (%s) but %s %s (%s).", sentenceStart(o.Claim.Paper),
				o.Verdict, regimeWords(o), o.EffectText(), t.Verdict, regimeWords(t), t.EffectText()))
		}
	}
	for i := range r.Verdicts {
		v := &r.Verdicts[i]
		if !central[v.Claim.ID] || len(v.Forms) < 2 {
			continue
		}
		for _, a := range v.Forms {
			for _, b := range v.Forms {
				if a.Verdict == judge.VerdictHeld && b.Verdict == judge.VerdictContradicted {
					add(v.Claim.ID, fmt.Sprintf("%s: held in the %s form (%s) but contradicted in the %s form (%s), %s.",
						sentenceStart(v.Claim.Paper), a.Form, a.EffectText(), b.Form, b.EffectText(), regimeWords(v)))
				}
			}
		}
	}
	// 2. Decisive central verdicts, largest relative effect first.
	type cand struct {
		v   *judge.ClaimVerdict
		rel float64
	}
	var cs []cand
	for _, c := range r.Central {
		v := r.Verdict(c.ID)
		if v == nil || v.Verdict == judge.VerdictInconclusive {
			continue
		}
		rel := math.NaN()
		if e, ok := RelativeEffect(r.Paper, v, ""); ok {
			rel = math.Abs(e.Effect)
		}
		cs = append(cs, cand{v, rel})
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		switch {
		case math.IsNaN(a.rel) && math.IsNaN(b.rel):
			return 0
		case math.IsNaN(a.rel):
			return 1
		case math.IsNaN(b.rel):
			return -1
		case a.rel > b.rel:
			return -1
		case a.rel < b.rel:
			return 1
		}
		return 0
	})
	for _, c := range cs {
		v := c.v
		s := fmt.Sprintf("%s: %s, %s (%s)", sentenceStart(v.Claim.Paper), v.Verdict, v.EffectText(), regimeWords(v))
		if v.Cause == judge.CauseFailureEffect {
			s += ", because the ablation stops the loss from training"
		}
		if why := v.Why(); why != "" {
			s += " — " + why
		}
		add(v.Claim.ID, s+".")
	}
	// 3. The method that did not train here.
	var method []*judge.ClaimVerdict
	for i := range r.Verdicts {
		if r.Verdicts[i].Cause == judge.CauseMethodUntrained {
			method = append(method, &r.Verdicts[i])
		}
	}
	if len(method) > 0 {
		reason := r.Labels.Humanize(method[0].Reason)
		if i := strings.Index(reason, "; the interval alone"); i >= 0 {
			reason = reason[:i]
		}
		add("method untrained", fmt.Sprintf("In %d claim%s the paper's method did not train here, e.g. “%s”: %s — a finding about the method in this stand-in, not a comparison.",
			len(method), plural(len(method)), judge.ShortClaim(method[0].Claim.Paper, 90), reason))
	}
	return out
}

// regimeWords is a verdict's regime as words after a verdict: "from scratch", "with the
// pretrained backbone frozen".
func regimeWords(v *judge.ClaimVerdict) string {
	g := v.Regime()
	switch {
	case g == judge.RegimeScratch:
		return "from scratch"
	case strings.HasPrefix(g, "pretrained"):
		return "with the " + strings.Replace(g, "pretrained, ", "pretrained backbone ", 1)
	}
	return "(" + g + ")"
}

// sentenceStart is s with its first letter upper-cased.
func sentenceStart(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	return strings.ToUpper(string(r[0])) + string(r[1:])
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
