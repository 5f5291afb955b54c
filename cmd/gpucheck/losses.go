package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
)

func init() {
	register("losses", "every registered loss: float32 value and gradient on the backend vs the Go backend", runLosses)
}

// Tolerances of the loss check (float32 on both sides; the accelerator sums in another order,
// and Smooth-AP / RS@k divide similarity differences by τ = 0.01, so relative errors of ~1e-6 in
// the similarities become ~1e-4 in the sigmoids):
//
//	value:    |v − v_ref| ≤ lossValueTol · (1 + |v_ref|)
//	gradient: max_i |g_i − g_ref,i| ≤ lossGradTol · max_i |g_ref,i| + 1e-7
//
// TF32 matrix products would exceed them (10-bit mantissa): run the check with tf32=false.
const (
	lossValueTol = 1e-4
	lossGradTol  = 2e-3
)

// lossBatch is the check's batch: classes × perClass rows of dimension d, each row a class centre
// plus noise (so that positives are closer than negatives and hinge losses are active but not
// saturated), float64 values later rounded to float32 by Evaluate.
type lossBatch struct {
	emb           []float64
	labels        []int64
	b, d, classes int
}

func newLossBatch(seed uint64, classes, perClass, d int) lossBatch {
	r := rand.New(rand.NewPCG(seed, 22))
	centres := make([]float64, classes*d)
	for i := range centres {
		centres[i] = r.NormFloat64()
	}
	b := classes * perClass
	lb := lossBatch{emb: make([]float64, b*d), labels: make([]int64, b), b: b, d: d, classes: classes}
	for i := 0; i < b; i++ {
		c := i % classes // classes interleaved: no loss may rely on class-contiguous batches
		lb.labels[i] = int64(c)
		for j := 0; j < d; j++ {
			lb.emb[i*d+j] = centres[c*d+j] + 1.2*r.NormFloat64()
		}
	}
	return lb
}

// lossResult is one loss's comparison.
type lossResult struct {
	Name      string  `json:"name"`
	OK        bool    `json:"ok"`
	Value     float64 `json:"value"`
	RefValue  float64 `json:"ref_value"`
	ValueDiff float64 `json:"value_abs_diff"`
	ValueTol  float64 `json:"value_tol"`
	GradDiff  float64 `json:"grad_max_abs_diff"`
	GradMax   float64 `json:"ref_grad_max_abs"`
	GradTol   float64 `json:"grad_tol"`
	Sec       float64 `json:"seconds"` // backend under test: compile + run
	RefSec    float64 `json:"ref_seconds"`
	Error     string  `json:"error,omitempty"`
	// Stochastic: the loss draws random numbers in its graph (its value changes with the RNG
	// seed). RNGMatch says whether the default loss agreed anyway (the backends' random bit
	// generators agree); the verdict is then that of the deterministic Variant.
	Stochastic bool   `json:"stochastic,omitempty"`
	RNGMatch   bool   `json:"rng_match,omitempty"`
	Variant    string `json:"deterministic_variant,omitempty"`
}

type lossesReport struct {
	part
	Batch      int          `json:"batch"`
	Dim        int          `json:"dim"`
	Classes    int          `json:"classes"`
	ValueTol   float64      `json:"value_tol_rel"`
	GradTol    float64      `json:"grad_tol_rel_to_max"`
	Results    []lossResult `json:"results"`
	Mismatches []string     `json:"mismatches,omitempty"`
}

