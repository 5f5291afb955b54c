package reproduce

// Testing with the introspective similarity (seed 002 Table 8): the runner ranks the final test
// embeddings a second time, by the ISM of the run's idml loss between the semantic and the
// uncertainty embeddings the trainer kept (test_uncertainty.npy).

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dmlkit/dmlkit/dmlkit/evaluate"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

// uncertaintyMetrics adds, when the run kept test uncertainty embeddings (model.dual_head):
//
//   - "unc/norm_test": the mean norm ‖u‖ of the raw uncertainty embeddings over the test split
//     (seed 002 §4.5's uncertainty level of unseen images);
//   - with eval.ism: "ism/R@k" for k in eval.ks (and 1), "ism/Recall@k", "ism/MAP@R",
//     "ism/R-Precision", "ism/n_queries", "ism/n_skipped": self-retrieval ranked by the
//     introspective similarity (evaluate.ISMRetrieval) with the idml loss's τ, γ, metric and
//     code_metric, and the score eval.ism_form (default: C_IN for the proxyanchor and
//     multisimilarity bases, D_IN for the others; train.EvalConfig.ISMFormFor); "ism/form_cos" is 1
//     for the C_IN form, 0 for D_IN. The plain keys ("R@1", …) rank the same semantic embeddings by
//     the cosine, so the two are paired within one run;
//   - with eval.pull (seed 002 Fig. 7's one-step pull, pair bases): evaluate.IDMLPull on 100
//     batches of 8 test classes × 4 images (seeded by the run's seed): the series "pull/decile"
//     (1…10), "pull/unc_by_decile" and "pull/ratio_by_decile" (mean ‖u‖, and IDML's summed gradient
//     norm on the semantic embeddings over the base loss's, per tenth of the rows by ‖u‖),
//     and the metrics "pull/ratio_bottom" and "pull/ratio_top" (the lowest and the highest tenth),
//     "pull/unc_bottom", "pull/unc_top".
func uncertaintyMetrics(cfg train.Config, dir string, emb []float32, n, d int, labels []int64, m map[string]float64, series map[string][]float64) error {
	path := filepath.Join(dir, train.TestUncertaintyFile)
	if _, err := os.Stat(path); err != nil {
		if cfg.Eval.ISM || cfg.Eval.Pull {
			return fmt.Errorf("eval.ism / eval.pull: %w", err)
		}
		return nil
	}
	unc, shape, err := npy.ReadFloat32(path)
	if err != nil {
		return err
	}
	if len(shape) != 2 || shape[0] != n {
		return fmt.Errorf("%s: shape %v, want [%d, U] (one row per test embedding)", path, shape, n)
	}
	du := shape[1]
	m["unc/norm_test"] = evaluate.MeanRowNorm(unc, du)
	if cfg.Eval.Pull {
		if err := pullMetrics(cfg, emb, unc, n, d, du, labels, m, series); err != nil {
			return err
		}
	}
	if !cfg.Eval.ISM {
		return nil
	}
	ic, ok := cfg.IDMLLoss()
	if !ok {
		return fmt.Errorf("eval.ism: the run has no idml loss")
	}
	form := cfg.Eval.ISMFormFor(ic)
	r, err := evaluate.ISMRetrieval(emb, unc, n, d, du, labels, evaluate.ISMOptions{
		Tau: ic.Tau, Gamma: ic.Gamma, Metric: ic.Metric, CodeMetric: ic.CodeMetric, Form: form, K: protocolKs(cfg.Eval.Ks)})
	if err != nil {
		return fmt.Errorf("eval.ism: %w", err)
	}
	for k, v := range r {
		m["ism/"+k] = v
	}
	m["ism/form_cos"] = 0
	if form == "cos" {
		m["ism/form_cos"] = 1
	}
	return nil
}

// pullMetrics stores evaluate.IDMLPull's deciles (see uncertaintyMetrics).
func pullMetrics(cfg train.Config, emb, unc []float32, n, d, du int, labels []int64, m map[string]float64, series map[string][]float64) error {
	ic, ok := cfg.IDMLLoss()
	if !ok {
		return fmt.Errorf("eval.pull: the run has no idml loss")
	}
	r, err := evaluate.IDMLPull(emb, unc, n, d, du, labels, evaluate.PullOptions{Loss: ic, Seed: uint64(cfg.Seed)})
	if err != nil {
		return fmt.Errorf("eval.pull: %w", err)
	}
	if len(r.DecileRatio) != 10 {
		return fmt.Errorf("eval.pull: fewer than 10 sampled test rows")
	}
	for k, v := range r.DecileRatio {
		if math.IsNaN(v) {
			return fmt.Errorf("eval.pull: the base loss pulls none of the test images of tenth %d of ‖u‖", k+1)
		}
	}
	dec := make([]float64, 10)
	for k := range dec {
		dec[k] = float64(k + 1)
	}
	series["pull/decile"], series["pull/unc_by_decile"], series["pull/ratio_by_decile"] = dec, r.DecileUnc, r.DecileRatio
	m["pull/ratio_bottom"], m["pull/ratio_top"] = r.DecileRatio[0], r.DecileRatio[9]
	m["pull/unc_bottom"], m["pull/unc_top"] = r.DecileUnc[0], r.DecileUnc[9]
	return nil
}
