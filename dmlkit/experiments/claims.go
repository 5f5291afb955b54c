package experiments

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Claim is a claim of the paper that a table checks on its own records (TableSpec.Claims), e.g.
//
//	claims:
//	  - text: "TCM lowers OPIS without lowering R@1"      # quoted in the output
//	    key: loss.set.expr                               # the configuration key that is compared
//	    pairs: [[smoothap, smoothap+tcm], [rsk, rsk+tcm]] # (baseline, treatment) values of key
//	    metric: OPIS
//	    lower: true                                      # claimed: the treatment lowers the metric
//	    guard: R@1                                       # optional: a metric that must not get worse
//	    guard_factor: 100                                # optional: guard changes ×100 (percent points)
//	    guard_unit: points                               # optional: printed after the guard's changes
//	    tolerance: 0.5                                   # optional: allowed worsening of the guard
//	    ignore: [eval.]                                  # optional: keys that do not define settings
//
// A setting is one pair combined with one combination of the values of the other configuration
// keys that vary among the pair's records (e.g. data.name or sampler.batch_size); the seed and the
// compared key do not define settings, nor do keys that only one side of the pair has, nor the
// keys listed in ignore (for keys that do not change the trained model, such as the evaluation
// schedule eval.every; an entry ending in "." ignores every key under it). Keys listed in split
// divide the treatment side instead: each of their value combinations (absent counts as a value)
// is a separate setting against the same baseline records. In each
// setting the two sides are paired by seed as [CompareSettings] does, and the claim's metric
// "moved" when the mean over the paired seeds of (treatment − baseline) is strictly below 0 (lower:
// true) or above 0 (lower: false). The guard, when given, held in a setting when its mean change ×
// guard_factor is ≥ −tolerance (or ≤ +tolerance with guard_lower: true, for a metric where lower is
// better). A setting held when the metric moved and the guard held.
//
// Verdict: "held" when the claim held in every setting that has both sides, "partly held" when in
// some, "not held" when in none, and "untested" when no setting has both sides. Settings lacking a
// side (or any seed with both) are listed as missing in the verdict and in the rendered line, never
// dropped silently.
type Claim struct {
	Text        string   `yaml:"text"`         // the paper's claim, quoted
	Key         string   `yaml:"key"`          // configuration key whose values are compared
	Pairs       [][]any  `yaml:"pairs"`        // (baseline, treatment) values of Key
	Metric      string   `yaml:"metric"`       // the metric the claim is about
	Lower       *bool    `yaml:"lower"`        // required: true if the claim is that the treatment lowers Metric
	Factor      float64  `yaml:"factor"`       // Metric changes are shown ×Factor (default: the table's factor)
	Guard       string   `yaml:"guard"`        // optional metric that must not get worse
	GuardFactor float64  `yaml:"guard_factor"` // Guard changes ×GuardFactor (default 1); Tolerance is in these units
	GuardLower  bool     `yaml:"guard_lower"`  // the guard is a lower-is-better metric
	GuardUnit   string   `yaml:"guard_unit"`   // unit printed after the guard's changes, e.g. "points"
	Tolerance   float64  `yaml:"tolerance"`    // allowed worsening of the guard's mean change (≥ 0, default 0)
	Ignore      []string `yaml:"ignore"`       // keys (or "prefix." for all keys under it) that do not define settings
	// Split: keys only the treatment side has (e.g. a regulariser's options) whose values define
	// separate treatments, each compared with the same baseline records — e.g. TCM with the paper's
	// margins (key absent) and with tuned margins against one baseline.
	Split []string `yaml:"split"`
}

// ignored reports whether the flattened key k is one of c.Ignore or under one of its "prefix." entries.
func (c *Claim) ignored(k string) bool {
	for _, ig := range c.Ignore {
		if k == ig || (strings.HasSuffix(ig, ".") && strings.HasPrefix(k, ig)) {
			return true
		}
	}
	return false
}

