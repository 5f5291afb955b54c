package report

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
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Interval is a mean over seeds with its 95 % t-interval (Student t, n − 1 degrees of freedom;
// Lo and Hi NaN when N < 2; all NaN when N = 0).
type Interval struct {
	Mean, Lo, Hi float64
	N            int
}

// TInterval is the mean of vals with its 95 % t-interval: mean ± t(0.975, n − 1) · sd / √n.
func TInterval(vals []float64) Interval {
	st := sweep.MeanStd(vals)
	iv := Interval{Mean: st.Mean, Lo: math.NaN(), Hi: math.NaN(), N: st.N}
	if st.N >= 2 {
		h := judge.TCrit95(st.N-1) * st.Std / math.Sqrt(float64(st.N))
		iv.Lo, iv.Hi = st.Mean-h, st.Mean+h
	}
	return iv
}

// LeaderboardEntry is one method in one regime.
type LeaderboardEntry struct {
	Method sweep.LeaderboardMethod
	Rank   int                  // 1-based by the first metric; 0 when not ranked (not run, or no value)
	Seeds  []int64              // of its final runs, ascending
	Values map[string][]float64 // metric → per-seed values in Seeds order (a seed without the metric left out)
	Stats  map[string]Interval  // metric → mean and 95 % interval
	// TrainR1 is the mean training-split R@1 ([TrainMetric]) over the seeds that record it; NaN
	// when none does.
	TrainR1 float64
	// InitR1 is the mean training-split R@1 of its untrained models (step 0, "init/train/R@1")
	// when every record has it; NaN otherwise.
	InitR1  float64
	Trained string // TrainedYes, TrainedNo, TrainedUnknown or TrainedNotRun
	Failed  int    // its runs stored as failed (left out)
	// AboveFloor is the floor rule's answer for a ranked method ([FloorRule]): FloorAbove,
	// FloorNotAbove, or "" when the regime has no floor run or the method no value.
	AboveFloor string
	// BestSteps are the optimiser steps at which its seeds' reported evaluations were made
	// ("best_step": the best validation evaluation under eval.restore_best), in Seeds order; empty
	// when its records carry none. AtCap counts the seeds whose best evaluation was their last one
	// ("best_step" equals "steps"): still improving when the step cap stopped them.
	BestSteps []float64
	AtCap     int
}

// Record metrics of a run trained under early stopping (eval.restore_best): the step of the
// evaluation it reports and the steps it ran.
const (
	bestStepMetric = "best_step"
	stepsMetric    = "steps"
)

// HasBestSteps reports whether any entry records the step of its reported evaluation, i.e. the
// regime trains under early stopping and the table shows a "steps to best" column.
func (lb *Leaderboard) HasBestSteps() bool {
	for _, e := range lb.Entries {
		if len(e.BestSteps) > 0 {
			return true
		}
	}
	return false
}

// bestStepText is the "steps to best" cell: the mean over seeds of the step of the reported
// evaluation, rounded to a step, and how many seeds were still improving at the cap.
func bestStepText(e LeaderboardEntry) string {
	if len(e.BestSteps) == 0 {
		return "—"
	}
	t := strconv.FormatFloat(math.Round(sweep.MeanStd(e.BestSteps).Mean), 'f', 0, 64)
	if len(e.BestSteps) != len(e.Seeds) {
		t += fmt.Sprintf(" (n = %d)", len(e.BestSteps))
	}
	if e.AtCap > 0 {
		t += fmt.Sprintf(" (%d at the cap)", e.AtCap)
	}
	return t
}

// Answers of the floor rule ([LeaderboardEntry].AboveFloor).
const (
	FloorAbove    = "yes"
	FloorNotAbove = "not above"
)

// FloorRule is the zero-shot floor's rule in words, for captions and READMEs: a method is above
// the floor when the lower end of its 95 % t-interval of the ranking metric (here named metric)
// lies above (for a lower-is-better metric: the upper end below) the best floor arm's mean; with
// one seed its mean must. The best floor arm is the one whose mean is best ([Leaderboard.BestFloor]).
func FloorRule(metric string) string {
	return fmt.Sprintf("a method is above the floor when the lower end of its 95 %% t-interval of test %s lies above the best floor arm's mean (with one seed, its mean does); otherwise it is flagged \"not above\"", metric)
}

// floorAbove applies [FloorRule] to the interval iv of a method against the floor mean f.
func floorAbove(iv Interval, f float64, lower bool) string {
	if iv.N == 0 || math.IsNaN(iv.Mean) || math.IsNaN(f) {
		return ""
	}
	edge := iv.Lo
	if lower {
		edge = iv.Hi
	}
	if math.IsNaN(edge) {
		edge = iv.Mean
	}
	if (!lower && edge > f) || (lower && edge < f) {
		return FloorAbove
	}
	return FloorNotAbove
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
	Spec   *sweep.LeaderboardSpec
	Paper  string
	Regime sweep.LeaderboardRegime
	// Entries: the ranked methods, best first (ties in the order of the spec's methods), then the
	// methods with runs but no value of the first metric, then those not run, in the spec's order.
	Entries   []LeaderboardEntry
	BestTrain float64 // the best train R@1 among the entries (NaN: none recorded)
	Records   int     // final runs used
	// Floor are the zero-shot floor's arms run in this regime (the spec's leaderboard.floor, in its
	// order; Rank 0, Trained "" — the rule does not apply to no training): what the network gives
	// with no training. They are not among Entries and never ranked.
	Floor []LeaderboardEntry
}

// BestFloor is the floor arm with the best mean of the ranking metric (the first on ties); ok is
// false when the regime has no floor arm with a value.
func (lb *Leaderboard) BestFloor() (e LeaderboardEntry, ok bool) {
	m := lb.Spec.Metrics[0]
	lower := lb.Spec.Lower(m)
	for _, f := range lb.Floor {
		v := f.Stats[m].Mean
		if math.IsNaN(v) {
			continue
		}
		if !ok || (!lower && v > e.Stats[m].Mean) || (lower && v < e.Stats[m].Mean) {
			e, ok = f, true
		}
	}
	return e, ok
}

// NotAboveFloor lists the ranked methods the floor rule flags, best first.
func (lb *Leaderboard) NotAboveFloor() []LeaderboardEntry {
	var out []LeaderboardEntry
	for _, e := range lb.Ranked() {
		if e.AboveFloor == FloorNotAbove {
			out = append(out, e)
		}
	}
	return out
}

// BuildLeaderboard ranks the spec's methods at scale from records (all scales may be passed): per
// method the per-seed values of each metric, their mean and 95 % t-interval, the mean train R@1
// and whether it trained — below min_train × the best method's train R@1 it did not (the rule of
// the verdicts' "did not train"). A method with two final runs of one seed is an error.
func BuildLeaderboard(s *sweep.Spec, scale string, records []sweep.Record) (*Leaderboard, error) {
	l := s.Leaderboard
	if l == nil {
		return nil, fmt.Errorf("experiments: %s: no leaderboard section", s.Name())
	}
	runs, failed := finalRuns(s, scale, records)
	lb := &Leaderboard{Spec: l, Paper: s.Paper, Regime: l.RegimeOf(scale), BestTrain: math.NaN()}
	entry := func(m sweep.LeaderboardMethod, what string) (LeaderboardEntry, error) {
		e := LeaderboardEntry{Method: m, Values: map[string][]float64{}, Stats: map[string]Interval{}, TrainR1: math.NaN(), InitR1: math.NaN(), Failed: failed[m.ID]}
		recs := runs[m.ID]
		g := &sweep.Group{Keys: []string{l.ArmOrDefault()}, Values: []any{m.ID}}
		for i := range recs {
			g.Records = append(g.Records, &recs[i])
		}
		if err := g.CheckSeeds(); err != nil {
			return e, fmt.Errorf("experiments: leaderboard %s, scale %q: %s %w", s.Paper, scale, what, err)
		}
		sort.SliceStable(g.Records, func(a, b int) bool { return g.Records[a].Seed < g.Records[b].Seed })
		var train, init []float64
		for _, r := range g.Records {
			e.Seeds = append(e.Seeds, r.Seed)
			for _, mt := range l.Metrics {
				if v, ok := r.Metrics[mt]; ok {
					e.Values[mt] = append(e.Values[mt], v)
				}
			}
			if v, ok := r.Metrics[sweep.TrainMetric]; ok && !math.IsNaN(v) {
				train = append(train, v)
			}
			if v, ok := r.Metrics["init/"+sweep.TrainMetric]; ok && !math.IsNaN(v) {
				init = append(init, v)
			}
			if v, ok := r.Metrics[bestStepMetric]; ok {
				e.BestSteps = append(e.BestSteps, v)
				if n, ok := r.Metrics[stepsMetric]; ok && v >= n {
					e.AtCap++
				}
			}
		}
		if len(init) == len(recs) && len(init) > 0 {
			e.InitR1 = sweep.MeanStd(init).Mean
		}
		for _, mt := range l.Metrics {
			e.Stats[mt] = TInterval(e.Values[mt])
		}
		if len(train) > 0 {
			e.TrainR1 = sweep.MeanStd(train).Mean
		}
		return e, nil
	}
	for _, m := range l.Floor {
		e, err := entry(m, "floor arm")
		if err != nil {
			return nil, err
		}
		if e.Run() {
			lb.Floor = append(lb.Floor, e)
			lb.Records += len(e.Seeds)
		}
	}
	var ranked, unranked, notRun []LeaderboardEntry
	for _, m := range l.Methods {
		e, err := entry(m, "method")
		if err != nil {
			return nil, err
		}
		if !math.IsNaN(e.TrainR1) && (math.IsNaN(lb.BestTrain) || e.TrainR1 > lb.BestTrain) {
			lb.BestTrain = e.TrainR1
		}
		lb.Records += len(e.Seeds)
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
			case judge.BelowTrainFloor(e.TrainR1, lb.BestTrain, l.MinTrainOrDefault()),
				!math.IsNaN(e.InitR1) && e.TrainR1 < e.InitR1+judge.MinTrainGain:
				// The verdicts' floor (judge): half the regime's best, and above its own untrained model.
				e.Trained = TrainedNo
			default:
				e.Trained = TrainedYes
			}
		}
	}
	first, lower := l.Metrics[0], l.Lower(l.Metrics[0])
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
	if best, ok := lb.BestFloor(); ok {
		for i := range lb.Entries {
			if lb.Entries[i].Rank > 0 {
				lb.Entries[i].AboveFloor = floorAbove(lb.Entries[i].Stats[first], best.Stats[first].Mean, lower)
			}
		}
	}
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

