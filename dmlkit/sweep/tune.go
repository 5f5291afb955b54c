package sweep

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// TuneSpec is a tuning step of a spec (reproducing.md §2): a grid of hyper-parameters trained on
// held-out *training* classes (Point sets the validation split, e.g. data.val_classes: 0.1), a
// stated selection rule on the validation metrics, and the selected values flowing into every
// sweep point that names the step in its "tuned" entry:
//
//	tune:
//	  - name: margins
//	    point: {loss.set.expr: smoothap+tcm, data.val_classes: 0.1, eval.opis: true}
//	    grid: {loss.set.options.tcm.pos_margin: [0.8, 0.9, 0.95], loss.set.options.tcm.neg_margin: [0.25, 0.5, 0.75]}
//	    seeds: [0]
//	    select: {metric: val/OPIS, lower: true, guard: val/R@1, within: 0.01}
//	sweep:
//	  list:
//	    - {loss.set.expr: smoothap+tcm, tuned: margins}   # gets the selected pos_margin / neg_margin
//
// A tuning step's runs are planned only at the scales where some sweep point (or another step)
// names it. Until every grid point × seed of a step is stored, the points that need it are
// pending ([Plan.Pending]); [RunSweep] runs the steps first and then the points they unblock. A
// step's own point may name other steps in "tuned" (e.g. margins tuned at the tuned learning
// rate). Steps sharing a Group must have the same budget (grid points × seeds), so every method
// is tuned equally. The selection is a regenerated table, "tune_<name>" ([Spec.TuneTables]).
type TuneSpec struct {
	Name    string            `yaml:"name"`
	Caption string            `yaml:"caption"`
	Point   map[string]any    `yaml:"point"`  // dotted keys shared by the tuning runs (may hold "tuned")
	Grid    map[string][]any  `yaml:"grid"`   // the tuned hyper-parameters
	Seeds   []int64           `yaml:"seeds"`  // default [0]
	Select  Selection         `yaml:"select"` // the rule, on validation metrics
	Group   string            `yaml:"group"`  // steps of one group get equal budgets
	Labels  map[string]string `yaml:"labels"` // header text of the selection table
	Digits  *int              `yaml:"digits"` // decimals of the selection table (default 3)
}

// tunedKey is the reserved sweep-point key naming the tuning steps whose selection it takes.
const tunedKey = "tuned"

func (t *TuneSpec) check() error {
	bad := func(field, format string, a ...any) error {
		return &FieldError{Path: field, Msg: fmt.Sprintf(format, a...)}
	}
	if t.Name == "" || strings.ContainsAny(t.Name, " ,/") {
		return bad("name", "%q: want a name without spaces, commas or slashes", t.Name)
	}
	if len(t.Grid) == 0 {
		return bad("grid", "missing (the hyper-parameters to tune)")
	}
	for _, k := range SortedKeys(t.Grid) {
		if len(t.Grid[k]) < 2 {
			return bad("grid."+k, "want at least 2 values, got %d", len(t.Grid[k]))
		}
		if _, ok := t.Point[k]; ok {
			return bad("grid."+k, "also set in point")
		}
	}
	if len(t.Point) == 0 {
		return bad("point", "missing (at least the validation split, e.g. data.val_classes: 0.1)")
	}
	if err := t.Select.check(); err != nil {
		fe := err.(*FieldError)
		return bad("select."+fe.Path, "%s", fe.Msg)
	}
	if !strings.HasPrefix(t.Select.Metric, "val/") || (t.Select.Guard != "" && !strings.HasPrefix(t.Select.Guard, "val/")) {
		return bad("select", "select on validation metrics (val/…), never on test metrics")
	}
	seen := map[int64]bool{}
	for _, s := range t.Seeds {
		if seen[s] {
			return bad("seeds", "seed %d listed twice", s)
		}
		seen[s] = true
	}
	return nil
}

// Budget is the number of runs of the step.
func (t *TuneSpec) Budget() int {
	n := max(len(t.Seeds), 1)
	for _, v := range t.Grid {
		n *= len(v)
	}
	return n
}

func (t *TuneSpec) seeds() []int64 {
	if len(t.Seeds) == 0 {
		return []int64{0}
	}
	return t.Seeds
}

