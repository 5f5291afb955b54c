package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"gonum.org/v1/plot"
)

// ErrNoRecords marks a figure or table for which no stored record matched.
var ErrNoRecords = errors.New("no stored results match")

// FigureResult reports one figure of [RenderFigures].
type FigureResult struct {
	Name  string
	Files []string
	Err   error // ErrNoRecords (wrapped) when there was nothing to draw
	// Records are the records the figure was drawn from (after scale and Where).
	Records []sweep.Record
	Scale   string
	// Caption and Width describe a figure drawn from another section of the spec than figures:
	// (the leaderboard's, [RenderLeaderboardFigures]); [WriteFigureReadme] lists such results
	// after the spec's figures. Empty for the spec's figures, whose FigureSpec says.
	Caption string
	Width   string
}

// FigureStyle is the style of figure f: st at the figure's print width (column: st as given,
// page: [plots.PageStyle]'s size and legend place), with the paper's slots.
func FigureStyle(f sweep.FigureSpec, st plots.Style) plots.Style {
	w := f.Width
	if w == "" && f.Kind == "embedding2d" {
		w = "page"
	}
	if w == "page" && st.Width < plots.PageWidth {
		pg := plots.PageStyle()
		st.Width, st.Height, st.Legend = pg.Width, pg.Height, pg.Legend
	}
	return st
}

// RenderFigures draws every figure of the spec from records into outDir (normally
// figures/<paper>), as PNG, SVG and PDF (or the given formats) in the given style, at each figure's
// print width, with the spec's labels and with the paper's slots ([PaperSlots]) so that a method
// has the same colour and marker in every figure. scale selects the records of figures that name
// no scale ("" = all scales). Each figure's outcome is reported separately. The files go through w
// (nil: [atomicfile.Disk]; an [*atomicfile.Batch] holds them until it commits).
func RenderFigures(w atomicfile.Writer, s *sweep.Spec, records []sweep.Record, scale, outDir string, st plots.Style, formats ...string) []FigureResult {
	if st.Slots == nil {
		st.Slots = PaperSlots(s, records, scale)
	}
	var out []FigureResult
	type highlight struct {
		values map[string]any
		err    error
	}
	highlights := map[string]highlight{}
	for _, f := range s.Figures {
		res := FigureResult{Name: f.Name}
		recs, sc := sweep.SelectFor(records, f.Scale, scale, f.Where)
		res.Records, res.Scale = recs, sc
		if len(recs) == 0 {
			res.Err = fmt.Errorf("figure %q: %w (scale %q)", f.Name, ErrNoRecords, sc)
			out = append(out, res)
			continue
		}
		if f.HighlightTune != "" {
			// One plan resolution per tuning step, however many figures outline its selection.
			if _, done := highlights[f.HighlightTune]; !done {
				h, err := s.TuneSelection(f.HighlightTune, scale, records)
				highlights[f.HighlightTune] = highlight{h, err}
			}
			h, err := highlights[f.HighlightTune].values, highlights[f.HighlightTune].err
			if err != nil {
				res.Err = fmt.Errorf("figure %q: field \"highlight_tune\": %w", f.Name, err)
				out = append(out, res)
				continue
			}
			f.Highlight = h
		}
		fst := FigureStyle(f, st)
		p, err := BuildFigureWith(f, recs, fst, s.Labels)
		if err != nil {
			res.Err = fmt.Errorf("figure %q: %w", f.Name, err)
			out = append(out, res)
			continue
		}
		res.Files, res.Err = plots.SaveTo(w, p, fst, filepath.Join(outDir, f.Name), formats...)
		out = append(out, res)
	}
	return out
}

// PaperSlots assigns every series name the figures of the spec draw (legend entries of groups,
// hues and bar series, after the labels map) its own slot of the style (colour, marker, dash; see
// plots.Style.Slots), so that a method looks the same in every figure of the paper. Names are
// taken in the order of the labels map, then in their order of first appearance, figure by
// figure; each gets the lowest free slot whose colour no name it shares a figure with has
// already (the palette's colours repeat after len(palette) slots, with other markers and dashes).
func PaperSlots(s *sweep.Spec, records []sweep.Record, scale string) map[string]int {
	var seen []string
	have := map[string]bool{}
	peers := map[string]map[string]bool{} // names drawn in one figure with the name
	for _, f := range s.Figures {
		recs, _ := sweep.SelectFor(records, f.Scale, scale, f.Where)
		names := seriesNames(f, recs, s.Labels)
		for _, n := range names {
			if !have[n] {
				have[n] = true
				seen = append(seen, n)
				peers[n] = map[string]bool{}
			}
			for _, m := range names {
				peers[n][m] = true
			}
		}
	}
	var order []string
	inOrder := map[string]bool{}
	for _, k := range s.Labels.Keys {
		if t := s.Labels.Text[k]; have[t] && !inOrder[t] {
			inOrder[t] = true
			order = append(order, t)
		}
	}
	for _, n := range seen {
		if !inOrder[n] {
			order = append(order, n)
		}
	}
	nc := len(plots.DefaultStyle().Palette)
	slots := map[string]int{}
	used := map[int]bool{}
	for _, n := range order {
		taken := map[int]bool{}
		for m := range peers[n] {
			if k, ok := slots[m]; ok {
				taken[k%nc] = true
			}
		}
		k := 0
		for used[k] || (taken[k%nc] && len(taken) < nc) {
			k++
		}
		slots[n] = k
		used[k] = true
	}
	return slots
}