func runLosses(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("losses", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonPath := fs.String("json", "", "write the JSON part here")
	scale := scaleFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkScale(*scale); err != nil {
		return err
	}
	rep := lossesReport{part: part{Phase: "losses", Scale: *scale, Ref: refConfig}, ValueTol: lossValueTol, GradTol: lossGradTol}
	test, cfg, err := testBackend()
	rep.Backend = cfg
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	ref, err := refBackend()
	if err != nil {
		return err
	}
	classes, per, d := 32, 4, 64
	if *scale == "small" {
		classes, per, d = 16, 4, 32
	}
	batch := newLossBatch(1, classes, per, d)
	rep.Batch, rep.Dim, rep.Classes = batch.b, batch.d, classes
	rep.Results = compareLosses(test, ref, losses.Names(), batch, nil, func(r lossResult) {
		status := "ok"
		if !r.OK {
			status = "MISMATCH"
		}
		note := r.Error
		if r.Stochastic {
			note = fmt.Sprintf("draws random numbers: default loss agrees %v; verdict from %s %s", r.RNGMatch, r.Variant, note)
		}
		fmt.Fprintf(stdout, "%-16s %-8s value %.9g (ref %.9g, |Δ| %.2g ≤ %.2g)  grad max|Δ| %.2g ≤ %.2g  %.2fs (ref %.2fs) %s\n",
			r.Name, status, r.Value, r.RefValue, r.ValueDiff, r.ValueTol, r.GradDiff, r.GradTol, r.Sec, r.RefSec, note)
	})
	for _, r := range rep.Results {
		if !r.OK {
			rep.Mismatches = append(rep.Mismatches, r.Name)
		}
	}
	rep.OK = len(rep.Mismatches) == 0
	if err := writeJSON(*jsonPath, rep); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%w: %d of %d losses differ from the Go backend: %v", errMismatch, len(rep.Mismatches), len(rep.Results), rep.Mismatches)
	}
	fmt.Fprintf(stdout, "all %d losses agree with the Go backend (float32, value tol %.0e·(1+|v|), gradient tol %.0e·max|g|)\n",
		len(rep.Results), lossValueTol, lossGradTol)
	return nil
}

// compareLosses evaluates every named loss (paper defaults) on batch with the backend under test
// and the reference, in float32, and compares value and gradient. Learnable parameters (proxies)
// are created on the reference and copied into the test side's store, so both see the same
// proxies whatever the backends' random number generators do. wrap, when non-nil, replaces the
// loss evaluated on the backend under test (the tests inject a mismatch with it). done is called
// after each loss.
func compareLosses(test, ref compute.Backend, names []string, batch lossBatch, wrap func(losses.Loss) losses.Loss, done func(lossResult)) []lossResult {
	var out []lossResult
	for _, name := range names {
		r := compareLoss(test, ref, name, batch, wrap)
		if done != nil {
			done(r)
		}
		out = append(out, r)
	}
	return out
}

func compareLoss(test, ref compute.Backend, name string, batch lossBatch, wrap func(losses.Loss) losses.Loss) (r lossResult) {
	r = lossResult{Name: name}
	l, err := losses.New(name, lossSettings[name])
	if err != nil {
		r.Error = err.Error()
		return r
	}
	const seed = 7
	// Learnable parameters (proxies, β, …) are created once, on the reference; every evaluation
	// below starts from a copy of them and the same graph RNG seed.
	vars := model.NewStore()
	if err := vars.SetRNGStateFromSeed(seed); err != nil {
		r.Error = err.Error()
		return r
	}
	opt := losses.EvalOptions{Grad: true, DType: dtypes.Float32, NumClasses: batch.classes, Seed: seed, Store: vars}
	if _, err := losses.Evaluate(ref, l, batch.emb, batch.b, batch.d, batch.labels, 1, opt); err != nil {
		r.Error = "reference (Go backend): " + err.Error()
		return r
	}
	lt := l
	if wrap != nil {
		lt = wrap(l)
	}
	if err := evalPair(test, ref, l, lt, batch, vars, seed+1, &r); err != nil {
		r.Error = err.Error()
		return r
	}
	// A loss that draws random numbers in its graph (distance-weighted sampling, Monte-Carlo
	// samples) gives another value under another RNG seed. The backends' random bit generators
	// need not agree, so such a loss is compared again in a variant without draws, which decides.
	again := r
	if err := evalPair(nil, ref, l, nil, batch, vars, seed+2, &again); err == nil && again.RefValue != r.RefValue {
		r.Stochastic, r.RNGMatch = true, r.OK
		if dl, what := deterministic(l, batch); dl != nil {
			dt := dl
			if wrap != nil {
				dt = wrap(dl)
			}
			det := lossResult{Name: name}
			if err := evalPair(test, ref, dl, dt, batch, vars, seed+1, &det); err != nil {
				r.Error = "deterministic variant: " + err.Error()
				r.OK = false
				return r
			}
			det.Stochastic, det.RNGMatch, det.Variant = true, r.OK, what
			det.Sec, det.RefSec = det.Sec+r.Sec, det.RefSec+r.RefSec
			return det
		}
	}
	return r
}

