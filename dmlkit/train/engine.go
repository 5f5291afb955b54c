package train

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// engine holds the store and the compiled graphs of one model + loss + optimiser.
type engine struct {
	cfg     *Config
	backend compute.Backend
	store   *model.Store
	terms   []weightedLoss
	nClass  int
	h, w, c int // image shape

	step    *model.Exec // direct step: (x, y, lr, t) → (loss, 0·Σ emb)
	grads   *model.Exec // direct gradients, no update (tests)
	embed   *model.Exec // inference embedding (x) → emb
	embDual *model.Exec // inference (x) → (emb, uncertainty emb); model.dual_head only
	msEmbed *model.Exec // multistage stage 1: (x) → loss embedding, no stats update
	msLoss  *model.Exec // stage 2: (y, E_0…E_K−1) → (loss, 0·ΣE, ∂L/∂E_0…), accumulates loss-variable grads
	msCat   *model.Exec // (E_0…E_K−1) → (E [B, D], 0·ΣE): the blockwise stage's input
	msBack  *model.Exec // stage 3: (x, G) → Σ emb⊙G, accumulates model grads
	msApply *model.Exec // (lr, t) → optimiser step from accumulators, zeroes them
	blocks  *blockStage // blockwise stage 2 (multistage.loss_block > 0), see multistage.go

	// stageTimes are the wall times of the three stages of the last multistage step.
	stageTimes [3]time.Duration
	// diagnosing: the step graph also outputs the loss's diagnostics (log.every_steps > 0 and a
	// losses.Diagnoser among the terms, or several terms; see stepDiagGraph). diagNames are their
	// names, fixed when the step graph is built, and diagValues their values at the last step.
	diagnosing bool
	diagNames  []string
	diagValues []float64
	// embFinite reports whether every embedding of the last training step's batch was finite.
	// Losses built of hinges (contrastive, triplet, Smooth-AP, …) can map NaN embeddings to a
	// finite value, so a finite loss alone does not show that the parameters are finite.
	embFinite bool
}

const (
	modelScope = "model"
	lossScope  = "loss"
	accScope   = "grad_acc"
)

func newEngine(cfg *Config, b compute.Backend, store *model.Store, nClasses, h, w, c int) (*engine, error) {
	terms, err := cfg.lossTerms()
	if err != nil {
		return nil, err
	}
	if dt := cfg.Precision.DType(); !b.Capabilities().DTypes[dt] {
		return nil, fmt.Errorf("precision: %s needs %s, which backend %q does not support", cfg.Precision, dt, b.Name())
	}
	e := &engine{cfg: cfg, backend: b, store: store, terms: terms, nClass: nClasses, h: h, w: w, c: c}
	models.SetInitSeed(store, cfg.Seed)
	if store.GetVariable("/"+model.RNGStateVariableName) == nil {
		// Graph-side randomness (e.g. proxy initialisation in losses) is seeded by the run seed;
		// a resumed run restores the saved state instead.
		if err := store.SetRNGStateFromSeed(cfg.Seed); err != nil {
			return nil, fmt.Errorf("train: seeding the graph RNG: %w", err)
		}
	}
	mk := func(fn any) (*model.Exec, error) {
		switch f := fn.(type) {
		case func(*model.Scope, *Node, *Node, *Node, *Node) *Node:
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node, *Node, *Node) (*Node, *Node):
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node) *Node:
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node) (*Node, *Node):
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node) (*Node, *Node):
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node) *Node:
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node) []*Node:
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node, *Node, *Node) []*Node:
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node, *Node, *Node, *Node) []*Node:
			return model.NewExec(b, store, f)
		}
		panic(fmt.Sprintf("train: unexpected graph function %T", fn))
	}
	var errs []error
	add := func(ex *model.Exec, err error) *model.Exec {
		if err != nil {
			errs = append(errs, err)
		}
		return ex
	}
	e.diagnosing = cfg.Log.EverySteps > 0 && cfg.Multistage.Chunk == 0 &&
		(hasDiagnostics(terms) || cfg.Mixup.Enabled && cfg.Mixup.Loss == MixupLossWeighted) // the latter logs its three terms
	switch {
	case cfg.Mixup.Enabled:
		e.step = add(mk(e.stepMixGraph))
	case e.diagnosing:
		e.step = add(mk(e.stepDiagGraph))
	default:
		e.step = add(mk(e.stepGraph))
	}
	e.grads = add(mk(e.gradsGraph))
	e.embed = add(mk(e.embedGraph))
	if cfg.Model.DualHead {
		e.embDual = add(mk(e.embedDualGraph))
	}
	e.msEmbed = add(mk(e.msEmbedGraph))
	if e.msLoss, err = model.NewExec(b, store, e.msLossGraph); err != nil {
		errs = append(errs, err)
	}
	if e.msCat, err = model.NewExec(b, store, msConcatGraph); err != nil {
		errs = append(errs, err)
	}
	e.msBack = add(mk(e.msBackGraph))
	e.msApply = add(mk(e.msApplyGraph))
	if len(errs) > 0 {
		return nil, fmt.Errorf("train: creating graphs: %v", errs[0])
	}
	return e, nil
}

