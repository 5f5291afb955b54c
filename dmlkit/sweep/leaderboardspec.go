package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultMinTrain is the default training floor: an arm whose training R@1 is below this fraction
// of the best comparable arm's did not train.
const DefaultMinTrain = 0.5

// TrainMetric is the training-split metric the training rule reads (eval.train: R@1 on a fixed
// subset of the training classes).
const TrainMetric = "train/R@1"

// The leaderboard (issue 31, "the cross-paper reality check"): many DML losses trained under one
// protocol, each a method of the sweep told apart by one config key (its informational "name"),
// ranked per regime (a committed scale: from scratch, pretrained) by the mean over seeds of a
// metric, with 95 % t-intervals, the training rule of the verdicts, an OPIS–R@1 Pareto view and
// the agreement of the regimes' rankings, pair by pair (Kendall's τ-b with a bootstrap over seeds).
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
//	  floor:                           # the zero-shot floor: arms of no training (not ranked, not methods)
//	    - {id: floor-features, label: "Frozen features as they come"}   # id: the arm key's value
//	  regimes:                         # committed scales, in order (one or more; each pair's rank
//	                                   # agreement is computed, the first two's first)
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
	// Floor are the zero-shot floor's arms (issue 46): what the regime's network gives with no
	// training (a frozen backbone's features, the untrained network), each an id of the arm key
	// and a label (the other fields unused). They are not methods: a regime's leaderboard shows
	// each one it has runs of as a floor row and a line, not ranked, and flags the methods not
	// above the best of them; claims never select them.
	Floor   []LeaderboardMethod `yaml:"floor"`
	Regimes []LeaderboardRegime `yaml:"regimes"` // committed scales, one or more
	Where   map[string]any      `yaml:"where"`   // extra filter on final runs
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

// ArmOrDefault is the config key naming a method.
func (l *LeaderboardSpec) ArmOrDefault() string {
	if l.Arm == "" {
		return "name"
	}
	return l.Arm
}

func (l *LeaderboardSpec) Factor(metric string) float64 {
	if f, ok := l.Factors[metric]; ok && f != 0 {
		return f
	}
	return 1
}

// TrainFactor is the display factor of the training R@1: its own, else R@1's, else 1.
func (l *LeaderboardSpec) TrainFactor() float64 {
	if f, ok := l.Factors[TrainMetric]; ok && f > 0 {
		return f
	}
	return l.Factor("R@1")
}

func (l *LeaderboardSpec) Lower(metric string) bool { return slices.Contains(l.LowerBetter, metric) }

func (l *LeaderboardSpec) DigitsOrDefault() int {
	if l.Digits != nil {
		return *l.Digits
	}
	return 1
}

func (l *LeaderboardSpec) MinTrainOrDefault() float64 {
	if l.MinTrain != nil {
		return *l.MinTrain
	}
	return DefaultMinTrain
}

func (l *LeaderboardSpec) BootstrapOrDefault() int {
	if l.Bootstrap > 0 {
		return l.Bootstrap
	}
	return DefaultBootstrap
}

// PapersOrDefault returns the seed papers' labels and their order (the spec's, sorted by id; else the
// defaults in their order).
func (l *LeaderboardSpec) PapersOrDefault() (map[string]string, []string) {
	if len(l.Papers) > 0 {
		return l.Papers, SortedKeys(l.Papers)
	}
	return DefaultSeedPapers, seedPaperOrder
}

