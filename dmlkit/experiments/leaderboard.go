package experiments

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
)

// The leaderboard (issue 31, "the cross-paper reality check"): many DML losses trained under one
// protocol, each a method of the sweep told apart by one config key (its informational "name"),
// ranked per regime (a committed scale: from scratch, pretrained) by the mean over seeds of a
// metric, with 95 % t-intervals, the training rule of the verdicts, an OPIS–R@1 Pareto view and
// the agreement of the two regimes' rankings (Kendall's τ-b with a bootstrap over seeds).
//
// In the spec:
//
//	leaderboard:
//	  arm: name                        # the config key naming a method (default name)
//	  metrics: [R@1, MAP@R, OPIS]      # the first one ranks
//	  factors: {R@1: 100, MAP@R: 100, OPIS: 1000}   # display scaling (default 1): 100 → "%", else "× f"
//	  lower_better: [OPIS]             # metrics where lower is better (default: higher)
//	  digits: 1                        # decimals of the tables (default 1)
//	  min_train: 0.5                   # the training floor (default DefaultMinTrain), as the verdicts'
//	  pareto: [R@1, OPIS]              # x and y of the Pareto figure (default: the first metric and
//	                                   # the first lower_better one)
//	  bootstrap: 2000                  # replicates of the rank agreement's bootstrap (default 2,000)
//	  papers: {tcm: TCM, …}            # the seed papers' labels (default: DefaultSeedPapers)
//	  methods:                         # the field, in display order (ties, figures' keys)
//	    - {id: contrastive-l2, label: "Contrastive (L2)", paper: "Hadsell, Chopra & LeCun, CVPR", year: 2006,
//	       seeds: [tcm, contextual], origin: ""}  # seeds: the seed papers that use it; origin: the
//	                                              # seed paper that proposes it ("" for a baseline)
//	  regimes:                         # committed scales, in order (one or two)
//	    - {scale: small, label: "from scratch: small CNN, Omniglot 964/659"}
//	    - {scale: pretrained, label: "ImageNet MobileNetV2, frozen, CIFAR-10 5/5"}
//	  where: {}                        # optional extra filter on the final runs
//
// A method's final runs are the records of the scale whose arm key holds its id, that match where,
// that are not stored as failed and that are not runs of a tuning step (the runs of the spec's
// plan with a Tune, resolved from the records: a tuning point never carries a method's id by
// accident, but a spec may name it so).

// LeaderboardSpec is the spec's leaderboard section (see the file comment for the YAML).
type LeaderboardSpec struct {
	Arm         string              `yaml:"arm"`          // config key naming a method (default "name")
	Metrics     []string            `yaml:"metrics"`      // metric columns; the first ranks
	Factors     map[string]float64  `yaml:"factors"`      // metric → display factor (default 1)
	LowerBetter []string            `yaml:"lower_better"` // metrics where lower is better
	Digits      *int                `yaml:"digits"`       // decimals (default 1)
	MinTrain    *float64            `yaml:"min_train"`    // training floor (default DefaultMinTrain)
	Pareto      []string            `yaml:"pareto"`       // [x, y] of the Pareto figure
	Bootstrap   int                 `yaml:"bootstrap"`    // replicates B (default DefaultBootstrap)
	Papers      map[string]string   `yaml:"papers"`       // seed paper id → label (default DefaultSeedPapers)
	Methods     []LeaderboardMethod `yaml:"methods"`      // the field, in display order
	Regimes     []LeaderboardRegime `yaml:"regimes"`      // one or two committed scales
	Where       map[string]any      `yaml:"where"`        // extra filter on final runs
}

// LeaderboardMethod is one method of the field.
type LeaderboardMethod struct {
	ID     string   `yaml:"id"`     // the arm key's value in its final runs
	Label  string   `yaml:"label"`  // its name in tables and figures
	Paper  string   `yaml:"paper"`  // who proposed it, e.g. "Hadsell, Chopra & LeCun, CVPR"
	Year   int      `yaml:"year"`   // when
	Seeds  []string `yaml:"seeds"`  // the seed papers that use it (ids of Papers)
	Origin string   `yaml:"origin"` // the seed paper that proposes it; "" for a baseline
}

// LeaderboardRegime is one regime: a scale of the spec and its words.
type LeaderboardRegime struct {
	Scale string `yaml:"scale"`
	Label string `yaml:"label"`
}

// DefaultSeedPapers are the labels of the five seed papers (the directories of reproductions/).
var DefaultSeedPapers = map[string]string{"tcm": "TCM", "cit": "CIT", "idml": "IDML", "rsk": "RS@k", "contextual": "Contextual"}

// seedPaperOrder is the order of DefaultSeedPapers in tables and legends.
var seedPaperOrder = []string{"tcm", "cit", "idml", "rsk", "contextual"}

// DefaultBootstrap is the number of bootstrap replicates of the rank agreement.
const DefaultBootstrap = 2000

// BootstrapSeed seeds the rank agreement's bootstrap (a PCG generator), so that the interval and
// every file showing it are the same on every run.
const BootstrapSeed = 31

// BaselineGroup is the colour group of methods no seed paper proposes.
const BaselineGroup = "earlier method (baseline)"

// arm is the config key naming a method.
func (l *LeaderboardSpec) arm() string {
	if l.Arm == "" {
		return "name"
	}
	return l.Arm
}

