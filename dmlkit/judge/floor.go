package judge

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// The training floor (reproducing.md §1, "Trained arms"): one answer per arm, whatever it is
// compared with. An arm trained when its training-split R@1 (sweep.TrainMetric, the mean over its
// seeds)
//
//   - is at least [MinTrainGain] above its own untrained models' (step 0, "init/train/R@1"), when
//     that is recorded, and
//   - is at least the floor fraction (min_train, default sweep.DefaultMinTrain) of its setting's
//     reference: the best configuration's mean training R@1 among the spec's final runs that
//     share the arm's regime, data, batch and steps ([settingKey]) — the same reference for every
//     claim the arm appears in, and for a benchmark the leaderboard's best loss of the regime.
//
// Without a spec (no plan to find the setting's runs in) the reference is the best arm of the
// claim, the rule of earlier versions. An arm without a training R@1 has no training evidence: a
// held or contradicted verdict on it becomes "inconclusive — training not recorded".

// settingKeys are the configuration keys that make a setting: what data the runs see, how their
// network starts, and their batch; with the record's regime and its steps they decide how high a
// training R@1 can be, whatever the loss.
var settingKeys = []string{
	"data.name", "data.options", "data.max_train_classes", "data.max_test_classes", "data.class_fraction", "data.corrupt",
	"model.backbone", "model.channels", "model.dim", "model.pretrained", "model.freeze_backbone", "model.trainable_tail",
	"model.input_size", "model.init_from", "sampler.batch_size",
}

// settingKey is the record's setting: its regime, the values of settingKeys (a run reference as
// "run:…": the same start at every seed) and its steps.
func settingKey(r *sweep.Record) string {
	parts := []string{RegimeOf(r)}
	for _, k := range settingKeys {
		v, ok := sweep.Get(r.Config, k)
		s := "-"
		if ok {
			s = sweep.FormatValue(v)
			if strings.HasPrefix(s, sweep.RunRefPrefix) {
				s = sweep.RunRefPrefix + "…"
			}
		}
		parts = append(parts, k+"="+s)
	}
	parts = append(parts, fmt.Sprintf("steps=%g", r.Metrics["steps"]))
	return strings.Join(parts, " ")
}

// reference returns the training R@1 reference of the record's setting and how many
// configurations it is the best of; NaN, 0 when none records one (or no plan was made).
func (p *provenance) reference(r *sweep.Record) (float64, int) {
	if p == nil || !p.planned {
		return math.NaN(), 0
	}
	if p.refs == nil {
		p.refs = map[string][2]float64{}
		type acc struct {
			sum float64
			n   int
		}
		// Per setting, per configuration (the run without its seed): the mean training R@1 of
		// the final runs (sweep points, not tuning runs: those train on fewer classes).
		configs := map[string]map[string]*acc{}
		seedKey := p.spec.Sweep.SeedKey
		if seedKey == "" {
			seedKey = "seed"
		}
		for h, rec := range p.recs {
			run, ok := p.runs[h]
			if !ok || run.Tune != "" || rec.Failed != "" || rec.Dirty() {
				continue
			}
			x, ok := rec.Metrics[sweep.TrainMetric]
			if !ok || math.IsNaN(x) {
				continue
			}
			flat := sweep.Flatten(rec.Config)
			delete(flat, seedKey)
			ch, err := sweep.CanonicalJSON(flat)
			if err != nil {
				continue
			}
			sk := settingKey(rec)
			if configs[sk] == nil {
				configs[sk] = map[string]*acc{}
			}
			a := configs[sk][string(ch)]
			if a == nil {
				a = &acc{}
				configs[sk][string(ch)] = a
			}
			a.sum += x
			a.n++
		}
		for sk, cs := range configs {
			best := math.Inf(-1)
			for _, a := range cs {
				best = math.Max(best, a.sum/float64(a.n))
			}
			p.refs[sk] = [2]float64{best, float64(len(cs))}
		}
	}
	ref, ok := p.refs[settingKey(r)]
	if !ok {
		return math.NaN(), 0
	}
	return ref[0], int(ref[1])
}

