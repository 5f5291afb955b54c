package judge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"gopkg.in/yaml.v3"
)

// ClaimSet is a paper's claims as data: reproductions/<paper>/claims.yaml, written before any run
// (see ../shared/notes/reproducing.md §1). Each claim names the paper's words and where they are,
// its kind, the arms it compares (selectors on the stored records), the metric and the claimed
// direction, and the small-scale stand-in it is tested on. [ClaimSet.Evaluate] turns it into
// verdicts from per-seed paired differences.
//
//	paper: tcm
//	scale: small                       # records of this scale (default: the scale asked for)
//	where: {data.name: omniglot}       # applied to every claim (a claim's where adds to it)
//	claims:
//	  - id: t2-opis-${loss}
//	    for: [{loss: smoothap, name: Smooth-AP}, {loss: rsk, name: RS@k}]
//	    paper: "TCM lowers OPIS (${name})"
//	    source: Table 2
//	    kind: better
//	    metric: OPIS
//	    direction: lower                 # the treatment's OPIS is claimed lower than the base's
//	    factor: 1000                     # effects are printed ×1000 …
//	    unit: "×1e-3"                    # … in this unit
//	    base: {label: "${name}", where: {loss.set.expr: "${loss}"}}
//	    treatment: {label: "${name} + TCM", where: {loss.set.expr: "${loss}+tcm"}}
//	    stand_in: "Omniglot, cnn-s, batch 128"
//
// "for" expands one entry into a claim per element, substituting ${var} in every string of the
// entry (keys included); the expanded ids must be unique.
//
// What a verdict holds equal and how it checks the arms trained (see comparability.go):
//
//	budget: epochs        # steps | epochs | images the arms must share (default epochs; a claim may override)
//	min_train: 0.5        # an arm whose train R@1 is below this fraction of the best arm's did not train
//	claims:
//	  - id: h13-gamma-free
//	    deliberate: "the claim is that γ needs no tuning: γ = 0.5 runs at the rate tuned for γ = 1"
//	    forms:            # the paper's text and the authors' code differ: one verdict per form
//	      - {label: "paper text", where: {loss.set.avg_nonzero: null}}
//	      - {label: "authors' code", where: {loss.set.avg_nonzero: true}}
type ClaimSet struct {
	Paper    string         `yaml:"paper"`
	Scale    string         `yaml:"scale"`
	Where    map[string]any `yaml:"where"`
	Budget   string         `yaml:"budget"`    // default budget unit of the claims (default "epochs")
	MinTrain *float64       `yaml:"min_train"` // default training floor (default [DefaultMinTrain])
	// Weak lists baselines that stay far below their known level after an honest effort: every
	// claim with an arm whose records all match one's where is marked "weak baseline" in its row.
	Weak []WeakBaseline `yaml:"weak"`
	// Central lists the paper's central claims: the ones the cross-paper front page states and
	// draws ([FindingsMarkdown], [CentralEffects]).
	Central []CentralClaim `yaml:"central"`
	Claims  []ClaimSpec    `yaml:"-"` // after "for" expansion
	Path    string         `yaml:"-"` // the file it was read from
}

// Claim kinds.
const (
	KindBetter      = "better"      // treatment beats base on the metric, in Direction
	KindEquivalent  = "equivalent"  // |treatment − base| < Delta
	KindTrend       = "trend"       // the metric's least-squares slope over Sweep has the sign of Direction
	KindInteraction = "interaction" // (treatment − base) under Conditions[0] minus the same under Conditions[1] has the sign of Direction
	KindArgmax      = "argmax"      // Sweep.Best is the best value of Sweep.Values (best = max for Direction higher), not at the grid's edge
	KindRank        = "rank"        // Order lists arms from best to worst
)

// ClaimKinds lists the kinds a claim may have.
var ClaimKinds = []string{KindBetter, KindEquivalent, KindTrend, KindInteraction, KindArgmax, KindRank}