// metricHeader is a metric's column title: its label and unit, e.g. "R@1 (%)", "OPIS (× 1000)".
func metricHeader(lm sweep.LabelMap, name string, f float64) string {
	if u := sweep.Unit(f); u != "" {
		return lm.Key(name) + " (" + u + ")"
	}
	return lm.Key(name)
}

// intervalText is "mean [lo, hi]" at digits decimals ("mean" alone when n < 2, "—" when n = 0).
func intervalText(iv Interval, f float64, digits int) string {
	if iv.N == 0 || math.IsNaN(iv.Mean) {
		return "—"
	}
	s := judge.FmtNum(iv.Mean*f, digits)
	if !math.IsNaN(iv.Lo) {
		s += " [" + judge.FmtNum(iv.Lo*f, digits) + ", " + judge.FmtNum(iv.Hi*f, digits) + "]"
	}
	return s
}

// Header is the leaderboard's column titles.
func (lb *Leaderboard) Header(lm sweep.LabelMap) []string {
	l := lb.Spec
	h := []string{"rank", "method", "proposed in", "used by (seed papers)"}
	for _, m := range l.Metrics {
		h = append(h, metricHeader(lm, m, l.Factor(m))+" [95 % CI]")
	}
	if lb.HasBestSteps() {
		h = append(h, "steps to best")
	}
	h = append(h, "n", metricHeader(lm, sweep.TrainMetric, l.TrainFactor()), "trained?")
	if len(lb.Floor) > 0 {
		h = append(h, "above the floor?")
	}
	return h
}