func (l *LeaderboardSpec) factor(metric string) float64 {
	if f, ok := l.Factors[metric]; ok && f != 0 {
		return f
	}
	return 1
}

// trainFactor is the display factor of the training R@1: its own, else R@1's, else 1.
func (l *LeaderboardSpec) trainFactor() float64 {
	if f, ok := l.Factors[TrainMetric]; ok && f > 0 {
		return f
	}
	return l.factor("R@1")
}

func (l *LeaderboardSpec) lower(metric string) bool { return slices.Contains(l.LowerBetter, metric) }

func (l *LeaderboardSpec) digits() int {
	if l.Digits != nil {
		return *l.Digits
	}
	return 1
}

func (l *LeaderboardSpec) minTrain() float64 {
	if l.MinTrain != nil {
		return *l.MinTrain
	}
	return DefaultMinTrain
}

func (l *LeaderboardSpec) bootstrap() int {
	if l.Bootstrap > 0 {
		return l.Bootstrap
	}
	return DefaultBootstrap
}

// papers returns the seed papers' labels and their order (the spec's, sorted by id; else the
// defaults in their order).
func (l *LeaderboardSpec) papers() (map[string]string, []string) {
	if len(l.Papers) > 0 {
		return l.Papers, sortedKeys(l.Papers)
	}
	return DefaultSeedPapers, seedPaperOrder
}

// paretoAxes are the metrics of the Pareto figure's x and y; ok is false when there is no y.
func (l *LeaderboardSpec) paretoAxes() (x, y string, ok bool) {
	if len(l.Pareto) == 2 {
		return l.Pareto[0], l.Pareto[1], true
	}
	for _, m := range l.LowerBetter {
		if m != l.Metrics[0] && slices.Contains(l.Metrics, m) {
			return l.Metrics[0], m, true
		}
	}
	return "", "", false
}

// regimeOf is the regime of scale: the spec's, or one named after the scale (a smoke run).
func (l *LeaderboardSpec) regimeOf(scale string) LeaderboardRegime {
	for _, r := range l.Regimes {
		if r.Scale == scale {
			return r
		}
	}
	return LeaderboardRegime{Scale: scale, Label: "scale " + scale}
}

// check validates the section against the spec: known scales, method ids that occur in the sweep
// as values of the arm key, metrics named consistently. Errors name the field.
func (l *LeaderboardSpec) check(s *Spec) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("field \"leaderboard.%s\": %s", field, fmt.Sprintf(format, a...))
	}
	l.Where = asMap(normalize(l.Where))
	if len(l.Metrics) == 0 {
		return bad("metrics", "missing (the first one ranks)")
	}
	for i, m := range l.Metrics {
		if m == "" || slices.Contains(l.Metrics[:i], m) {
			return bad(fmt.Sprintf("metrics[%d]", i), "%q: empty or listed twice", m)
		}
	}
	for _, m := range sortedKeys(l.Factors) {
		if !slices.Contains(l.Metrics, m) && m != TrainMetric {
			return bad("factors."+m, "not one of metrics (%s) or %s", strings.Join(l.Metrics, ", "), TrainMetric)
		}
		if !(l.Factors[m] > 0) {
			return bad("factors."+m, "%v: want a positive number", l.Factors[m])
		}
	}
	for i, m := range l.LowerBetter {
		if !slices.Contains(l.Metrics, m) {
			return bad(fmt.Sprintf("lower_better[%d]", i), "%q is not one of metrics (%s)", m, strings.Join(l.Metrics, ", "))
		}
	}
	if l.Digits != nil && (*l.Digits < 0 || *l.Digits > 6) {
		return bad("digits", "%d out of range 0..6", *l.Digits)
	}
	if m := l.MinTrain; m != nil && !(*m >= 0 && *m <= 1) {
		return bad("min_train", "%v: want a fraction in [0, 1]", *m)
	}
	if l.Bootstrap < 0 {
		return bad("bootstrap", "%d: want a positive number of replicates", l.Bootstrap)
	}
	if len(l.Pareto) > 0 {
		if len(l.Pareto) != 2 || l.Pareto[0] == l.Pareto[1] {
			return bad("pareto", "want two different metrics [x, y], got %v", l.Pareto)
		}
		for i, m := range l.Pareto {
			if !slices.Contains(l.Metrics, m) {
				return bad(fmt.Sprintf("pareto[%d]", i), "%q is not one of metrics (%s)", m, strings.Join(l.Metrics, ", "))
			}
		}
	}
	for _, k := range sortedKeys(l.Papers) {
		if !paperName.MatchString(k) || strings.TrimSpace(l.Papers[k]) == "" {
			return bad("papers."+k, "want a paper id (lower-case) with a label")
		}
	}
	papers, _ := l.papers()
	if len(l.Regimes) == 0 || len(l.Regimes) > 2 {
		return bad("regimes", "want one or two regimes (the rank agreement compares two), got %d", len(l.Regimes))
	}
	for i, r := range l.Regimes {
		if _, ok := s.Scales[r.Scale]; !ok {
			return bad(fmt.Sprintf("regimes[%d].scale", i), "unknown scale %q (defined: %s)", r.Scale, strings.Join(s.ScaleNames(), ", "))
		}
		if strings.TrimSpace(r.Label) == "" {
			return bad(fmt.Sprintf("regimes[%d].label", i), "missing (the regime in words)")
		}
		if i > 0 && r.Scale == l.Regimes[0].Scale {
			return bad(fmt.Sprintf("regimes[%d].scale", i), "%q listed twice", r.Scale)
		}
	}
	if len(l.Methods) == 0 {
		return bad("methods", "missing (the field, in display order)")
	}
	swept := s.armValues(l.arm())
	for i, m := range l.Methods {
		f := fmt.Sprintf("methods[%d]", i)
		if m.ID == "" {
			return bad(f+".id", "missing")
		}
		if slices.ContainsFunc(l.Methods[:i], func(o LeaderboardMethod) bool { return o.ID == m.ID }) {
			return bad(f+".id", "%q listed twice", m.ID)
		}
		if !swept[m.ID] {
			return bad(f+".id", "%q does not occur in the sweep as a value of %s (values: %s)", m.ID, l.arm(), strings.Join(sortedKeys(swept), ", "))
		}
		if strings.TrimSpace(m.Label) == "" {
			return bad(f+".label", "missing (%s's name in tables and figures)", m.ID)
		}
		for j, p := range m.Seeds {
			if _, ok := papers[p]; !ok {
				return bad(fmt.Sprintf("%s.seeds[%d]", f, j), "unknown seed paper %q (known: %s)", p, strings.Join(sortedKeys(papers), ", "))
			}
		}
		if _, ok := papers[m.Origin]; m.Origin != "" && !ok {
			return bad(f+".origin", "unknown seed paper %q (known: %s)", m.Origin, strings.Join(sortedKeys(papers), ", "))
		}
	}
	return nil
}