// checkTunes validates the spec's tuning steps together: unique names, known references, no
// cycles, equal budgets within a group.
func (s *Spec) checkTunes() error {
	byName := map[string]*TuneSpec{}
	for i := range s.Tune {
		t := &s.Tune[i]
		t.Point = AsMap(Normalize(t.Point))
		for k, v := range t.Grid {
			t.Grid[k] = Normalize(v).([]any)
		}
		if err := t.check(); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return fmt.Errorf("field \"tune[%d].%s\" (%s): %s", i, fe.Path, t.Name, fe.Msg)
			}
			return err
		}
		if byName[t.Name] != nil {
			return fmt.Errorf("field \"tune[%d].name\": %q used twice", i, t.Name)
		}
		byName[t.Name] = t
	}
	groups := map[string]*TuneSpec{}
	for i := range s.Tune {
		t := &s.Tune[i]
		if t.Group == "" {
			continue
		}
		if g := groups[t.Group]; g != nil && g.Budget() != t.Budget() {
			return fmt.Errorf("field \"tune[%d]\" (%s): group %q: %d runs, but %s has %d (every method of a group gets the same tuning budget)",
				i, t.Name, t.Group, t.Budget(), g.Name, g.Budget())
		}
		groups[t.Group] = t
	}
	check := func(field string, p map[string]any) error {
		names, err := TunedNames(p)
		if err != nil {
			return fmt.Errorf("field %q: %w", field, err)
		}
		for _, n := range names {
			if byName[n] == nil {
				return fmt.Errorf("field %q: no tuning step named %q", field, n)
			}
		}
		return nil
	}
	for i, p := range s.Sweep.List {
		if err := check(fmt.Sprintf("sweep.list[%d].tuned", i), p); err != nil {
			return err
		}
	}
	for name, sc := range s.Scales {
		if l, ok := sc["list"].([]any); ok {
			for i, e := range l {
				if m, ok := e.(map[string]any); ok {
					if err := check(fmt.Sprintf("scales.%s.list[%d].tuned", name, i), m); err != nil {
						return err
					}
				}
			}
		}
	}
	// Dependencies between steps must not form a cycle.
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("field \"tune\": steps depend on each other in a cycle: %s", strings.Join(append(path, n), " → "))
		case 2:
			return nil
		}
		state[n] = 1
		deps, _ := TunedNames(byName[n].Point)
		for _, d := range deps {
			if byName[d] == nil {
				return fmt.Errorf("field \"tune\" (%s): point names no tuning step %q", n, d)
			}
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		state[n] = 2
		return nil
	}
	for i := range s.Tune {
		if err := visit(s.Tune[i].Name, nil); err != nil {
			return err
		}
	}
	return nil
}

// tuneKeys returns the configuration keys the runs of the named step set: its point's and grid's
// keys, and the grid keys of the steps its point is tuned at (transitively). seen guards cycles.
func (s *Spec) tuneKeys(name string, seen map[string]bool) map[string]bool {
	out := map[string]bool{}
	if seen[name] {
		return out
	}
	seen[name] = true
	for _, t := range s.Tune {
		if t.Name != name {
			continue
		}
		for k := range t.Point {
			out[k] = true
		}
		for k := range t.Grid {
			out[k] = true
		}
		names, _ := TunedNames(t.Point)
		for _, n := range names {
			for k := range s.tuneKeys(n, seen) {
				out[k] = true
			}
		}
	}
	return out
}

// TunedNames reads a point's "tuned" entry: a name or a list of names.
func TunedNames(p map[string]any) ([]string, error) {
	v, ok := p[tunedKey]
	if !ok {
		return nil, nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		var out []string
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want tuning step names, got %v", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a tuning step name or a list of names, got %v", v)
}

// TuneStep returns the tuning step called name (nil if none).
func (s *Spec) TuneStep(name string) *TuneSpec {
	for i := range s.Tune {
		if s.Tune[i].Name == name {
			return &s.Tune[i]
		}
	}
	return nil
}

// Pending is a sweep point (or tuning step) that cannot be planned yet because a tuning step it
// takes values from has no selection, or a run of a point (one seed) that starts from another
// run ([RunRefPrefix]) not stored yet.
type Pending struct {
	Point  string   // the point's values, as a run label without the seed (with it for a run that waits for its source)
	Waits  []string // the tuning steps without a selection, or the source runs not stored yet
	Reason string
}

// Selected is the outcome of a tuning step on stored records.
type Selected struct {
	Name   string
	Values map[string]any // dotted key → selected value
	Row    SelectedRow
	Runs   int // stored runs of the step
	Want   int // planned runs of the step
}

// PlanWith resolves the scale like [Spec.Plan], taking the selections of the tuning steps from
// the stored records: a step whose runs are all stored selects its grid point by its rule, and
// the points naming it get the selected values; the others are listed in Plan.Pending.
func (s *Spec) PlanWith(scale string, records []Record) (*Plan, error) {
	sel := map[string]map[string]any{}
	done := doneStates(records, scale)
	for range len(s.Tune) + 1 { // each round can unblock one more level of dependent steps
		p, err := s.resolve(scale, sel, done)
		if err != nil {
			return nil, err
		}
		changed := false
		for _, st := range s.Selections(p, records) {
			if err := s.selectionMissing(st, p, records); err != nil {
				return nil, err
			}
			if st.Values != nil && sel[st.Name] == nil {
				sel[st.Name] = st.Values
				changed = true
			}
		}
		if !changed {
			if err := p.Validate(registeredValidator()); err != nil {
				return nil, err
			}
			return p, nil
		}
	}
	return nil, fmt.Errorf("experiments: %s: tuning steps did not settle", s.Name())
}