// textColumns reports whether column i of the header h is text (left-aligned): the method, its
// paper and seed papers, and the trailing answers (trained?, above the floor?).
func (lb *Leaderboard) textColumns(h []string) func(i int) bool {
	tail := 1
	if len(lb.Floor) > 0 {
		tail = 2
	}
	return func(i int) bool { return i == 1 || i == 2 || i == 3 || i >= len(h)-tail }
}

// FloorRank is the rank cell of a floor row.
const FloorRank = "floor"

// rowOrder is the order of the table's rows: the entries, with each floor arm (in the order of
// its mean) placed after the last ranked entry whose mean is better than the arm's or equal to it, so that
// the floor reads as a line through the ranking. An entry is (entry, floor?).
func (lb *Leaderboard) rowOrder() []struct {
	e     LeaderboardEntry
	floor bool
} {
	type row = struct {
		e     LeaderboardEntry
		floor bool
	}
	m := lb.Spec.Metrics[0]
	lower := lb.Spec.Lower(m)
	fl := slices.Clone(lb.Floor)
	sort.SliceStable(fl, func(a, b int) bool {
		x, y := fl[a].Stats[m].Mean, fl[b].Stats[m].Mean
		if lower {
			return x < y
		}
		return x > y
	})
	var out []row
	j := 0
	for _, e := range lb.Entries {
		for e.Rank > 0 && j < len(fl) && ((!lower && fl[j].Stats[m].Mean > e.Stats[m].Mean) || (lower && fl[j].Stats[m].Mean < e.Stats[m].Mean)) {
			out = append(out, row{fl[j], true})
			j++
		}
		if e.Rank == 0 {
			for ; j < len(fl); j++ { // after the ranked entries, before the unranked
				out = append(out, row{fl[j], true})
			}
		}
		out = append(out, row{e, false})
	}
	for ; j < len(fl); j++ {
		out = append(out, row{fl[j], true})
	}
	return out
}

