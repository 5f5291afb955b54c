package sweep

import (
	"strings"
	"testing"
)

const tuneCheckSpec = `
paper: toy
base: {loss: {name: contrastive}}
sweep:
  list: [{loss.name: contrastive, tuned: lr}]
  seeds: [0]
tune:
  - name: lr
    point: {data.val_classes: 0.1}
    grid: {optimizer.lr: [0.001, 0.003]}
    select: {metric: %s}
`

// TestTuneSelectMetricNoRecordHas: with every run of a tuning step stored, a select.metric none
// of them has is a planning error naming the step, the field and the metric (with the closest
// one); before, the plan listed the point as waiting for the selection for ever, exit 0. Runs
// stored as failed still wait (a retry may replace them).
func TestTuneSelectMetricNoRecordHas(t *testing.T) {
	for _, tc := range []struct {
		metric string
		failed bool
		want   string
	}{
		{"val/R@1", false, ""},
		{"val/R@one", false, `test.yaml: tune[0] ("lr"): field "select.metric": "val/R@one": none of the step's 2 stored runs of scale "" has it`},
		{"val/R1", false, `(did you mean "val/R@1"?)`},
		{"val/R@one", true, ""},
	} {
		s := mustParse(t, strings.Replace(tuneCheckSpec, "%s", tc.metric, 1))
		s.Path = "test.yaml"
		p, err := s.PlanWith("", nil)
		if err != nil {
			t.Fatal(err)
		}
		var recs []Record
		for _, r := range p.Runs {
			rec := Record{Hash: r.Hash, Seed: r.Seed, Config: r.Config, Metrics: Metrics{"val/R@1": 0.5}}
			if tc.failed {
				rec.Metrics, rec.Failed = nil, "diverged"
			}
			recs = append(recs, rec)
		}
		p, err = s.PlanWith("", recs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (failed %v): %v", tc.metric, tc.failed, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v (plan %+v)\nwant: %s", tc.metric, err, p, tc.want)
		}
	}
}

// TestSelectGuardNeedsWithin: a select.guard without within (0) is refused naming the field; it
// made the guard the criterion (only the rows of the best guard were candidates).
func TestSelectGuardNeedsWithin(t *testing.T) {
	_, err := Parse([]byte(`
paper: toy
tables: [{name: t, rows: [m], metrics: [OPIS], select: {metric: OPIS, lower: true, guard: R@1}}]
`), "test.yaml")
	if err == nil || !strings.Contains(err.Error(), `select.within`) || !strings.Contains(err.Error(), `missing (> 0) with guard "R@1"`) {
		t.Errorf("guard without within: %v", err)
	}
}
