package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"gonum.org/v1/plot/vg"
)

// The leaderboard's figures, drawn from the spec's leaderboard section ([LeaderboardSpec]) rather
// than its figures: list, into the figures directory of each scale (figures/PAPER,
// figures/PAPER/pretrained) with their captions in that directory's README.md:
//
//	leaderboard         per regime: the ranked methods top to bottom, mean of the first metric
//	                    with its 95 % t-interval, coloured by the seed paper that proposes the
//	                    method (black: an earlier method, a baseline)
//	leaderboard_pareto  per regime: the Pareto metrics' means (default R@1 against OPIS), ± SE
//	                    both ways, the Pareto frontier, the points numbered with a key
//	rank_agreement      once per pair of regimes, in the first regime's directory: each method's
//	                    rank in one regime against the other, the diagonal, Kendall's τ-b and its
//	                    bootstrap interval in the title (drawn with at least MinAgreementMethods
//	                    methods ranked in both); the spec's first two regimes as rank_agreement,
//	                    each further pair as rank_agreement-<scale a>-<scale b> ([AgreementName])

// Figure names of the leaderboard.
const (
	FigLeaderboard   = "leaderboard"
	FigPareto        = "leaderboard_pareto"
	FigRankAgreement = "rank_agreement"
)

// methodLabel is a method's label in a figure, with "(did not train)" when it did not.
func methodLabel(e LeaderboardEntry) string {
	if e.Trained == TrainedNo {
		return e.Method.Label + " (did not train)"
	}
	return e.Method.Label
}

// LeaderboardFigure draws the ranked methods of lb as a forest of means with their 95 %
// t-intervals (the first metric), best at the top.
func LeaderboardFigure(lb *Leaderboard, lm sweep.LabelMap) (*plots.Chart, error) {
	l := lb.Spec
	m := l.Metrics[0]
	f := l.Factor(m)
	var rows []plots.ForestRow
	for _, e := range lb.Ranked() {
		iv := e.Stats[m]
		rows = append(rows, plots.ForestRow{Label: methodLabel(e), Group: l.Group(e.Method), X: iv.Mean * f, Lo: iv.Lo * f, Hi: iv.Hi * f})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("leaderboard %q: %w (no method ranked)", lb.Regime.Scale, ErrNoRecords)
	}
	st := plots.DefaultStyle()
	st.Width = plots.PageWidth // the method labels take a column's width; the intervals need the rest
	st.Height = 0.75 * vg.Inch
	st.Legend = plots.LegendBelow
	slots := leaderboardSlots(l)
	var groups []plots.ForestGroup
	for _, g := range l.Groups() {
		groups = append(groups, plots.ForestGroup{Name: g, Color: st.Color(slots[g]), Shape: plots.FilledGlyph(slots[g])})
	}
	lab := plots.Labels{Title: lb.Regime.Label, X: axisText(l, lm, m) + ": mean and 95 % CI over seeds"}
	return plots.ForestWith(st, lab, rows, groups, plots.ForestOptions{NoZero: true, Refs: floorLines(lb, m)})
}

// floorLines are the zero-shot floor's arms of lb as reference lines at their means of metric m
// (scaled for display): "floor: <label>, <mean>".
func floorLines(lb *Leaderboard, m string) []plots.RefLine {
	l := lb.Spec
	var out []plots.RefLine
	for _, e := range lb.Floor {
		v := e.Stats[m].Mean
		if math.IsNaN(v) {
			continue
		}
		out = append(out, plots.RefLine{X: v * l.Factor(m), Label: fmt.Sprintf("floor: %s, %s", e.Method.Label, unitValue(v, l.Factor(m), l.DigitsOrDefault()))})
	}
	return out
}

// paretoCluster and paretoSpread fix the x axis of [ParetoFigure]: the leading cluster is the
// methods within 5 % of the leader's x, and the axis spans three times the cluster's width.
const (
	paretoCluster = 0.05
	paretoSpread  = 3.0
)

