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
	msEmbed *model.Exec // multistage stage 1: (x) → loss embedding, no stats update
	msLoss  *model.Exec // stage 2: (E, y) → (loss, ∂L/∂E), accumulates loss-variable grads
	msBack  *model.Exec // stage 3: (x, G) → Σ emb⊙G, accumulates model grads
	msApply *model.Exec // (lr, t) → optimiser step from accumulators, zeroes them
	blocks  *blockStage // blockwise stage 2 (multistage.loss_block > 0), see multistage.go

	// stageTimes are the wall times of the three stages of the last multistage step.
	stageTimes [3]time.Duration
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
		case func(*model.Scope, *Node, *Node) (*Node, *Node):
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node) *Node:
			return model.NewExec(b, store, f)
		case func(*model.Scope, *Node, *Node) []*Node:
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
	e.step = add(mk(e.stepGraph))
	e.grads = add(mk(e.gradsGraph))
	e.embed = add(mk(e.embedGraph))
	e.msEmbed = add(mk(e.msEmbedGraph))
	e.msLoss = add(mk(e.msLossGraph))
	e.msBack = add(mk(e.msBackGraph))
	e.msApply = add(mk(e.msApplyGraph))
	if len(errs) > 0 {
		return nil, fmt.Errorf("train: creating graphs: %v", errs[0])
	}
	return e, nil
}

// buildLoss returns Σ wᵢ·Lᵢ(emb, labels).
func (e *engine) buildLoss(scope *model.Scope, emb, labels *Node) *Node {
	var total *Node
	for i, t := range e.terms {
		ls := scope.At(lossScope)
		if len(e.terms) > 1 {
			ls = ls.At("term_%d", i)
		}
		l := t.loss.Build(losses.Inputs{Emb: emb, Labels: labels, Scope: ls, NumClasses: e.nClass})
		l = MulScalar(l, t.weight)
		if total == nil {
			total = l
		} else {
			total = Add(total, l)
		}
	}
	return total
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
	out := models.Build(scope.At(modelScope), e.cfg.Model, x, models.Mode{Train: true})
	loss := e.buildLoss(scope, out.LossEmb, y)
	vs := e.trainableInGraph(loss.Graph(), "/")
	nodes := make([]*Node, len(vs))
	for i, v := range vs {
		nodes[i] = v.NodeValue(loss.Graph())
	}
	return loss, out.LossEmb, vs, Gradient(loss, nodes...)
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

// gradsGraph returns [loss, grads...] in path order, without updating anything but BN statistics.
func (e *engine) gradsGraph(scope *model.Scope, x, y *Node) []*Node {
	liveVariables(scope, x.Graph())
	loss, _, grads := e.lossAndGrads(scope, x, y)
	return append([]*Node{loss}, grads...)
}

func (e *engine) embedGraph(scope *model.Scope, x *Node) *Node {
	liveVariables(scope, x.Graph())
	return models.Build(scope.At(modelScope), e.cfg.Model, x, models.Mode{Train: false}).Emb
}

func (e *engine) msEmbedGraph(scope *model.Scope, x *Node) *Node {
	liveVariables(scope, x.Graph())
	return StopGradient(models.Build(scope.At(modelScope), e.cfg.Model, x, models.Mode{Train: true, NoStatsUpdate: true}).LossEmb)
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

// msLossGraph is stage 2 in one whole-batch graph (multistage.loss_block = 0): the loss on the
// full batch of embeddings E (a graph input) and G = ∂L/∂E; gradients of the loss's own variables
// (proxies) are accumulated directly. Its pairwise matrices are B×B; see multistage.go for the
// blockwise stage.
func (e *engine) msLossGraph(scope *model.Scope, emb, y *Node) (*Node, *Node) {
	liveVariables(scope, emb.Graph())
	loss := e.buildLoss(scope, emb, y)
	return loss, e.embGradAccumulating(loss, emb)
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
	out := models.Build(scope.At(modelScope), e.cfg.Model, x, models.Mode{Train: true})
	emb := out.LossEmb
	s := ReduceAllSum(Mul(emb, StopGradient(ConvertDType(gChunk, emb.DType()))))
	vs := e.trainableInGraph(s.Graph(), "/"+modelScope)
	nodes := make([]*Node, len(vs))
	for i, v := range vs {
		nodes[i] = v.NodeValue(s.Graph())
	}
	e.accumulate(s.Graph(), vs, Gradient(s, nodes...))
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
	out, err := e.step.Call(x, y, lrT, tT)
	if err != nil {
		return 0, err
	}
	z := scalarValue(out[1])
	e.embFinite = !math.IsNaN(z) && !math.IsInf(z, 0)
	return scalarValue(out[0]), nil
}

// multistageAccumulate runs stages 1–3 for one batch, leaving ∂L/∂θ in the accumulators.
func (e *engine) multistageAccumulate(pix []float32, n int, y *tensors.Tensor) (float64, error) {
	chunk := e.cfg.Multistage.Chunk
	size := e.h * e.w * e.c
	t0 := time.Now()
	var embs []float32
	d := 0
	for s := 0; s < n; s += chunk {
		m := min(chunk, n-s)
		out, err := e.msEmbed.Call(e.imageTensor(pix[s*size:(s+m)*size], m))
		if err != nil {
			return 0, err
		}
		d = out[0].Shape().Dim(1)
		embs = append(embs, tensors.MustCopyFlatData[float32](out[0])...)
	}
	e.embFinite = true
	for _, v := range embs {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			e.embFinite = false
			break
		}
	}
	t1 := time.Now()
	loss, G, err := e.lossStage(embs, n, d, y)
	if err != nil {
		return 0, err
	}
	t2 := time.Now()
	for s := 0; s < n; s += chunk {
		m := min(chunk, n-s)
		if _, err := e.msBack.Call(e.imageTensor(pix[s*size:(s+m)*size], m), tensors.FromFlatDataAndDimensions(G[s*d:(s+m)*d], m, d)); err != nil {
			return 0, err
		}
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
	if idx == nil {
		idx = make([]int, s.Len())
		for i := range idx {
			idx[i] = i
		}
	}
	size := e.h * e.w * e.c
	buf := make([]float32, batch*size)
	var out []float32
	d := 0
	for st := 0; st < len(idx); st += batch {
		m := min(batch, len(idx)-st)
		clear(buf)
		s.Fill(idx[st:st+m], buf[:m*size])
		res, err := e.embed.Call(e.imageTensor(buf, batch))
		if err != nil {
			return nil, 0, err
		}
		d = res[0].Shape().Dim(1)
		out = append(out, tensors.MustCopyFlatData[float32](res[0])[:m*d]...)
	}
	return out, d, nil
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