// check validates the claim; the first error names its field relative to the claim ("pairs[1]").
func (c *Claim) check() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &fieldError{Path: field, Msg: fmt.Sprintf(format, a...)})
	}
	if strings.TrimSpace(c.Text) == "" {
		bad("text", "missing (quote the paper's claim)")
	}
	if c.Key == "" {
		bad("key", "missing")
	}
	if len(c.Pairs) == 0 {
		bad("pairs", "missing (a list of [baseline, treatment] values of key)")
	}
	seen := map[string]bool{}
	for i, p := range c.Pairs {
		if len(p) != 2 {
			bad(fmt.Sprintf("pairs[%d]", i), "want [baseline, treatment], got %d values", len(p))
			continue
		}
		if p[0] == nil || p[1] == nil {
			bad(fmt.Sprintf("pairs[%d]", i), "null value")
			continue
		}
		if ValueEqual(p[0], p[1]) {
			bad(fmt.Sprintf("pairs[%d]", i), "baseline and treatment are both %q", FormatValue(p[0]))
		}
		id := FormatValue(p[0]) + "\x00" + FormatValue(p[1])
		if seen[id] {
			bad(fmt.Sprintf("pairs[%d]", i), "[%s, %s] listed twice", FormatValue(p[0]), FormatValue(p[1]))
		}
		seen[id] = true
	}
	if c.Metric == "" {
		bad("metric", "missing")
	}
	for i, k := range c.Split {
		if k == "" || k == c.Key {
			bad(fmt.Sprintf("split[%d]", i), "%q: want a key other than the compared key", k)
		}
	}
	for i, ig := range c.Ignore {
		if ig == "" || ig == "." {
			bad(fmt.Sprintf("ignore[%d]", i), "empty key")
		} else if c.Key == ig || (strings.HasSuffix(ig, ".") && strings.HasPrefix(c.Key, ig)) {
			bad(fmt.Sprintf("ignore[%d]", i), "%q covers the compared key %q", ig, c.Key)
		}
	}
	if c.Lower == nil {
		bad("lower", "missing (true: the claim is that the treatment lowers the metric; false: raises it)")
	}
	if c.Factor < 0 || math.IsNaN(c.Factor) {
		bad("factor", "%v is negative", c.Factor)
	}
	if c.Guard == "" {
		if c.GuardFactor != 0 || c.Tolerance != 0 || c.GuardUnit != "" || c.GuardLower {
			bad("guard", "missing, but guard_factor, guard_unit, guard_lower or tolerance is set")
		}
	}
	if c.GuardFactor < 0 || math.IsNaN(c.GuardFactor) {
		bad("guard_factor", "%v is negative", c.GuardFactor)
	}
	if c.Tolerance < 0 || math.IsNaN(c.Tolerance) {
		bad("tolerance", "%v is negative (it is the allowed worsening, a magnitude)", c.Tolerance)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// fieldError is a validation error at a field path relative to the checked value, e.g.
// "claims[0].pairs[1]"; [Spec] prefixes the path of the value.
type fieldError struct {
	Path, Msg string
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Path, e.Msg) }

// Claim verdicts.
const (
	VerdictHeld       = "held"
	VerdictPartlyHeld = "partly held"
	VerdictNotHeld    = "not held"
	VerdictUntested   = "untested"
)

// ClaimVerdict is the outcome of one [Claim] on a table's records.
type ClaimVerdict struct {
	Claim       Claim
	Factor      float64        // the factor applied to Metric changes (Claim.Factor or the table's)
	GuardFactor float64        // the factor applied to Guard changes (Claim.GuardFactor or 1)
	Settings    []ClaimSetting // settings with both sides, in pair order then by the settings' values
	Missing     []ClaimSetting // settings lacking a side or a seed with both (Reason says which)
	Moved       int            // settings whose metric moved in the claimed direction
	Held        int            // settings where the claim held (moved, and the guard held)
	SeedsMoved  int            // over all settings: paired seeds whose change went the claimed way
	SeedsPaired int            // over all settings: paired seeds
	Verdict     string         // VerdictHeld, VerdictPartlyHeld, VerdictNotHeld or VerdictUntested
}