// RegimeOf is the regime of scale: the spec's, or one named after the scale (a smoke run).
func (l *LeaderboardSpec) RegimeOf(scale string) LeaderboardRegime {
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
	l.Where = AsMap(Normalize(l.Where))
	if len(l.Metrics) == 0 {
		return bad("metrics", "missing (the first one ranks)")
	}
	for i, m := range l.Metrics {
		if m == "" || slices.Contains(l.Metrics[:i], m) {
			return bad(fmt.Sprintf("metrics[%d]", i), "%q: empty or listed twice", m)
		}
	}
	for _, m := range SortedKeys(l.Factors) {
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
	for _, k := range SortedKeys(l.Papers) {
		if !paperName.MatchString(k) || strings.TrimSpace(l.Papers[k]) == "" {
			return bad("papers."+k, "want a paper id (lower-case) with a label")
		}
	}
	papers, _ := l.PapersOrDefault()
	if len(l.Regimes) == 0 {
		return bad("regimes", "missing (want one or more committed scales; the rank agreement compares each pair)")
	}
	for i, r := range l.Regimes {
		if _, ok := s.Scales[r.Scale]; !ok {
			return bad(fmt.Sprintf("regimes[%d].scale", i), "unknown scale %q (defined: %s)", r.Scale, strings.Join(s.ScaleNames(), ", "))
		}
		if strings.TrimSpace(r.Label) == "" {
			return bad(fmt.Sprintf("regimes[%d].label", i), "missing (the regime in words)")
		}
		if slices.ContainsFunc(l.Regimes[:i], func(o LeaderboardRegime) bool { return o.Scale == r.Scale }) {
			return bad(fmt.Sprintf("regimes[%d].scale", i), "%q listed twice", r.Scale)
		}
	}
	if len(l.Methods) == 0 {
		return bad("methods", "missing (the field, in display order)")
	}
	swept := s.armValues(l.ArmOrDefault())
	for i, m := range l.Methods {
		f := fmt.Sprintf("methods[%d]", i)
		if m.ID == "" {
			return bad(f+".id", "missing")
		}
		if slices.ContainsFunc(l.Methods[:i], func(o LeaderboardMethod) bool { return o.ID == m.ID }) {
			return bad(f+".id", "%q listed twice", m.ID)
		}
		if !swept[m.ID] {
			return bad(f+".id", "%q does not occur in the sweep as a value of %s (values: %s)", m.ID, l.ArmOrDefault(), strings.Join(SortedKeys(swept), ", "))
		}
		if strings.TrimSpace(m.Label) == "" {
			return bad(f+".label", "missing (%s's name in tables and figures)", m.ID)
		}
		for j, p := range m.Seeds {
			if _, ok := papers[p]; !ok {
				return bad(fmt.Sprintf("%s.seeds[%d]", f, j), "unknown seed paper %q (known: %s)", p, strings.Join(SortedKeys(papers), ", "))
			}
		}
		if _, ok := papers[m.Origin]; m.Origin != "" && !ok {
			return bad(f+".origin", "unknown seed paper %q (known: %s)", m.Origin, strings.Join(SortedKeys(papers), ", "))
		}
	}
	for i, m := range l.Floor {
		f := fmt.Sprintf("floor[%d]", i)
		switch {
		case m.ID == "":
			return bad(f+".id", "missing")
		case slices.ContainsFunc(l.Floor[:i], func(o LeaderboardMethod) bool { return o.ID == m.ID }):
			return bad(f+".id", "%q listed twice", m.ID)
		case slices.ContainsFunc(l.Methods, func(o LeaderboardMethod) bool { return o.ID == m.ID }):
			return bad(f+".id", "%q is also one of methods: a floor arm is not ranked", m.ID)
		case !swept[m.ID]:
			return bad(f+".id", "%q does not occur in the sweep as a value of %s (values: %s)", m.ID, l.ArmOrDefault(), strings.Join(SortedKeys(swept), ", "))
		case strings.TrimSpace(m.Label) == "":
			return bad(f+".label", "missing (%s's name in tables and figures)", m.ID)
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

// Unit is the display unit of a factor: "%" for 100, "× f" otherwise, "" for 1.
func Unit(f float64) string {
	switch f {
	case 1:
		return ""
	case 100:
		return "%"
	}
	return "× " + strconv.FormatFloat(f, 'f', -1, 64)
}

// Group is the method's colour group in figures: the label of the seed paper proposing it, or
// [BaselineGroup].
func (l *LeaderboardSpec) Group(m LeaderboardMethod) string {
	if m.Origin == "" {
		return BaselineGroup
	}
	labels, _ := l.PapersOrDefault()
	return labels[m.Origin] + " (seed paper's method)"
}

// Groups lists the colour groups in legend order: the seed papers', then the baselines.
func (l *LeaderboardSpec) Groups() []string {
	labels, order := l.PapersOrDefault()
	var out []string
	for _, p := range order {
		out = append(out, labels[p]+" (seed paper's method)")
	}
	return append(out, BaselineGroup)
}