// classBound is losses.Inputs.ClassBound for a batch whose labels have this rank: M for the
// m_per_class and hierarchical samplers (each class of a batch has exactly M images) when labels
// are single ([B], rank 1); 0 (none known) for the random sampler and for label sets ([B, S], Mixup),
// where one item can share a label with more than M − 1 others.
func (e *engine) classBound(labelRank int) int {
	if labelRank != 1 {
		return 0
	}
	switch e.cfg.Sampler.Name {
	case "m_per_class", "hierarchical":
		return e.cfg.Sampler.M
	}
	return 0
}

// buildLoss returns Σ wᵢ·Lᵢ(emb, labels).
func (e *engine) buildLoss(scope *model.Scope, emb, labels *Node) *Node {
	loss, _ := e.buildLossDiag(scope, emb, labels, nil, false)
	return loss
}

// hasDiagnostics reports whether the loss has diagnostics to log: several terms (their weighted
// values), or one that is a losses.Diagnoser.
func hasDiagnostics(terms []weightedLoss) bool {
	if len(terms) > 1 {
		return true
	}
	_, ok := terms[0].loss.(losses.Diagnoser)
	return ok
}

// buildLossDiag is buildLoss that, when diag, also returns the loss's diagnostics: those of a
// single term as it names them; with several terms (loss.terms) each weighted term wᵢ·Lᵢ as
// "loss/<name>" and the diagnostics of the terms that are Diagnosers as "<name>/<diagnostic>",
// the name being "<index>_<name>" for a loss used in several terms (as losses.ComboConfig does).
// The loss node is built by the same operations either way. weights, when not nil, are the
// [B, S] slot weights of the label sets (losses.Inputs.LabelWeights: mixup, cutmix); with
// mixup.loss weighted the loss of such a batch is instead buildMixWeighted's.
func (e *engine) buildLossDiag(scope *model.Scope, emb, labels, weights *Node, diag bool) (*Node, []losses.Diagnostic) {
	if weights != nil && e.cfg.Mixup.Loss == MixupLossWeighted {
		return e.buildMixWeighted(scope, emb, labels, weights, diag)
	}
	var total *Node
	var diags []losses.Diagnostic
	seen := map[string]int{}
	for _, t := range e.terms {
		seen[t.loss.Name()]++
	}
	for i, t := range e.terms {
		ls := scope.At(lossScope)
		if len(e.terms) > 1 {
			ls = ls.At("term_%d", i)
		}
		in := losses.Inputs{Emb: emb, Labels: labels, Scope: ls, NumClasses: e.nClass, ClassBound: e.classBound(labels.Rank()), LabelWeights: weights}
		var l *Node
		var ds []losses.Diagnostic
		if d, ok := t.loss.(losses.Diagnoser); ok && diag {
			l, ds = d.BuildDiagnosed(in)
		} else {
			l = t.loss.Build(in)
		}
		l = MulScalar(l, t.weight)
		if total == nil {
			total = l
		} else {
			total = Add(total, l)
		}
		if !diag {
			continue
		}
		if len(e.terms) == 1 {
			diags = append(diags, ds...)
			continue
		}
		key := t.loss.Name()
		if seen[key] > 1 {
			key = fmt.Sprintf("%d_%s", i, key)
		}
		diags = append(diags, losses.Diagnostic{Name: "loss/" + key, Value: l})
		for _, d := range ds {
			diags = append(diags, losses.Diagnostic{Name: key + "/" + d.Name, Value: d.Value})
		}
	}
	return total, diags
}