// armFloor is the outcome of the training rule for one arm.
type armFloor struct {
	label    string
	recorded bool   // the arm has a training R@1
	below    string // why it did not train ("" when it trained or is not recorded)
}

// floorOf applies the training rule to each arm: frac is the floor fraction (0 turns the rule
// off); the reference is each arm's own (Reference), or, for arms without one, the best training
// R@1 among the arms.
func floorOf(facts []ArmFacts, frac float64) []armFloor {
	best := math.Inf(-1)
	for _, f := range facts {
		if !math.IsNaN(f.TrainR1) {
			best = math.Max(best, f.TrainR1)
		}
	}
	out := make([]armFloor, len(facts))
	for i, f := range facts {
		out[i] = armFloor{label: f.Label, recorded: !math.IsNaN(f.TrainR1)}
		if frac <= 0 || !out[i].recorded {
			continue
		}
		ref, what := f.Reference, fmt.Sprintf("its setting's best of %d", f.RefN)
		if math.IsNaN(ref) {
			ref, what = best, "the best arm's"
		}
		switch {
		case !math.IsNaN(f.InitR1) && f.TrainR1 < f.InitR1+MinTrainGain:
			out[i].below = fmt.Sprintf("%s did not train (train R@1 %s, its untrained model's %s: less than %s above)",
				f.Label, FmtNum(f.TrainR1, 3), FmtNum(f.InitR1, 3), FmtNum(MinTrainGain, 2))
		case BelowTrainFloor(f.TrainR1, ref, frac):
			out[i].below = fmt.Sprintf("%s did not train (train R@1 %s < %s × %s, %s)",
				f.Label, FmtNum(f.TrainR1, 3), FmtNum(frac, 2), FmtNum(ref, 3), what)
		}
	}
	return out
}

// methodArms returns the indices, in the verdict's arms, of the paper's method: the treatment of a
// better or equivalent claim (the base when the claim names the treatment its ablation,
// [ClaimSpec.Ablation]), both treatment arms of an interaction; none for the other kinds.
func (v *ClaimVerdict) methodArms() []int {
	switch v.Claim.Kind {
	case KindBetter, KindEquivalent:
		if len(v.Facts) == 2 {
			if v.Claim.Ablation == "treatment" {
				return []int{0}
			}
			return []int{1}
		}
	case KindInteraction:
		if len(v.Facts) == 4 {
			return []int{1, 3}
		}
	}
	return nil
}

// ablatedArm is the index of a better claim's ablated arm ([ClaimSpec.Ablation]); −1 when none.
func (v *ClaimVerdict) ablatedArm() int {
	if v.Claim.Kind != KindBetter || len(v.Facts) != 2 {
		return -1
	}
	switch v.Claim.Ablation {
	case "base":
		return 0
	case "treatment":
		return 1
	}
	return -1
}

// conditionKeys are the configuration keys a claim may vary away from its arms' tuning and stay
// comparable: the claim's own condition — label or image noise, the fraction of classes (the
// papers run their noise and limited-data studies at the clean, full-data settings), and the keys
// the claim itself varies ([ClaimSpec.ownKeys]).
var conditionKeys = []string{"data.corrupt", "data.class_fraction"}

// ownKeys are the configuration keys the claim varies between its arms: an interaction's
// conditions, a trend's or argmax's swept key.
func (c *ClaimSpec) ownKeys() []string {
	var out []string
	for _, x := range c.Conditions {
		for k := range x.Where {
			out = append(out, k)
		}
	}
	if c.Sweep != nil {
		out = append(out, c.Sweep.Key)
	}
	return out
}

// conditionOnly reports whether every tuning difference ("k: tuned at v, this arm w") is in a
// condition key or one of own.
func conditionOnly(diffs []string, own []string) bool {
	keys := append(slices.Clone(conditionKeys), own...)
	for _, d := range diffs {
		k, _, _ := strings.Cut(d, ":")
		if !slices.ContainsFunc(keys, func(c string) bool { return k == c || strings.HasPrefix(k, c+".") }) {
			return false
		}
	}
	return true
}