// selectionMissing returns an error when every run of tuning step st is stored and none of
// those not marked failed has the metric (or guard) its rule selects by: the step would wait for
// its selection for ever. Runs stored as failed (which a retry may replace) are not an error.
func (s *Spec) selectionMissing(st Selected, p *Plan, records []Record) error {
	if st.Values != nil || st.Want == 0 || st.Runs < st.Want {
		return nil
	}
	t := s.TuneStep(st.Name)
	hashes := map[string]bool{}
	for _, r := range p.Runs {
		if r.InTune(t.Name) {
			hashes[r.Hash] = true
		}
	}
	var ok []Record
	have := map[string]bool{}
	for _, r := range records {
		if r.Scale == p.Scale && hashes[r.Hash] && r.Failed == "" {
			ok = append(ok, r)
			for m := range r.Metrics {
				have[m] = true
			}
		}
	}
	if len(ok) == 0 {
		return nil
	}
	idx := slices.IndexFunc(s.Tune, func(x TuneSpec) bool { return x.Name == t.Name })
	for _, f := range []struct{ field, metric string }{{"select.metric", t.Select.Metric}, {"select.guard", t.Select.Guard}} {
		if f.metric != "" && !have[f.metric] {
			return fmt.Errorf("experiments: %s: tune[%d] (%q): field %q: %q: none of the step's %d stored runs of scale %q has it%s",
				s.Name(), idx, t.Name, f.field, f.metric, len(ok), p.Scale, Suggest(f.metric, slices.Collect(maps.Keys(have))))
		}
	}
	return nil
}

