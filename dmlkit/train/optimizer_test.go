package train

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// refOptimizer is an independent float64 implementation of the torch.optim update rules
// (Adam, AdamW, SGD with momentum/Nesterov), with clipping and a learning-rate multiplier.
type refOptimizer struct {
	o       OptimizerConfig
	m, v, b []float64
}

func (r *refOptimizer) step(theta, g []float64, lr, mul float64, t int) {
	if r.m == nil {
		r.m, r.v, r.b = make([]float64, len(theta)), make([]float64, len(theta)), make([]float64, len(theta))
	}
	o := r.o
	for i := range theta {
		gi := g[i]
		if o.ClipValue > 0 {
			gi = math.Max(-o.ClipValue, math.Min(o.ClipValue, gi))
		}
		eta := lr * mul
		switch o.Name {
		case "adam", "adamw":
			if o.Name == "adam" {
				gi += o.WeightDecay * theta[i]
			}
			r.m[i] = o.Beta1*r.m[i] + (1-o.Beta1)*gi
			r.v[i] = o.Beta2*r.v[i] + (1-o.Beta2)*gi*gi
			mh := r.m[i] / (1 - math.Pow(o.Beta1, float64(t)))
			vh := r.v[i] / (1 - math.Pow(o.Beta2, float64(t)))
			upd := mh / (math.Sqrt(vh) + o.Eps)
			if o.Name == "adamw" {
				upd += o.WeightDecay * theta[i]
			}
			theta[i] -= eta * upd
		case "sgd":
			gi += o.WeightDecay * theta[i]
			r.b[i] = o.Momentum*r.b[i] + gi
			upd := r.b[i]
			if o.Nesterov {
				upd = gi + o.Momentum*r.b[i]
			}
			theta[i] -= eta * upd
		}
	}
}

// TestOptimizers runs three steps of each optimiser on two variables with given gradients and
// compares with refOptimizer. The "/loss/" group has multiplier 100 (ProxyAnchor's proxy rate)
// and "/model/frozen" multiplier 0 (must not move). float32 arithmetic: tolerance 1e-5 relative.
func TestOptimizers(t *testing.T) {
	grads := [][]float64{{0.5, -2, 30, 0.01, -0.3, 1}, {-0.1, 0.4, -25, 0.02, 0.3, -1}, {0.2, 0.2, 5, -0.05, 0.1, 0.7}}
	init := []float64{0.1, -0.2, 0.3, 0.4, -0.5, 0.6}
	for _, o := range []OptimizerConfig{
		{Name: "adam", LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2},
		{Name: "adamw", LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, ClipValue: 10},
		{Name: "sgd", LR: 1e-1, Momentum: 0.9, WeightDecay: 1e-3},
		{Name: "sgd", LR: 1e-1, Momentum: 0.9, Nesterov: true, ClipValue: 1},
	} {
		o.Groups = []GroupConfig{{Match: "/loss/", LRMul: 100}, {Match: "/model/frozen", LRMul: 0}}
		store := model.NewStore()
		paths := []string{"/model/w", "/loss/p", "/model/frozen"}
		for _, p := range paths {
			f := make([]float32, len(init))
			for i := range f {
				f[i] = float32(init[i])
			}
			if _, err := store.CreateVariable(p, tensors.FromFlatDataAndDimensions(f, 2, 3)); err != nil {
				t.Fatal(err)
			}
		}
		exec, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, g, lr, tt *Node) *Node {
			scope.SetTraining(g.Graph(), true)
			var vs []*model.Variable
			var gs []*Node
			for _, p := range paths {
				v := store.GetVariable(p)
				vs = append(vs, v)
				v.NodeValue(g.Graph())
				gs = append(gs, g)
			}
			applyUpdates(store, &o, vs, gs, lr, tt)
			return ReduceAllSum(g)
		})
		if err != nil {
			t.Fatal(err)
		}
		refs := []*refOptimizer{{o: o}, {o: o}}
		want := [][]float64{append([]float64(nil), init...), append([]float64(nil), init...)}
		for s, g := range grads {
			gf := make([]float32, len(g))
			for i := range g {
				gf[i] = float32(g[i])
			}
			lr := o.LR * float64(s+1) / 3 // a changing rate, as a schedule gives
			if _, err := exec.Call(tensors.FromFlatDataAndDimensions(gf, 2, 3), tensors.FromScalar(float32(lr)), tensors.FromScalar(float32(s+1))); err != nil {
				t.Fatal(err)
			}
			refs[0].step(want[0], g, float64(float32(lr)), 1, s+1)
			refs[1].step(want[1], g, float64(float32(lr)), 100, s+1)
		}
		for k, p := range paths {
			got := tensors.MustCopyFlatData[float32](store.GetVariable(p).MustValue())
			w := init
			if k < 2 {
				w = want[k]
			}
			for i := range got {
				if d := math.Abs(float64(got[i]) - w[i]); d > 1e-5*math.Max(1, math.Abs(w[i])) {
					t.Errorf("%s nesterov=%v %s[%d] = %.7g, want %.7g", o.Name, o.Nesterov, p, i, got[i], w[i])
				}
			}
		}
		for v := range store.IterVariables() {
			if strings.Contains(v.Path(), "frozen") && strings.HasPrefix(v.Path(), "/optimizer") {
				t.Errorf("frozen variable got optimiser state %s", v.Path())
			}
		}
	}
}