// ClaimSetting is one setting of a claim: a (baseline, treatment) pair at fixed values of the other
// varying keys.
type ClaimSetting struct {
	From, To    any      // the pair's values of Claim.Key
	Keys        []string // the other keys that vary among the pair's records, sorted
	Values      []any    // this setting's values of Keys
	Effect      *Effect  // the metric's seed-paired comparison (unscaled); nil when missing
	Change      float64  // Effect.Diff.Mean × factor
	Moved       bool     // Change is strictly in the claimed direction
	Guard       *Effect  // the guard's seed-paired comparison; nil without a guard or when no seed has it on both sides
	GuardChange float64  // Guard.Diff.Mean × guard factor (NaN when Guard is nil)
	GuardHeld   bool     // true without a guard
	Held        bool     // Moved && GuardHeld
	Reason      string   // why the setting is missing
}

// Label describes the setting: "smoothap → smoothap+tcm" plus "data.name=mnist …" when other keys vary.
func (s ClaimSetting) Label() string {
	l := FormatValue(s.From) + " → " + FormatValue(s.To)
	if len(s.Keys) > 0 {
		parts := make([]string, len(s.Keys))
		for i, k := range s.Keys {
			parts[i] = k + "=" + FormatValue(s.Values[i])
		}
		l += " at " + strings.Join(parts, " ")
	}
	return l
}

// EvaluateClaim checks c on records (a table's records, after its scale and where filters).
// tableFactor is the default factor for the metric's changes.
func EvaluateClaim(c Claim, records []Record, tableFactor float64) ClaimVerdict {
	v := ClaimVerdict{Claim: c, Factor: c.Factor, GuardFactor: c.GuardFactor}
	if v.Factor == 0 {
		v.Factor = tableFactor
	}
	if v.Factor == 0 {
		v.Factor = 1
	}
	if v.GuardFactor == 0 {
		v.GuardFactor = 1
	}
	lower := c.Lower != nil && *c.Lower
	seedKeys := seedKeysOf(records)
	for _, pair := range c.Pairs {
		if len(pair) != 2 {
			continue // rejected by check
		}
		from, to := pair[0], pair[1]
		var side [2][]Record
		for _, r := range records {
			val, ok := Get(r.Config, c.Key)
			switch {
			case !ok:
			case ValueEqual(val, from):
				side[0] = append(side[0], r)
			case ValueEqual(val, to):
				side[1] = append(side[1], r)
			}
		}
		if len(side[0]) == 0 && len(side[1]) == 0 {
			v.Missing = append(v.Missing, ClaimSetting{From: from, To: to, GuardChange: math.NaN(),
				Reason: fmt.Sprintf("no records with %s = %s or %s", c.Key, FormatValue(from), FormatValue(to))})
			continue
		}
		// With split keys, each of their value combinations on the treatment side is its own
		// treatment, compared with the same baseline records.
		treatments := []configGroup{{records: side[1]}}
		if len(c.Split) > 0 && len(side[1]) > 0 {
			treatments = groupByConfig(side[1], c.Split)
		}
		notSetting := func(k string) bool { return c.ignored(k) || slices.Contains(c.Split, k) }
		for _, tr := range treatments {
			pairSide := [2][]Record{side[0], tr.records}
			keys := settingKeys(pairSide, c.Key, seedKeys, notSetting)
			for _, g := range groupByConfig(append(append([]Record(nil), pairSide[0]...), pairSide[1]...), keys) {
				s := ClaimSetting{From: from, To: to, Keys: keys, Values: g.values, GuardChange: math.NaN()}
				if tr.values != nil {
					s.Keys = append(append([]string(nil), c.Split...), keys...)
					s.Values = append(append([]any(nil), tr.values...), g.values...)
				}
				v.add(c, s, g.records, lower)
			}
		}
	}
	switch {
	case len(v.Settings) == 0:
		v.Verdict = VerdictUntested
	case v.Held == len(v.Settings):
		v.Verdict = VerdictHeld
	case v.Held > 0:
		v.Verdict = VerdictPartlyHeld
	default:
		v.Verdict = VerdictNotHeld
	}
	return v
}