// seriesNames are the names of the series (legend entries that carry a colour) of figure f.
func seriesNames(f sweep.FigureSpec, recs []sweep.Record, lm sweep.LabelMap) []string {
	var out []string
	switch f.Kind {
	case "line", "utility", "histogram":
		for _, g := range lm.SortGroups(sweep.GroupBy(recs, f.Group)) {
			if n := lm.GroupName(g); n != "" {
				out = append(out, n)
			}
		}
	case "pareto":
		if f.Hue != "" {
			seen := map[string]bool{}
			for _, g := range lm.SortGroups(sweep.GroupBy(recs, []string{f.Hue})) {
				v := g.Values[0]
				if e, ok := v.(string); ok && f.HueBase {
					v = baseTerm(e)
				}
				if n := lm.Of(f.Hue, v); !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	case "bar":
		if f.Hue != "" {
			for _, g := range lm.SortGroups(sweep.GroupBy(recs, barHueKeys(f))) {
				out = append(out, lm.GroupName(g))
			}
		}
	}
	return out
}

// BuildFigure turns the (already selected) records into the figure f describes, without labels
// (see [BuildFigureWith]).
func BuildFigure(f sweep.FigureSpec, recs []sweep.Record, st plots.Style) (plots.Figure, error) {
	return BuildFigureWith(f, recs, st, sweep.LabelMap{})
}

// BuildFigureWith turns the (already selected) records into the figure f describes, with the texts
// of the labels map: a *plots.Chart, or for embedding2d a *plots.EmbeddingFigure. A point (curve,
// cell, bar, panel; see pointKeys) with two records of one seed is an error ([Group.CheckSeeds]):
// it would average, or pool, mixed configurations as if they were seeds.
func BuildFigureWith(f sweep.FigureSpec, recs []sweep.Record, st plots.Style, lm sweep.LabelMap) (plots.Figure, error) {
	for _, g := range sweep.GroupBy(recs, pointKeys(f)) {
		if err := g.CheckSeeds(); err != nil {
			return nil, fmt.Errorf("point %w", err)
		}
	}
	// A NaN metric would reach the plotter as "NaN data point", naming nothing.
	for _, m := range scalarMetrics(f) {
		for _, r := range recs {
			if v, ok := r.Metrics[m]; ok && math.IsNaN(v) {
				return nil, fmt.Errorf("metric %q is NaN in %s: mark the run failed or narrow the where", m, r.Where())
			}
		}
	}
	factor := f.Factor
	if factor == 0 {
		factor = 1
	}
	l := plots.Labels{Title: f.Title, X: f.XLabel, Y: f.YLabel}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	groups := func(keys []string) []*sweep.Group { return lm.SortGroups(sweep.GroupBy(recs, keys)) }
	var ch *plots.Chart
	var err error
	switch f.Kind {
	case "line":
		if len(f.Series) == 1 {
			def(&l.X, "epoch")
			def(&l.Y, lm.Name(f.Series[0]))
			var series []plots.Series
			n := 0
			for _, g := range groups(f.Group) {
				vals, err := seriesOf(g, f.Series[0])
				if err != nil {
					return nil, err
				}
				if f.Normalize == "first" {
					if vals, err = normalizeFirst(vals); err != nil {
						return nil, fmt.Errorf("group %s: %w", g.Label(), err)
					}
				}
				mean, se := pointwiseSE(vals, factor)
				x := make([]float64, len(mean))
				for i := range x {
					x[i] = float64(i + 1)
				}
				if f.XSeries != "" {
					// The mean runs over the evaluations all seeds have (pointwise truncates to the
					// shortest run: the last evaluation of a run whose final step falls on an
					// evaluation step is not repeated), so x comes from a run of that length.
					var xs []float64
					for _, r := range g.Records {
						if v := r.Series[f.Series[0]]; len(v) == len(x) {
							xs = r.Series[f.XSeries]
							break
						}
					}
					if len(xs) != len(x) {
						return nil, fmt.Errorf("group %s: x series %q has %d values for %d evaluations", g.Label(), f.XSeries, len(xs), len(x))
					}
					copy(x, xs)
				}
				n = max(n, len(x))
				series = append(series, plots.Series{Name: lm.GroupName(g), X: x, Y: mean, Err: se, Markers: len(x) <= 25})
			}
			if ch, err = linesLogY(st, l, series, f.LogY); err != nil {
				return nil, err
			}
			var ticks plot.ConstantTicks
			for i, t := range f.XTicks {
				ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: t})
			}
			if len(f.XTicks) == 0 && n <= 12 && f.XSeries == "" { // evaluations are whole numbers
				for i := 1; i <= n; i++ {
					ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprint(i)})
				}
			}
			if len(ticks) > 0 {
				ch.Plot.X.Tick.Marker = ticks
			}
			if f.LogX {
				var all []float64
				for _, s := range series {
					for _, x := range s.X {
						if !(x > 0) {
							return nil, fmt.Errorf("log_x: x value %g of %s is not positive", x, s.Name)
						}
						all = append(all, x)
					}
				}
				ch.LogX(decadesIn(all)...)
			}
			break
		}
		def(&l.X, lm.Name(f.X))
		def(&l.Y, lm.Name(f.Y))
		var series []plots.Series
		var xs []float64
		for _, g := range groups(f.Group) {
			s := plots.Series{Name: lm.GroupName(g), Markers: true}
			for _, xg := range sweep.GroupBy(derefs(g.Records), []string{f.X}) {
				xv, ok := sweep.Numeric(xg.Values[0])
				if xg.Values[0] == nil && f.XMissing != nil {
					xv, ok = *f.XMissing, true
				}
				if !ok {
					return nil, fmt.Errorf("x key %q has the non-numeric value %q", f.X, sweep.FormatValue(xg.Values[0]))
				}
				ys := xg.Stat(f.Y)
				if ys.N == 0 {
					continue
				}
				s.X = append(s.X, xv)
				s.Y = append(s.Y, ys.Mean*factor)
				s.Err = append(s.Err, stdErr(ys)*factor)
				xs = append(xs, xv)
			}
			if len(s.X) == 0 {
				return nil, fmt.Errorf("no record has the metric %q", f.Y)
			}
			sortByX(&s) // records without X (x_missing) come out of GroupBy last
			series = append(series, s)
		}
		if ch, err = linesLogY(st, l, series, f.LogY); err != nil {
			return nil, err
		}
		if f.LogX {
			ch.LogX(distinct(xs)...)
		}
	case "pareto":
		def(&l.X, lm.Name(f.X))
		def(&l.Y, lm.Name(f.Y))
		pts, opt, err := paretoPointsWith(f, recs, factor, lm)
		if err != nil {
			return nil, err
		}
		if ch, err = plots.Pareto(st, l, pts, opt); err != nil {
			return nil, err
		}
	case "heatmap":
		def(&l.X, lm.Name(f.X))
		def(&l.Y, lm.Name(f.Y))
		cols := sweep.GroupBy(recs, []string{f.X})
		rows := sweep.GroupBy(recs, []string{f.Y})
		g := plots.Grid{Digits: 2, Scale: lm.Name(f.Metric)}
		if l.Title == "" {
			l.Title = lm.Name(f.Metric)
			g.Scale = ""
		}
		if f.Digits != nil {
			g.Digits = *f.Digits
		}
		colIdx := map[string]int{}
		for i, c := range cols {
			g.XLabels = append(g.XLabels, lm.Of(f.X, c.Values[0]))
			colIdx[sweep.FormatValue(c.Values[0])] = i
		}
		for ri, r := range rows {
			g.YLabels = append(g.YLabels, lm.Of(f.Y, r.Values[0]))
			row := make([]float64, len(cols))
			for i := range row {
				row[i] = math.NaN()
			}
			for _, cell := range sweep.GroupBy(derefs(r.Records), []string{f.X}) {
				ci := colIdx[sweep.FormatValue(cell.Values[0])]
				if s := cell.Stat(f.Metric); s.N > 0 {
					row[ci] = s.Mean * factor
				}
				// A highlight names x, y or both; an axis it does not name matches every cell
				// (a 1-D selection on a heatmap whose other axis is fixed).
				hx, okx := f.Highlight[f.X]
				hy, oky := f.Highlight[f.Y]
				if (okx || oky) && (!okx || sweep.ValueEqual(hx, cell.Values[0])) && (!oky || sweep.ValueEqual(hy, r.Values[0])) {
					g.Marked = append(g.Marked, [2]int{ri, ci})
				}
			}
			g.Z = append(g.Z, row)
		}
		if len(f.Highlight) > 0 && len(g.Marked) == 0 {
			return nil, fmt.Errorf("field \"highlight\": no cell has %v", f.Highlight)
		}
		if ch, err = plots.Heatmap(st, l, g); err != nil {
			return nil, err
		}
	case "histogram":
		def(&l.Y, "density")
		var samples []plots.Sample
		for _, g := range groups(f.Group) {
			for _, name := range f.Series {
				var pooled []float64
				for _, r := range g.Records {
					pooled = append(pooled, r.Series[name]...)
				}
				if len(pooled) == 0 {
					return nil, fmt.Errorf("group %s: no record has the series %q", g.Label(), name)
				}
				label := lm.Name(name)
				if len(f.Group) > 0 {
					label = lm.GroupName(g) + ": " + label
				}
				samples = append(samples, plots.Sample{Name: label, Values: scaled(pooled, factor)})
			}
		}
		if ch, err = plots.Histograms(st, l, samples, f.Bins); err != nil {
			return nil, err
		}
	case "utility":
		def(&l.Y, lm.Name(f.Series[0]))
		def(&l.X, "fraction of classes")
		var series []plots.Series
		for _, g := range groups(f.Group) {
			vals, err := seriesOf(g, f.Series[0])
			if err != nil {
				return nil, err
			}
			sorted := make([][]float64, len(vals))
			for i, v := range vals {
				_, sorted[i] = plots.SortedCurve(v)
			}
			mean, se := pointwiseSE(sorted, factor)
			x := make([]float64, len(mean))
			for i := range x {
				x[i] = float64(i+1) / float64(len(mean))
			}
			series = append(series, plots.Series{Name: lm.GroupName(g), X: x, Y: mean, Err: se})
		}
		if ch, err = plots.Lines(st, l, series); err != nil {
			return nil, err
		}
	case "density2d":
		def(&l.X, lm.Name(f.Series[0]))
		def(&l.Y, lm.Name(f.Series[1]))
		var xs, ys []float64
		for _, r := range recs {
			x, y := r.Series[f.Series[0]], r.Series[f.Series[1]]
			if len(x) != len(y) {
				return nil, fmt.Errorf("record %s: series %q has %d values but %q has %d", r.Hash, f.Series[0], len(x), f.Series[1], len(y))
			}
			xs = append(xs, x...)
			ys = append(ys, y...)
		}
		if len(xs) == 0 {
			return nil, fmt.Errorf("no record has the series %q and %q", f.Series[0], f.Series[1])
		}
		if ch, err = plots.Density2D(st, l, xs, ys, f.Bins); err != nil {
			return nil, err
		}
	case "bar":
		def(&l.Y, lm.Name(f.Y))
		def(&l.X, lm.Name(f.X))
		cats := groups([]string{f.X})
		var names []string
		catIdx := map[string]int{}
		for i, c := range cats {
			names = append(names, lm.Of(f.X, c.Values[0]))
			catIdx[sweep.FormatValue(c.Values[0])] = i
		}
		hueKeys := barHueKeys(f)
		var series []plots.BarSeries
		for _, h := range groups(hueKeys) {
			bs := plots.BarSeries{Values: make([]float64, len(cats)), Err: make([]float64, len(cats))}
			if f.Hue != "" {
				bs.Name = lm.GroupName(h)
			}
			for _, c := range sweep.GroupBy(derefs(h.Records), []string{f.X}) {
				s := c.Stat(f.Y)
				if s.N == 0 {
					continue
				}
				i := catIdx[sweep.FormatValue(c.Values[0])]
				bs.Values[i] = s.Mean * factor
				bs.Err[i] = stdErr(s) * factor
			}
			series = append(series, bs)
		}
		if ch, err = plots.Bars(st, l, names, series); err != nil {
			return nil, err
		}
	case "embedding2d":
		return embedding2D(f, recs, st, l, lm)
	default:
		return nil, fmt.Errorf("unknown kind %q", f.Kind)
	}
	ch.RotateXTicks(f.XTickAngle)
	return ch, nil
}

