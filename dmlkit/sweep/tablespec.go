package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TableSpec declares a results table: one row per group of records (grouped by Rows), one column
// per metric with mean ± std over seeds, a column with the paper's number next to each metric for
// which the spec has a matching [Reference], and a column with the number of seeds. Below the
// table, the selection line when the table selects a row (hyper-parameter tuning). The paper's
// claims are not a table option: they live in claims.yaml ([ClaimSet]).
type TableSpec struct {
	Name    string            `yaml:"name"`    // output file stem
	Caption string            `yaml:"caption"` // table caption
	Scale   string            `yaml:"scale"`   // only records of this scale (default: the scale asked for, else all)
	Where   map[string]any    `yaml:"where"`   // only records matching these values
	Rows    []string          `yaml:"rows"`    // grouping keys, one column each
	Metrics []string          `yaml:"metrics"` // metric columns
	Digits  *int              `yaml:"digits"`  // decimals (default 2)
	Factor  float64           `yaml:"factor"`  // our values are multiplied by it, e.g. 100 for percent (default 1); references are shown as given
	Labels  map[string]string `yaml:"labels"`  // header text for keys and metrics; "key=value" entries: a row value's text
	Best    string            `yaml:"best"`    // "max" or "min": bold the best mean of each metric column
	NoRef   bool              `yaml:"no_reference"`
	Select  *Selection        `yaml:"select"` // a row chosen by a rule (hyperparameter tuning), reported below the table
	// Paper is the spec's labels map ([Spec.AllTables] sets it): the texts of keys, metrics and
	// values the table's own Labels do not give, with its fallbacks ([LabelMap.Key],
	// [LabelMap.Value]).
	Paper LabelMap `yaml:"-"`
}

func (t *TableSpec) Check() error {
	if t.Name == "" {
		return errors.New("field \"name\": missing")
	}
	if len(t.Metrics) == 0 {
		return errors.New("field \"metrics\": missing")
	}
	if t.Digits != nil && (*t.Digits < 0 || *t.Digits > 10) {
		return fmt.Errorf("field \"digits\": %d out of range 0..10", *t.Digits)
	}
	if t.Best != "" && t.Best != "max" && t.Best != "min" {
		return fmt.Errorf("field \"best\": %q is not max or min", t.Best)
	}
	if t.Select != nil {
		if err := t.Select.check(); err != nil {
			fe := err.(*FieldError)
			return &FieldError{Path: "select." + fe.Path, Msg: fe.Msg}
		}
	}
	return nil
}

func (t *TableSpec) Label(key string) string {
	if l, ok := t.Labels[key]; ok {
		return l
	}
	return t.Paper.Key(key)
}

// TableRecords returns the records a table of the spec is built from: those its where selects
// at scale (the table's own scale first), and for a tuning step's selection table (tune_<step>)
// only the step's own runs — the records whose hash is one of the step's planned runs, resolved
// from records ([Spec.PlanWith]) — since a sweep point may train the same configuration (say, the
// baseline of a margin grid on the same held-out split), which a where cannot tell apart.
func (s *Spec) TableRecords(t TableSpec, scale string, records []Record) []Record {
	recs, sc := SelectFor(records, t.Scale, scale, t.Where)
	return s.TuneRunsOnly(t.Name, sc, records, recs, map[string]*Plan{})
}

// TuneRunsOnly restricts recs to the runs of tuning step <name> when table is "tune_<name>" and
// the plan of scale resolves from records (cached in plans); otherwise it returns recs unchanged.
func (s *Spec) TuneRunsOnly(table, scale string, records, recs []Record, plans map[string]*Plan) []Record {
	name, ok := strings.CutPrefix(table, "tune_")
	if !ok || !slices.ContainsFunc(s.Tune, func(t TuneSpec) bool { return t.Name == name }) {
		return recs
	}
	p, done := plans[scale]
	if !done {
		p, _ = s.PlanWith(scale, records) // nil on error: the where alone decides
		plans[scale] = p
	}
	if p == nil {
		return recs
	}
	hashes := map[string]bool{}
	for _, r := range p.Runs {
		if r.InTune(name) {
			hashes[r.Hash] = true
		}
	}
	var out []Record
	for _, r := range recs {
		if hashes[r.Hash] {
			out = append(out, r)
		}
	}
	return out
}