// Rows is the leaderboard's cells as text, one row per entry.
func (lb *Leaderboard) Rows() [][]string {
	l := lb.Spec
	d := l.DigitsOrDefault()
	tf := l.TrainFactor()
	var rows [][]string
	for _, r := range lb.rowOrder() {
		e := r.e
		rank := "—"
		if e.Rank > 0 {
			rank = strconv.Itoa(e.Rank)
		}
		if r.floor {
			rank = FloorRank
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
		label := e.Method.Label
		if r.floor {
			proposed, label = "no training (zero-shot floor)", "Floor: "+label
		}
		row := []string{rank, label, proposed, seedPapersText(l, e.Method.Seeds)}
		for _, m := range l.Metrics {
			iv := e.Stats[m]
			s := intervalText(iv, l.Factor(m), d)
			if iv.N > 0 && iv.N != len(e.Seeds) {
				s += fmt.Sprintf(" (n = %d)", iv.N)
			}
			if !e.Run() {
				s = "—"
			}
			row = append(row, s)
		}
		if lb.HasBestSteps() {
			row = append(row, bestStepText(e))
		}
		train := "—"
		if !math.IsNaN(e.TrainR1) {
			train = judge.FmtNum(e.TrainR1*tf, d)
		}
		trained := e.Trained
		if r.floor {
			trained = "—"
		}
		row = append(row, strconv.Itoa(len(e.Seeds)), train, trained)
		if len(lb.Floor) > 0 {
			above := e.AboveFloor
			if above == "" {
				above = "—"
			}
			row = append(row, above)
		}
		rows = append(rows, row)
	}
	return rows
}

// Caption is the table's caption: what is ranked, the interval, the units, the training rule,
// and what "not run" means.
func (lb *Leaderboard) Caption(lm sweep.LabelMap) string {
	l := lb.Spec
	run := 0
	for _, e := range lb.Entries {
		if e.Run() {
			run++
		}
	}
	first := lm.Key(l.Metrics[0])
	dir := "highest"
	if l.Lower(l.Metrics[0]) {
		dir = "lowest"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Leaderboard — %s: %d of %d methods run, ranked by the mean test %s over seeds (%s first; ties share a rank). ",
		lb.Regime.Label, run, len(lb.Entries), first, dir)
	fmt.Fprintf(&b, "Each metric: mean [95 %% t-interval over seeds, n − 1 degrees of freedom; n seeds]; %s. ", unitsText(l, lm))
	floor := "no training R@1 recorded"
	if !math.IsNaN(lb.BestTrain) {
		floor = fmt.Sprintf("best %s", judge.FmtNum(lb.BestTrain*l.TrainFactor(), l.DigitsOrDefault()))
	}
	fmt.Fprintf(&b, "Trained?: the verdicts' rule — a method whose %s is below %s × the best method's (%s) did not train; not recorded: its runs have no %s. ",
		lm.Key(sweep.TrainMetric), judge.FmtNum(l.MinTrainOrDefault(), 2), floor, lm.Key(sweep.TrainMetric))
	if lb.HasBestSteps() {
		b.WriteString("Steps to best: the mean over seeds of the optimiser step of the validation evaluation each run reports (its best; training stops once it has not improved for the patience), with the seeds whose best was their last evaluation (at the cap: still improving when the cap stopped them). ")
	}
	b.WriteString("Not run: no final run stored yet.")
	if best, ok := lb.BestFloor(); ok {
		var arms []string
		for _, f := range lb.Floor {
			arms = append(arms, f.Method.Label)
		}
		fmt.Fprintf(&b, " Floor rows: the zero-shot floor, the network with no optimiser step (%s), placed by its mean, not ranked and not a loss; above the floor?: %s (the best arm here: %s, %s).",
			strings.Join(arms, "; "), FloorRule(first), best.Method.Label, unitValue(best.Stats[l.Metrics[0]].Mean, l.Factor(l.Metrics[0]), l.DigitsOrDefault()))
	}
	return b.String()
}

// unitValue is v scaled by f at digits decimals with its unit: "38.5 %", "6.1 × 1000", "0.31".
func unitValue(v, f float64, digits int) string {
	t := judge.FmtNum(v*f, digits)
	if u := sweep.Unit(f); u != "" {
		t += " " + u
	}
	return t
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
func (lb *Leaderboard) Markdown(lm sweep.LabelMap) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**\n\n", mdText(lb.Caption(lm)))
	h := lb.Header(lm)
	b.WriteString("|")
	for _, c := range h {
		b.WriteString(" " + mdText(c) + " |")
	}
	b.WriteString("\n|")
	text := lb.textColumns(h)
	for i := range h {
		if text(i) {
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
func (lb *Leaderboard) LaTeX(lm sweep.LabelMap, label string) string {
	var b strings.Builder
	b.WriteString("% Generated by `dmlkit tables` from stored results; do not edit.\n")
	b.WriteString("\\begin{table}[t]\n\\centering\n")
	fmt.Fprintf(&b, "\\caption{%s}\n", judge.TexEscape(lb.Caption(lm)))
	if label != "" {
		fmt.Fprintf(&b, "\\label{%s}\n", label)
	}
	h := lb.Header(lm)
	align := make([]byte, len(h))
	text := lb.textColumns(h)
	for i := range align {
		align[i] = 'r'
		if text(i) {
			align[i] = 'l'
		}
	}
	fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", align)
	tex := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = judge.TexEscape(c)
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
		b.WriteString("\\par\\smallskip\\footnotesize " + judge.TexEscape(f) + "\n")
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
	return bootstrapTau(a, b, reps, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), false)
}

// BootstrapTauMethods is [BootstrapTau] with the methods resampled too: each replicate draws as
// many methods as there are, with replacement, then resamples each drawn method's values in both
// regimes as BootstrapTau does, and computes τ-b between the regimes' means over the drawn
// methods (a method drawn twice ties with itself in both regimes: that pair counts as neither
// concordant nor discordant). The interval then says how much τ depends on which methods the
// field happens to hold, not only on the seeds. Same quantiles as BootstrapTau; its own
// generator stream.
func BootstrapTauMethods(a, b [][]float64, reps int, seed uint64) (lo, hi float64, used int) {
	return bootstrapTau(a, b, reps, rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909)), true)
}

// bootstrapTau is the bootstrap of both: methods drawn with replacement when methods is set
// (else each method once, in order), then each drawn method's values resampled in a, then in b.
func bootstrapTau(a, b [][]float64, reps int, rng *rand.Rand, methods bool) (lo, hi float64, used int) {
	n := len(a)
	ma, mb := make([]float64, n), make([]float64, n)
	resampled := func(v []float64) float64 {
		var s float64
		for range v {
			s += v[rng.IntN(len(v))]
		}
		return s / float64(len(v))
	}
	var taus []float64
	for range reps {
		for i := range n {
			j := i
			if methods {
				j = rng.IntN(n)
			}
			ma[i] = resampled(a[j])
			mb[i] = resampled(b[j])
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
	Regimes [2]sweep.LeaderboardRegime
	// Name is the base name of its files (.md; .png, .svg, .pdf): [AgreementName].
	Name    string
	Methods []sweep.LeaderboardMethod // the common methods, in the spec's order
	Means   [2][]float64              // per regime, per common method: the first metric's mean
	Ranks   [2][]float64              // per regime: rank among the common methods (1 best; ties averaged)
	Tau     float64                   // Kendall's τ-b of the means (NaN with fewer than MinAgreementMethods)
	Lo, Hi  float64                   // its 95 % percentile bootstrap interval
	B       int                       // replicates asked for
	Used    int                       // replicates with a defined τ
	Seed    uint64
	// Trained are the common methods that trained in both regimes (the verdicts' floor,
	// LeaderboardEntry.Trained), TrainedTau τ-b over them, and TrainedLo, TrainedHi its 95 %
	// interval from a bootstrap over methods and seeds ([BootstrapTauMethods]): the agreement of
	// the losses that trained, which the untrained block cannot lift.
	Trained                          []sweep.LeaderboardMethod
	TrainedTau, TrainedLo, TrainedHi float64
}

// Computed reports whether there are enough common methods for τ.
func (r *RankAgreement) Computed() bool { return len(r.Methods) >= MinAgreementMethods }

// AgreementName is the base name of the files of the rank agreement of the regimes of scales a and
// b: [FigRankAgreement] for the spec's first two regimes (in their order), so that a spec's first
// pair keeps its files when a regime is added; "rank_agreement-<a>-<b>" for any other pair.
func AgreementName(l *sweep.LeaderboardSpec, a, b string) string {
	if len(l.Regimes) >= 2 && a == l.Regimes[0].Scale && b == l.Regimes[1].Scale {
		return FigRankAgreement
	}
	return FigRankAgreement + "-" + a + "-" + b
}

// Subject is how the rank agreement's README line and figure caption name it: "the two regimes"
// when the spec has two (the wording of the committed READMEs), else its regimes' labels ("**A**
// and **B**" with bold, "A and B" without).
func (r *RankAgreement) Subject(l *sweep.LeaderboardSpec, bold bool) string {
	if len(l.Regimes) <= 2 {
		return "the two regimes"
	}
	a, b := r.Regimes[0].Label, r.Regimes[1].Label
	if bold {
		return "**" + mdText(a) + "** and **" + mdText(b) + "**"
	}
	return a + " and " + b
}

// AgreementOf computes the rank agreement of two leaderboards (of the first metric) over the
// methods ranked in both.
func AgreementOf(a, b *Leaderboard) *RankAgreement {
	l := a.Spec
	m := l.Metrics[0]
	r := &RankAgreement{Metric: m, Regimes: [2]sweep.LeaderboardRegime{a.Regime, b.Regime}, Name: AgreementName(l, a.Regime.Scale, b.Regime.Scale),
		Tau: math.NaN(), Lo: math.NaN(), Hi: math.NaN(),
		B: l.BootstrapOrDefault(), Seed: sweep.BootstrapSeed}
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
	r.TrainedTau, r.TrainedLo, r.TrainedHi = math.NaN(), math.NaN(), math.NaN()
	var va, vb, ta, tb [][]float64
	var tma, tmb []float64
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
		if x.Trained == TrainedYes && y.Trained == TrainedYes {
			r.Trained = append(r.Trained, meth)
			ta, tb = append(ta, x.Values[m]), append(tb, y.Values[m])
			tma, tmb = append(tma, x.Stats[m].Mean), append(tmb, y.Stats[m].Mean)
		}
	}
	r.Ranks[0], r.Ranks[1] = Ranks(r.Means[0], l.Lower(m)), Ranks(r.Means[1], l.Lower(m))
	if !r.Computed() {
		return r
	}
	r.Tau = KendallTauB(r.Means[0], r.Means[1])
	r.Lo, r.Hi, r.Used = BootstrapTau(va, vb, r.B, r.Seed)
	if len(r.Trained) >= MinAgreementMethods {
		r.TrainedTau = KendallTauB(tma, tmb)
		r.TrainedLo, r.TrainedHi, _ = BootstrapTauMethods(ta, tb, r.B, r.Seed)
	}
	return r
}

// TrainedText is "τ-b = 0.34 [−0.05, 0.69] over the 14 methods that trained in both regimes
// (bootstrap over methods and seeds)", or why there is none.
func (r *RankAgreement) TrainedText() string {
	if len(r.Trained) < MinAgreementMethods {
		return fmt.Sprintf("not computed over the trained methods: %d trained in both regimes, fewer than %d", len(r.Trained), MinAgreementMethods)
	}
	s := "τ-b = " + fmtSigned(r.TrainedTau)
	if !math.IsNaN(r.TrainedLo) {
		s += " [" + fmtSigned(r.TrainedLo) + ", " + fmtSigned(r.TrainedHi) + "]"
	}
	return s + fmt.Sprintf(" over the %d methods that trained in both regimes (95 %% bootstrap over methods and seeds)", len(r.Trained))
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
	s := judge.FmtNum(v, 2)
	if s == "-0.00" {
		s = "0.00"
	}
	return strings.Replace(s, "-", "−", 1)
}

// Markdown is the rank agreement table: the common methods with their rank in each regime, τ-b,
// its interval and B.
func (r *RankAgreement) Markdown(lm sweep.LabelMap) string {
	var b strings.Builder
	m := lm.Key(r.Metric)
	fmt.Fprintf(&b, "**Rank agreement between the regimes — %s and %s: the methods ranked in both, by mean test %s over seeds (1 best, ties share the average rank). Kendall's %s; 95 %% percentile bootstrap interval from B = %d replicates, each resampling every method's seeds with replacement in each regime independently (generator seed %d).**\n\n",
		mdText(r.Regimes[0].Label), mdText(r.Regimes[1].Label), mdText(m), mdText(r.TauText()), r.B, r.Seed)
	if r.Computed() && r.Used < r.B {
		fmt.Fprintf(&b, "%d of the %d replicates left out: their means tied throughout one regime (τ undefined).\n\n", r.B-r.Used, r.B)
	}
	if r.Computed() {
		fmt.Fprintf(&b, "Over the methods that trained in both regimes only (the verdicts' training floor; a block of methods that did not train can agree by staying at the bottom in both): Kendall's %s. What it does not show: that the order of the papers' full-scale setting (ResNet-50 on CUB) is the same.\n\n", mdText(r.TrainedText()))
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

// Agreement is the rank agreement of the spec's first two regimes (the first of [Agreements]),
// their leaderboards built from records (all scales); nil when the spec has fewer than two regimes.
func Agreement(s *sweep.Spec, records []sweep.Record) (*RankAgreement, error) {
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

// Agreements builds the leaderboards of the spec's regimes from records (all scales) and the rank
// agreement of every pair of them: regimes i < j in the spec's order, (0, 1), (0, 2), …, (1, 2),
// …; none when the spec has fewer than two regimes.
func Agreements(s *sweep.Spec, records []sweep.Record) ([]*RankAgreement, error) {
	l := s.Leaderboard
	if l == nil || len(l.Regimes) < 2 {
		return nil, nil
	}
	var boards []*Leaderboard
	for _, rg := range l.Regimes {
		lb, err := BuildLeaderboard(s, rg.Scale, records)
		if err != nil {
			return nil, err
		}
		boards = append(boards, lb)
	}
	return agreementsOf(boards), nil
}

// agreementsOf is the rank agreement of every pair of boards (i < j, in their order).
func agreementsOf(boards []*Leaderboard) []*RankAgreement {
	var out []*RankAgreement
	for i := range boards {
		for j := i + 1; j < len(boards); j++ {
			out = append(out, AgreementOf(boards[i], boards[j]))
		}
	}
	return out
}

// RenderLeaderboard writes the leaderboard of scale to outDir/leaderboard.md and .tex and, when
// scale is one of the spec's regimes and the spec has two or more, the rank agreement of every
// pair of regimes to agreeDir/<name>.md ([AgreementName]: rank_agreement.md for the first pair,
// rank_agreement-<a>-<b>.md for each further one; records of every regime's scale are read from
// records). It returns the leaderboard and the files written.
func RenderLeaderboard(w atomicfile.Writer, s *sweep.Spec, records []sweep.Record, scale, outDir, agreeDir string) (*Leaderboard, []string, error) {
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
	if !slices.ContainsFunc(s.Leaderboard.Regimes, func(r sweep.LeaderboardRegime) bool { return r.Scale == scale }) {
		return lb, files, nil
	}
	ras, err := Agreements(s, records)
	if err != nil {
		return lb, files, err
	}
	for _, ra := range ras {
		p := filepath.Join(agreeDir, ra.Name+".md")
		if err := writeOut(w, p, []byte(ra.Markdown(s.Labels))); err != nil {
			return nil, nil, err
		}
		files = append(files, p)
	}
	return lb, files, nil
}

// LeaderboardSummary is a short Markdown summary for a README block (<!-- leaderboard -->): per
// regime the top three methods with their mean and 95 % interval of the first metric, then one
// line per pair of regimes with their rank agreement ("of the two regimes" when the spec has two,
// else naming the pair). recordsByScale maps each regime's scale to its records (a scale missing:
// no runs).
func LeaderboardSummary(s *sweep.Spec, recordsByScale map[string][]sweep.Record) (string, error) {
	l := s.Leaderboard
	if l == nil {
		return "", fmt.Errorf("experiments: %s: no leaderboard section", s.Name())
	}
	m := l.Metrics[0]
	f := l.Factor(m)
	in := ""
	switch u := sweep.Unit(f); u {
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
			t := fmt.Sprintf("%d. %s %s", e.Rank, mdText(e.Method.Label), intervalText(e.Stats[m], f, l.DigitsOrDefault()))
			if e.Trained == TrainedNo {
				t += " (did not train)"
			}
			top = append(top, t)
		}
		fmt.Fprintf(&b, "%s (test %s%s, mean [95 %% CI] over seeds)", strings.Join(top, " · "), mdText(s.Labels.Key(m)), in)
		if best, ok := lb.BestFloor(); ok {
			fmt.Fprintf(&b, "; zero-shot floor (no training): %s %s, %d of %d ranked methods above it", mdText(best.Method.Label), intervalText(best.Stats[m], f, l.DigitsOrDefault()), len(ranked)-len(lb.NotAboveFloor()), len(ranked))
		}
		b.WriteString(".\n")
	}
	for _, ra := range agreementsOf(boards) {
		if ra.Computed() {
			fmt.Fprintf(&b, "- Rank agreement of %s over %d methods: Kendall's %s (95 %% bootstrap over seeds, B = %d); %s.\n", ra.Subject(l, true), len(ra.Methods), ra.TauText(), ra.B, ra.TrainedText())
		} else {
			fmt.Fprintf(&b, "- Rank agreement of %s: %s.\n", ra.Subject(l, true), ra.TauText())
		}
	}
	return b.String(), nil
}

// finalRuns are the records of a method's final runs at scale (see the file comment), by method id.
func finalRuns(s *sweep.Spec, scale string, records []sweep.Record) (map[string][]sweep.Record, map[string]int) {
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
	for _, m := range append(slices.Clone(l.Methods), l.Floor...) {
		ids[m.ID] = true
	}
	runs, failed := map[string][]sweep.Record{}, map[string]int{}
	for _, r := range sweep.SelectRecords(records, scale, l.Where, true) {
		v, ok := r.Value(l.ArmOrDefault())
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

// unitsText is the caption's sentence on units: "R@1 and MAP@R in %, OPIS × 1000 (lower is better)".
func unitsText(l *sweep.LeaderboardSpec, lm sweep.LabelMap) string {
	var parts []string
	byUnit := map[string][]string{}
	var order []string
	for _, m := range l.Metrics {
		u := sweep.Unit(l.Factor(m))
		if _, ok := byUnit[u]; !ok {
			order = append(order, u)
		}
		name := lm.Key(m)
		if l.Lower(m) {
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

// seedPapersText is the labels of the seed papers ids, in the papers' order, joined by ", ".
func seedPapersText(l *sweep.LeaderboardSpec, ids []string) string {
	labels, order := l.PapersOrDefault()
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