// armValues collects, as FormatValue writes them without quotes, the values key takes anywhere in
// the spec's sweep: the base, every scale's overrides, grids and lists, and the sweep's own grid
// and list.
func (s *Spec) armValues(key string) map[string]bool {
	out := map[string]bool{}
	add := func(v any) {
		if str, ok := v.(string); ok {
			out[str] = true
		} else if v != nil {
			out[FormatValue(v)] = true
		}
	}
	addPoint := func(p map[string]any) {
		if v, ok := Flatten(p)[key]; ok {
			add(v)
		}
	}
	if v, ok := Get(s.Base, key); ok {
		add(v)
	}
	for _, v := range s.Sweep.Grid[key] {
		add(v)
	}
	for _, p := range s.Sweep.List {
		addPoint(p)
	}
	for _, name := range s.ScaleNames() {
		sc := s.Scales[name]
		over := map[string]any{}
		for k, v := range sc {
			if !scaleReserved[k] {
				over[k] = v
			}
		}
		addPoint(over)
		if g, ok := sc["grid"].(map[string]any); ok {
			if vals, ok := g[key].([]any); ok {
				for _, v := range vals {
					add(v)
				}
			}
		}
		if l, ok := sc["list"].([]any); ok {
			for _, e := range l {
				if m, ok := e.(map[string]any); ok {
					addPoint(m)
				}
			}
		}
	}
	return out
}

// Interval is a mean over seeds with its 95 % t-interval (Student t, n − 1 degrees of freedom;
// Lo and Hi NaN when N < 2; all NaN when N = 0).
type Interval struct {
	Mean, Lo, Hi float64
	N            int
}

// TInterval is the mean of vals with its 95 % t-interval: mean ± t(0.975, n − 1) · sd / √n.
func TInterval(vals []float64) Interval {
	st := MeanStd(vals)
	iv := Interval{Mean: st.Mean, Lo: math.NaN(), Hi: math.NaN(), N: st.N}
	if st.N >= 2 {
		h := tCrit95(st.N-1) * st.Std / math.Sqrt(float64(st.N))
		iv.Lo, iv.Hi = st.Mean-h, st.Mean+h
	}
	return iv
}

// LeaderboardEntry is one method in one regime.
type LeaderboardEntry struct {
	Method LeaderboardMethod
	Rank   int                  // 1-based by the first metric; 0 when not ranked (not run, or no value)
	Seeds  []int64              // of its final runs, ascending
	Values map[string][]float64 // metric → per-seed values in Seeds order (a seed without the metric left out)
	Stats  map[string]Interval  // metric → mean and 95 % interval
	// TrainR1 is the mean training-split R@1 ([TrainMetric]) over the seeds that record it; NaN
	// when none does.
	TrainR1 float64
	Trained string // TrainedYes, TrainedNo, TrainedUnknown or TrainedNotRun
	Failed  int    // its runs stored as failed (left out)
}

// Training states of a leaderboard entry.
const (
	TrainedYes     = "yes"
	TrainedNo      = "did not train"
	TrainedUnknown = "not recorded"
	TrainedNotRun  = "not run"
)

// Run reports whether the method has final runs in the regime.
func (e *LeaderboardEntry) Run() bool { return len(e.Seeds) > 0 }

// Leaderboard is the ranking of one regime ([BuildLeaderboard]).
type Leaderboard struct {
	Spec   *LeaderboardSpec
	Paper  string
	Regime LeaderboardRegime
	// Entries: the ranked methods, best first (ties in the order of the spec's methods), then the
	// methods with runs but no value of the first metric, then those not run, in the spec's order.
	Entries   []LeaderboardEntry
	BestTrain float64 // the best train R@1 among the entries (NaN: none recorded)
	Records   int     // final runs used
}