// buildMixWeighted is the loss of a mixup or cutmix batch with mixup.loss weighted, the IDML
// authors' code (seed 002's paper describes the label-set loss instead, buildLossDiag's default):
//
//	L = L(x, y) + λ·L(x̃, y_a) + (1 − λ)·L(x̃, y_b)
//
// The batch is what the trainer's Mixup and CutMix give: emb [2n, D] holds the n originals x in
// rows [0, n) and the n mixed images x̃ in rows [n, 2n); labels [2n, 2] are the label sets (slot 0
// y_i, slot 1 y_π(i) or −1) and weights [2n, 2] their slot weights ([MixWeights]). Each L is the
// configured loss (Σ wᵢ·Lᵢ over loss.terms) built by buildLossDiag on n rows with plain [n]
// labels, in the same loss scope, so learnable proxies are shared by the three terms:
//
//   - y is slot 0 of the originals; y_a slot 0 of the mixed rows; y_b their slot 1, or slot 0 where
//     slot 1 is −1 (a mix of two images of one class: y_π(i) = y_i).
//   - λ is the minimum over the mixed rows of their slot-0 weight, as a constant (no gradient):
//     MixWeights gives λ (mixup's draw, cutmix's realised λ') to every mix of two classes and 1 to a
//     mix of one class, so the minimum is the batch's λ as soon as one row mixes two classes, and
//     otherwise 1, where y_b = y_a on every row and λ does not change L.
//   - ClassBound stays the sampler's M: y_a is y, and y_b is y permuted, so every term has each of
//     the batch's classes M times in an m_per_class batch.
//
// The diagnostics (when diag) are the originals' term's as buildLossDiag names them (IDML's
// "unc_norm" is then the originals' mean ‖u‖; the label-set counts "unc_norm_orig", "orig_count",
// … need label sets and are absent), the mixed terms' with the prefixes "mix_a/" and "mix_b/"
// (IDML's "mix_a/unc_norm" is the mixed images' mean ‖u‖), and "loss_orig", "loss_mix_a",
// "loss_mix_b" (the three L, unweighted) with "mix_lambda" (λ): the loss is
// loss_orig + mix_lambda·loss_mix_a + (1 − mix_lambda)·loss_mix_b.
func (e *engine) buildMixWeighted(scope *model.Scope, emb, labels, weights *Node, diag bool) (*Node, []losses.Diagnostic) {
	b := emb.Shape().Dim(0)
	if b%2 != 0 || labels.Rank() != 2 || labels.Shape().Dim(0) != b || labels.Shape().Dim(1) != 2 ||
		weights.Rank() != 2 || weights.Shape().Dim(0) != b || weights.Shape().Dim(1) != 2 {
		panic(fmt.Sprintf("train: mixup.loss weighted: want 2n embeddings with [2n, 2] label sets and weights, got %s, %s, %s",
			emb.Shape(), labels.Shape(), weights.Shape()))
	}
	n := b / 2
	slot := func(x *Node, rows SliceAxisSpec, k int) *Node { return Reshape(Slice(x, rows, AxisElem(k)), n) }
	orig, mixed := AxisRange(0, n), AxisRange(n, b)
	y, ya, yb := slot(labels, orig, 0), slot(labels, mixed, 0), slot(labels, mixed, 1)
	yb = Where(GreaterOrEqual(yb, ZerosLike(yb)), yb, ya)
	lo, dOrig := e.buildLossDiag(scope, Slice(emb, orig), y, nil, diag)
	la, dA := e.buildLossDiag(scope, Slice(emb, mixed), ya, nil, diag)
	lb, dB := e.buildLossDiag(scope, Slice(emb, mixed), yb, nil, diag)
	lam := StopGradient(ConvertDType(ReduceAllMin(slot(weights, mixed, 0)), lo.DType()))
	total := Add(lo, Add(Mul(lam, la), Mul(OneMinus(lam), lb)))
	if !diag {
		return total, nil
	}
	diags := dOrig
	for _, d := range dA {
		diags = append(diags, losses.Diagnostic{Name: "mix_a/" + d.Name, Value: d.Value})
	}
	for _, d := range dB {
		diags = append(diags, losses.Diagnostic{Name: "mix_b/" + d.Name, Value: d.Value})
	}
	diags = append(diags,
		losses.Diagnostic{Name: "loss_orig", Value: lo},
		losses.Diagnostic{Name: "loss_mix_a", Value: la},
		losses.Diagnostic{Name: "loss_mix_b", Value: lb},
		losses.Diagnostic{Name: "mix_lambda", Value: lam})
	return total, diags
}

