package train

import (
	"fmt"
	"math"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// OptimizerConfig configures the in-graph optimiser.
//
//   - adam (Kingma & Ba): m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g², θ ← θ − η·m̂/(√v̂ + ε) with
//     m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ); weight decay is L2 (g ← g + λθ), as torch.optim.Adam.
//   - adamw (Loshchilov & Hutter): the same step plus decoupled decay θ ← θ − ηλθ (torch.optim.AdamW).
//   - sgd: b ← μb + g (g ← g + λθ first), θ ← θ − η·b, or θ ← θ − η(g + μb) with Nesterov
//     (torch.optim.SGD, dampening 0).
//
// Before the update each gradient entry is clipped to [−ClipValue, ClipValue] when ClipValue > 0
// (IDML clips at 10). η is the scheduled rate times the multiplier of the variable's group.
type OptimizerConfig struct {
	Name        string        `yaml:"name" doc:"adam, adamw or sgd"`
	LR          float64       `yaml:"lr" doc:"base learning rate"`
	Beta1       float64       `yaml:"beta1" doc:"Adam β1"`
	Beta2       float64       `yaml:"beta2" doc:"Adam β2"`
	Eps         float64       `yaml:"eps" doc:"Adam ε"`
	Momentum    float64       `yaml:"momentum" doc:"SGD momentum"`
	Nesterov    bool          `yaml:"nesterov" doc:"SGD Nesterov momentum"`
	WeightDecay float64       `yaml:"weight_decay" doc:"L2 (adam, sgd) or decoupled (adamw) weight decay"`
	ClipValue   float64       `yaml:"clip_value" doc:"clip gradient entries to ±clip_value (0 = off)"`
	Groups      []GroupConfig `yaml:"groups" doc:"per-group learning-rate multipliers, first match wins"`
}

// GroupConfig gives the variables whose path contains Match (e.g. "/loss/" for proxies,
// "/backbone/" for the backbone, "/backbone/block_0/") the learning-rate multiplier LRMul.
// LRMul 0 freezes them (no update, no optimiser state). NoDecay disables weight decay for them.
type GroupConfig struct {
	Match   string  `yaml:"match"`
	LRMul   float64 `yaml:"lr_mul"`
	NoDecay bool    `yaml:"no_decay"`
}

// DefaultOptimizer is Adam with PyTorch's defaults and lr 1e-3.
func DefaultOptimizer() OptimizerConfig {
	return OptimizerConfig{Name: "adam", LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Momentum: 0.9}
}

// Validate checks the optimiser; errors are prefixed with the field path.
func (o *OptimizerConfig) Validate(prefix string) error {
	switch o.Name {
	case "adam", "adamw", "sgd":
	default:
		return fmt.Errorf("%s.name: %q: want adam, adamw or sgd", prefix, o.Name)
	}
	if !(o.LR > 0) {
		return fmt.Errorf("%s.lr: %g: want > 0", prefix, o.LR)
	}
	if o.Name != "sgd" {
		if o.Beta1 < 0 || o.Beta1 >= 1 {
			return fmt.Errorf("%s.beta1: %g: want [0, 1)", prefix, o.Beta1)
		}
		if o.Beta2 < 0 || o.Beta2 >= 1 {
			return fmt.Errorf("%s.beta2: %g: want [0, 1)", prefix, o.Beta2)
		}
		if !(o.Eps > 0) {
			return fmt.Errorf("%s.eps: %g: want > 0", prefix, o.Eps)
		}
	}
	if o.Momentum < 0 || o.Momentum >= 1 {
		return fmt.Errorf("%s.momentum: %g: want [0, 1)", prefix, o.Momentum)
	}
	if o.WeightDecay < 0 {
		return fmt.Errorf("%s.weight_decay: %g: want ≥ 0", prefix, o.WeightDecay)
	}
	if o.ClipValue < 0 {
		return fmt.Errorf("%s.clip_value: %g: want ≥ 0", prefix, o.ClipValue)
	}
	for i, g := range o.Groups {
		if g.Match == "" {
			return fmt.Errorf("%s.groups[%d].match: empty", prefix, i)
		}
		if g.LRMul < 0 {
			return fmt.Errorf("%s.groups[%d].lr_mul: %g: want ≥ 0", prefix, i, g.LRMul)
		}
	}
	return nil
}

// group returns the learning-rate multiplier and decay flag of a variable path.
func (o *OptimizerConfig) group(path string) (lrMul float64, decay bool) {
	for _, g := range o.Groups {
		if strings.Contains(path, g.Match) {
			return g.LRMul, !g.NoDecay
		}
	}
	return 1, true
}

// optStateScope is where optimiser state lives in the store.
const optStateScope = "optimizer"

// stateVar returns (creating with zeros) the optimiser state variable name for variable v.
func stateVar(store *model.Store, v *model.Variable, name string) *model.Variable {
	path := "/" + optStateScope + "/" + model.EscapeScopeName(v.Path()) + "/" + name
	if sv := store.GetVariable(path); sv != nil {
		return sv
	}
	sv, err := store.CreateVariable(path, tensors.FromShape(v.Shape()))
	if err != nil {
		panic(err)
	}
	sv.SetTrainable(false)
	return sv
}

// applyUpdates builds the optimiser step for vars with gradients grads. lr is the scheduled
// learning rate and t the 1-based step number (both scalar float32 graph inputs, so the graph
// does not change with the schedule).
func applyUpdates(store *model.Store, o *OptimizerConfig, vars []*model.Variable, grads []*Node, lr, t *Node) {
	for i, v := range vars {
		mul, decay := o.group(v.Path())
		if mul == 0 {
			continue
		}
		g := grads[i]
		theta := v.NodeValue(lr.Graph())
		if g.DType() != theta.DType() {
			g = ConvertDType(g, theta.DType())
		}
		if o.ClipValue > 0 {
			g = ClipScalar(g, -o.ClipValue, o.ClipValue)
		}
		eta := ConvertDType(MulScalar(lr, mul), theta.DType())
		wd := 0.0
		if decay {
			wd = o.WeightDecay
		}
		switch o.Name {
		case "adam", "adamw":
			if o.Name == "adam" && wd > 0 {
				g = Add(g, MulScalar(theta, wd))
			}
			mV, sV := stateVar(store, v, "m"), stateVar(store, v, "v")
			m := Add(MulScalar(mV.NodeValue(lr.Graph()), o.Beta1), MulScalar(g, 1-o.Beta1))
			s := Add(MulScalar(sV.NodeValue(lr.Graph()), o.Beta2), MulScalar(Square(g), 1-o.Beta2))
			mV.SetNodeValue(m)
			sV.SetNodeValue(s)
			tt := ConvertDType(t, theta.DType())
			bc1 := OneMinus(Pow(Scalar(lr.Graph(), theta.DType(), o.Beta1), tt))
			bc2 := OneMinus(Pow(Scalar(lr.Graph(), theta.DType(), o.Beta2), tt))
			step := Div(Div(m, bc1), AddScalar(Sqrt(Div(s, bc2)), o.Eps))
			if o.Name == "adamw" && wd > 0 {
				step = Add(step, MulScalar(theta, wd))
			}
			v.SetNodeValue(Sub(theta, Mul(eta, step)))
		case "sgd":
			if wd > 0 {
				g = Add(g, MulScalar(theta, wd))
			}
			step := g
			if o.Momentum > 0 {
				bV := stateVar(store, v, "momentum")
				b := Add(MulScalar(bV.NodeValue(lr.Graph()), o.Momentum), g)
				bV.SetNodeValue(b)
				step = b
				if o.Nesterov {
					step = Add(g, MulScalar(b, o.Momentum))
				}
			}
			v.SetNodeValue(Sub(theta, Mul(eta, step)))
		default:
			panic(fmt.Sprintf("train: unknown optimizer %q", o.Name))
		}
	}
}

// ScheduleConfig is the learning-rate schedule, a function of the epoch (fractional: step /
// steps per epoch) multiplying the base rate:
//
//   - constant: 1
//   - step: γ^⌊epoch/step_size⌋ (torch StepLR)
//   - multistep: γ^(number of milestones ≤ epoch) (torch MultiStepLR)
//   - cosine: min_factor + (1 − min_factor)·½(1 + cos(π·epoch/total)) over the run
//
// and, for all, a linear warm-up from 0 over the first Warmup epochs (factor epoch/warmup).
// step and multistep use whole epochs (the boundary applies from the first step of the epoch),
// as PyTorch's per-epoch scheduler.step().
type ScheduleConfig struct {
	Name       string  `yaml:"name" doc:"constant, step, multistep or cosine"`
	StepSize   int     `yaml:"step_size" doc:"step: epochs per decay"`
	Gamma      float64 `yaml:"gamma" doc:"step/multistep decay factor"`
	Milestones []int   `yaml:"milestones" doc:"multistep: epochs at which to decay"`
	MinFactor  float64 `yaml:"min_factor" doc:"cosine: final lr / base lr"`
	Warmup     float64 `yaml:"warmup" doc:"linear warm-up length in epochs"`
}

// Validate checks the schedule.
func (s *ScheduleConfig) Validate(prefix string) error {
	switch s.Name {
	case "", "constant", "cosine":
	case "step":
		if s.StepSize <= 0 {
			return fmt.Errorf("%s.step_size: %d: want > 0", prefix, s.StepSize)
		}
	case "multistep":
		for i, m := range s.Milestones {
			if m <= 0 || (i > 0 && m <= s.Milestones[i-1]) {
				return fmt.Errorf("%s.milestones: %v: want increasing positive epochs", prefix, s.Milestones)
			}
		}
	default:
		return fmt.Errorf("%s.name: %q: want constant, step, multistep or cosine", prefix, s.Name)
	}
	if (s.Name == "step" || s.Name == "multistep") && !(s.Gamma > 0) {
		return fmt.Errorf("%s.gamma: %g: want > 0", prefix, s.Gamma)
	}
	if s.MinFactor < 0 || s.Warmup < 0 {
		return fmt.Errorf("%s: min_factor and warmup must be ≥ 0", prefix)
	}
	return nil
}

// Factor returns the multiplier of the base rate for optimiser step `step` (0-based) of a run
// of total epochs with stepsPerEpoch steps each. The decay uses the epoch e = step/stepsPerEpoch;
// the warm-up factor is min(1, (step+1)/(warmup·stepsPerEpoch)), so the first step already
// moves.
func (s *ScheduleConfig) Factor(step, stepsPerEpoch int, total float64) float64 {
	e := float64(step) / float64(max(stepsPerEpoch, 1))
	f := 1.0
	whole := math.Floor(e + 1e-9)
	switch s.Name {
	case "step":
		f = math.Pow(s.Gamma, math.Floor(whole/float64(s.StepSize)))
	case "multistep":
		n := 0
		for _, m := range s.Milestones {
			if whole >= float64(m) {
				n++
			}
		}
		f = math.Pow(s.Gamma, float64(n))
	case "cosine":
		if total > 0 {
			p := math.Min(e/total, 1)
			f = s.MinFactor + (1-s.MinFactor)*0.5*(1+math.Cos(math.Pi*p))
		}
	}
	if s.Warmup > 0 {
		w := float64(step+1) / (s.Warmup * float64(max(stepsPerEpoch, 1)))
		f *= math.Min(1, w)
	}
	return f
}