// finalRuns are the records of a method's final runs at scale (see the file comment), by method id.
func (s *Spec) finalRuns(scale string, records []Record) (map[string][]Record, map[string]int) {
	l := s.Leaderboard
	tuning := map[string]bool{}
	if p, err := s.PlanWith(scale, records); err == nil {
		for _, r := range p.Runs {
			if r.Tune != "" {
				tuning[r.Hash] = true
			}
		}
	}
	ids := map[string]bool{}
	for _, m := range l.Methods {
		ids[m.ID] = true
	}
	runs, failed := map[string][]Record{}, map[string]int{}
	for _, r := range selectRecords(records, scale, l.Where, true) {
		v, ok := r.Value(l.arm())
		id, _ := v.(string)
		if !ok || !ids[id] || tuning[r.Hash] {
			continue
		}
		if r.Failed != "" {
			failed[id]++
			continue
		}
		runs[id] = append(runs[id], r)
	}
	return runs, failed
}

// BuildLeaderboard ranks the spec's methods at scale from records (all scales may be passed): per
// method the per-seed values of each metric, their mean and 95 % t-interval, the mean train R@1
// and whether it trained — below min_train × the best method's train R@1 it did not (the rule of
// the verdicts' "did not train"). A method with two final runs of one seed is an error.
func BuildLeaderboard(s *Spec, scale string, records []Record) (*Leaderboard, error) {
	l := s.Leaderboard
	if l == nil {
		return nil, fmt.Errorf("experiments: %s: no leaderboard section", s.name())
	}
	runs, failed := s.finalRuns(scale, records)
	lb := &Leaderboard{Spec: l, Paper: s.Paper, Regime: l.regimeOf(scale), BestTrain: math.NaN()}
	var ranked, unranked, notRun []LeaderboardEntry
	for _, m := range l.Methods {
		e := LeaderboardEntry{Method: m, Values: map[string][]float64{}, Stats: map[string]Interval{}, TrainR1: math.NaN(), Failed: failed[m.ID]}
		recs := runs[m.ID]
		g := &Group{Keys: []string{l.arm()}, Values: []any{m.ID}}
		for i := range recs {
			g.Records = append(g.Records, &recs[i])
		}
		if err := g.CheckSeeds(); err != nil {
			return nil, fmt.Errorf("experiments: leaderboard %s, scale %q: method %w", s.Paper, scale, err)
		}
		sort.SliceStable(g.Records, func(a, b int) bool { return g.Records[a].Seed < g.Records[b].Seed })
		var train []float64
		for _, r := range g.Records {
			e.Seeds = append(e.Seeds, r.Seed)
			for _, mt := range l.Metrics {
				if v, ok := r.Metrics[mt]; ok {
					e.Values[mt] = append(e.Values[mt], v)
				}
			}
			if v, ok := r.Metrics[TrainMetric]; ok && !math.IsNaN(v) {
				train = append(train, v)
			}
		}
		for _, mt := range l.Metrics {
			e.Stats[mt] = TInterval(e.Values[mt])
		}
		if len(train) > 0 {
			e.TrainR1 = MeanStd(train).Mean
			if math.IsNaN(lb.BestTrain) || e.TrainR1 > lb.BestTrain {
				lb.BestTrain = e.TrainR1
			}
		}
		lb.Records += len(recs)
		switch {
		case !e.Run():
			e.Trained = TrainedNotRun
			notRun = append(notRun, e)
		case math.IsNaN(e.Stats[l.Metrics[0]].Mean):
			unranked = append(unranked, e)
		default:
			ranked = append(ranked, e)
		}
	}
	for _, group := range [][]LeaderboardEntry{ranked, unranked} {
		for i := range group {
			e := &group[i]
			switch {
			case math.IsNaN(e.TrainR1):
				e.Trained = TrainedUnknown
			case belowTrainFloor(e.TrainR1, lb.BestTrain, l.minTrain()):
				e.Trained = TrainedNo
			default:
				e.Trained = TrainedYes
			}
		}
	}
	first, lower := l.Metrics[0], l.lower(l.Metrics[0])
	sort.SliceStable(ranked, func(a, b int) bool {
		x, y := ranked[a].Stats[first].Mean, ranked[b].Stats[first].Mean
		if lower {
			return x < y
		}
		return x > y
	})
	for i := range ranked {
		ranked[i].Rank = i + 1
		if i > 0 && ranked[i].Stats[first].Mean == ranked[i-1].Stats[first].Mean {
			ranked[i].Rank = ranked[i-1].Rank // a tie shares its rank
		}
	}
	lb.Entries = append(append(ranked, unranked...), notRun...)
	return lb, nil
}

// Ranked lists the entries with a rank (best first).
func (lb *Leaderboard) Ranked() []LeaderboardEntry {
	var out []LeaderboardEntry
	for _, e := range lb.Entries {
		if e.Rank > 0 {
			out = append(out, e)
		}
	}
	return out
}

// unit is the display unit of a factor: "%" for 100, "× f" otherwise, "" for 1.
func unit(f float64) string {
	switch f {
	case 1:
		return ""
	case 100:
		return "%"
	}
	return "× " + strconv.FormatFloat(f, 'f', -1, 64)
}

