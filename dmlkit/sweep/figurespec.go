package sweep

import (
	"errors"
	"fmt"
	"strings"
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
//	           The panels share the figure's width (default: page).
//
// Records are first restricted to the scale (Scale, else the one asked for) and to Where. Error
// bars and bands are ± the standard error of the mean over seeds (std/√n; none for one seed).
//
// Texts: the spec's labels map ([LabelMap]) turns config keys, metrics and values into the words a
// figure shows (legend entries, category and tick labels, default axis labels); a group value's
// position in the map also fixes its colour and marker in every figure of the paper (see
// [PaperSlots]). Caption and StandsFor go into figures/<paper>/README.md ([WriteFigureReadme]).
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
	Size      string `yaml:"size"`
	Mark      string `yaml:"mark"`
	MarkKey   string `yaml:"mark_key"`
	MarkLabel string `yaml:"mark_label"` // legend entry of the filled markers (default: "with " + Mark)
	NoLabels  bool   `yaml:"no_labels"`
	// pareto only: UnmarkLabel is the legend entry of the open markers (the points not marked);
	// HueBase colours by the first term of the Hue value, a loss expression ("rsk+tcm(…)" → rsk:
	// the base loss); XMin clips the x axis (the points left of it are listed in the key, their
	// values given); Numbered labels the points by number with a key below the plot (each
	// point's group values in words, the values every point shares left out); log_y puts OPIS-like
	// metrics on a log axis.
	UnmarkLabel string   `yaml:"unmark_label"`
	HueBase     bool     `yaml:"hue_base"`
	XMin        *float64 `yaml:"x_min"`
	Numbered    bool     `yaml:"numbered"`

	Width      string         `yaml:"width"`        // print width: column (default; embedding2d: page) or page
	Caption    string         `yaml:"caption"`      // what is plotted, for figures/<paper>/README.md
	StandsFor  string         `yaml:"stands_for"`   // the paper's figure it stands for, e.g. "seed 000 Fig. 3"
	LogX       bool           `yaml:"log_x"`        // log x axis with ticks at the x values (geometric sweeps)
	LogY       bool           `yaml:"log_y"`        // line: log y axis, ticks at powers of ten (see logYSeries)
	XTicks     []string       `yaml:"x_ticks"`      // line with series: tick labels of evaluations 1, 2, …
	XTickAngle float64        `yaml:"x_tick_angle"` // rotate x tick labels (degrees), e.g. long bar categories
	Highlight  map[string]any `yaml:"highlight"`    // heatmap: outline the cell with these x and y values
	// HighlightTune: heatmap: outline the cell the tuning step of this name selected (its
	// selection computed from the stored tuning runs, see [Spec.Selections]), instead of Highlight.
	HighlightTune string `yaml:"highlight_tune"`
	// XSeries: line with one series: the x value of each evaluation is this series of the group's
	// first record (e.g. curve/step), instead of the evaluation's number.
	XSeries string `yaml:"x_series"`
	// Normalize: line with one series: "first" divides each record's series by its first finite,
	// non-zero value before the mean over seeds (curves of losses on different scales drawn as the
	// fraction of their starting value, seed 001 Fig. 5).
	Normalize string `yaml:"normalize"`
	// XMissing: line with X: the x of records whose configuration does not set X — the value the
	// trainer takes for it (e.g. 0 for a corruption fraction, 1 for the fraction of classes kept),
	// so that the clean runs of a sweep are its first point. Without it such records are an error.
	XMissing *float64 `yaml:"x_missing"`
}

// FigureKinds lists the kinds a FigureSpec may name.
var FigureKinds = []string{"line", "pareto", "heatmap", "histogram", "utility", "density2d", "bar", "embedding2d"}

func (f *FigureSpec) Check() error {
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
	switch f.Width {
	case "", "column", "page":
	default:
		return fmt.Errorf("field \"width\": %q (want column or page)", f.Width)
	}
	switch f.Kind {
	case "line":
		if f.Normalize != "" && f.Normalize != "first" {
			return fmt.Errorf("field \"normalize\": %q (want first)", f.Normalize)
		}
		if f.Normalize != "" && len(f.Series) != 1 {
			return errors.New("field \"normalize\": only for a line figure of one series")
		}
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