// ParetoFigure draws the ranked methods of lb by the Pareto metrics' means (x: the first,
// default the ranking metric; y: the second, default the first lower-is-better one), ± SE over
// seeds both ways, with their Pareto frontier and a numbered key. The y axis is logarithmic when
// the means drawn span a factor of 10 or more. The x axis shows the leading cluster
// ([paretoCluster]); methods further behind are listed in the key as off the axis. ok is false when
// the spec names no y metric.
func ParetoFigure(lb *Leaderboard, lm sweep.LabelMap) (ch *plots.Chart, ok bool, err error) {
	l := lb.Spec
	xm, ym, ok := paretoAxes(l)
	if !ok {
		return nil, false, nil
	}
	fx, fy := l.Factor(xm), l.Factor(ym)
	se := func(iv Interval, vals []float64) float64 {
		if iv.N < 2 {
			return 0
		}
		return sweep.MeanStd(vals).Std / math.Sqrt(float64(iv.N))
	}
	var pts []plots.Point
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range lb.Ranked() {
		x, y := e.Stats[xm], e.Stats[ym]
		if x.N == 0 || y.N == 0 || math.IsNaN(x.Mean) || math.IsNaN(y.Mean) {
			continue
		}
		pts = append(pts, plots.Point{X: x.Mean * fx, Y: y.Mean * fy, XErr: se(x, e.Values[xm]) * fx, YErr: se(y, e.Values[ym]) * fy,
			Label: methodLabel(e), Group: l.Group(e.Method)})
		lo, hi = math.Min(lo, y.Mean*fy), math.Max(hi, y.Mean*fy)
	}
	if len(pts) == 0 {
		return nil, true, fmt.Errorf("leaderboard %q: %w (no method has both %s and %s)", lb.Regime.Scale, ErrNoRecords, xm, ym)
	}
	// The leading cluster readable: the methods within paretoCluster of the leader's x set the
	// x axis's span, paretoSpread times theirs; points further behind are listed in the key as off
	// the axis (their frontier still counts them). Without it the methods that did not train
	// squeezed the leaders into one corner.
	opt := plots.ParetoOptions{MaxX: !l.Lower(xm), MaxY: !l.Lower(ym), Numbered: true, XName: lm.Key(xm), YName: lm.Key(ym)}
	if opt.MaxX {
		best := math.Inf(-1)
		for _, p := range pts {
			best = math.Max(best, p.X)
		}
		width := 0.0
		for _, p := range pts {
			if p.X >= best*(1-paretoCluster) {
				width = math.Max(width, best-p.X)
			}
		}
		if width > 0 {
			if xmin := best - paretoSpread*width; slices.ContainsFunc(pts, func(p plots.Point) bool { return p.X < xmin }) {
				opt.XMin, opt.HasXMin = xmin, true
				lo, hi = math.Inf(1), math.Inf(-1) // the y range of the points drawn
				for _, p := range pts {
					if p.X >= xmin {
						lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
					}
				}
			}
		}
	}
	logY := lo > 0 && hi/lo >= 10
	var extra []string
	if logY {
		extra = []string{"log scale"}
	}
	st := plots.PageStyle()
	st.Height = 3.2 * vg.Inch
	st.Slots = leaderboardSlots(l)
	// The y label without "test": gonum shrinks the data area to the height of a longer one.
	lab := plots.Labels{Title: lb.Regime.Label, X: axisText(l, lm, xm), Y: strings.TrimPrefix(axisText(l, lm, ym, extra...), "test ")}
	opt.LogY = logY
	opt.Refs = floorLines(lb, xm)
	ch, err = plots.Pareto(st, lab, pts, opt)
	return ch, true, err
}