// metricHeader is a metric's column title: its label and unit, e.g. "R@1 (%)", "OPIS (× 1000)".
func metricHeader(lm LabelMap, name string, f float64) string {
	if u := unit(f); u != "" {
		return lm.Key(name) + " (" + u + ")"
	}
	return lm.Key(name)
}

// unitsText is the caption's sentence on units: "R@1 and MAP@R in %, OPIS × 1000 (lower is better)".
func (l *LeaderboardSpec) unitsText(lm LabelMap) string {
	var parts []string
	byUnit := map[string][]string{}
	var order []string
	for _, m := range l.Metrics {
		u := unit(l.factor(m))
		if _, ok := byUnit[u]; !ok {
			order = append(order, u)
		}
		name := lm.Key(m)
		if l.lower(m) {
			name += " (lower is better)"
		}
		byUnit[u] = append(byUnit[u], name)
	}
	for _, u := range order {
		names := joinAnd(byUnit[u])
		switch {
		case u == "":
			parts = append(parts, names+" as fractions")
		case u == "%":
			parts = append(parts, names+" in %")
		default:
			parts = append(parts, names+" "+u)
		}
	}
	return strings.Join(parts, ", ")
}

func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// intervalText is "mean [lo, hi]" at digits decimals ("mean" alone when n < 2, "—" when n = 0).
func intervalText(iv Interval, f float64, digits int) string {
	if iv.N == 0 || math.IsNaN(iv.Mean) {
		return "—"
	}
	s := fmtNum(iv.Mean*f, digits)
	if !math.IsNaN(iv.Lo) {
		s += " [" + fmtNum(iv.Lo*f, digits) + ", " + fmtNum(iv.Hi*f, digits) + "]"
	}
	return s
}

