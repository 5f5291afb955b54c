package judge

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

const vocabSpec = `
paper: toy
base: {loss: {name: contrastive, margin: 0.5}}
scales: {small: {}, smoke: {}}
sweep:
  grid: {loss.name: [contrastive, rsk, tcm]}
  seeds: [0, 1]
`

// vocabRecords: contrastive and rsk at seeds 0 and 1 (tcm not run yet), with R@1 and a series.
func vocabRecords() []sweep.Record {
	var out []sweep.Record
	for _, l := range []string{"contrastive", "rsk"} {
		for seed := range int64(2) {
			out = append(out, sweep.Record{Hash: l + string(rune('0'+seed)), Scale: "small", Seed: seed,
				Config:  map[string]any{"loss": map[string]any{"name": l, "margin": 0.5}, "seed": seed},
				Metrics: sweep.Metrics{"R@1": 0.5}, Series: sweep.Series{"val_r1": {0.1, 0.2}}})
		}
	}
	return out
}

// TestCheckSelections: a table, figure or scoped reference naming a key, a value or a metric that
// neither the spec nor a stored record has is an error naming the spec, the item, the field and
// the name (with the closest known one); names of runs not made yet (tcm) are not.
func TestCheckSelections(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // "" = no error
	}{
		{"good", `tables: [{name: t, rows: [loss.name], metrics: [R@1], where: {loss.margin: 0.5}}]`, ""},
		{"run not made yet", `tables: [{name: t, rows: [loss.name], metrics: [MAP@R], where: {loss.name: tcm}}]`, ""},
		{"metric named by another table", `tables: [{name: t, rows: [loss.name], metrics: [time/loss_ms]}, {name: u, rows: [loss.name], metrics: [time/loss_ms]}]`, ""},
		{"table scale", `tables: [{name: t, scale: smal, rows: [loss.name], metrics: [R@1]}]`,
			`test.yaml: table "t": field "scale": "smal" is not a scale of the spec (defined: small, smoke) (did you mean "small"?)`},
		{"figure scale", `figures: [{name: f, kind: bar, scale: ful, x: loss.name, y: R@1}]`, `test.yaml: figure "f": field "scale": "ful"`},
		{"where key", `tables: [{name: t, rows: [loss.name], metrics: [R@1], where: {loss.nam: rsk}}]`,
			`test.yaml: table "t": field "where": key "loss.nam": no configuration of the spec and no stored record has it (did you mean "loss.name"?)`},
		{"where value", `tables: [{name: t, rows: [loss.name], metrics: [R@1], where: {loss.name: [rsk, rks]}}]`,
			`test.yaml: table "t": field "where": key "loss.name": value rks: no configuration of the spec and no stored record has it (known: contrastive, rsk, tcm) (did you mean "rsk"?)`},
		{"row key", `tables: [{name: t, rows: [loss.nmae], metrics: [R@1]}]`,
			`test.yaml: table "t": field "rows[0]": key "loss.nmae"`},
		{"metric", `tables: [{name: t, rows: [loss.name], metrics: [R@1, R@one]}]`,
			`test.yaml: table "t": field "metrics[1]": metric "R@one": none of the stored records has it (4 selected)`},
		{"figure series", `figures: [{name: f, kind: line, series: [val_r2], group: [loss.name]}]`,
			`test.yaml: figure "f": field "series[0]": metric "val_r2": none of the stored records has it (4 selected) (did you mean "val_r1"?)`},
		{"figure x key", `figures: [{name: f, kind: bar, x: loss.nme, y: R@1}]`,
			`test.yaml: figure "f": field "x": key "loss.nme"`},
		{"reference tables", `tables: [{name: t, rows: [loss.name], metrics: [R@1]}]
reference: [{tables: [tt], match: {loss.name: rsk}, metric: R@1, value: 70, source: "Table 1"}]`,
			`test.yaml: reference[0] (Table 1): field "tables[0]": no table "tt" in test.yaml (did you mean "t"?)`},
		{"reference match", `tables: [{name: t, rows: [loss.name], metrics: [R@1]}]
reference: [{tables: [t], match: {loss.name: rks}, metric: R@1, value: 70, source: "Table 1"}]`,
			`test.yaml: reference[0] (Table 1): field "match": key "loss.name": value rks`},
		// Unscoped (issue 43): values of rows the spec does not run pass, declared descriptive keys
		// pass, a key typo does not.
		{"unscoped reference, unrun row", `reference: [{match: {loss.name: drml, published: true}, metric: R@1, value: 70, source: "Table 1"}]
descriptive_keys: [published]`, ""},
		{"unscoped reference key typo", `reference: [{match: {los.name: rsk}, metric: R@1, value: 70, source: "Table 1"}]`,
			`test.yaml: reference[0] (Table 1): field "match": key "los.name": no configuration of the spec and no stored record has it (did you mean "loss.name"?) (a key that only describes the paper's row goes in descriptive_keys)`},
		{"unscoped reference, undeclared descriptive key", `reference: [{match: {loss.name: drml, published: true}, metric: R@1, value: 70, source: "Table 1"}]`,
			`field "match": key "published"`},
	} {
		s := mustParse(t, vocabSpec+tc.yaml)
		s.Path = "test.yaml"
		err := CheckSelections(s, vocabRecords())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v\nwant: %s", tc.name, err, tc.want)
		}
	}
}