// AgreementFigure draws the rank agreement: each common method's rank in the first regime (x)
// against the second (y), the diagonal, τ-b and its interval in the title.
func AgreementFigure(ra *RankAgreement, l *sweep.LeaderboardSpec, lm sweep.LabelMap) (*plots.Chart, error) {
	if !ra.Computed() {
		return nil, fmt.Errorf("rank agreement: %w (%s)", ErrNoRecords, ra.TauText())
	}
	// Numbered by the first regime's ranking, best first (ties in the spec's order).
	order := make([]int, len(ra.Methods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(ra.Ranks[0][a], ra.Ranks[0][b]) })
	var pts []plots.Point
	for _, i := range order {
		m := ra.Methods[i]
		pts = append(pts, plots.Point{X: ra.Ranks[0][i], Y: ra.Ranks[1][i], Label: m.Label, Group: l.Group(m)})
	}
	// Page width: the numbered key below the plot takes three columns of method names.
	st := plots.PageStyle()
	st.Height = 3.3 * vg.Inch
	st.Slots = leaderboardSlots(l)
	metric := lm.Key(ra.Metric)
	lab := plots.Labels{
		Title: "Kendall's " + ra.TauText() + " (95 % CI)",
		X:     "rank by " + metric + ": " + ra.Regimes[0].Label,
		Y:     "rank by " + metric + ": " + ra.Regimes[1].Label,
	}
	return plots.Agreement(st, lab, pts, plots.AgreementOptions{Numbered: len(pts) > 6, DiagonalLabel: "equal ranks"})
}

// RenderLeaderboardFigures draws the leaderboard and Pareto figures of scale into outDir and, when
// scale is one of the spec's regimes and it has two or more, the rank agreement of every pair of
// regimes into agreeDir ([Agreements], named by [AgreementName]; records: all scales), as PNG, SVG
// and PDF (or formats). Each result carries its caption for the figures' README
// ([WriteFigureReadme]); a figure with nothing to draw has an error wrapping ErrNoRecords.
func RenderLeaderboardFigures(w atomicfile.Writer, s *sweep.Spec, records []sweep.Record, scale, outDir, agreeDir string, formats ...string) (perScale, agreements []FigureResult, err error) {
	l := s.Leaderboard
	if l == nil {
		return nil, nil, fmt.Errorf("experiments: %s: no leaderboard section", s.Name())
	}
	lb, err := BuildLeaderboard(s, scale, records)
	if err != nil {
		return nil, nil, err
	}
	runs, _ := finalRuns(s, scale, records)
	var used []sweep.Record
	for _, m := range l.Methods {
		used = append(used, runs[m.ID]...)
	}
	lm := s.Labels
	m := lm.Key(l.Metrics[0])
	save := func(name string, ch *plots.Chart, err error, dir, caption string) FigureResult {
		res := FigureResult{Name: name, Records: used, Scale: scale, Caption: caption, Width: "column"}
		if err != nil {
			res.Err = fmt.Errorf("figure %q: %w", name, err)
			return res
		}
		if ch.Style.Width >= plots.PageWidth {
			res.Width = "page"
		}
		res.Files, res.Err = plots.SaveTo(w, ch, ch.Style, filepath.Join(dir, name), formats...)
		return res
	}
	floor := fmt.Sprintf("below %s × the best method's %s", judge.FmtNum(l.MinTrainOrDefault(), 2), lm.Key(sweep.TrainMetric))
	ch, err := LeaderboardFigure(lb, lm)
	perScale = append(perScale, save(FigLeaderboard, ch, err, outDir, fmt.Sprintf(
		"Leaderboard — %s (tables: leaderboard.md): each method's mean test %s (%s) over its seeds with the 95 %% t-interval (n − 1 degrees of freedom; no bar for one seed), best at the top. "+
			"Colour and marker: the seed paper that proposes the method, black for an earlier method (a baseline). "+
			"\"(did not train)\": its training R@1 is %s. Methods not run yet are left out (the table lists them).%s",
		lb.Regime.Label, m, unitWords(l.Factor(l.Metrics[0])), floor, floorCaption(lb, m))))
	if xm, ym, ok := paretoAxes(l); ok {
		ch, _, err := ParetoFigure(lb, lm)
		perScale = append(perScale, save(FigPareto, ch, err, outDir, fmt.Sprintf(
			"%s against %s — %s: every method run, means over seeds, bars ± SE both ways; colour and marker as in the leaderboard figure; numbers refer to the key below the plot. "+
				"The dashed staircase is the Pareto frontier (%s %s, %s %s); the %s axis is logarithmic when the means span a factor of 10.%s",
			titleCase(lm.Key(ym)), lm.Key(xm), lb.Regime.Label, betterWord(l.Lower(xm)), lm.Key(xm), betterWord(l.Lower(ym)), lm.Key(ym), lm.Key(ym), floorCaption(lb, lm.Key(xm)))))
	}
	if !slices.ContainsFunc(l.Regimes, func(r sweep.LeaderboardRegime) bool { return r.Scale == scale }) || len(l.Regimes) < 2 {
		return perScale, nil, nil
	}
	ras, err := Agreements(s, records)
	if err != nil {
		return nil, nil, err
	}
	for _, ra := range ras {
		ch, err = AgreementFigure(ra, l, lm)
		agreements = append(agreements, save(ra.Name, ch, err, agreeDir, fmt.Sprintf(
			"Rank agreement of %s (tables: %s.md): each method ranked in both, by its rank by mean test %s in the two regimes, %s (x) and %s (y); 1 is the best; the dashed diagonal: equal ranks. "+
				"Title: Kendall's τ-b between the regimes' means, with its 95 %% percentile bootstrap interval (B = %d replicates, each resampling every method's seeds with replacement in each regime independently; generator seed %d). "+
				"Drawn when at least %d methods are ranked in both.",
			ra.Subject(l, false), ra.Name, m, ra.Regimes[0].Label, ra.Regimes[1].Label, ra.B, ra.Seed, MinAgreementMethods)))
	}
	return perScale, agreements, nil
}