// trainableInGraph lists the trainable variables used by g, sorted by path.
func (e *engine) trainableInGraph(g *Graph, prefix string) []*model.Variable {
	var vs []*model.Variable
	for v := range e.store.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) && strings.HasPrefix(v.Path(), prefix) {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Path() < vs[j].Path() })
	return vs
}

func (e *engine) lossAndGrads(scope *model.Scope, x, y *Node) (*Node, []*model.Variable, []*Node) {
	loss, _, vs, grads := e.lossEmbAndGrads(scope, x, y)
	return loss, vs, grads
}

// lossEmbAndGrads is lossAndGrads that also returns the batch's loss embeddings.
func (e *engine) lossEmbAndGrads(scope *model.Scope, x, y *Node) (*Node, *Node, []*model.Variable, []*Node) {
	loss, emb, vs, grads, _ := e.lossEmbGradsDiag(scope, x, y, nil, false)
	return loss, emb, vs, grads
}

// lossEmbGradsDiag is lossEmbAndGrads that, when diag, also returns the loss's diagnostics
// (buildLossDiag); nothing the gradients depend on changes. w are the label sets' slot weights
// (nil: none).
func (e *engine) lossEmbGradsDiag(scope *model.Scope, x, y, w *Node, diag bool) (*Node, *Node, []*model.Variable, []*Node, []losses.Diagnostic) {
	out := e.build(scope, x, models.Mode{Train: true})
	loss, diags := e.buildLossDiag(scope, out.LossEmb, y, w, diag)
	vs := e.trainableInGraph(loss.Graph(), "/")
	nodes := make([]*Node, len(vs))
	for i, v := range vs {
		nodes[i] = v.NodeValue(loss.Graph())
	}
	return loss, out.LossEmb, vs, e.gradient(loss, nodes...), diags
}

// build applies the model (variables under modelScope) to x in the configured precision: x is
// converted in the graph to the activation dtype (Config.Precision), the network runs in it with
// float32 variables, and its embeddings come out float32 ([models.Build]).
func (e *engine) build(scope *model.Scope, x *Node, mode models.Mode) models.Output {
	if dt := e.cfg.Precision.DType(); x.DType() != dt {
		x = ConvertDType(x, dt)
	}
	return models.Build(scope.At(modelScope), e.cfg.Model, x, mode)
}

// gradient is Gradient(loss, nodes...) with the configured loss scaling: under fp16 the
// backprop starts from S·loss (S = Config.lossScale), so that small gradients of the float16
// activations do not underflow, and the (float32) gradients are divided by S again. S = 1
// otherwise: plain Gradient.
func (e *engine) gradient(loss *Node, nodes ...*Node) []*Node {
	markBackward(loss.Graph())
	sc := e.cfg.lossScale()
	if sc == 1 {
		return Gradient(loss, nodes...)
	}
	grads := Gradient(MulScalar(loss, sc), nodes...)
	for i, g := range grads {
		grads[i] = MulScalar(g, 1/sc)
	}
	return grads
}

// liveVariables makes the graph read variables as parameters: the Go backend otherwise embeds
// the values of variables as constants in graphs not marked as training
// (Capabilities.PreferConstantsForVariables), and a cached graph would keep stale weights.
func liveVariables(scope *model.Scope, g *Graph) { scope.SetTraining(g, true) }