// lossSettings are the settings of the losses whose defaults do not define a loss: the combo loss
// is checked as the TCM paper's Smooth-AP + TCM.
var lossSettings = map[string]map[string]any{"combo": {"expr": "smoothap+tcm"}}

// deterministic returns a variant of a loss that draws random numbers without the draws, and what
// was changed; nil for other losses.
func deterministic(l losses.Loss, batch lossBatch) (losses.Loss, string) {
	switch c := l.(type) {
	case *losses.MarginConfig:
		cc := *c
		cc.Sampling = "all"
		return &cc, "sampling=all (every negative pair, no draws)"
	case *losses.PELConfig:
		cc := *c
		r := rand.New(rand.NewPCG(5, 5))
		cc.Noise = make([]float64, cc.Samples*batch.b*(batch.d/2)) // the embedding is (μ, log σ²)
		for i := range cc.Noise {
			cc.Noise[i] = r.NormFloat64()
		}
		return &cc, "fixed Monte-Carlo noise (PELConfig.Noise)"
	}
	return nil, ""
}

// evalPair evaluates l on ref and lt on test (skipped when test is nil), each with a fresh store
// holding a copy of vars' variables (not its RNG state) and the graph RNG seeded with seed, and
// fills r's values, differences and verdict.
func evalPair(test, ref compute.Backend, l, lt losses.Loss, batch lossBatch, vars *model.Store, seed int64, r *lossResult) error {
	eval := func(b compute.Backend, l losses.Loss) (losses.Result, float64, error) {
		st, err := copyStore(vars, seed)
		if err != nil {
			return losses.Result{}, 0, err
		}
		opt := losses.EvalOptions{Grad: true, DType: dtypes.Float32, NumClasses: batch.classes, Seed: seed, Store: st}
		t0 := time.Now()
		res, err := losses.Evaluate(b, l, batch.emb, batch.b, batch.d, batch.labels, 1, opt)
		return res, time.Since(t0).Seconds(), err
	}
	want, sec, err := eval(ref, l)
	if err != nil {
		return fmt.Errorf("reference (Go backend): %w", err)
	}
	r.RefValue, r.RefSec = want.Value, sec
	if test == nil {
		return nil
	}
	got, sec, err := eval(test, lt)
	if err != nil {
		return fmt.Errorf("backend under test: %w", err)
	}
	r.Value, r.Sec = got.Value, sec
	r.ValueDiff = math.Abs(got.Value - want.Value)
	r.ValueTol = lossValueTol * (1 + math.Abs(want.Value))
	r.GradMax, r.GradDiff = 0, 0
	for i, g := range want.Grad {
		r.GradMax = math.Max(r.GradMax, math.Abs(g))
		d := math.Abs(got.Grad[i] - g)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		r.GradDiff = math.Max(r.GradDiff, d)
	}
	r.GradTol = lossGradTol*r.GradMax + 1e-7
	finite := !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) && !math.IsNaN(r.RefValue) && !math.IsInf(r.GradDiff, 0)
	r.OK = finite && r.ValueDiff <= r.ValueTol && r.GradDiff <= r.GradTol
	if !finite { // keep the JSON encodable
		r.Value, r.GradDiff = sanitize(r.Value), sanitize(r.GradDiff)
		r.Error = "non-finite value or gradient on the backend under test"
	}
	return nil
}

func sanitize(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return -1
	}
	return x
}

// copyStore returns a new store with a copy of every variable of src except its RNG state, and
// the graph RNG seeded with seed.
func copyStore(src *model.Store, seed int64) (*model.Store, error) {
	st := model.NewStore()
	if err := st.SetRNGStateFromSeed(seed); err != nil {
		return nil, err
	}
	for v := range src.IterVariables() {
		if v.Path() == "/"+model.RNGStateVariableName {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", v.Path(), err)
		}
		c, err := t.LocalClone()
		if err != nil {
			return nil, fmt.Errorf("copying %s: %w", v.Path(), err)
		}
		if _, err := st.CreateVariable(v.Path(), c); err != nil {
			return nil, fmt.Errorf("copying %s: %w", v.Path(), err)
		}
	}
	return st, nil
}
