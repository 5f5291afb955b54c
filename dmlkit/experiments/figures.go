package experiments

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
)

// FigureSpec declares a figure drawn from stored records; no code is needed per paper. Which
// fields a kind reads:
//
//	line       Series: [s]  → mean ± std over seeds of the per-epoch series s, one curve per Group;
//	           or X: config key, Y: metric → mean ± std of Y at each value of X, one curve per Group
//	pareto     X, Y: metrics → one point per Group (means over seeds), coloured by Hue (a config
//	           key), with the Pareto frontier (MaxX/MaxY: larger is better, default true)
//	heatmap    X, Y: config keys for columns and rows, Metric → mean over seeds in each cell
//	histogram  Series: names of sample series (e.g. [dist_pos, dist_neg]), pooled over the seeds of
//	           each Group, density-normalised on shared bins (Bins, default 40)
//	utility    Series: [s] holding per-class values → per Group, each seed's values sorted in
//	           descending order, mean ± std over seeds against the fraction of classes
//	density2d  Series: [sx, sy] → the 2-D points pooled over the selected records, as a density
//	           image of Bins × Bins cells (default 50)
//	bar        X: config key for categories, Y: metric, Hue: optional config key for bars within
//	           a category → mean ± std over seeds
//	embedding2d  Series: [x, y, label] (e.g. [emb2d/x, emb2d/y, emb2d/label]) → one panel per
//	           Group, side by side in one file, from the group's record with the lowest seed (the
//	           panel title says so when the group has several): per class an arrow to the class
//	           centroid, a perpendicular line of ±1 circular std, and the class's kernel density
//	           (on the unit circle: a band around it; otherwise 2-D contours); see plots.Embedding2D.
//	           Each panel is the style's width × height.
//
// Records are first restricted to the scale (Scale, else the one asked for) and to Where.
type FigureSpec struct {
	Name   string         `yaml:"name"` // output file stem under figures/<paper>/
	Kind   string         `yaml:"kind"`
	Title  string         `yaml:"title"`
	XLabel string         `yaml:"xlabel"`
	YLabel string         `yaml:"ylabel"`
	Scale  string         `yaml:"scale"`
	Where  map[string]any `yaml:"where"`
	Group  []string       `yaml:"group"`
	Hue    string         `yaml:"hue"`
	X      string         `yaml:"x"`
	Y      string         `yaml:"y"`
	Metric string         `yaml:"metric"`
	Series []string       `yaml:"series"`
	Bins   int            `yaml:"bins"`
	MaxX   *bool          `yaml:"max_x"`
	MaxY   *bool          `yaml:"max_y"`
	Factor float64        `yaml:"factor"` // metric values are multiplied by it (default 1)
	Digits *int           `yaml:"digits"` // heatmap annotations (default 2; -1: none)
	// pareto only: Size is a config key whose value scales the marker area (e.g. sampler.batch_size:
	// radius ∝ √(value / smallest value)); Mark rings the points whose MarkKey value (default: Hue)
	// contains this text (e.g. "tcm" in loss.set.expr); NoLabels leaves the points unannotated.
	Size     string `yaml:"size"`
	Mark     string `yaml:"mark"`
	MarkKey  string `yaml:"mark_key"`
	NoLabels bool   `yaml:"no_labels"`
}

// FigureKinds lists the kinds a FigureSpec may name.
var FigureKinds = []string{"line", "pareto", "heatmap", "histogram", "utility", "density2d", "bar", "embedding2d"}