// floorCaption is the captions' sentence on the zero-shot floor's lines ("" without floor runs).
func floorCaption(lb *Leaderboard, metric string) string {
	if len(lb.Floor) == 0 {
		return ""
	}
	return fmt.Sprintf(" Grey vertical lines, one dash pattern per arm (named in the legend with its value): the zero-shot floor, each arm's mean test %s over its seeds with no optimiser step (the network as it starts); the table flags the losses not above the best of them, by the rule in its caption.", metric)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func unitWords(f float64) string {
	switch u := sweep.Unit(f); u {
	case "":
		return "as a fraction"
	case "%":
		return "in %"
	default:
		return u
	}
}

func betterWord(lower bool) string {
	if lower {
		return "lower"
	}
	return "higher"
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	return strings.ToUpper(string(r[0])) + string(r[1:])
}

// paretoAxes are the metrics of the Pareto figure's x and y; ok is false when there is no y.
func paretoAxes(l *sweep.LeaderboardSpec) (x, y string, ok bool) {
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

// baselineSlot is the style slot of the baselines (black in plots.PrintPalette); the seed papers
// take slots 0, 1, … in their order.
const baselineSlot = 6

// leaderboardSlots fixes each colour group's slot, so that a seed paper has one colour and marker
// in every figure of the leaderboard.
func leaderboardSlots(l *sweep.LeaderboardSpec) map[string]int {
	slots := map[string]int{}
	gs := l.Groups()
	for i, g := range gs[:len(gs)-1] {
		k := i
		if k >= baselineSlot {
			k++
		}
		slots[g] = k
	}
	slots[sweep.BaselineGroup] = baselineSlot
	return slots
}

// axisText is a metric's axis label: "test R@1 (%, higher is better)".
func axisText(l *sweep.LeaderboardSpec, lm sweep.LabelMap, m string, extra ...string) string {
	parts := []string{}
	if u := sweep.Unit(l.Factor(m)); u != "" {
		parts = append(parts, u)
	}
	if l.Lower(m) {
		parts = append(parts, "lower is better")
	} else {
		parts = append(parts, "higher is better")
	}
	parts = append(parts, extra...)
	return "test " + lm.Key(m) + " (" + strings.Join(parts, ", ") + ")"
}
