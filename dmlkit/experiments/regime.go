package experiments

import "strings"

// Regimes: how a run's backbone starts and whether it trains (issue 30). The small-scale
// reproductions train a small CNN from scratch; the pretrained scale starts from ImageNet weights
// (model.pretrained) and either keeps the backbone fixed, training the head on its cached
// features (model.freeze_backbone), or fine-tunes it.
const (
	RegimeScratch     = "from scratch"
	RegimeStoredStart = "from a stored run"
	RegimeFrozen      = "pretrained, frozen"
	RegimeFineTuned   = "pretrained, fine-tuned"
	// RegimePretrained stands for a verdict at the pretrained scale with no records to say which.
	RegimePretrained = "pretrained"
)

// PretrainedScale is the name of the scale of the pretrained regime in every paper's spec.
const PretrainedScale = "pretrained"

// RegimeOf is the regime of one run from its configuration: model.pretrained (weights from a
// file) gives RegimeFrozen or RegimeFineTuned by model.freeze_backbone; model.init_from (a stored
// dmlkit run) RegimeStoredStart (with ", frozen" when the backbone is frozen); otherwise
// RegimeScratch (", frozen" again for a frozen random backbone).
func RegimeOf(r *Record) string {
	str := func(key string) string {
		v, _ := r.Value(key)
		s, _ := v.(string)
		return s
	}
	fz, _ := r.Value("model.freeze_backbone")
	frozen, _ := fz.(bool)
	switch {
	case str("model.pretrained") != "":
		if frozen {
			return RegimeFrozen
		}
		return RegimeFineTuned
	case str("model.init_from") != "":
		if frozen {
			return RegimeStoredStart + ", frozen"
		}
		return RegimeStoredStart
	case frozen:
		return RegimeScratch + ", frozen"
	}
	return RegimeScratch
}

// Regime is the verdict's regime: its arms' regimes (from their records, in arm order, each
// once, joined by " vs " when they differ) or, when no arm has records, the one its scale
// implies (RegimePretrained at the pretrained scale, RegimeScratch otherwise).
func (v *ClaimVerdict) Regime() string {
	var out []string
	seen := map[string]bool{}
	for _, f := range v.Facts {
		if f.N == 0 || f.Regime == "" || seen[f.Regime] {
			continue
		}
		seen[f.Regime] = true
		out = append(out, f.Regime)
	}
	if len(out) == 0 {
		if v.Scale == PretrainedScale {
			return RegimePretrained
		}
		return RegimeScratch
	}
	return strings.Join(out, " vs ")
}