// seedPapersText is the labels of the seed papers ids, in the papers' order, joined by ", ".
func (l *LeaderboardSpec) seedPapersText(ids []string) string {
	labels, order := l.papers()
	var out []string
	for _, p := range order {
		if slices.Contains(ids, p) {
			out = append(out, labels[p])
		}
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// Group is the method's colour group in figures: the label of the seed paper proposing it, or
// [BaselineGroup].
func (l *LeaderboardSpec) Group(m LeaderboardMethod) string {
	if m.Origin == "" {
		return BaselineGroup
	}
	labels, _ := l.papers()
	return labels[m.Origin] + " (seed paper's method)"
}

// Groups lists the colour groups in legend order: the seed papers', then the baselines.
func (l *LeaderboardSpec) Groups() []string {
	labels, order := l.papers()
	var out []string
	for _, p := range order {
		out = append(out, labels[p]+" (seed paper's method)")
	}
	return append(out, BaselineGroup)
}

// Header is the leaderboard's column titles.
func (lb *Leaderboard) Header(lm LabelMap) []string {
	l := lb.Spec
	h := []string{"rank", "method", "proposed in", "used by (seed papers)"}
	for _, m := range l.Metrics {
		h = append(h, metricHeader(lm, m, l.factor(m))+" [95 % CI]")
	}
	return append(h, "n", metricHeader(lm, TrainMetric, l.trainFactor()), "trained?")
}

// Rows is the leaderboard's cells as text, one row per entry.
func (lb *Leaderboard) Rows() [][]string {
	l := lb.Spec
	d := l.digits()
	tf := l.trainFactor()
	var rows [][]string
	for _, e := range lb.Entries {
		rank := "—"
		if e.Rank > 0 {
			rank = strconv.Itoa(e.Rank)
		}
		proposed := e.Method.Paper
		if e.Method.Year > 0 {
			if proposed != "" {
				proposed += " "
			}
			proposed += strconv.Itoa(e.Method.Year)
		}
		if proposed == "" {
			proposed = "—"
		}
		row := []string{rank, e.Method.Label, proposed, l.seedPapersText(e.Method.Seeds)}
		for _, m := range l.Metrics {
			iv := e.Stats[m]
			s := intervalText(iv, l.factor(m), d)
			if iv.N > 0 && iv.N != len(e.Seeds) {
				s += fmt.Sprintf(" (n = %d)", iv.N)
			}
			if !e.Run() {
				s = "—"
			}
			row = append(row, s)
		}
		train := "—"
		if !math.IsNaN(e.TrainR1) {
			train = fmtNum(e.TrainR1*tf, d)
		}
		row = append(row, strconv.Itoa(len(e.Seeds)), train, e.Trained)
		rows = append(rows, row)
	}
	return rows
}

// Caption is the table's caption: what is ranked, the interval, the units, the training rule,
// and what "not run" means.
func (lb *Leaderboard) Caption(lm LabelMap) string {
	l := lb.Spec
	run := 0
	for _, e := range lb.Entries {
		if e.Run() {
			run++
		}
	}
	first := lm.Key(l.Metrics[0])
	dir := "highest"
	if l.lower(l.Metrics[0]) {
		dir = "lowest"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Leaderboard — %s: %d of %d methods run, ranked by the mean test %s over seeds (%s first; ties share a rank). ",
		lb.Regime.Label, run, len(lb.Entries), first, dir)
	fmt.Fprintf(&b, "Each metric: mean [95 %% t-interval over seeds, n − 1 degrees of freedom; n seeds]; %s. ", l.unitsText(lm))
	floor := "no training R@1 recorded"
	if !math.IsNaN(lb.BestTrain) {
		floor = fmt.Sprintf("best %s", fmtNum(lb.BestTrain*l.trainFactor(), l.digits()))
	}
	fmt.Fprintf(&b, "Trained?: the verdicts' rule — a method whose %s is below %s × the best method's (%s) did not train; not recorded: its runs have no %s. ",
		lm.Key(TrainMetric), fmtNum(l.minTrain(), 2), floor, lm.Key(TrainMetric))
	b.WriteString("Not run: no final run stored yet.")
	return b.String()
}

// failedLine lists the methods with runs stored as failed ("" when none).
func (lb *Leaderboard) failedLine() string {
	var parts []string
	for _, e := range lb.Entries {
		if e.Failed > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", e.Method.Label, e.Failed))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Left out: runs stored as failed — " + strings.Join(parts, ", ") + "."
}

// Markdown renders the leaderboard as a GitHub-flavoured Markdown table under its caption.
func (lb *Leaderboard) Markdown(lm LabelMap) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**\n\n", mdText(lb.Caption(lm)))
	h := lb.Header(lm)
	b.WriteString("|")
	for _, c := range h {
		b.WriteString(" " + mdText(c) + " |")
	}
	b.WriteString("\n|")
	for i := range h {
		if i == 1 || i == 2 || i == 3 || i == len(h)-1 {
			b.WriteString(":---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, row := range lb.Rows() {
		b.WriteString("|")
		for _, c := range row {
			b.WriteString(" " + mdText(c) + " |")
		}
		b.WriteString("\n")
	}
	if f := lb.failedLine(); f != "" {
		b.WriteString("\n" + mdText(f) + "\n")
	}
	return b.String()
}

// LaTeX renders the leaderboard as a booktabs table; label is used for \label{...}.
func (lb *Leaderboard) LaTeX(lm LabelMap, label string) string {
	var b strings.Builder
	b.WriteString("% Generated by `dmlkit tables` from stored results; do not edit.\n")
	b.WriteString("\\begin{table}[t]\n\\centering\n")
	fmt.Fprintf(&b, "\\caption{%s}\n", texEscape(lb.Caption(lm)))
	if label != "" {
		fmt.Fprintf(&b, "\\label{%s}\n", label)
	}
	h := lb.Header(lm)
	align := make([]byte, len(h))
	for i := range align {
		align[i] = 'r'
		if i == 1 || i == 2 || i == 3 || i == len(h)-1 {
			align[i] = 'l'
		}
	}
	fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", align)
	tex := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = texEscape(c)
			if c == "—" {
				out[i] = "--"
			}
		}
		return strings.Join(out, " & ") + " \\\\\n"
	}
	b.WriteString(tex(h) + "\\midrule\n")
	for _, row := range lb.Rows() {
		b.WriteString(tex(row))
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n")
	if f := lb.failedLine(); f != "" {
		b.WriteString("\\par\\smallskip\\footnotesize " + texEscape(f) + "\n")
	}
	b.WriteString("\\end{table}\n")
	return b.String()
}

// KendallTauB is Kendall's τ-b of the pairs (x[i], y[i]): (C − D) / √((n0 − n1)(n0 − n2)), with
// C and D the concordant and discordant pairs, n0 = n(n − 1)/2, n1 and n2 the pairs tied in x and
// in y (a pair tied in both counts in n1 and n2, in neither C nor D). NaN when every pair is tied
// in x or in y (or n < 2).
func KendallTauB(x, y []float64) float64 {
	if len(x) != len(y) {
		panic("experiments: KendallTauB: len(x) != len(y)")
	}
	var c, d, tx, ty float64
	n := len(x)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			switch {
			case dx == 0 && dy == 0:
				tx++
				ty++
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case (dx > 0) == (dy > 0):
				c++
			default:
				d++
			}
		}
	}
	n0 := float64(n*(n-1)) / 2
	den := math.Sqrt((n0 - tx) * (n0 - ty))
	if den == 0 {
		return math.NaN()
	}
	return (c - d) / den
}

// Ranks are the 1-based ranks of vals, best first (the largest first unless lower), ties given
// their average rank.
func Ranks(vals []float64, lower bool) []float64 {
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	better := func(a, b float64) bool {
		if lower {
			return a < b
		}
		return a > b
	}
	sort.SliceStable(idx, func(a, b int) bool { return better(vals[idx[a]], vals[idx[b]]) })
	out := make([]float64, len(vals))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && vals[idx[j+1]] == vals[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = r
		}
		i = j + 1
	}
	return out
}

