package judge

import (
	"slices"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// DropSuperseded returns the records that are runs of the spec's current plan, and the hashes of
// the others: records of a run whose configuration the spec no longer produces (a tuning step
// now selects another value, an evaluation option was added, a point was removed). Such records
// stay in the store, as the history of the reproduction, but tables, figures and verdicts are
// built from the current runs only, so a rerun never averages with the run it replaces. Records
// of a scale whose plan cannot be resolved (e.g. an invalid configuration) are all kept.
func DropSuperseded(s *sweep.Spec, records []sweep.Record) (current []sweep.Record, superseded []string) {
	var scales []string
	for _, r := range records {
		if !slices.Contains(scales, r.Scale) {
			scales = append(scales, r.Scale)
		}
	}
	planned := map[string]map[string]bool{}
	for _, sc := range scales {
		if sc != "" && s.Scales[sc] == nil {
			continue // a scale the spec does not define: nothing to compare with
		}
		p, err := s.PlanWith(sc, records)
		if err != nil {
			continue
		}
		in := map[string]bool{}
		for _, r := range p.Runs {
			in[r.Hash] = true
		}
		for _, h := range p.Held {
			in[h.Hash] = true
		}
		planned[sc] = in
	}
	for _, r := range records {
		if in, ok := planned[r.Scale]; ok && !in[r.Hash] {
			superseded = append(superseded, r.Hash)
			continue
		}
		current = append(current, r)
	}
	return current, superseded
}