func (f *FigureSpec) check() error {
	if f.Name == "" {
		return errors.New("field \"name\": missing")
	}
	need := func(field, v string) error {
		if v == "" {
			return fmt.Errorf("field %q: required for kind %q", field, f.Kind)
		}
		return nil
	}
	nSeries := func(n int) error {
		if len(f.Series) != n {
			return fmt.Errorf("field \"series\": kind %q needs %d series, got %d", f.Kind, n, len(f.Series))
		}
		return nil
	}
	switch f.Kind {
	case "line":
		if len(f.Series) == 1 {
			return nil
		}
		if len(f.Series) > 1 {
			return errors.New("field \"series\": a line figure takes one series (one curve per group)")
		}
		return errors.Join(need("x", f.X), need("y", f.Y))
	case "pareto":
		return errors.Join(need("x", f.X), need("y", f.Y))
	case "heatmap":
		return errors.Join(need("x", f.X), need("y", f.Y), need("metric", f.Metric))
	case "histogram":
		if len(f.Series) == 0 {
			return errors.New("field \"series\": kind \"histogram\" needs at least one series")
		}
	case "utility":
		return nSeries(1)
	case "density2d":
		return nSeries(2)
	case "embedding2d":
		return nSeries(3)
	case "bar":
		return errors.Join(need("x", f.X), need("y", f.Y))
	case "":
		return errors.New("field \"kind\": missing")
	default:
		return fmt.Errorf("field \"kind\": unknown kind %q (known: %s)", f.Kind, strings.Join(FigureKinds, ", "))
	}
	return nil
}

// ErrNoRecords marks a figure or table for which no stored record matched.
var ErrNoRecords = errors.New("no stored results match")

// FigureResult reports one figure of [RenderFigures].
type FigureResult struct {
	Name  string
	Files []string
	Err   error // ErrNoRecords (wrapped) when there was nothing to draw
}

// RenderFigures draws every figure of the spec from records into outDir (normally
// figures/<paper>), as PNG, SVG and PDF (or the given formats) in the given style. scale selects the records of figures
// that name no scale ("" = all scales). Each figure's outcome is reported separately.
func RenderFigures(s *Spec, records []Record, scale, outDir string, st plots.Style, formats ...string) []FigureResult {
	var out []FigureResult
	for _, f := range s.Figures {
		res := FigureResult{Name: f.Name}
		recs, sc := selectFor(records, f.Scale, scale, f.Where)
		if len(recs) == 0 {
			res.Err = fmt.Errorf("figure %q: %w (scale %q)", f.Name, ErrNoRecords, sc)
			out = append(out, res)
			continue
		}
		p, err := BuildFigure(f, recs, st)
		if err != nil {
			res.Err = fmt.Errorf("figure %q: %w", f.Name, err)
			out = append(out, res)
			continue
		}
		res.Files, res.Err = plots.Save(p, st, filepath.Join(outDir, f.Name), formats...)
		out = append(out, res)
	}
	return out
}