// BootstrapTau is the percentile bootstrap of [KendallTauB] between two regimes' method means:
// a[i] and b[i] are method i's per-seed values in the two regimes. Each replicate resamples, for
// every method and regime independently, that method's values with replacement (as many as it
// has), takes their means and computes τ-b between the two regimes' means. It returns the 2.5 %
// and 97.5 % quantiles of the replicates (linear interpolation between order statistics, as
// numpy's default) and the number of replicates with a defined τ (a replicate whose means all tie
// in one regime has none and is left out). The generator is a PCG seeded with seed, drawing
// methods in order, regime a before b: the same inputs give the same interval.
func BootstrapTau(a, b [][]float64, reps int, seed uint64) (lo, hi float64, used int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ma, mb := make([]float64, len(a)), make([]float64, len(b))
	resampled := func(v []float64) float64 {
		var s float64
		for range v {
			s += v[rng.IntN(len(v))]
		}
		return s / float64(len(v))
	}
	var taus []float64
	for range reps {
		for i := range a {
			ma[i] = resampled(a[i])
			mb[i] = resampled(b[i])
		}
		if t := KendallTauB(ma, mb); !math.IsNaN(t) {
			taus = append(taus, t)
		}
	}
	if len(taus) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	sort.Float64s(taus)
	return quantile(taus, 0.025), quantile(taus, 0.975), len(taus)
}

// quantile is the p-quantile of sorted xs by linear interpolation between order statistics
// (h = (n − 1) p).
func quantile(xs []float64, p float64) float64 {
	h := float64(len(xs)-1) * p
	i := int(math.Floor(h))
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

// MinAgreementMethods is the number of methods both regimes must have run for the rank
// agreement to be computed and drawn.
const MinAgreementMethods = 3

// RankAgreement compares the rankings of two regimes over the methods both have ranked.
type RankAgreement struct {
	Metric  string
	Regimes [2]LeaderboardRegime
	Methods []LeaderboardMethod // the common methods, in the spec's order
	Means   [2][]float64        // per regime, per common method: the first metric's mean
	Ranks   [2][]float64        // per regime: rank among the common methods (1 best; ties averaged)
	Tau     float64             // Kendall's τ-b of the means (NaN with fewer than MinAgreementMethods)
	Lo, Hi  float64             // its 95 % percentile bootstrap interval
	B       int                 // replicates asked for
	Used    int                 // replicates with a defined τ
	Seed    uint64
}

// Computed reports whether there are enough common methods for τ.
func (r *RankAgreement) Computed() bool { return len(r.Methods) >= MinAgreementMethods }

// AgreementOf computes the rank agreement of two leaderboards (of the first metric) over the
// methods ranked in both.
func AgreementOf(a, b *Leaderboard) *RankAgreement {
	l := a.Spec
	m := l.Metrics[0]
	r := &RankAgreement{Metric: m, Regimes: [2]LeaderboardRegime{a.Regime, b.Regime}, Tau: math.NaN(), Lo: math.NaN(), Hi: math.NaN(),
		B: l.bootstrap(), Seed: BootstrapSeed}
	byID := func(lb *Leaderboard) map[string]LeaderboardEntry {
		out := map[string]LeaderboardEntry{}
		for _, e := range lb.Entries {
			if e.Rank > 0 {
				out[e.Method.ID] = e
			}
		}
		return out
	}
	ea, eb := byID(a), byID(b)
	var va, vb [][]float64
	for _, meth := range l.Methods {
		x, okx := ea[meth.ID]
		y, oky := eb[meth.ID]
		if !okx || !oky {
			continue
		}
		r.Methods = append(r.Methods, meth)
		r.Means[0] = append(r.Means[0], x.Stats[m].Mean)
		r.Means[1] = append(r.Means[1], y.Stats[m].Mean)
		va, vb = append(va, x.Values[m]), append(vb, y.Values[m])
	}
	r.Ranks[0], r.Ranks[1] = Ranks(r.Means[0], l.lower(m)), Ranks(r.Means[1], l.lower(m))
	if !r.Computed() {
		return r
	}
	r.Tau = KendallTauB(r.Means[0], r.Means[1])
	r.Lo, r.Hi, r.Used = BootstrapTau(va, vb, r.B, r.Seed)
	return r
}

// TauText is "τ-b = 0.52 [0.31, 0.70]" (2 decimals), or why there is none.
func (r *RankAgreement) TauText() string {
	if !r.Computed() {
		return fmt.Sprintf("not computed: %d methods ranked in both regimes, fewer than %d", len(r.Methods), MinAgreementMethods)
	}
	s := "τ-b = " + fmtSigned(r.Tau)
	if !math.IsNaN(r.Lo) {
		s += " [" + fmtSigned(r.Lo) + ", " + fmtSigned(r.Hi) + "]"
	}
	return s
}

// fmtSigned writes a correlation at 2 decimals with a true minus sign ("−0.40").
func fmtSigned(v float64) string {
	s := fmtNum(v, 2)
	if s == "-0.00" {
		s = "0.00"
	}
	return strings.Replace(s, "-", "−", 1)
}

// Markdown is the rank agreement table: the common methods with their rank in each regime, τ-b,
// its interval and B.
func (r *RankAgreement) Markdown(lm LabelMap) string {
	var b strings.Builder
	m := lm.Key(r.Metric)
	fmt.Fprintf(&b, "**Rank agreement between the regimes — %s and %s: the methods ranked in both, by mean test %s over seeds (1 best, ties share the average rank). Kendall's %s; 95 %% percentile bootstrap interval from B = %d replicates, each resampling every method's seeds with replacement in each regime independently (generator seed %d).**\n\n",
		mdText(r.Regimes[0].Label), mdText(r.Regimes[1].Label), mdText(m), mdText(r.TauText()), r.B, r.Seed)
	if r.Computed() && r.Used < r.B {
		fmt.Fprintf(&b, "%d of the %d replicates left out: their means tied throughout one regime (τ undefined).\n\n", r.B-r.Used, r.B)
	}
	fmt.Fprintf(&b, "| method | rank: %s | rank: %s |\n|:---|---:|---:|\n", mdText(r.Regimes[0].Label), mdText(r.Regimes[1].Label))
	for i, meth := range r.Methods {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdText(meth.Label), rankText(r.Ranks[0][i]), rankText(r.Ranks[1][i]))
	}
	if len(r.Methods) == 0 {
		b.WriteString("\n_No method is ranked in both regimes yet._\n")
	}
	return b.String()
}