// TestCheckClaims: claims.yaml's paper and scales must be the spec's; where keys and values,
// sweep keys and values and metrics follow TestCheckSelections; a NaN metric in a selected record
// is named; central claims must be claims' ids. A claim on runs not made yet (tcm) stays legitimate.
func TestCheckClaims(t *testing.T) {
	const better = "  - {id: c, paper: b beats a, source: Table 1, kind: better, metric: %s, direction: higher, base: {label: a, where: {loss.name: %s}}, treatment: {label: b, where: {loss.name: %s}}%s}\n"
	mk := func(metric, treat, extra string) string {
		base := "contrastive"
		if treat == "tcm" { // a claim between two runs not made yet
			base = "tcm, loss.margin: 0.5"
		}
		r := strings.Replace(better, "%s", metric, 1)
		r = strings.Replace(r, "%s", base, 1)
		r = strings.Replace(r, "%s", treat, 1)
		return strings.Replace(r, "%s", extra, 1)
	}
	for _, tc := range []struct {
		name, head, claims string
		nan                bool
		want               string
	}{
		{"good", "paper: toy\n", mk("R@1", "rsk", ""), false, ""},
		{"not run yet", "paper: toy\n", mk("MAP@R", "tcm", ""), false, ""},
		{"new metric on runs made", "paper: toy\n", mk("MAP@R", "rsk", ""), false,
			`claims.yaml: claims[0] (id "c"): field "metric": metric "MAP@R": none of the stored records has it (4 selected)`},
		{"paper", "paper: tcm\n", mk("R@1", "rsk", ""), false,
			`claims.yaml: field "paper": "tcm", but the spec test.yaml is paper "toy"`},
		{"set scale", "paper: toy\nscale: smal\n", mk("R@1", "rsk", ""), false,
			`claims.yaml: field "scale": "smal" is not a scale of test.yaml (defined: small, smoke)`},
		{"claim scale", "paper: toy\n", mk("R@1", "rsk", ", scale: ful"), false,
			`claims.yaml: claims[0] (id "c"): field "scale": "ful" is not a scale of test.yaml`},
		{"arm where value", "paper: toy\n", mk("R@1", "rks", ""), false,
			`claims.yaml: claims[0] (id "c"): field "treatment.where": key "loss.name": value rks`},
		{"claim where key", "paper: toy\n", mk("R@1", "rsk", ", where: {loss.margn: 0.5}"), false,
			`claims.yaml: claims[0] (id "c"): field "where": key "loss.margn": no configuration of the spec and no stored record has it (did you mean "loss.margin"?)`},
		{"metric", "paper: toy\n", mk("R@one", "rsk", ""), false,
			`claims.yaml: claims[0] (id "c"): field "metric": metric "R@one": none of the stored records has it (4 selected)`},
		{"form where key", "paper: toy\n", mk("R@1", "rsk", ", forms: [{label: one, treatment: {loss.margn: 0.5}}, {label: two, treatment: {loss.margin: 0.5}}]"), false,
			`claims.yaml: claims[0] (id "c"): field "forms[0].treatment": key "loss.margn": no configuration of the spec and no stored record has it`},
		{"weak where key", "paper: toy\nweak: [{where: {loss.nam: rsk}, reason: weak}]\n", mk("R@1", "rsk", ""), false,
			`claims.yaml: field "weak[0].where": key "loss.nam"`},
		{"central id", "paper: toy\ncentral: [c, {id: d, note: x}]\n", mk("R@1", "rsk", ""), false,
			`claims.yaml: field "central[1]": "d" is not the id of a claim`},
		{"NaN", "paper: toy\n", mk("R@1", "rsk", ""), true,
			`claims.yaml: claims[0] (id "c"): field "metric": metric "R@1" is NaN in record rsk1 (seed 1, scale small)`},
	} {
		cs, err := ParseClaims([]byte(tc.head+"claims:\n"+tc.claims), "claims.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cs.Path = "claims.yaml"
		s := mustParse(t, vocabSpec)
		s.Path = "test.yaml"
		recs := vocabRecords()
		if tc.nan {
			recs[3].Metrics = sweep.Metrics{"R@1": math.NaN()}
		}
		err = CheckClaims(cs, s, recs, "small")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v\nwant: %s", tc.name, err, tc.want)
		}
	}
}

// TestNaNInSpecValueNamed: a NaN or infinite value in a spec's configuration is an error naming
// the spec, the run and the field (before: "json: unsupported value: NaN").
func TestNaNInSpecValueNamed(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{".nan", `test.yaml: scale "", run seed=0: experiments: field "loss.set.margin": NaN is not a value a configuration can hold`},
		{"[0.1, -.inf]", `field "loss.set.margin[1]": -Inf is not a value`},
	} {
		s := mustParse(t, "paper: toy\nbase: {loss: {name: a, set: {margin: "+tc.value+"}}}\n")
		s.Path = "test.yaml"
		if _, err := s.PlanWith("", nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.value, err, tc.want)
		}
	}
}