// BuildFigure turns the (already selected) records into the figure f describes: a *plot.Plot, or
// for embedding2d a *plots.EmbeddingFigure.
func BuildFigure(f FigureSpec, recs []Record, st plots.Style) (plots.Figure, error) {
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
	switch f.Kind {
	case "line":
		if len(f.Series) == 1 {
			def(&l.X, "epoch")
			def(&l.Y, f.Series[0])
			var series []plots.Series
			for _, g := range GroupBy(recs, f.Group) {
				vals, err := seriesOf(g, f.Series[0])
				if err != nil {
					return nil, err
				}
				mean, std := pointwise(vals, factor)
				x := make([]float64, len(mean))
				for i := range x {
					x[i] = float64(i + 1)
				}
				series = append(series, plots.Series{Name: groupName(g), X: x, Y: mean, Err: std})
			}
			return plots.Lines(st, l, series)
		}
		def(&l.X, f.X)
		def(&l.Y, f.Y)
		var series []plots.Series
		for _, g := range GroupBy(recs, f.Group) {
			s := plots.Series{Name: groupName(g), Markers: true}
			for _, xg := range GroupBy(derefs(g.Records), []string{f.X}) {
				xv, ok := numeric(xg.Values[0])
				if !ok {
					return nil, fmt.Errorf("x key %q has the non-numeric value %q", f.X, FormatValue(xg.Values[0]))
				}
				ys := xg.Stat(f.Y)
				if ys.N == 0 {
					continue
				}
				s.X = append(s.X, xv)
				s.Y = append(s.Y, ys.Mean*factor)
				s.Err = append(s.Err, ys.Std*factor)
			}
			if len(s.X) == 0 {
				return nil, fmt.Errorf("no record has the metric %q", f.Y)
			}
			series = append(series, s)
		}
		return plots.Lines(st, l, series)
	case "pareto":
		def(&l.X, f.X)
		def(&l.Y, f.Y)
		pts, mark, err := paretoPoints(f, recs, factor)
		if err != nil {
			return nil, err
		}
		return plots.ScatterPareto(st, l, pts, f.MaxX == nil || *f.MaxX, f.MaxY == nil || *f.MaxY, mark)
	case "heatmap":
		def(&l.X, f.X)
		def(&l.Y, f.Y)
		def(&l.Title, f.Metric)
		cols := GroupBy(recs, []string{f.X})
		rows := GroupBy(recs, []string{f.Y})
		g := plots.Grid{Digits: 2}
		if f.Digits != nil {
			g.Digits = *f.Digits
		}
		colIdx := map[string]int{}
		for i, c := range cols {
			g.XLabels = append(g.XLabels, FormatValue(c.Values[0]))
			colIdx[FormatValue(c.Values[0])] = i
		}
		for _, r := range rows {
			g.YLabels = append(g.YLabels, FormatValue(r.Values[0]))
			row := make([]float64, len(cols))
			for i := range row {
				row[i] = math.NaN()
			}
			for _, cell := range GroupBy(derefs(r.Records), []string{f.X}) {
				if s := cell.Stat(f.Metric); s.N > 0 {
					row[colIdx[FormatValue(cell.Values[0])]] = s.Mean * factor
				}
			}
			g.Z = append(g.Z, row)
		}
		return plots.Heatmap(st, l, g)
	case "histogram":
		def(&l.Y, "density")
		var samples []plots.Sample
		for _, g := range GroupBy(recs, f.Group) {
			for _, name := range f.Series {
				var pooled []float64
				for _, r := range g.Records {
					pooled = append(pooled, r.Series[name]...)
				}
				if len(pooled) == 0 {
					return nil, fmt.Errorf("group %s: no record has the series %q", g.Label(), name)
				}
				label := name
				if len(f.Group) > 0 {
					label = groupName(g) + ": " + name
				}
				samples = append(samples, plots.Sample{Name: label, Values: scaled(pooled, factor)})
			}
		}
		return plots.Histograms(st, l, samples, f.Bins)
	case "utility":
		def(&l.Y, f.Series[0])
		def(&l.X, "fraction of classes")
		var series []plots.Series
		for _, g := range GroupBy(recs, f.Group) {
			vals, err := seriesOf(g, f.Series[0])
			if err != nil {
				return nil, err
			}
			sorted := make([][]float64, len(vals))
			for i, v := range vals {
				_, sorted[i] = plots.SortedCurve(v)
			}
			mean, std := pointwise(sorted, factor)
			x := make([]float64, len(mean))
			for i := range x {
				x[i] = float64(i+1) / float64(len(mean))
			}
			series = append(series, plots.Series{Name: groupName(g), X: x, Y: mean, Err: std})
		}
		return plots.Lines(st, l, series)
	case "density2d":
		def(&l.X, f.Series[0])
		def(&l.Y, f.Series[1])
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
		return plots.Density2D(st, l, xs, ys, f.Bins)
	case "bar":
		def(&l.Y, f.Y)
		def(&l.X, f.X)
		cats := GroupBy(recs, []string{f.X})
		var names []string
		catIdx := map[string]int{}
		for i, c := range cats {
			names = append(names, FormatValue(c.Values[0]))
			catIdx[names[i]] = i
		}
		var hueKeys []string
		if f.Hue != "" {
			hueKeys = []string{f.Hue}
		}
		var series []plots.BarSeries
		for _, h := range GroupBy(recs, hueKeys) {
			bs := plots.BarSeries{Values: make([]float64, len(cats)), Err: make([]float64, len(cats))}
			if f.Hue != "" {
				bs.Name = FormatValue(h.Values[0])
			}
			for _, c := range GroupBy(derefs(h.Records), []string{f.X}) {
				s := c.Stat(f.Y)
				if s.N == 0 {
					continue
				}
				i := catIdx[FormatValue(c.Values[0])]
				bs.Values[i] = s.Mean * factor
				if s.N > 1 {
					bs.Err[i] = s.Std * factor
				}
			}
			series = append(series, bs)
		}
		return plots.Bars(st, l, names, series)
	case "embedding2d":
		return embedding2D(f, recs, st, l)
	}
	return nil, fmt.Errorf("unknown kind %q", f.Kind)
}