// add evaluates one setting of c on its records (both sides) and records it as a setting or,
// lacking a side or a paired seed, as missing.
func (v *ClaimVerdict) add(c Claim, s ClaimSetting, records []Record, lower bool) {
	var nFrom, nTo int
	for _, r := range records {
		if val, _ := Get(r.Config, c.Key); ValueEqual(val, s.From) {
			nFrom++
		} else {
			nTo++
		}
	}
	switch {
	case nFrom == 0:
		s.Reason = fmt.Sprintf("no %s = %s records", c.Key, FormatValue(s.From))
	case nTo == 0:
		s.Reason = fmt.Sprintf("no %s = %s records", c.Key, FormatValue(s.To))
	}
	if s.Reason == "" {
		e, err := CompareSettings(records, c.Key, s.From, s.To, c.Metric, lower)
		if err != nil {
			s.Reason = strings.TrimPrefix(err.Error(), "experiments: ")
		} else {
			s.Effect = e
		}
	}
	if s.Effect == nil {
		v.Missing = append(v.Missing, s)
		return
	}
	s.Change = s.Effect.Diff.Mean * v.Factor
	s.Moved = (lower && s.Change < 0) || (!lower && s.Change > 0)
	s.GuardHeld = true
	if c.Guard != "" {
		s.GuardHeld = false
		if ge, err := CompareSettings(records, c.Key, s.From, s.To, c.Guard, c.GuardLower); err == nil {
			s.Guard = ge
			s.GuardChange = ge.Diff.Mean * v.GuardFactor
			if c.GuardLower {
				s.GuardHeld = s.GuardChange <= c.Tolerance
			} else {
				s.GuardHeld = s.GuardChange >= -c.Tolerance
			}
		}
	}
	s.Held = s.Moved && s.GuardHeld
	if s.Moved {
		v.Moved++
	}
	if s.Held {
		v.Held++
	}
	v.SeedsMoved += s.Effect.Improved
	v.SeedsPaired += len(s.Effect.Seeds)
	v.Settings = append(v.Settings, s)
}

// seedKeysOf returns the flattened configuration keys that hold the record's seed in every record
// that has them (normally the spec's seed_key).
func seedKeysOf(records []Record) map[string]bool {
	out := map[string]bool{}
	notSeed := map[string]bool{}
	for _, r := range records {
		for k, val := range Flatten(r.Config) {
			if f, ok := numeric(val); ok && f == float64(r.Seed) {
				if !notSeed[k] {
					out[k] = true
				}
				continue
			}
			notSeed[k] = true
			delete(out, k)
		}
	}
	return out
}