// stdErr is the standard error of the mean std/√n (0 for n < 2).
func stdErr(s sweep.Stat) float64 {
	if s.N < 2 {
		return 0
	}
	return s.Std / math.Sqrt(float64(s.N))
}

// pointwiseSE is [pointwise] with the standard error of the mean (std/√n over the vectors)
// instead of the std.
func pointwiseSE(vals [][]float64, factor float64) (mean, se []float64) {
	mean, se = pointwise(vals, factor)
	for i := range se {
		se[i] /= math.Sqrt(float64(len(vals)))
	}
	return mean, se
}

// distinct returns the distinct values, sorted.
func distinct(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// embedding2D builds the panels of an embedding2d figure: per group, the record with the lowest
// seed (the first in store order among equals).
func embedding2D(f sweep.FigureSpec, recs []sweep.Record, st plots.Style, l plots.Labels, lm sweep.LabelMap) (*plots.EmbeddingFigure, error) {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&l.X, lm.Name(f.Series[0]))
	def(&l.Y, lm.Name(f.Series[1]))
	var panels []plots.EmbeddingPanel
	for _, g := range lm.SortGroups(sweep.GroupBy(recs, f.Group)) {
		r := g.Records[0]
		for _, c := range g.Records[1:] {
			if c.Seed < r.Seed {
				r = c
			}
		}
		var p plots.EmbeddingPanel
		for i, dst := range []*[]float64{&p.X, &p.Y, &p.Labels} {
			v, ok := r.Series[f.Series[i]]
			if !ok || len(v) == 0 {
				return nil, fmt.Errorf("group %s: record %s (seed %d) has no series %q", g.Label(), r.Hash, r.Seed, f.Series[i])
			}
			*dst = v
		}
		if len(p.X) != len(p.Y) || len(p.X) != len(p.Labels) {
			return nil, fmt.Errorf("group %s: record %s (seed %d): series %q, %q and %q have %d, %d and %d values",
				g.Label(), r.Hash, r.Seed, f.Series[0], f.Series[1], f.Series[2], len(p.X), len(p.Y), len(p.Labels))
		}
		p.Title = lm.GroupName(g)
		r1 := ""
		if v, ok := r.Metrics["R@1"]; ok { // what the drawn model retrieves, beside its picture
			r1 = fmt.Sprintf(", R@1 %.2f", v)
		}
		if span, n := classArc(p.X, p.Y, p.Labels); n > 1 && span < 10 { // a collapsed embedding says so
			r1 += fmt.Sprintf("; %d classes within %.1f°", n, span)
		}
		if len(g.Records) > 1 {
			p.Title = strings.TrimPrefix(fmt.Sprintf("%s (seed %d, first of %d runs%s)", p.Title, r.Seed, len(g.Records), r1), " ")
		} else {
			p.Title = strings.TrimPrefix(fmt.Sprintf("%s (seed %d%s)", p.Title, r.Seed, r1), " ")
		}
		panels = append(panels, p)
	}
	return plots.Embedding2D(st, l, panels)
}

