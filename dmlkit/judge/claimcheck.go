package judge

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// CheckClaims checks a claims file against the spec of its paper and the stored records, before
// any verdict: a typo there selects nothing and would read as "inconclusive (no records)", a
// result not run yet. It refuses
//   - a paper field other than the spec's paper (the directory's name);
//   - a scale (the set's or a claim's) that the spec does not define;
//   - a where key or value (the set's, a claim's, an arm's, a form's, a weak baseline's) and a sweep key or value that no
//     configuration of the spec and no stored record has ([Vocabulary]);
//   - a metric (the claim's or an arm's) that no stored record has and no table, figure, tuning
//     step or reference of the spec names, while the claim selects records (a claim written
//     before its runs stays "no records yet");
//   - a selected record whose metric is NaN (the interval would be NaN and read as
//     "includes 0"): the error names the record.
//
// scale is the scale the claims are evaluated at unless the file or the claim names one. Errors
// name the claims file, the claim's id, the field and the value.
func CheckClaims(cs *ClaimSet, s *sweep.Spec, records []sweep.Record, scale string) error {
	v := NewVocabulary(s, records)
	file := cs.Path
	if file == "" {
		file = "claims file of " + s.Paper
	}
	var errs []error
	if cs.Paper != "" && cs.Paper != s.Paper {
		errs = append(errs, fmt.Errorf("%s: field \"paper\": %q, but the spec %s is paper %q", file, cs.Paper, s.Name(), s.Paper))
	}
	checkScale := func(what, sc string) {
		if sc == "" {
			return
		}
		if _, ok := s.Scales[sc]; !ok {
			errs = append(errs, fmt.Errorf("%s: %sfield \"scale\": %q is not a scale of %s (defined: %s)", file, what, sc, s.Name(), strings.Join(s.ScaleNames(), ", ")))
		}
	}
	checkScale("", cs.Scale)
	if err := v.CheckWhere(cs.Where); err != nil {
		errs = append(errs, fmt.Errorf("%s: field \"where\": %w", file, err))
	}
	for i, w := range cs.Weak {
		if err := v.CheckWhere(w.Where); err != nil {
			errs = append(errs, fmt.Errorf("%s: field \"weak[%d].where\": %w", file, i, err))
		}
	}
	for _, c := range cs.Claims {
		if c.Twin != "" && (c.Twin == c.ID || !slices.ContainsFunc(cs.Claims, func(o ClaimSpec) bool { return o.ID == c.Twin })) {
			errs = append(errs, fmt.Errorf("%s: claim %q: field \"twin\": %q is not the id of another claim", file, c.ID, c.Twin))
		}
	}
	for i, cc := range cs.Central {
		if !slices.ContainsFunc(cs.Claims, func(c ClaimSpec) bool { return c.ID == cc.ID }) {
			errs = append(errs, fmt.Errorf("%s: field \"central[%d]\": %q is not the id of a claim", file, i, cc.ID))
		}
	}
	for i, c := range cs.Claims {
		what := fmt.Sprintf("claims[%d] (id %q): ", i, c.ID)
		at := func(field string, err error) {
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %sfield %q: %w", file, what, field, err))
			}
		}
		checkScale(what, c.Scale)
		at("where", v.CheckWhere(c.Where))
		arms := map[string]*Arm{"base": c.Base, "treatment": c.Treatment}
		for j := range c.Conditions {
			arms[fmt.Sprintf("conditions[%d]", j)] = &c.Conditions[j]
		}
		for j := range c.Order {
			arms[fmt.Sprintf("order[%d]", j)] = &c.Order[j]
		}
		for _, name := range slices.Sorted(maps.Keys(arms)) {
			if a := arms[name]; a != nil {
				at(name+".where", v.CheckWhere(a.Where))
			}
		}
		for j, f := range c.Forms {
			at(fmt.Sprintf("forms[%d].where", j), v.CheckWhere(f.Where))
			at(fmt.Sprintf("forms[%d].base", j), v.CheckWhere(f.Base))
			at(fmt.Sprintf("forms[%d].treatment", j), v.CheckWhere(f.Treatment))
		}
		if c.Sweep != nil {
			if err := v.CheckKey(c.Sweep.Key); err != nil {
				at("sweep.key", err)
			} else {
				at("sweep.values", v.CheckWhere(map[string]any{c.Sweep.Key: c.Sweep.Values}))
			}
		}

		// The claim's records: the set's and the claim's where at the claim's scale, in one of
		// its arms.
		sc := scale
		if cs.Scale != "" {
			sc = cs.Scale
		}
		if c.Scale != "" {
			sc = c.Scale
		}
		where := maps.Clone(cs.Where)
		if where == nil {
			where = map[string]any{}
		}
		maps.Copy(where, c.Where)
		var recs []sweep.Record
		for _, r := range sweep.Select(records, sc, where) {
			if matchesAnyArm(&r, arms, c.Sweep) {
				recs = append(recs, r)
			}
		}
		metrics := map[string]string{"metric": c.Metric}
		for name, a := range arms {
			if a != nil && a.Metric != "" {
				metrics[name+".metric"] = a.Metric
			}
		}
		for _, field := range slices.Sorted(maps.Keys(metrics)) {
			m := metrics[field]
			at(field, v.CheckMetric(m, len(recs), 0))
			for _, r := range recs {
				if x, ok := r.Metrics[m]; ok && math.IsNaN(x) {
					at(field, fmt.Errorf("metric %q is NaN in %s: a claim's interval cannot include it; mark the run failed or narrow the where", m, r.Where()))
					break
				}
			}
		}
	}
	return errors.Join(errs...)
}

// matchesAnyArm reports whether r belongs to one of the arms (or sweep points) of a claim, or
// the claim has none.
func matchesAnyArm(r *sweep.Record, arms map[string]*Arm, sw *ClaimSweep) bool {
	some := false
	for _, a := range arms {
		if a == nil {
			continue
		}
		some = true
		if sweep.MatchRecord(r, a.Where) {
			return true
		}
	}
	if sw != nil {
		some = true
		if sweep.MatchRecord(r, map[string]any{sw.Key: sw.Values}) {
			return true
		}
	}
	return !some
}