// ClaimSpec is one claim of a [ClaimSet]. Which fields a kind reads:
//
//	better       base, treatment, direction (the sign of treatment − base that is claimed)
//	equivalent   base, treatment, delta (in the metric's units before factor)
//	trend        sweep {key, values, log}, direction (higher: increasing); each seed's slope of the
//	             metric against the value (or its log10 with log: true) is the paired quantity
//	interaction  base, treatment, conditions [X, Y], direction: the sign claimed for
//	             (treatment − base | X) − (treatment − base | Y)
//	argmax       sweep {key, values, best}, direction (higher: the best value is the largest metric);
//	             best must not be the first or last value
//	rank         order [arm, …] from best to worst, direction (higher: larger metric is better)
type ClaimSpec struct {
	ID        string         `yaml:"id"`
	Paper     string         `yaml:"paper"`  // the paper's words
	Source    string         `yaml:"source"` // where in the paper: "Table 2", "Fig. 6", "§5.3"
	Kind      string         `yaml:"kind"`
	Metric    string         `yaml:"metric"`
	Direction string         `yaml:"direction"` // "higher" or "lower"
	Delta     float64        `yaml:"delta"`     // equivalent: the margin δ, stated before running
	Factor    float64        `yaml:"factor"`    // values are printed ×Factor (default 1)
	Unit      string         `yaml:"unit"`      // printed after effects, e.g. "points"
	Digits    *int           `yaml:"digits"`    // decimals printed (default 2)
	Scale     string         `yaml:"scale"`     // overrides the set's scale
	Where     map[string]any `yaml:"where"`     // added to the set's where
	StandIn   string         `yaml:"stand_in"`  // the small-scale stand-in, in words
	Note      string         `yaml:"note"`      // optional remark printed with the verdict
	// Twin names the claim this one re-tests in another regime (e.g. a pretrained-scale claim's
	// from-scratch original): the two verdicts are set side by side ([RegimePairs]).
	Twin       string      `yaml:"twin"`
	Base       *Arm        `yaml:"base"`
	Treatment  *Arm        `yaml:"treatment"`
	Conditions []Arm       `yaml:"conditions"`
	Order      []Arm       `yaml:"order"`
	Sweep      *ClaimSweep `yaml:"sweep"`
	// Budget is what the arms must share: steps, epochs or images (default: the set's).
	Budget string `yaml:"budget"`
	// MinTrain is the training floor as a fraction of the best arm's train R@1 (default: the
	// set's); 0 turns the training rule off (say why in Note).
	MinTrain *float64 `yaml:"min_train"`
	// Deliberate, when set, is the reason the arms may differ in tuning (e.g. a "needs no tuning"
	// claim that runs every arm at one selection on purpose).
	Deliberate string `yaml:"deliberate"`
	// Ablation names the arm of a better claim that is an ablation of the paper's method, "base"
	// or "treatment"; the other arm is then the method. By default the treatment is the method
	// (the training rule's "the method did not train here", [CauseMethodUntrained]).
	Ablation string `yaml:"ablation"`
	// FailureIsEffect, when set, says why the claim predicts that its ablation breaks the method
	// (a sentence, e.g. the paper's Table 5 showing the ablated loss far below): where the
	// ablated arm ([ClaimSpec.Ablation]) fails the training floor and the method trains, that
	// failure is the claimed effect in its strongest form and the claim is held
	// ([CauseFailureEffect]) unless the interval contradicts it.
	FailureIsEffect string `yaml:"failure_is_effect"`
	// Forms, when set, evaluates the claim once per form (the paper's text and the authors' code
	// where they differ); the first form's verdict is the claim's.
	Forms []ClaimForm `yaml:"forms"`
}

// WeakBaseline is a baseline below its level (see [ClaimSet.Weak]).
type WeakBaseline struct {
	Where  map[string]any `yaml:"where"`
	Reason string         `yaml:"reason"` // what it reaches against what, e.g. "SoftTriple 37 % R@1, the other losses 62-72 %"
}

// ClaimForm is one form of a claim: where adds to every arm's where, base and treatment to those
// arms' only.
type ClaimForm struct {
	Label     string         `yaml:"label"`
	Where     map[string]any `yaml:"where"`
	Base      map[string]any `yaml:"base"`
	Treatment map[string]any `yaml:"treatment"`
}

// Arm selects the records of one side of a comparison: those matching Where (as [Select]) on top
// of the claim's and the set's where. Each seed must have at most one record in an arm.
//
// Metric, in a better or equivalent claim only, reads another metric than the claim's for this
// arm: both arms may then select the same runs, and the paired difference compares two metrics of
// each run (e.g. a count early and late in training: "steplog/hard_triplets/first" against
// ".../last").
type Arm struct {
	Label  string         `yaml:"label"`
	Where  map[string]any `yaml:"where"`
	Metric string         `yaml:"metric"`
}

// ClaimSweep is the swept configuration key of a trend or argmax claim.
type ClaimSweep struct {
	Key    string `yaml:"key"`
	Values []any  `yaml:"values"`
	Best   any    `yaml:"best"`  // argmax: the value claimed best
	Log    bool   `yaml:"log"`   // trend: slope against log10(value) (geometric sweeps)
	Label  string `yaml:"label"` // human name of the key, e.g. "γ"
}