// classArc returns the smallest arc (degrees) that holds the mean directions of all classes of a
// 2-D embedding, and the number of classes (a collapsed embedding maps them all to a few degrees).
func classArc(x, y, labels []float64) (span float64, n int) {
	sx, sy := map[float64]float64{}, map[float64]float64{}
	for i := range x {
		r := math.Hypot(x[i], y[i])
		if r == 0 {
			continue
		}
		sx[labels[i]] += x[i] / r
		sy[labels[i]] += y[i] / r
	}
	var a []float64
	for c := range sx {
		a = append(a, math.Atan2(sy[c], sx[c]))
	}
	sort.Float64s(a)
	if len(a) < 2 {
		return 0, len(a)
	}
	gap := a[0] + 2*math.Pi - a[len(a)-1] // the largest empty gap; the arc is the rest
	for i := 1; i < len(a); i++ {
		gap = math.Max(gap, a[i]-a[i-1])
	}
	return (2*math.Pi - gap) * 180 / math.Pi, len(a)
}

func groupName(g *sweep.Group) string {
	return sweep.LabelMap{}.GroupName(g)
}

func derefs(rs []*sweep.Record) []sweep.Record {
	out := make([]sweep.Record, len(rs))
	for i, r := range rs {
		out[i] = *r
	}
	return out
}