func rankText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Agreement builds the leaderboards of the spec's two regimes from records (all scales) and their
// rank agreement; nil when the spec has fewer than two regimes.
func Agreement(s *Spec, records []Record) (*RankAgreement, error) {
	l := s.Leaderboard
	if l == nil || len(l.Regimes) < 2 {
		return nil, nil
	}
	a, err := BuildLeaderboard(s, l.Regimes[0].Scale, records)
	if err != nil {
		return nil, err
	}
	b, err := BuildLeaderboard(s, l.Regimes[1].Scale, records)
	if err != nil {
		return nil, err
	}
	return AgreementOf(a, b), nil
}

// RenderLeaderboard writes the leaderboard of scale to outDir/leaderboard.md and .tex and, when
// scale is one of the spec's regimes and the spec has two, the rank agreement to
// agreeDir/rank_agreement.md (records of both regimes' scales are read from records). It returns
// the leaderboard and the files written.
func RenderLeaderboard(w atomicfile.Writer, s *Spec, records []Record, scale, outDir, agreeDir string) (*Leaderboard, []string, error) {
	lb, err := BuildLeaderboard(s, scale, records)
	if err != nil {
		return nil, nil, err
	}
	md := filepath.Join(outDir, "leaderboard.md")
	tex := filepath.Join(outDir, "leaderboard.tex")
	if err := writeOut(w, md, []byte(lb.Markdown(s.Labels))); err != nil {
		return nil, nil, err
	}
	if err := writeOut(w, tex, []byte(lb.LaTeX(s.Labels, "tab:"+s.Paper+"-leaderboard-"+scale))); err != nil {
		return nil, nil, err
	}
	files := []string{md, tex}
	if !slices.ContainsFunc(s.Leaderboard.Regimes, func(r LeaderboardRegime) bool { return r.Scale == scale }) {
		return lb, files, nil
	}
	ra, err := Agreement(s, records)
	if err != nil || ra == nil {
		return lb, files, err
	}
	p := filepath.Join(agreeDir, "rank_agreement.md")
	if err := writeOut(w, p, []byte(ra.Markdown(s.Labels))); err != nil {
		return nil, nil, err
	}
	return lb, append(files, p), nil
}

// LeaderboardSummary is a short Markdown summary for a README block (<!-- leaderboard -->): per
// regime the top three methods with their mean and 95 % interval of the first metric, then the
// rank agreement of the two regimes. recordsByScale maps each regime's scale to its records (a
// scale missing: no runs).
func LeaderboardSummary(s *Spec, recordsByScale map[string][]Record) (string, error) {
	l := s.Leaderboard
	if l == nil {
		return "", fmt.Errorf("experiments: %s: no leaderboard section", s.name())
	}
	m := l.Metrics[0]
	f := l.factor(m)
	in := ""
	switch u := unit(f); u {
	case "":
	case "%":
		in = " in %"
	default:
		in = " " + u
	}
	var b strings.Builder
	var boards []*Leaderboard
	for _, rg := range l.Regimes {
		lb, err := BuildLeaderboard(s, rg.Scale, recordsByScale[rg.Scale])
		if err != nil {
			return "", err
		}
		boards = append(boards, lb)
		ranked := lb.Ranked()
		run := 0
		for _, e := range lb.Entries {
			if e.Run() {
				run++
			}
		}
		fmt.Fprintf(&b, "- **%s** (%d of %d methods run): ", mdText(rg.Label), run, len(lb.Entries))
		if len(ranked) == 0 {
			b.WriteString("no results yet.\n")
			continue
		}
		var top []string
		for _, e := range ranked[:min(3, len(ranked))] {
			t := fmt.Sprintf("%d. %s %s", e.Rank, mdText(e.Method.Label), intervalText(e.Stats[m], f, l.digits()))
			if e.Trained == TrainedNo {
				t += " (did not train)"
			}
			top = append(top, t)
		}
		fmt.Fprintf(&b, "%s (test %s%s, mean [95 %% CI] over seeds).\n", strings.Join(top, " · "), mdText(s.Labels.Key(m)), in)
	}
	if len(boards) == 2 {
		ra := AgreementOf(boards[0], boards[1])
		if ra.Computed() {
			fmt.Fprintf(&b, "- Rank agreement of the two regimes over %d methods: Kendall's %s (95 %% bootstrap over seeds, B = %d).\n", len(ra.Methods), ra.TauText(), ra.B)
		} else {
			fmt.Fprintf(&b, "- Rank agreement of the two regimes: %s.\n", ra.TauText())
		}
	}
	return b.String(), nil
}