// settingKeys lists the flattened keys, other than key, the seed keys and the ignored keys, that both sides have and
// whose values vary among the pair's records.
func settingKeys(side [2][]Record, key string, seedKeys map[string]bool, ignored func(string) bool) []string {
	var has [2]map[string]bool
	vals := map[string]map[string]bool{}
	for i := range side {
		has[i] = map[string]bool{}
		for _, r := range side[i] {
			for k, val := range Flatten(r.Config) {
				has[i][k] = true
				if vals[k] == nil {
					vals[k] = map[string]bool{}
				}
				vals[k][FormatValue(val)] = true
			}
		}
	}
	var out []string
	for k, vs := range vals {
		if k == key || seedKeys[k] || ignored(k) || !has[0][k] || !has[1][k] {
			continue
		}
		varies := len(vs) > 1
		if !varies { // also varying: present in some records of the pair and absent in others
			for i := range side {
				for _, r := range side[i] {
					if _, ok := Get(r.Config, k); !ok {
						varies = true
					}
				}
			}
		}
		if varies {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

type configGroup struct {
	values  []any
	records []Record
}

// groupByConfig is [GroupBy] (configuration values of keys, nil where absent, in GroupBy's order)
// with each group's records copied into a slice, as [CompareSettings] takes them.
func groupByConfig(records []Record, keys []string) []configGroup {
	groups := GroupBy(records, keys)
	out := make([]configGroup, len(groups))
	for i, g := range groups {
		out[i].values = g.Values
		for _, r := range g.Records {
			out[i].records = append(out[i].records, *r)
		}
	}
	return out
}

// claimLine renders the verdict as one sentence, in Markdown or (tex) LaTeX:
//
//	Claim (paper): TCM lowers OPIS without lowering R@1. At this scale: OPIS lower in 2 of 4
//	settings (seed-paired: 5 of 12 seeds; mean change −0.30 … +0.10); R@1 change −0.80 … +0.40
//	points (needs ≥ −0.50 in every setting); missing: rsk → rsk+tcm at data.name=mnist (no
//	loss.set.expr = rsk+tcm records) → **not held**.
func claimLine(v ClaimVerdict, digits int, tex bool) string {
	esc := mdEscape
	if tex {
		esc = texEscape
	}
	num := func(x float64, signed bool) string {
		s := fmtNum(math.Abs(x), digits)
		sign := ""
		switch {
		case x < 0 && s != fmtNum(0, digits):
			sign = "−"
		case signed:
			sign = "+"
		}
		if tex {
			if sign == "−" {
				sign = "-"
			}
			return "$" + sign + s + "$"
		}
		return sign + s
	}
	span := func(xs []float64) string {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range xs {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		if num(lo, true) == num(hi, true) {
			return num(lo, true)
		}
		if tex {
			return num(lo, true) + " \\dots{} " + num(hi, true)
		}
		return num(lo, true) + " … " + num(hi, true)
	}
	c := v.Claim
	var b strings.Builder
	text := strings.TrimSpace(c.Text)
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	b.WriteString("Claim (paper): " + esc(text) + " At this scale: ")
	var parts []string
	if len(v.Settings) == 0 {
		parts = append(parts, "no setting has both sides")
	} else {
		dir := "higher"
		if c.Lower != nil && *c.Lower {
			dir = "lower"
		}
		var changes, guards []float64
		noGuard := 0
		for _, s := range v.Settings {
			changes = append(changes, s.Change)
			if c.Guard != "" {
				if s.Guard == nil {
					noGuard++
				} else {
					guards = append(guards, s.GuardChange)
				}
			}
		}
		plural := "s"
		if len(v.Settings) == 1 {
			plural = ""
		}
		parts = append(parts, fmt.Sprintf("%s %s in %d of %d setting%s (seed-paired: %d of %d seeds; mean change %s)",
			esc(c.Metric), dir, v.Moved, len(v.Settings), plural, v.SeedsMoved, v.SeedsPaired, span(changes)))
		if c.Guard != "" {
			g := esc(c.Guard) + " change "
			if len(guards) > 0 {
				g += span(guards)
				if c.GuardUnit != "" {
					g += " " + esc(c.GuardUnit)
				}
			} else {
				g += "not recorded"
			}
			need := "≥ " + num(-c.Tolerance, false)
			if tex {
				need = "$\\geq$ " + num(-c.Tolerance, false)
			}
			if c.GuardLower {
				need = "≤ " + num(c.Tolerance, true)
				if tex {
					need = "$\\leq$ " + num(c.Tolerance, true)
				}
			}
			g += " (needs " + need + " in every setting"
			if noGuard > 0 && len(guards) > 0 {
				g += fmt.Sprintf("; not recorded in %d", noGuard)
			}
			parts = append(parts, g+")")
		}
	}
	if len(v.Missing) > 0 {
		ms := make([]string, len(v.Missing))
		for i, m := range v.Missing {
			ms[i] = esc(m.Label() + " (" + m.Reason + ")")
		}
		parts = append(parts, "missing: "+strings.Join(ms, ", "))
	}
	b.WriteString(strings.Join(parts, "; "))
	if tex {
		b.WriteString(" $\\rightarrow$ \\textbf{" + v.Verdict + "}.")
	} else {
		b.WriteString(" → **" + v.Verdict + "**.")
	}
	return b.String()
}