// Selections applies each planned tuning step's rule to its stored records (those of the plan's
// scale whose hash is one of the step's runs). A step with runs missing has no Values.
func (s *Spec) Selections(p *Plan, records []Record) []Selected {
	var out []Selected
	for _, t := range s.Tune {
		hashes := map[string]bool{}
		for _, r := range p.Runs {
			if r.InTune(t.Name) {
				hashes[r.Hash] = true
			}
		}
		if len(hashes) == 0 {
			continue
		}
		var recs []Record
		for _, r := range records {
			if r.Scale == p.Scale && hashes[r.Hash] {
				recs = append(recs, r)
			}
		}
		st := Selected{Name: t.Name, Runs: len(recs), Want: len(hashes)}
		for _, r := range p.Held { // runs waiting for their source run: the grid is not complete
			if r.Tune == t.Name {
				st.Want++
			}
		}
		if len(recs) == st.Want {
			keys := SortedKeys(t.Grid)
			st.Row = SelectRow(t.Select, GroupBy(recs, keys))
			if st.Row.Row >= 0 {
				st.Values = map[string]any{}
				for i, k := range st.Row.Keys {
					st.Values[k] = st.Row.Values[i]
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// AllTables returns the spec's tables followed by its tuning steps' selection tables ([Spec.TuneTables]).
func (s *Spec) AllTables() []TableSpec {
	out := append(slices.Clone(s.Tables), s.TuneTables()...)
	for i := range out {
		out[i].Paper = s.Labels
	}
	return out
}

// TuneTables returns the selection table of every tuning step: one row per grid point (mean ±
// std over its seeds) with the selection rule's metric and guard, the selected row marked.
func (s *Spec) TuneTables() []TableSpec {
	var out []TableSpec
	for _, t := range s.Tune {
		where := maps.Clone(t.Point)
		delete(where, tunedKey)
		for k, v := range where {
			if l, ok := v.([]any); ok { // a list value of the point is one value, not alternatives
				where[k] = []any{l}
			}
		}
		for k, v := range t.Grid {
			where[k] = v
		}
		// Only the step's seeds: another step may train the same configuration at other seeds
		// (contextual's λ/γ grid holds the margin step's point, at seeds 1-3).
		seedKey := s.Sweep.SeedKey
		if seedKey == "" {
			seedKey = "seed"
		}
		seeds := t.Seeds
		if len(seeds) == 0 {
			seeds = []int64{0}
		}
		ss := make([]any, len(seeds))
		for i, x := range seeds {
			ss[i] = x
		}
		where[seedKey] = ss
		// The table holds this step's runs only: another step's grid keys that this step's runs
		// do not set (themselves or through the steps they are tuned at) must be absent, or the
		// runs of a later step on the same loss (e.g. its margins, trained at this step's
		// selected rate) would join this step's rows.
		allowed := s.tuneKeys(t.Name, map[string]bool{})
		for _, u := range s.Tune {
			for k := range u.Grid {
				if _, set := where[k]; !set && !allowed[k] {
					where[k] = nil
				}
			}
		}
		metrics := []string{t.Select.Metric}
		if t.Select.Guard != "" {
			metrics = append(metrics, t.Select.Guard)
		}
		caption := t.Caption
		if caption == "" {
			label := func(k string) string {
				if l, ok := t.Labels[k]; ok {
					return l
				}
				return s.Labels.Key(k)
			}
			var ms, ks []string
			for _, m := range metrics {
				ms = append(ms, label(m))
			}
			for _, k := range SortedKeys(t.Grid) {
				ks = append(ks, label(k))
			}
			caption = fmt.Sprintf("Tuning step %q on held-out training classes: %s over %s", t.Name, strings.Join(ms, ", "), strings.Join(ks, " × "))
		}
		sel := t.Select
		digits := 3
		if t.Digits != nil {
			digits = *t.Digits
		}
		out = append(out, TableSpec{Name: "tune_" + t.Name, Caption: caption, Where: where, Rows: SortedKeys(t.Grid),
			Metrics: metrics, Labels: t.Labels, NoRef: true, Select: &sel, Digits: &digits})
	}
	return out
}

// pointTunes splits a sweep point's "tuned" entry off: the point without it and the names.
func pointTunes(pt map[string]any) (map[string]any, []string) {
	names, _ := TunedNames(pt) // checked by Parse
	if names == nil {
		return pt, nil
	}
	q := maps.Clone(pt)
	delete(q, tunedKey)
	return q, names
}

// takenKeys lists, sorted, the keys the point takes from the selections of names (those it does
// not set itself).
func takenKeys(pt map[string]any, names []string, sel map[string]map[string]any) []string {
	var out []string
	for _, n := range names {
		for k := range sel[n] {
			if _, set := pt[k]; !set && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// applyTunes merges the selections of names into the point; it returns the names without one.
func applyTunes(pt map[string]any, names []string, sel map[string]map[string]any) (map[string]any, []string) {
	var waits []string
	q := maps.Clone(pt)
	for _, n := range names {
		v, ok := sel[n]
		if !ok {
			waits = append(waits, n)
			continue
		}
		for k, x := range v {
			if _, set := q[k]; !set { // a value written in the point wins over the selection
				q[k] = x
			}
		}
	}
	return q, waits
}

// tunePoints expands the tuning steps that the plan's points need (transitively) into points
// tagged with the step's name; a step whose own point waits for a selection is one placeholder
// point with waits set and as many seeds as the step has runs.
func (s *Spec) tunePoints(needed []string, sel map[string]map[string]any) (pts []tunePoint) {
	done := map[string]bool{}
	var add func(n string)
	add = func(n string) {
		if done[n] {
			return
		}
		done[n] = true
		t := s.TuneStep(n)
		base, deps := pointTunes(t.Point)
		for _, d := range deps {
			add(d)
		}
		taken := takenKeys(base, deps, sel)
		base, waits := applyTunes(base, deps, sel)
		if len(waits) > 0 { // a placeholder holding the step's budget of run indices
			pts = append(pts, tunePoint{point: map[string]any{}, seeds: make([]int64, t.Budget()), tune: n, waits: waits})
			return
		}
		for _, p := range expand(t.Grid, []map[string]any{base}) {
			pts = append(pts, tunePoint{point: p, seeds: t.seeds(), tune: n, tuned: deps, taken: taken})
		}
	}
	names := slices.Clone(needed)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		add(n)
	}
	return pts
}

type tunePoint struct {
	point map[string]any
	seeds []int64
	tune  string
	waits []string // the step's own point waits for these selections
	tuned []string // the steps its own point is tuned at
	taken []string // the keys it takes from them
}

// TuneSelection is the selection of the tuning step name on the stored records of scale (an
// error when the step does not exist or its grid is not complete in the store).
func (s *Spec) TuneSelection(name, scale string, records []Record) (map[string]any, error) {
	if s.TuneStep(name) == nil {
		return nil, fmt.Errorf("no tuning step named %q", name)
	}
	p, err := s.PlanWith(scale, records)
	if err != nil {
		return nil, err
	}
	for _, st := range s.Selections(p, records) {
		if st.Name == name {
			if st.Values == nil {
				return nil, fmt.Errorf("tuning step %q: %d of %d runs stored, no selection yet", name, st.Runs, st.Want)
			}
			return st.Values, nil
		}
	}
	return nil, fmt.Errorf("tuning step %q is not planned at scale %q", name, scale)
}

// Suggest returns ` (did you mean "x"?)` for the known name closest to name (at most 2 edits,
// fewer than its length), or "".
func Suggest(name string, known []string) string {
	sort.Strings(known)
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestD && d < len(name) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