// embedding2D builds the panels of an embedding2d figure: per group, the record with the lowest
// seed (the first in store order among equals).
func embedding2D(f FigureSpec, recs []Record, st plots.Style, l plots.Labels) (*plots.EmbeddingFigure, error) {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&l.X, f.Series[0])
	def(&l.Y, f.Series[1])
	var panels []plots.EmbeddingPanel
	for _, g := range GroupBy(recs, f.Group) {
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
		p.Title = groupName(g)
		if len(g.Records) > 1 {
			p.Title = strings.TrimPrefix(fmt.Sprintf("%s (seed %d, first of %d runs)", p.Title, r.Seed, len(g.Records)), " ")
		} else {
			p.Title = strings.TrimPrefix(fmt.Sprintf("%s (seed %d)", p.Title, r.Seed), " ")
		}
		panels = append(panels, p)
	}
	return plots.Embedding2D(st, l, panels)
}

func groupName(g *Group) string {
	if len(g.Keys) == 0 {
		return ""
	}
	return g.ValueLabel()
}

func derefs(rs []*Record) []Record {
	out := make([]Record, len(rs))
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
func seriesOf(g *Group, name string) ([][]float64, error) {
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
		s := MeanStd(col)
		mean[i] = s.Mean * factor
		std[i] = s.Std * factor
	}
	return mean, std
}

// paretoPoints are the points of a pareto figure: one per Group (means over its seeds, times
// factor), coloured by Hue, sized by Size and ringed by Mark (see [FigureSpec]); mark is the
// legend entry of the rings ("" without Mark).
func paretoPoints(f FigureSpec, recs []Record, factor float64) (pts []plots.Point, mark string, err error) {
	markKey := f.MarkKey
	if markKey == "" {
		markKey = f.Hue
	}
	for _, g := range GroupBy(recs, f.Group) {
		sx, sy := g.Stat(f.X), g.Stat(f.Y)
		if sx.N == 0 || sy.N == 0 {
			continue
		}
		hue := ""
		if f.Hue != "" {
			v, _ := g.Records[0].Value(f.Hue)
			hue = FormatValue(v)
		}
		pt := plots.Point{X: sx.Mean * factor, Y: sy.Mean * factor, Group: hue}
		if !f.NoLabels {
			pt.Label = g.ValueLabel()
		}
		if f.Size != "" {
			v, ok := g.Records[0].Value(f.Size)
			x, isNum := numeric(v)
			if !ok || !isNum || x <= 0 {
				return nil, "", fmt.Errorf("field \"size\": %q is %v in a record, want a positive number", f.Size, v)
			}
			pt.Size = x
		}
		if f.Mark != "" {
			v, _ := g.Records[0].Value(markKey)
			pt.Marked = strings.Contains(FormatValue(v), f.Mark)
		}
		pts = append(pts, pt)
	}
	if len(pts) == 0 {
		return nil, "", fmt.Errorf("no record has both metrics %q and %q", f.X, f.Y)
	}
	if f.Size != "" { // radius ∝ √(value / smallest): marker area proportional to the value
		lo := math.Inf(1)
		for _, p := range pts {
			lo = math.Min(lo, p.Size)
		}
		for i := range pts {
			pts[i].Size = math.Sqrt(pts[i].Size / lo)
		}
	}
	if f.Mark != "" {
		mark = fmt.Sprintf("%s contains %s", markKey, f.Mark)
	}
	return pts, mark, nil
}