func scaled(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// seriesOf collects one series from every record of the group.
func seriesOf(g *sweep.Group, name string) ([][]float64, error) {
	var out [][]float64
	for _, r := range g.Records {
		if v, ok := r.Series[name]; ok && len(v) > 0 {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("group %s: no record has the series %q", g.Label(), name)
	}
	return out, nil
}

// pointwise returns the mean and sample std over the vectors at each index, truncated to the
// shortest vector (runs of a group may have stopped at different epochs), scaled by factor.
func pointwise(vals [][]float64, factor float64) (mean, std []float64) {
	n := len(vals[0])
	for _, v := range vals {
		n = min(n, len(v))
	}
	mean = make([]float64, n)
	std = make([]float64, n)
	col := make([]float64, len(vals))
	for i := 0; i < n; i++ {
		for j, v := range vals {
			col[j] = v[i]
		}
		s := sweep.MeanStd(col)
		mean[i] = s.Mean * factor
		std[i] = s.Std * factor
	}
	return mean, std
}

// paretoPoints are the points of a pareto figure without labels (see [paretoPointsWith]); mark is
// the legend entry of the rings ("" without Mark).
func paretoPoints(f sweep.FigureSpec, recs []sweep.Record, factor float64) (pts []plots.Point, mark string, err error) {
	pts, opt, err := paretoPointsWith(f, recs, factor, sweep.LabelMap{})
	return pts, opt.MarkLabel, err
}

// paretoPointsWith are the points of a pareto figure: one per Group (means over its seeds, times
// factor, with ± SE error bars), coloured by Hue (or its base loss, HueBase), sized by Size and
// filled when Mark is in the MarkKey value (see [FigureSpec]), with the options of [plots.Pareto].
func paretoPointsWith(f sweep.FigureSpec, recs []sweep.Record, factor float64, lm sweep.LabelMap) (pts []plots.Point, opt plots.ParetoOptions, err error) {
	opt.MaxX, opt.MaxY = f.MaxX == nil || *f.MaxX, f.MaxY == nil || *f.MaxY
	opt.LogY, opt.Numbered = f.LogY, f.Numbered
	opt.XName, opt.YName = shortKey(lm.Key(f.X)), shortKey(lm.Key(f.Y))
	if f.XMin != nil {
		opt.XMin, opt.HasXMin = *f.XMin*factor, true
	}
	markKey := f.MarkKey
	if markKey == "" {
		markKey = f.Hue
	}
	sizeOf := map[float64]string{}
	groups := sweep.GroupBy(recs, f.Group)
	// The value most groups share, per key after the first: left out of the point labels.
	common := make([]string, len(f.Group))
	for k := 1; k < len(f.Group); k++ {
		count := map[string]int{}
		for _, g := range groups {
			count[sweep.FormatValue(g.Values[k])]++
		}
		best := -1
		for _, g := range groups {
			if v := sweep.FormatValue(g.Values[k]); count[v] > best {
				common[k], best = v, count[v]
			}
		}
	}
	for _, g := range groups {
		sx, sy := g.Stat(f.X), g.Stat(f.Y)
		if sx.N == 0 || sy.N == 0 {
			continue
		}
		hue := ""
		if f.Hue != "" {
			v, _ := g.Records[0].Value(f.Hue)
			if f.HueBase {
				if e, ok := v.(string); ok {
					v = baseTerm(e)
				}
			}
			hue = lm.Of(f.Hue, v)
		}
		pt := plots.Point{X: sx.Mean * factor, Y: sy.Mean * factor, XErr: stdErr(sx) * factor, YErr: stdErr(sy) * factor, Group: hue}
		if f.LogY {
			if !(pt.Y > 0) {
				return nil, opt, fmt.Errorf("log_y: y value %g of %s is not positive", pt.Y, g.Label())
			}
			pt.YErr = math.Min(pt.YErr, 0.9*pt.Y) // a bar's lower end at y/10 at most (see logYSeries)
		}
		if !f.NoLabels {
			pt.Label = lm.GroupName(g)
			if f.Numbered {
				var parts []string
				for k, key := range g.Keys {
					v := g.Values[k]
					if k > 0 && (v == nil || sweep.FormatValue(v) == common[k]) {
						continue
					}
					if t, ok := lm.Lookup(key, v); ok {
						parts = append(parts, t)
					} else if k == 0 {
						parts = append(parts, lm.Value(key, v))
					} else {
						parts = append(parts, shortKey(lm.Key(key))+" "+lm.Value(key, v))
					}
				}
				pt.Label = strings.Join(parts, ", ")
				if n := len(g.Records); n == 1 {
					pt.Label += " (1 seed)"
				}
			}
		}
		if f.Size != "" {
			v, ok := g.Records[0].Value(f.Size)
			x, isNum := sweep.Numeric(v)
			if !ok || !isNum || x <= 0 {
				return nil, opt, fmt.Errorf("field \"size\": %q is %v in a record, want a positive number", f.Size, v)
			}
			pt.Size = x
			if t, ok := lm.Lookup(f.Size, v); ok {
				sizeOf[x] = t
			} else {
				sizeOf[x] = lm.Name(f.Size) + " " + sweep.FormatValue(v)
			}
		}
		if f.Mark != "" {
			v, _ := g.Records[0].Value(markKey)
			pt.Marked = strings.Contains(sweep.FormatValue(v), f.Mark)
		}
		pts = append(pts, pt)
	}
	if len(pts) == 0 {
		return nil, opt, fmt.Errorf("no record has both metrics %q and %q", f.X, f.Y)
	}
	if f.Hue != "" && len(lm.Keys) > 0 {
		rank := map[string]int{}
		for i, k := range lm.Keys {
			if _, ok := rank[lm.Text[k]]; !ok {
				rank[lm.Text[k]] = i
			}
		}
		r := func(s string) int {
			if i, ok := rank[s]; ok {
				return i
			}
			return len(lm.Keys)
		}
		sort.SliceStable(pts, func(a, b int) bool { return r(pts[a].Group) < r(pts[b].Group) })
	}
	if f.Numbered { // numbers in the order of the x values, best first
		sort.SliceStable(pts, func(a, b int) bool {
			if opt.MaxX {
				return pts[a].X > pts[b].X
			}
			return pts[a].X < pts[b].X
		})
	}
	if f.Size != "" { // radius ∝ √(value / smallest): marker area proportional to the value
		lo := math.Inf(1)
		for _, p := range pts {
			lo = math.Min(lo, p.Size)
		}
		for i := range pts {
			pts[i].Size = math.Sqrt(pts[i].Size / lo)
		}
		var vals []float64
		for v := range sizeOf {
			vals = append(vals, v)
		}
		for _, v := range distinct(vals) {
			opt.Sizes = append(opt.Sizes, plots.SizeKey{Label: sizeOf[v], Size: math.Sqrt(v / lo)})
		}
	}
	if f.Mark != "" {
		opt.MarkLabel = f.MarkLabel
		if opt.MarkLabel == "" {
			opt.MarkLabel = "with " + f.Mark
		}
		opt.UnmarkLabel = f.UnmarkLabel
	}
	return pts, opt, nil
}

// baseTerm is the first term of a loss expression without its weight and options: "rsk+tcm(…)"
// → "rsk", "0.9*smoothap+0.1*simreg" → "smoothap".
func baseTerm(expr string) string {
	t := sweep.SplitTop(expr, '+')[0]
	if i := strings.IndexByte(t, '*'); i >= 0 {
		t = t[i+1:]
	}
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = t[:i]
	}
	return t
}

// shortKey is a key's text without a parenthetical ("m+ (positive margin)" → "m+").
func shortKey(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	return s
}

// barHueKeys are the keys of the bars within a category of a bar figure: Hue, then Group (a
// legend entry that needs two keys, e.g. a loss and the base loss it regularises).
func barHueKeys(f sweep.FigureSpec) []string {
	if f.Hue == "" {
		return nil
	}
	return append([]string{f.Hue}, f.Group...)
}

// scalarMetrics are the record metrics figure f draws (not its series).
func scalarMetrics(f sweep.FigureSpec) []string {
	switch f.Kind {
	case "line":
		if len(f.Series) == 0 {
			return []string{f.Y}
		}
	case "bar":
		return []string{f.Y}
	case "heatmap":
		return []string{f.Metric}
	case "pareto":
		return []string{f.X, f.Y}
	}
	return nil
}

// pointKeys are the keys whose values make one point (curve, cell, bar) of figure f: the records
// sharing them are averaged over seeds.
func pointKeys(f sweep.FigureSpec) []string {
	switch f.Kind {
	case "heatmap":
		return []string{f.X, f.Y}
	case "bar":
		return append([]string{f.X}, barHueKeys(f)...)
	case "line":
		if len(f.Series) == 0 {
			return append(append([]string{}, f.Group...), f.X)
		}
	case "density2d":
		return nil
	}
	return f.Group
}

// seedSummary says which seeds the records hold and how many runs make each point of f.
func seedSummary(f sweep.FigureSpec, recs []sweep.Record) string {
	seen := map[int64]bool{}
	var seeds []int64
	for _, r := range recs {
		if !seen[r.Seed] {
			seen[r.Seed] = true
			seeds = append(seeds, r.Seed)
		}
	}
	sort.Slice(seeds, func(i, j int) bool { return seeds[i] < seeds[j] })
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	lo, hi := math.MaxInt, 0
	for _, g := range sweep.GroupBy(recs, pointKeys(f)) {
		lo, hi = min(lo, len(g.Records)), max(hi, len(g.Records))
	}
	n := fmt.Sprint(lo)
	if hi != lo {
		n = fmt.Sprintf("%d–%d", lo, hi)
	}
	runs := "runs"
	if hi == 1 {
		runs = "run"
	}
	what := runs + " (seeds) per point"
	switch f.Kind {
	case "embedding2d":
		what = runs + " per panel (the lowest seed is drawn)"
	case "density2d":
		what = runs + " pooled"
	}
	seedWord := "seeds"
	if len(seeds) == 1 {
		seedWord = "seed"
	}
	return fmt.Sprintf("%s %s; %s %s", seedWord, strings.Join(parts, ", "), n, what)
}

// spread says how the figure shows the spread over seeds.
func spread(f sweep.FigureSpec) string {
	switch f.Kind {
	case "line":
		return fmt.Sprintf("Mean ± standard error (SE = std/√n) over seeds: bands along lines; a series of fewer than %d values is drawn as points with error bars, without a line; no bar or band where n = 1", plots.MinLinePoints)
	case "utility", "bar":
		return "Mean ± standard error (SE = std/√n) over seeds; no bar or band where n = 1"
	case "pareto":
		return "Each point the mean over its seeds, bars ± standard error in both directions (none where n = 1)"
	case "heatmap":
		return "Each cell the mean over its seeds"
	case "histogram", "density2d":
		return "Values pooled over seeds"
	}
	return ""
}

// WriteFigureReadme writes outDir/README.md: for every figure of the spec, its caption, the paper
// figure it stands for, the scale, the seeds and the spread shown, and its files (from the results
// of [RenderFigures]); then the other files of the directory, which the spec does not draw. The
// README goes through w (nil: [atomicfile.Disk]).
func WriteFigureReadme(w atomicfile.Writer, s *sweep.Spec, results []FigureResult, outDir string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Figures: %s\n\n", s.Paper)
	sections := "the `figures:` section"
	if s.Leaderboard != nil {
		sections = "the `figures:` and `leaderboard:` sections"
	}
	fmt.Fprintf(&b, "Generated by `dmlkit figures %s` from the stored results and "+sections+" of the spec "+
		"(captions included); do not edit by hand. Every figure is a PNG (300 dpi), an SVG and a PDF at print size: "+
		"column width (3.3 in) or page width (6.9 in), fonts ≥ 8 pt, Okabe–Ito colours with one colour and marker per "+
		"method across all figures. Regenerating gives byte-identical files.\n", s.Paper)
	byName := map[string]FigureResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	drawn := map[string]bool{"README.md": true}
	for _, f := range s.Figures {
		r := byName[f.Name]
		title := f.Name
		if f.StandsFor != "" {
			title += " — " + f.StandsFor
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		if r.Err != nil || len(r.Files) == 0 {
			msg := "not drawn"
			if r.Err != nil {
				msg += ": " + r.Err.Error()
			}
			fmt.Fprintf(&b, "*%s*\n", msg)
			if f.Caption != "" {
				fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(f.Caption))
			}
			continue
		}
		links, png := figureLinks(r.Files, drawn)
		if png != "" {
			fmt.Fprintf(&b, "![%s](%s)\n\n", f.Name, png)
		}
		if f.Caption != "" {
			fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(f.Caption))
		}
		width := f.Width
		if width == "" {
			width = "column"
			if f.Kind == "embedding2d" {
				width = "page"
			}
		}
		facts := []string{"Scale: " + r.Scale, "S" + seedSummary(f, r.Records)[1:]}
		if sp := spread(f); sp != "" {
			facts = append(facts, sp)
		}
		facts = append(facts, strings.ToUpper(width[:1])+width[1:]+" width", strings.Join(links, " · "))
		fmt.Fprintf(&b, "%s.\n", strings.Join(facts, ". "))
	}
	// Figures drawn from other sections of the spec (the leaderboard's), in the order given.
	for _, r := range results {
		if r.Caption == "" || slices.ContainsFunc(s.Figures, func(f sweep.FigureSpec) bool { return f.Name == r.Name }) {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", r.Name)
		if r.Err != nil || len(r.Files) == 0 {
			msg := "not drawn"
			if r.Err != nil {
				msg += ": " + r.Err.Error()
			}
			fmt.Fprintf(&b, "*%s*\n\n%s\n", msg, strings.TrimSpace(r.Caption))
			continue
		}
		links, png := figureLinks(r.Files, drawn)
		if png != "" {
			fmt.Fprintf(&b, "![%s](%s)\n\n", r.Name, png)
		}
		width := r.Width
		if width == "" {
			width = "column"
		}
		fmt.Fprintf(&b, "%s\n\nScale: %s. %s width. %s.\n", strings.TrimSpace(r.Caption), r.Scale, strings.ToUpper(width[:1])+width[1:], strings.Join(links, " · "))
	}
	if entries, err := os.ReadDir(outDir); err == nil {
		var other []string
		for _, e := range entries {
			if !e.IsDir() && !drawn[e.Name()] && !strings.HasSuffix(e.Name(), ".tmp") {
				other = append(other, e.Name())
			}
		}
		if len(other) > 0 {
			fmt.Fprintf(&b, "\n## Other files\n\nNot drawn from the spec's `figures:` (made by tests or notebooks; see the reproduction's README): %s.\n",
				"`"+strings.Join(other, "`, `")+"`")
		}
	}
	path := filepath.Join(outDir, "README.md")
	return path, writeOut(w, path, []byte(b.String()))
}

// linesLogY is plots.Lines with, when logY, the series checked and their bands clipped for a log
// y axis (logYSeries) and the axis put on it.
func linesLogY(st plots.Style, l plots.Labels, series []plots.Series, logY bool) (*plots.Chart, error) {
	if logY {
		if err := logYSeries(series); err != nil {
			return nil, err
		}
	}
	ch, err := plots.Lines(st, l, series)
	if err == nil && logY {
		ch.LogY()
	}
	return ch, err
}

// logYSeries checks that every mean of a log_y figure is positive and clips each band's lower
// edge to a tenth of its mean (a standard error at or above the mean has no lower edge on a log
// axis: the band then reaches one decade down). It changes the series' Err in place.
func logYSeries(series []plots.Series) error {
	for i := range series {
		s := &series[i]
		for j, y := range s.Y {
			if !(y > 0) {
				return fmt.Errorf("log_y: y value %g of %s at x = %g is not positive", y, s.Name, s.X[j])
			}
			if j < len(s.Err) && s.Err[j] > 0.9*y {
				s.Err[j] = 0.9 * y // the band's lower edge at y/10
			}
		}
	}
	return nil
}

// decadesIn returns the powers of ten within the range of xs (all > 0), the ticks of a log axis
// spanning several decades (e.g. an ROC's false accept rates 1e-5 … 1); with fewer than two
// decades in range, the distinct values themselves.
func decadesIn(xs []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	var out []float64
	for e := math.Ceil(math.Log10(lo) - 1e-9); e <= math.Floor(math.Log10(hi)+1e-9); e++ {
		out = append(out, math.Pow(10, e))
	}
	if len(out) < 2 {
		return distinct(xs)
	}
	return out
}

// normalizeFirst divides every vector by its first finite, non-zero value (copies; the records
// are not changed).
func normalizeFirst(vals [][]float64) ([][]float64, error) {
	out := make([][]float64, len(vals))
	for i, v := range vals {
		first := math.NaN()
		for _, x := range v {
			if !math.IsNaN(x) && !math.IsInf(x, 0) && x != 0 {
				first = x
				break
			}
		}
		if math.IsNaN(first) {
			return nil, errors.New("normalize first: a series has no finite non-zero value")
		}
		out[i] = make([]float64, len(v))
		for j, x := range v {
			out[i][j] = x / first
		}
	}
	return out, nil
}

// sortByX orders a series' points by x (stable), keeping each point's y and error bar with it.
func sortByX(s *plots.Series) {
	idx := make([]int, len(s.X))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.X[idx[a]] < s.X[idx[b]] })
	x, y, e := make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		x[i], y[i] = s.X[j], s.Y[j]
		if j < len(s.Err) {
			e[i] = s.Err[j]
		}
	}
	s.X, s.Y = x, y
	if len(s.Err) > 0 {
		s.Err = e
	}
}

// figureLinks is a drawn figure's files for the figures README: a "[PNG](name.png)"-style link per
// file, and the PNG's name ("" when none), each file marked in drawn (the files the README
// names; the others are listed apart).
func figureLinks(files []string, drawn map[string]bool) (links []string, png string) {
	for _, file := range files {
		base := filepath.Base(file)
		drawn[base] = true
		ext := strings.TrimPrefix(filepath.Ext(base), ".")
		links = append(links, fmt.Sprintf("[%s](%s)", strings.ToUpper(ext), base))
		if ext == "png" {
			png = base
		}
	}
	return links, png
}