// stepGraph is one direct optimiser step. Besides the loss it returns 0·Σ emb over the batch's
// loss embeddings, which is 0 when they are all finite and NaN otherwise: a read-only extra
// output (nothing consumes it in the graph, so the step's values are unchanged) by which the
// trainer stops at the first step whose parameters have diverged.
func (e *engine) stepGraph(scope *model.Scope, x, y, lr, t *Node) (*Node, *Node) {
	liveVariables(scope, x.Graph())
	loss, emb, vs, grads := e.lossEmbAndGrads(scope, x, y)
	applyUpdates(e.store, &e.cfg.Optimizer, vs, grads, lr, t)
	return loss, ReduceAllSum(MulScalar(emb, 0))
}

// stepDiagGraph is stepGraph (the same operations, so the same loss and updates) with the loss's
// diagnostics as further outputs, each converted to Float64 (counts may be integers). It is
// compiled instead of stepGraph only when log.every_steps > 0 and the loss has diagnostics, and
// records their names in e.diagNames.
func (e *engine) stepDiagGraph(scope *model.Scope, x, y, lr, t *Node) []*Node {
	return e.stepOutputs(scope, x, y, nil, lr, t, true)
}

// stepMixGraph is the step of a mixup or cutmix batch: the label sets y [B, 2] come with their slot
// weights w [B, 2] (losses.Inputs.LabelWeights), and the loss's diagnostics follow the loss and the
// finiteness output when the engine is diagnosing (as stepDiagGraph).
func (e *engine) stepMixGraph(scope *model.Scope, x, y, w, lr, t *Node) []*Node {
	return e.stepOutputs(scope, x, y, w, lr, t, e.diagnosing)
}

// stepOutputs builds one optimiser step and returns the loss, 0·Σ emb and, when diag, the loss's
// diagnostics, recording their names in e.diagNames.
func (e *engine) stepOutputs(scope *model.Scope, x, y, w, lr, t *Node, diag bool) []*Node {
	liveVariables(scope, x.Graph())
	loss, emb, vs, grads, diags := e.lossEmbGradsDiag(scope, x, y, w, diag)
	applyUpdates(e.store, &e.cfg.Optimizer, vs, grads, lr, t)
	outs := []*Node{loss, ReduceAllSum(MulScalar(emb, 0))}
	names := make([]string, 0, len(diags))
	seen := map[string]bool{stepLogLoss: true}
	for _, d := range diags {
		if seen[d.Name] {
			panic(fmt.Sprintf("train: the loss has two diagnostics named %q (%q is the loss itself)", d.Name, stepLogLoss))
		}
		if d.Value.Rank() != 0 {
			panic(fmt.Sprintf("train: loss diagnostic %q has shape %s, want a scalar", d.Name, d.Value.Shape()))
		}
		seen[d.Name] = true
		names = append(names, d.Name)
		outs = append(outs, ConvertDType(d.Value, dtypes.Float64))
	}
	e.diagNames = names
	return outs
}

// gradsGraph returns [loss, grads...] in path order, without updating anything but BN statistics.
func (e *engine) gradsGraph(scope *model.Scope, x, y *Node) []*Node {
	liveVariables(scope, x.Graph())
	loss, _, grads := e.lossAndGrads(scope, x, y)
	return append([]*Node{loss}, grads...)
}

func (e *engine) embedGraph(scope *model.Scope, x *Node) *Node {
	liveVariables(scope, x.Graph())
	return e.build(scope, x, models.Mode{Train: false}).Emb
}

// embedDualGraph is embedGraph that also returns IDML's raw uncertainty embedding [B, UncWidth]
// (model.dual_head): the inputs of testing with the introspective similarity (seed 002 Table 8).
func (e *engine) embedDualGraph(scope *model.Scope, x *Node) (*Node, *Node) {
	liveVariables(scope, x.Graph())
	out := e.build(scope, x, models.Mode{Train: false})
	return out.Emb, out.Unc
}