// LoadClaims reads and checks a claims file; errors name the file and the field
// ("claims[3].base.where").
func LoadClaims(path string) (*ClaimSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	cs, err := ParseClaims(b, path)
	if err != nil {
		return nil, err
	}
	cs.Path = path
	return cs, nil
}

// ParseClaims decodes a claims file from YAML; name is used in error messages.
func ParseClaims(data []byte, name string) (*ClaimSet, error) {
	var raw struct {
		Paper    string           `yaml:"paper"`
		Scale    string           `yaml:"scale"`
		Where    map[string]any   `yaml:"where"`
		Budget   string           `yaml:"budget"`
		MinTrain *float64         `yaml:"min_train"`
		Weak     []WeakBaseline   `yaml:"weak"`
		Central  []CentralClaim   `yaml:"central"`
		Claims   []map[string]any `yaml:"claims"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("experiments: %s: empty claims file", name)
		}
		return nil, fmt.Errorf("experiments: %s: %w", name, err)
	}
	cs := &ClaimSet{Paper: raw.Paper, Scale: raw.Scale, Where: sweep.AsMap(sweep.Normalize(raw.Where)), Budget: raw.Budget, MinTrain: raw.MinTrain, Weak: raw.Weak, Central: raw.Central}
	for i := range cs.Weak {
		w := &cs.Weak[i]
		w.Where = sweep.AsMap(sweep.Normalize(w.Where))
		if len(w.Where) == 0 || strings.TrimSpace(w.Reason) == "" {
			return nil, fmt.Errorf("experiments: %s: field \"weak[%d]\": want a where and a reason (what the baseline reaches against what)", name, i)
		}
	}
	if cs.Paper == "" {
		return nil, fmt.Errorf("experiments: %s: field \"paper\": missing", name)
	}
	if cs.Budget != "" && !slices.Contains(BudgetUnits, cs.Budget) {
		return nil, fmt.Errorf("experiments: %s: field \"budget\": %q is not one of %s", name, cs.Budget, strings.Join(BudgetUnits, ", "))
	}
	if m := cs.MinTrain; m != nil && !(*m >= 0 && *m <= 1) {
		return nil, fmt.Errorf("experiments: %s: field \"min_train\": %v: want a fraction in [0, 1]", name, *m)
	}
	if len(raw.Claims) == 0 {
		return nil, fmt.Errorf("experiments: %s: field \"claims\": missing", name)
	}
	ids := map[string]string{}
	for i, entry := range raw.Claims {
		expanded, err := expandClaim(entry)
		if err != nil {
			return nil, fmt.Errorf("experiments: %s: claims[%d]: %w", name, i, err)
		}
		for j, m := range expanded {
			where := fmt.Sprintf("claims[%d]", i)
			if len(expanded) > 1 {
				where = fmt.Sprintf("claims[%d] (for[%d])", i, j)
			}
			b, err := yaml.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("experiments: %s: %s: %w", name, where, err)
			}
			var c ClaimSpec
			d := yaml.NewDecoder(bytes.NewReader(b))
			d.KnownFields(true)
			if err := d.Decode(&c); err != nil {
				return nil, fmt.Errorf("experiments: %s: %s: %w", name, where, err)
			}
			c.Normalize()
			if err := c.Check(); err != nil {
				return nil, fmt.Errorf("experiments: %s: %s (id %q): %w", name, where, c.ID, err)
			}
			if prev, dup := ids[c.ID]; dup {
				return nil, fmt.Errorf("experiments: %s: %s: field \"id\": %q is also the id of %s", name, where, c.ID, prev)
			}
			ids[c.ID] = where
			cs.Claims = append(cs.Claims, c)
		}
	}
	return cs, nil
}

var claimVarRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandClaim expands an entry's "for" list: one copy per element with ${var} substituted in
// every string (map keys included). Without "for" the entry is returned as is, and any ${…} in it
// is an error.
func expandClaim(entry map[string]any) ([]map[string]any, error) {
	forV, has := entry["for"]
	rest := map[string]any{}
	for k, v := range entry {
		if k != "for" {
			rest[k] = v
		}
	}
	var bindings []map[string]any
	if has {
		list, ok := forV.([]any)
		if !ok || len(list) == 0 {
			return nil, errors.New(`field "for": want a non-empty list of {var: value} maps`)
		}
		for i, el := range list {
			m, ok := el.(map[string]any)
			if !ok || len(m) == 0 {
				return nil, fmt.Errorf("field \"for[%d]\": want a {var: value} map", i)
			}
			b := map[string]any{}
			for k, v := range m {
				b[k] = sweep.Normalize(v)
			}
			bindings = append(bindings, b)
		}
	} else {
		bindings = []map[string]any{nil}
	}
	var out []map[string]any
	for i, b := range bindings {
		var missing string
		sub := func(s string) any {
			// A string that is exactly "${var}" takes the value with its type (a number stays a
			// number, so it matches numeric configuration values); elsewhere values are spliced as text.
			if m := claimVarRe.FindStringSubmatch(s); m != nil && m[0] == s {
				if v, ok := b[m[1]]; ok {
					return v
				}
			}
			return claimVarRe.ReplaceAllStringFunc(s, func(m string) string {
				name := claimVarRe.FindStringSubmatch(m)[1]
				v, ok := b[name]
				if !ok && missing == "" {
					missing = name
				}
				return sweep.FormatValue(v)
			})
		}
		m := substitute(rest, sub).(map[string]any)
		if missing != "" {
			if has {
				return nil, fmt.Errorf("field \"for[%d]\": no value for ${%s}", i, missing)
			}
			return nil, fmt.Errorf("field \"id\": ${%s} used without a \"for\" list", missing)
		}
		out = append(out, m)
	}
	return out, nil
}

func substitute(v any, sub func(string) any) any {
	switch x := v.(type) {
	case string:
		return sub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[sweep.FormatValue(sub(k))] = substitute(e, sub)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substitute(e, sub)
		}
		return out
	}
	return v
}

func (c *ClaimSpec) Normalize() {
	c.Where = sweep.AsMap(sweep.Normalize(c.Where))
	for i := range c.Forms {
		f := &c.Forms[i]
		f.Where, f.Base, f.Treatment = sweep.AsMap(sweep.Normalize(f.Where)), sweep.AsMap(sweep.Normalize(f.Base)), sweep.AsMap(sweep.Normalize(f.Treatment))
	}
	for _, a := range c.arms() {
		a.Where = sweep.AsMap(sweep.Normalize(a.Where))
	}
	if c.Sweep != nil {
		for i, v := range c.Sweep.Values {
			c.Sweep.Values[i] = sweep.Normalize(v)
		}
		c.Sweep.Best = sweep.Normalize(c.Sweep.Best)
	}
}

// arms lists pointers to every arm of the claim.
func (c *ClaimSpec) arms() []*Arm {
	var out []*Arm
	if c.Base != nil {
		out = append(out, c.Base)
	}
	if c.Treatment != nil {
		out = append(out, c.Treatment)
	}
	for i := range c.Conditions {
		out = append(out, &c.Conditions[i])
	}
	for i := range c.Order {
		out = append(out, &c.Order[i])
	}
	return out
}

// sign is +1 for direction "higher" and −1 for "lower".
func (c *ClaimSpec) sign() float64 {
	if c.Direction == "lower" {
		return -1
	}
	return 1
}

func (c *ClaimSpec) factor() float64 {
	if c.Factor == 0 {
		return 1
	}
	return c.Factor
}

func (c *ClaimSpec) digits() int {
	if c.Digits == nil {
		return 2
	}
	return *c.Digits
}

func (c *ClaimSpec) Check() error {
	bad := func(field, format string, a ...any) error {
		return &sweep.FieldError{Path: field, Msg: fmt.Sprintf(format, a...)}
	}
	if c.ID == "" || strings.ContainsAny(c.ID, " \t|") {
		return bad("id", "%q: want a non-empty id without spaces or |", c.ID)
	}
	if strings.TrimSpace(c.Paper) == "" {
		return bad("paper", "missing (quote the paper's claim)")
	}
	if c.Source == "" {
		return bad("source", "missing (where the paper says it: table, figure or section)")
	}
	if !slices.Contains(ClaimKinds, c.Kind) {
		return bad("kind", "%q is not one of %s", c.Kind, strings.Join(ClaimKinds, ", "))
	}
	if c.Metric == "" {
		return bad("metric", "missing")
	}
	if c.Kind == KindEquivalent {
		if c.Direction != "" {
			return bad("direction", "an equivalent claim has no direction")
		}
		if !(c.Delta > 0) || math.IsInf(c.Delta, 0) {
			return bad("delta", "%v: want δ > 0, stated before running", c.Delta)
		}
	} else {
		if c.Direction != "higher" && c.Direction != "lower" {
			return bad("direction", "%q: want higher or lower", c.Direction)
		}
		if c.Delta != 0 {
			return bad("delta", "only an equivalent claim has a δ")
		}
	}
	if c.Factor < 0 || math.IsNaN(c.Factor) || math.IsInf(c.Factor, 0) {
		return bad("factor", "%v: want > 0", c.Factor)
	}
	if c.Digits != nil && (*c.Digits < 0 || *c.Digits > 10) {
		return bad("digits", "%d out of range 0..10", *c.Digits)
	}
	if c.Budget != "" && !slices.Contains(BudgetUnits, c.Budget) {
		return bad("budget", "%q is not one of %s", c.Budget, strings.Join(BudgetUnits, ", "))
	}
	if m := c.MinTrain; m != nil && !(*m >= 0 && *m <= 1) {
		return bad("min_train", "%v: want a fraction in [0, 1]", *m)
	}
	if c.Deliberate != "" && !isSentence(c.Deliberate) {
		return bad("deliberate", "%q: give the reason as a sentence (why the arms may differ in tuning)", c.Deliberate)
	}
	if c.FailureIsEffect != "" && !isSentence(c.FailureIsEffect) {
		return bad("failure_is_effect", "%q: give the reason as a sentence (why the ablation is predicted to break the method)", c.FailureIsEffect)
	}
	if c.Ablation != "" && (c.Kind != KindBetter || c.Ablation != "base" && c.Ablation != "treatment") {
		return bad("ablation", "%q: name the ablated arm of a better claim, base or treatment", c.Ablation)
	}
	if c.FailureIsEffect != "" && c.Ablation == "" {
		return bad("failure_is_effect", "set ablation (base or treatment): which arm's failure is the effect")
	}
	if len(c.Forms) == 1 {
		return bad("forms", "one form: a claim has forms only where the paper's text and the authors' code differ (give both)")
	}
	formLabels := map[string]bool{}
	for i, f := range c.Forms {
		field := fmt.Sprintf("forms[%d]", i)
		if f.Label == "" {
			return bad(field+".label", "missing (e.g. \"paper text\", \"authors' code\")")
		}
		if formLabels[f.Label] {
			return bad(field+".label", "%q used twice", f.Label)
		}
		formLabels[f.Label] = true
		if len(f.Where)+len(f.Base)+len(f.Treatment) == 0 {
			return bad(field, "selects nothing of its own: give where, base or treatment")
		}
		for j, g := range c.Forms[:i] {
			if reflect.DeepEqual(f.Where, g.Where) && reflect.DeepEqual(f.Base, g.Base) && reflect.DeepEqual(f.Treatment, g.Treatment) {
				return bad(field, "selects what forms[%d] (%q) selects: two forms must differ (the paper's text and the authors' code)", j, g.Label)
			}
		}
		if (len(f.Base) > 0 || len(f.Treatment) > 0) && (c.Base == nil || c.Treatment == nil) {
			return bad(field, "base / treatment given, but kind %s has no base and treatment arms", c.Kind)
		}
	}
	armCheck := func(field string, a *Arm) error {
		if a == nil {
			return bad(field, "missing (kind %s)", c.Kind)
		}
		if a.Label == "" {
			return bad(field+".label", "missing (a human name, e.g. \"Smooth-AP + TCM\")")
		}
		if len(a.Where) == 0 {
			return bad(field+".where", "missing (the records of this arm)")
		}
		return nil
	}
	none := func(field string, set bool) error {
		if set {
			return bad(field, "not used by kind %s", c.Kind)
		}
		return nil
	}
	var errs []error
	switch c.Kind {
	case KindBetter, KindEquivalent, KindInteraction:
		errs = append(errs, armCheck("base", c.Base), armCheck("treatment", c.Treatment),
			none("order", len(c.Order) > 0), none("sweep", c.Sweep != nil))
		if c.Kind == KindInteraction {
			if len(c.Conditions) != 2 {
				errs = append(errs, bad("conditions", "want [X, Y] (2 arms), got %d", len(c.Conditions)))
			} else {
				errs = append(errs, armCheck("conditions[0]", &c.Conditions[0]), armCheck("conditions[1]", &c.Conditions[1]))
			}
		} else {
			errs = append(errs, none("conditions", len(c.Conditions) > 0))
		}
		if c.Base != nil && c.Treatment != nil && sweep.FormatValue(c.Base.Where) == sweep.FormatValue(c.Treatment.Where) && c.Base.Metric == c.Treatment.Metric {
			errs = append(errs, bad("treatment.where", "same as base.where (and the same metric)"))
		}
		if c.Kind == KindInteraction {
			for _, a := range []struct {
				f string
				a *Arm
			}{{"base.metric", c.Base}, {"treatment.metric", c.Treatment}} {
				if a.a != nil && a.a.Metric != "" {
					errs = append(errs, bad(a.f, "only better and equivalent arms may read their own metric"))
				}
			}
		}
	case KindRank:
		if len(c.Order) < 2 {
			errs = append(errs, bad("order", "want ≥ 2 arms from best to worst, got %d", len(c.Order)))
		}
		for i := range c.Order {
			errs = append(errs, armCheck(fmt.Sprintf("order[%d]", i), &c.Order[i]))
			if c.Order[i].Metric != "" {
				errs = append(errs, bad(fmt.Sprintf("order[%d].metric", i), "only better and equivalent arms may read their own metric"))
			}
		}
		errs = append(errs, none("base", c.Base != nil), none("treatment", c.Treatment != nil),
			none("conditions", len(c.Conditions) > 0), none("sweep", c.Sweep != nil))
	case KindTrend, KindArgmax:
		errs = append(errs, none("base", c.Base != nil), none("treatment", c.Treatment != nil),
			none("conditions", len(c.Conditions) > 0), none("order", len(c.Order) > 0))
		s := c.Sweep
		switch {
		case s == nil:
			errs = append(errs, bad("sweep", "missing (kind %s)", c.Kind))
		case s.Key == "":
			errs = append(errs, bad("sweep.key", "missing"))
		case len(s.Values) < 2 || (c.Kind == KindArgmax && len(s.Values) < 3):
			errs = append(errs, bad("sweep.values", "%d values: a %s needs at least %d", len(s.Values), c.Kind, map[bool]int{true: 3, false: 2}[c.Kind == KindArgmax]))
		default:
			xs := map[string]bool{}
			for i, v := range s.Values {
				if _, ok := sweep.Numeric(v); !ok && c.Kind == KindTrend {
					errs = append(errs, bad(fmt.Sprintf("sweep.values[%d]", i), "%s is not a number", sweep.FormatValue(v)))
				} else if f, _ := sweep.Numeric(v); s.Log && !(f > 0) {
					errs = append(errs, bad(fmt.Sprintf("sweep.values[%d]", i), "%s: a log sweep needs positive values", sweep.FormatValue(v)))
				}
				if xs[sweep.FormatValue(v)] {
					errs = append(errs, bad(fmt.Sprintf("sweep.values[%d]", i), "%s listed twice", sweep.FormatValue(v)))
				}
				xs[sweep.FormatValue(v)] = true
			}
			if c.Kind == KindArgmax {
				k := slices.IndexFunc(s.Values, func(v any) bool { return sweep.ValueEqual(v, s.Best) })
				switch {
				case s.Best == nil || k < 0:
					errs = append(errs, bad("sweep.best", "%s is not one of sweep.values", sweep.FormatValue(s.Best)))
				case k == 0 || k == len(s.Values)-1:
					errs = append(errs, bad("sweep.best", "%s is at the grid's edge: an argmax claim needs values on both sides", sweep.FormatValue(s.Best)))
				}
			} else if s.Best != nil {
				errs = append(errs, bad("sweep.best", "only an argmax claim has a best value"))
			}
			if c.Kind == KindArgmax && s.Log {
				errs = append(errs, bad("sweep.log", "only a trend uses log"))
			}
		}
	}
	return errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })...)
}

// CentralClaim names a central claim by its id (after "for" expansion) and, optionally, a note
// that tells it apart in the front page's figure (e.g. "20 % label noise"). In YAML it is the id
// alone or {id, note}.
type CentralClaim struct {
	ID   string `yaml:"id"`
	Note string `yaml:"note"`
}

// UnmarshalYAML accepts a plain id or a mapping {id, note}.
func (c *CentralClaim) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.ID = n.Value
		return nil
	}
	type plain CentralClaim
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = CentralClaim(p)
	return nil
}

// isSentence reports whether s reads as a reason: at least three words, three of them holding a
// letter ("5" or "n/a" is not a reason).
func isSentence(s string) bool {
	words := 0
	for _, w := range strings.Fields(s) {
		if strings.IndexFunc(w, unicode.IsLetter) >= 0 {
			words++
		}
	}
	return words >= 3
}