func (e *engine) msEmbedGraph(scope *model.Scope, x *Node) *Node {
	liveVariables(scope, x.Graph())
	return StopGradient(e.build(scope, x, models.Mode{Train: true, NoStatsUpdate: true}).LossEmb)
}

// accVar returns the gradient accumulator of v (zeros when created).
func (e *engine) accVar(v *model.Variable) *model.Variable {
	path := "/" + accScope + "/" + model.EscapeScopeName(v.Path())
	if a := e.store.GetVariable(path); a != nil {
		return a
	}
	a, err := e.store.CreateVariable(path, tensors.FromShape(v.Shape()))
	if err != nil {
		panic(err)
	}
	a.SetTrainable(false)
	return a
}

func (e *engine) accumulate(g *Graph, vs []*model.Variable, grads []*Node) {
	for i, v := range vs {
		a := e.accVar(v)
		gr := grads[i]
		if gr.DType() != a.DType() {
			gr = ConvertDType(gr, a.DType())
		}
		a.SetNodeValue(Add(a.NodeValue(g), gr))
	}
}

// msLossGraph is stage 2 in one whole-batch graph (multistage.loss_block = 0), on the device:
// in = [y, E_0, …, E_{K−1}], the labels and the chunks' loss embeddings from stage 1 (device
// tensors). It concatenates the chunks, builds the loss on all B embeddings and returns
// [loss, 0·ΣE, G_0, …, G_{K−1}], G_k = ∂L/∂E_k (the rows of chunk k), so stage 3 takes each G_k
// where it is; 0·ΣE is NaN when an embedding is not finite (as stepGraph's). Gradients of the
// loss's own variables (proxies) are accumulated directly. Its pairwise matrices are B×B; see
// multistage.go for the blockwise stage.
func (e *engine) msLossGraph(scope *model.Scope, in []*Node) []*Node {
	y, parts := in[0], in[1:]
	liveVariables(scope, y.Graph())
	emb, finite := concatRows(parts)
	loss := e.buildLoss(scope, emb, y)
	g := e.embGradAccumulating(loss, emb)
	outs := []*Node{loss, finite}
	off := 0
	for _, p := range parts {
		r := p.Shape().Dim(0)
		outs = append(outs, Slice(g, AxisRange(off, off+r)))
		off += r
	}
	return outs
}

// msConcatGraph concatenates the chunks' embeddings on the device for the blockwise stage:
// (E_0, …) → (E [B, D], 0·ΣE).
func msConcatGraph(_ *model.Scope, parts []*Node) []*Node {
	emb, finite := concatRows(parts)
	return []*Node{emb, finite}
}

// concatRows concatenates parts (each [r_k, D]) along the rows and returns it with 0·Σ of it.
func concatRows(parts []*Node) (*Node, *Node) {
	emb := parts[0]
	if len(parts) > 1 {
		emb = Concatenate(parts, 0)
	}
	return emb, ReduceAllSum(MulScalar(emb, 0))
}

// embGradAccumulating returns ∂loss/∂emb and accumulates the gradients of the loss's own
// trainable variables (proxies, under the loss scope) into their accumulators.
func (e *engine) embGradAccumulating(loss, emb *Node) *Node {
	g := loss.Graph()
	vs := e.trainableInGraph(g, "/"+lossScope)
	nodes := []*Node{emb}
	for _, v := range vs {
		nodes = append(nodes, v.NodeValue(g))
	}
	grads := Gradient(loss, nodes...)
	e.accumulate(g, vs, grads[1:])
	return grads[0]
}

// msBackGraph is stage 3 for one chunk: re-embed with autodiff and inject G_chunk; the gradient
// of Σ emb ⊙ stop_gradient(G_chunk) w.r.t. the model variables is the chunk's share of ∂L/∂θ.
func (e *engine) msBackGraph(scope *model.Scope, x, gChunk *Node) *Node {
	liveVariables(scope, x.Graph())
	out := e.build(scope, x, models.Mode{Train: true})
	emb := out.LossEmb
	s := ReduceAllSum(Mul(emb, StopGradient(ConvertDType(gChunk, emb.DType()))))
	vs := e.trainableInGraph(s.Graph(), "/"+modelScope)
	nodes := make([]*Node, len(vs))
	for i, v := range vs {
		nodes[i] = v.NodeValue(s.Graph())
	}
	e.accumulate(s.Graph(), vs, e.gradient(s, nodes...))
	return s
}

// msApplyGraph applies the optimiser to the accumulated gradients and zeroes the accumulators.
func (e *engine) msApplyGraph(scope *model.Scope, lr, t *Node) *Node {
	liveVariables(scope, lr.Graph())
	g := lr.Graph()
	var vs []*model.Variable
	var grads []*Node
	for _, v := range e.trainableVars() {
		a := e.store.GetVariable("/" + accScope + "/" + model.EscapeScopeName(v.Path()))
		if a == nil {
			continue
		}
		vs = append(vs, v)
		grads = append(grads, a.NodeValue(g))
		a.SetNodeValue(ZerosLike(a.NodeValue(g)))
	}
	applyUpdates(e.store, &e.cfg.Optimizer, vs, grads, lr, t)
	return Scalar(g, lr.DType(), len(vs))
}

// trainableVars lists the model and loss variables that are trainable, sorted by path.
func (e *engine) trainableVars() []*model.Variable {
	var vs []*model.Variable
	for v := range e.store.IterVariables() {
		p := v.Path()
		if v.Trainable && (strings.HasPrefix(p, "/"+modelScope+"/") || strings.HasPrefix(p, "/"+lossScope+"/")) {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Path() < vs[j].Path() })
	return vs
}

// imageTensor wraps a batch of n inputs: [n, H, W, C] images, or [n, H·W·C] feature vectors for
// the "features" backbone (precomputed-feature mode).
func (e *engine) imageTensor(pix []float32, n int) *tensors.Tensor {
	if e.cfg.Model.Backbone == "features" {
		return tensors.FromFlatDataAndDimensions(pix, n, e.h*e.w*e.c)
	}
	return tensors.FromFlatDataAndDimensions(pix, n, e.h, e.w, e.c)
}

// trainStep runs one optimiser step (direct or multistage) and returns the loss.
func (e *engine) trainStep(pix []float32, n int, labels []int64, setSize int, lr float64, step int) (float64, error) {
	return e.trainStepWeighted(pix, n, labels, nil, setSize, lr, step)
}

// trainStepWeighted is trainStep with the label sets' slot weights ([n·setSize], mixup and cutmix
// batches: required then, nil otherwise).
func (e *engine) trainStepWeighted(pix []float32, n int, labels []int64, weights []float32, setSize int, lr float64, step int) (float64, error) {
	if e.cfg.Mixup.Enabled != (weights != nil) {
		return 0, fmt.Errorf("train: label weights given %v with mixup.enabled %v", weights != nil, e.cfg.Mixup.Enabled)
	}
	x := e.imageTensor(pix, n)
	var y *tensors.Tensor
	if setSize > 1 {
		y = tensors.FromFlatDataAndDimensions(labels, n, setSize)
	} else {
		y = tensors.FromFlatDataAndDimensions(labels, n)
	}
	lrT := tensors.FromScalar(float32(lr))
	tT := tensors.FromScalar(float32(step + 1))
	if e.cfg.Multistage.Chunk > 0 {
		return e.multistageStep(pix, n, y, lrT, tT)
	}
	var out []*tensors.Tensor
	var err error
	if weights != nil {
		out, err = e.step.Call(x, y, tensors.FromFlatDataAndDimensions(weights, n, setSize), lrT, tT)
	} else {
		out, err = e.step.Call(x, y, lrT, tT)
	}
	if err != nil {
		return 0, err
	}
	if e.diagnosing {
		e.diagValues = e.diagValues[:0]
		for _, d := range out[2:] {
			e.diagValues = append(e.diagValues, scalarValue(d))
		}
	}
	z := scalarValue(out[1])
	e.embFinite = !math.IsNaN(z) && !math.IsInf(z, 0)
	return scalarValue(out[0]), nil
}

// multistageAccumulate runs stages 1–3 for one batch, leaving ∂L/∂θ in the accumulators.
//
// Everything stays on the device between the stages: each chunk's images are transferred once
// (the tensor keeps its device buffer, which stage 3 reuses), stage 1's embeddings are device
// tensors that stage 2 takes as inputs, and stage 2 returns ∂L/∂E per chunk as device tensors
// that stage 3 takes as they are. Only the loss and the finiteness scalar come back to the host
// (the blockwise stage also brings its per-block ∂L/∂E back to sum them in float64; see
// lossStage). The step's device tensors are freed when it ends.
func (e *engine) multistageAccumulate(pix []float32, n int, y *tensors.Tensor) (float64, error) {
	chunk := e.cfg.Multistage.Chunk
	size := e.h * e.w * e.c
	var held []*tensors.Tensor
	defer func() {
		for _, t := range held {
			_ = t.FinalizeAll() // device memory back now, not at the next GC
		}
	}()
	t0 := time.Now()
	var xs, embs []*tensors.Tensor
	for s := 0; s < n; s += chunk {
		m := min(chunk, n-s)
		x := e.imageTensor(pix[s*size:(s+m)*size], m)
		out, err := e.msEmbed.Call(x)
		if err != nil {
			return 0, err
		}
		xs, embs = append(xs, x), append(embs, out[0])
		held = append(held, x, out[0])
	}
	t1 := time.Now()
	loss, gs, err := e.lossStage(embs, y)
	if err != nil {
		return 0, err
	}
	held = append(held, gs...)
	t2 := time.Now()
	for k, x := range xs {
		out, err := e.msBack.Call(x, gs[k])
		if err != nil {
			return 0, err
		}
		held = append(held, out...)
	}
	e.stageTimes = [3]time.Duration{t1.Sub(t0), t2.Sub(t1), time.Since(t2)}
	return loss, nil
}

func (e *engine) multistageStep(pix []float32, n int, y, lrT, tT *tensors.Tensor) (float64, error) {
	loss, err := e.multistageAccumulate(pix, n, y)
	if err != nil {
		return 0, err
	}
	if _, err := e.msApply.Call(lrT, tT); err != nil {
		return 0, err
	}
	return loss, nil
}

// embedAll returns the inference embeddings [N, D] of a set, in fixed-size batches (the last one
// zero-padded so only one graph is compiled).
func (e *engine) embedAll(s Set, idx []int, batch int) ([]float32, int, error) {
	outs, dims, err := e.embedAllWith(e.embed, s, idx, batch)
	if err != nil {
		return nil, 0, err
	}
	return outs[0], dims[0], nil
}

// embedAllWith runs ex (one output [batch, d_k] per embedding kind) over a set, or its rows idx,
// in fixed-size batches (the last one zero-padded so only one graph is compiled), and returns
// every output's rows [N, d_k] row-major with its width d_k.
func (e *engine) embedAllWith(ex *model.Exec, s Set, idx []int, batch int) ([][]float32, []int, error) {
	if idx == nil {
		idx = make([]int, s.Len())
		for i := range idx {
			idx[i] = i
		}
	}
	size := e.h * e.w * e.c
	buf := make([]float32, batch*size)
	var outs [][]float32
	var dims []int
	for st := 0; st < len(idx); st += batch {
		m := min(batch, len(idx)-st)
		clear(buf)
		s.Fill(idx[st:st+m], buf[:m*size])
		res, err := ex.Call(e.imageTensor(buf, batch))
		if err != nil {
			return nil, nil, err
		}
		if outs == nil {
			outs, dims = make([][]float32, len(res)), make([]int, len(res))
		}
		for k, r := range res {
			dims[k] = r.Shape().Dim(1)
			outs[k] = append(outs[k], tensors.MustCopyFlatData[float32](r)[:m*dims[k]]...)
		}
	}
	if outs == nil { // an empty set: widths unknown, as before
		return [][]float32{nil, nil}, []int{0, 0}, nil
	}
	return outs, dims, nil
}

func scalarValue(t *tensors.Tensor) float64 {
	switch v := t.Value().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("train: loss tensor %s is not a float scalar", t.Shape()))
}
