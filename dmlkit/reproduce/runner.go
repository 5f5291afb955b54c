package reproduce

// The adapter between the sweep workbench (package sweep) and the trainer: the trainer as the runner of
// `dmlkit run` / `dmlkit reproduce` (and of notebooks, which call it directly), and its
// configuration check as the validator every planned run passes before anything trains.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/evaluate"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

// Register makes the trainer the runner and validator of package sweep
// ([sweep.SetRunner], [sweep.SetValidator]); the CLI calls it at start, a notebook
// before [sweep.RunSweep].
func Register() {
	// Keys added to the trainer after records were stored, whose defaults reproduce the runs made
	// before them: written explicitly at the default they change no run's hash (issue 43).
	sweep.SetNeutralDefaults(map[string][]any{
		"precision":  {string(train.PrecisionFP32), ""},
		"loss_scale": {0},
	})
	sweep.SetValidator(ValidateTrainConfig)
	sweep.SetResolver(ResolvedConfig)
	sweep.SetRunner(TrainRunner)
}

// TrainConfig turns a resolved spec configuration (a nested map with train.Config's YAML field
// names, e.g. {loss: {name: combo, set: {expr: "smoothap+tcm"}}, sampler: {batch_size: 64}}) into
// a train.Config: train.Default() with every leaf assigned through Config.Apply, so that loss.set.*,
// data.options.* and loss.terms.* reach their maps and lists, and unknown fields or wrongly typed
// values fail with their dotted path.
func TrainConfig(cfg map[string]any) (train.Config, error) {
	c := train.Default()
	if err := c.Apply(sweep.Flatten(cfg)); err != nil {
		return c, err
	}
	return c, nil
}

// ResolvedConfig is the sweep.Resolver of the trainer: the configuration with every default
// filled in, as dotted keys with JSON-typed values — train.Default() with cfg applied, and the
// loss's own defaults (losses.New's config) under loss.set.*. The tuning rule of the claims engine
// compares such configurations, so a key written with its default value equals the key unset.
func ResolvedConfig(cfg map[string]any) (map[string]any, error) {
	c, err := TrainConfig(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	add := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if m, ok := x.(map[string]any); ok {
			for k, e := range sweep.Flatten(m) {
				out[key+"."+k] = e
			}
			return nil
		}
		out[key] = x
		return nil
	}
	for _, f := range config.Fields(&c) {
		if f.Key == "loss.set" {
			continue
		}
		if err := add(f.Key, f.Value); err != nil {
			return nil, err
		}
	}
	set := map[string]any{}
	for k, v := range c.Loss.Set {
		set[k] = v
	}
	if l, err := losses.New(c.Loss.Name, c.Loss.Set); err == nil {
		for _, f := range config.Fields(l) {
			if _, given := set[f.Key]; !given {
				set[f.Key] = f.Value
			}
		}
	}
	for k, v := range set {
		if err := add("loss.set."+k, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ValidateTrainConfig is the sweep.Validator of the trainer: the configuration must map onto
// train.Config and pass train.Config.Validate (known dataset, loss, model, sampler, ...).
func ValidateTrainConfig(cfg map[string]any) error {
	c, err := TrainConfig(cfg)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	// Hard verification negatives need coarse test labels (testCoarse): refused before training
	// rather than left out of the record afterwards.
	if h := c.Eval.Verify.HardNegatives; h > 0 && c.Eval.Verify.Negatives > 0 && testCoarse(c.Data.Name, []int64{0}) == nil {
		return fmt.Errorf("eval.verify.hard_negatives: %d: data.name %q has no coarse labels (only omniglot's alphabets)", h, c.Data.Name)
	}
	return nil
}

// opisOptions are the OPIS settings of every run: the paper's protocol for its large open-set
// benchmarks (seed 000 §5.1): all positive pairs, 10 random negatives per positive for each class,
// calibration range 1e-2 ≤ FAR ≤ 1e-1, N = 100 thresholds, ε = 10 %, convention
// metrics.OPISNormIntegral (the Eq. 2 integral; Algorithm 1's sum is N/(d_max−d_min) times larger).
// Classes with a single test image have no positive pair and are skipped.
func opisOptions(seed int64) metrics.OPISOptions {
	return metrics.OPISOptions{Seed: uint64(seed), SkipClassesWithoutPositives: true}
}

// opisRanges are the calibration ranges (FAR intervals of the pooled negative pairs) at which every
// run also reports OPIS, for seed 000 Fig. 8 (the ranking of losses under several calibration
// ranges; the paper names 1e-3 < FAR < 5e-2 and its default 1e-2 < FAR < 1e-1). Each is stored as
// the metric OPISRangeKey(min, max).
var opisRanges = [][2]float64{{1e-3, 1e-2}, {1e-3, 5e-2}, {1e-2, 1e-1}, {5e-2, 2e-1}}

// OPISRangeKey names the metric of OPIS over the FAR range [lo, hi], e.g. "OPIS_far_1e-03_5e-02".
func OPISRangeKey(lo, hi float64) string { return fmt.Sprintf("OPIS_far_%.0e_%.0e", lo, hi) }

// TrainRunner is the sweep.Runner of the trainer. It trains rs.Config in rs.Dir with
// train.Run, then computes OPIS and ε-OPIS on the final test embeddings the trainer wrote.
//
// Outcome:
//   - Metrics: the last evaluation's metrics with the "test/" prefix removed ("R@1", "MAP@R", ...,
//     fractions in [0, 1]; "val/…" and "train/…" keep their prefix); "OPIS" and "10%-OPIS" (raw
//     values, see opisOptions); "opis/d_min", "opis/d_max" (the calibration range, L2 distance);
//     OPIS at every range of opisRanges ("OPIS_far_1e-03_5e-02", ..., and together, in the order of
//     opisRanges, as the series "opis/far_ranges" for seed 000 Fig. 8); "steps", "epochs", "final_loss" (not for a run of no
//     optimiser step, epochs 0: it computed no loss), "stopped_early" (0 or 1).
//   - Series: per evaluation, "curve/epoch", "curve/loss" (mean training loss since the previous
//     evaluation; NaN where none) and "curve/<metric>" for each metric of the evaluation (e.g.
//     "curve/test/R@1"); and OPIS curves over the N thresholds: "opis/thresholds",
//     "opis/mean_utility", "opis/utility_eps_best", "opis/utility_eps_worst", plus
//     "opis/class_mean_utility" (one value per test class: its utility averaged over the
//     calibration range, seed 000 Fig. 2's per-class curves reduced to one number per class).
//     With eval.initial, "init/<metric>": the evaluation of the untrained (or initialised) model.
//     With eval.skip_opis none of the OPIS keys and curves is stored (opis_s then times nothing).
//   - Timings: "train_s" (train.Run, including its evaluations) and "opis_s"; and, as metrics for
//     seed 000 Table 4, "time/step_ms" (mean optimiser step after the compiling first one; 0 when
//     the run has one step), "time/first_step_ms" (the first step, compilation included),
//     "time/data_ms" (batch assembly per step), "time/epoch_s" (steps per epoch × (step + data)),
//     "time/eval_s", and with eval.time_loss "time/loss_ms" (the loss's forward + backward alone on
//     the batch's embeddings) and "time/backbone_ms" (step − loss).
//   - With 2-D embeddings (model.dim 2, seed 000 Fig. 5): the series "emb2d/x", "emb2d/y" and
//     "emb2d/label" for at most emb2dMax test points spread evenly over the test set.
//   - The paper diagnostics the run's spec names (RunSpec.Diagnostics; evaluate.Diagnostics has
//     them, e.g. seed 000's Figs. 1 and 10): their metrics and series, or, where one is undefined
//     for the run, Outcome.Notes saying why.
//   - "best/…": each evaluated metric's best value over training and its epoch (bestOverTraining).
//   - With log.every_steps: the step log of the whole run (steplog.jsonl, resumes included) as the
//     series "steplog/step" and "steplog/<name>" (e.g. "steplog/loss", "steplog/hard_triplets"),
//     and the metrics "steplog/<name>/first" and "steplog/<name>/last", the means over the first
//     and the last tenth of the logged steps (stepLogSeries).
//   - With eval.full_map, eval.cluster, eval.reid or eval.verify: the metrics of those protocols on
//     the same final test embeddings (protocolMetrics: "mAP", "NMI", "reid/…", "verify/…",
//     "verify_hard/…", the ROC series "verify/roc_fpr", "verify/roc_tpr"); timing "protocols_s".
//   - With eval.rerank.k (seed 004 Table 10): "rerank/R@k", "rerank/MAP@R", … after contextual
//     re-ranking (β = eval.rerank.beta, default 0.1), "rerank/k", "rerank/beta", and the same
//     keys as "rerank_k<k>/…" for eval.rerank.k and each eval.rerank.more_k. With eval.hierarchical and coarse test labels
//     (Omniglot alphabets; seed 004 Table 9): "HR@k", "coarse/R@k", "coarse/MAP@R", and with
//     eval.full_map "mAP/coarse".
//   - With model.dual_head (IDML): "unc/norm_test", the mean ‖u‖ of the test split's uncertainty
//     embeddings; with eval.ism also "ism/R@k", "ism/MAP@R", … (uncertaintyMetrics): retrieval
//     ranked by the introspective similarity, seed 002 Table 8. With eval.degrade also
//     "unc/norm_test_<kind>_<level>" (e.g. "unc/norm_test_noise_0.2"): the mean ‖u‖ of the test
//     images under that degradation (train.Result.UncDegraded), and per kind the series
//     "unc/degrade/<kind>/level" and "unc/degrade/<kind>/norm" with the clean test set first.
//   - With data.corrupt label or image noise (seed 004 §4.4): the realised corruption
//     (train.Result.Corruption) as "corrupt/label_changed" (labels that actually changed: the
//     paper's draw from all classes keeps about 1/K of the chosen ones), "corrupt/label_changed_frac"
//     (of the training images), "corrupt/images_replaced", "corrupt/images_replaced_frac".
//
// A run that diverges (*train.DivergedError) returns an *sweep.RunFailure with the step, so
// the sweep stores a record marked failed instead of training it again on every resume.
func TrainRunner(ctx context.Context, rs sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
	cfg, err := TrainConfig(rs.Config)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	ropt := train.Options{Progress: progressReporter(progress)}
	if rs.Measures(sweep.MeasureTrain) {
		// The training evidence of a stored run (sweep.Remeasure): R@1 on a fixed subset of the
		// training images after training and before the first step, and the loss of every step.
		// None of it changes what the run trains.
		cfg.Eval.Train = true
		if cfg.Eval.MaxTrain == 0 {
			cfg.Eval.MaxTrain = sweep.MeasureTrainImages
		}
		ropt.InitTrain = cfg.Eval.MaxTrain
		ropt.LossTrace = true
	}
	res, err := train.RunWithOptions(ctx, cfg, rs.Dir, ropt)
	var diverged *train.DivergedError
	if errors.As(err, &diverged) {
		// A rerun would diverge again: the sweep stores a record marked failed at this step.
		return nil, &sweep.RunFailure{Step: diverged.Step, Err: err}
	}
	if err != nil {
		return nil, err
	}
	trainS := time.Since(t0).Seconds()
	out := &sweep.Outcome{
		Metrics: map[string]float64{},
		Series:  map[string][]float64{},
		Timings: map[string]float64{"train_s": trainS},
		Digests: res.Digests,
	}
	for k, v := range res.Metrics {
		out.Metrics[strings.TrimPrefix(k, "test/")] = v
	}
	out.Metrics["steps"] = float64(res.Steps)
	out.Metrics["epochs"] = float64(res.Epochs)
	if res.Steps > 0 { // a run of no optimiser step (epochs 0, steps 0) computed no loss
		out.Metrics["final_loss"] = res.FinalLoss
	}
	if cfg.Eval.RestoreBest {
		out.Metrics["best_step"] = float64(res.BestStep) // the evaluation reported (eval.restore_best)
	}
	out.Metrics["stopped_early"] = 0
	if res.StoppedEarly {
		out.Metrics["stopped_early"] = 1
	}
	if c := res.Corruption; c != nil {
		out.Metrics["corrupt/label_changed"] = float64(c.LabelChanged)
		out.Metrics["corrupt/label_changed_frac"] = c.LabelChangedFrac
		out.Metrics["corrupt/images_replaced"] = float64(c.ImagesReplaced)
		out.Metrics["corrupt/images_replaced_frac"] = c.ImagesReplacedFrac
	}
	for _, u := range res.UncDegraded {
		out.Metrics["unc/norm_test_"+u.Key()] = u.MeanNorm
	}
	historySeries(res.History, out.Series)
	if cfg.Log.EverySteps > 0 {
		sl, err := train.ReadStepLog(rs.Dir)
		if err != nil {
			return nil, err
		}
		stepLogSeries(sl, out.Series, out.Metrics)
	}
	bestOverTraining(out.Series, out.Metrics)
	initialEvaluation(out.Series, out.Metrics)
	for k, v := range res.InitTrain {
		if _, ok := out.Metrics["init/"+k]; !ok {
			out.Metrics["init/"+k] = v
		}
	}
	traceLoss(res.Losses, out.Series)
	tm := res.Timing
	out.Metrics["time/step_ms"] = 1e3 * tm.Step
	out.Metrics["time/first_step_ms"] = 1e3 * tm.FirstStep
	out.Metrics["time/data_ms"] = 1e3 * tm.Data
	out.Metrics["time/epoch_s"] = tm.Epoch()
	out.Metrics["time/eval_s"] = tm.Eval
	if tm.LossReps > 0 {
		out.Metrics["time/loss_ms"] = 1e3 * tm.Loss
		out.Metrics["time/backbone_ms"] = 1e3 * tm.Backbone()
	}

	t1 := time.Now()
	emb, n, d, labels, err := finalEmbeddings(rs.Dir)
	if err != nil {
		return nil, err
	}
	if !cfg.Eval.SkipOPIS {
		if err := runnerOPIS(cfg.Seed, emb, n, d, labels, out); err != nil {
			return nil, err
		}
	}
	out.Timings["opis_s"] = time.Since(t1).Seconds()
	if d == 2 {
		emb2dSeries(emb, n, labels, out.Series)
	}
	if err := runDiagnostics(rs.Diagnostics, cfg.Seed, emb, n, d, labels, out); err != nil {
		return nil, err
	}
	t2 := time.Now()
	if err := protocolMetrics(cfg.Eval, cfg.Seed, emb, n, d, labels, testCoarse(cfg.Data.Name, labels), out.Metrics, out.Series); err != nil {
		return nil, err
	}
	if err := uncertaintyMetrics(cfg, rs.Dir, emb, n, d, labels, out.Metrics, out.Series); err != nil {
		return nil, err
	}
	degradedSeries(res.UncDegraded, out.Metrics["unc/norm_test"], out.Series)
	out.Timings["protocols_s"] = time.Since(t2).Seconds()
	return out, nil
}

// degradedSeries stores, per degradation kind of eval.degrade, the series "unc/degrade/<kind>/level"
// (0, then the listed levels in order) and "unc/degrade/<kind>/norm" (the clean test set's mean ‖u‖,
// then the degraded ones'), for line figures of ‖u‖ against the level.
func degradedSeries(us []train.DegradedUnc, clean float64, dst map[string][]float64) {
	for _, u := range us {
		lk, nk := "unc/degrade/"+u.Kind+"/level", "unc/degrade/"+u.Kind+"/norm"
		if dst[lk] == nil {
			dst[lk], dst[nk] = []float64{0}, []float64{clean}
		}
		dst[lk] = append(dst[lk], u.Level)
		dst[nk] = append(dst[nk], u.MeanNorm)
	}
}

// runnerOPIS stores OPIS and ε-OPIS of the final test embeddings at the default calibration range
// and at every range of opisRanges, with their curves (see TrainRunner).
func runnerOPIS(seed int64, emb []float32, n, d int, labels []int64, out *sweep.Outcome) error {
	op, err := metrics.OPIS(emb, n, d, labels, opisOptions(seed))
	if err != nil {
		return fmt.Errorf("OPIS of the final test embeddings: %w", err)
	}
	for _, r := range opisRanges {
		ro := op // the default calibration range was computed above
		if r != [2]float64{metrics.OPISDefaultFARMin, metrics.OPISDefaultFARMax} {
			o := opisOptions(seed)
			o.FARMin, o.FARMax = r[0], r[1]
			if ro, err = metrics.OPIS(emb, n, d, labels, o); err != nil {
				return fmt.Errorf("OPIS of the final test embeddings at %g ≤ FAR ≤ %g: %w", r[0], r[1], err)
			}
		}
		out.Metrics[OPISRangeKey(r[0], r[1])] = ro.OPIS
		out.Series["opis/far_ranges"] = append(out.Series["opis/far_ranges"], ro.OPIS)
	}
	out.Metrics["OPIS"] = op.OPIS
	out.Metrics["10%-OPIS"] = op.EpsOPIS
	out.Metrics["opis/d_min"] = op.DMin
	out.Metrics["opis/d_max"] = op.DMax
	out.Series["opis/thresholds"] = op.Thresholds
	out.Series["opis/mean_utility"] = op.MeanUtility
	out.Series["opis/utility_eps_best"] = op.UtilityEpsBest
	out.Series["opis/utility_eps_worst"] = op.UtilityEpsWorst
	out.Series["opis/class_mean_utility"] = op.ClassMeanUtility
	return nil
}

// emb2dMax bounds the number of 2-D test embeddings stored in a record.
var emb2dMax = 3000

// emb2dSeries stores at most emb2dMax of the n 2-D embeddings (every ⌈n/emb2dMax⌉-th, so all
// classes keep their proportions) as the series emb2d/x, emb2d/y and emb2d/label.
func emb2dSeries(emb []float32, n int, labels []int64, dst map[string][]float64) {
	stride := (n + emb2dMax - 1) / emb2dMax
	var x, y, l []float64
	for i := 0; i < n; i += stride {
		x = append(x, float64(emb[2*i]))
		y = append(y, float64(emb[2*i+1]))
		l = append(l, float64(labels[i]))
	}
	dst["emb2d/x"], dst["emb2d/y"], dst["emb2d/label"] = x, y, l
}

// finalEmbeddings reads the test embeddings [n, d] and labels [n] the trainer wrote into dir.
func finalEmbeddings(dir string) (emb []float32, n, d int, labels []int64, err error) {
	embPath := filepath.Join(dir, "test_embeddings.npy")
	emb, shape, err := npy.ReadFloat32(embPath)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	if len(shape) != 2 {
		return nil, 0, 0, nil, fmt.Errorf("%s: shape %v, want [N, D]", embPath, shape)
	}
	labPath := filepath.Join(dir, "test_labels.npy")
	labels, lshape, err := npy.ReadInt64(labPath)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	if len(lshape) != 1 || lshape[0] != shape[0] {
		return nil, 0, 0, nil, fmt.Errorf("%s: labels of shape %v for %d embeddings", labPath, lshape, shape[0])
	}
	return emb, shape[0], shape[1], labels, nil
}

// bestOverTraining adds, for every evaluated metric with a known better direction, its best
// value over the evaluations of the run and the epoch it was reached at: "best/R@1" and
// "best/R@1/epoch" for the test metric R@1 (curve "curve/test/R@1"), "best/val/OPIS" for a
// validation metric. Larger is better except for OPIS-type metrics (lower). NaN evaluations are
// skipped; the first evaluation wins ties. With at least two evaluations it also adds
// "curve_mean/<metric>", the mean over the evaluations (the area under the learning curve per
// evaluation: a faster-converging run has a larger one at equal final value; seed 001 Fig. 3).
func bestOverTraining(series map[string][]float64, dst map[string]float64) {
	epochs := series["curve/epoch"]
	for k, vals := range series {
		name, ok := strings.CutPrefix(k, "curve/")
		if !ok || name == "epoch" || name == "loss" {
			continue
		}
		metric := name[strings.LastIndex(name, "/")+1:]
		lower := strings.Contains(metric, "OPIS")
		if !lower && !higherIsBetter(metric) {
			continue
		}
		best, at := math.NaN(), -1
		sum, cnt := 0.0, 0
		for i, v := range vals {
			if math.IsNaN(v) {
				continue
			}
			sum += v
			cnt++
			if at < 0 || (lower && v < best) || (!lower && v > best) {
				best, at = v, i
			}
		}
		if at < 0 {
			continue
		}
		key := "best/" + strings.TrimPrefix(name, "test/")
		dst[key] = best
		if len(vals) >= 2 {
			dst["curve_mean/"+strings.TrimPrefix(name, "test/")] = sum / float64(cnt)
		}
		if at < len(epochs) {
			dst[key+"/epoch"] = epochs[at]
		}
	}
}

// initialEvaluation adds, when the run evaluated the untrained model (eval.initial: the first
// evaluation is at epoch 0), each test metric of that evaluation as "init/<metric>" (e.g.
// "init/R@1" from "curve/test/R@1"; validation and training metrics keep their prefix:
// "init/val/R@1") — seed 003 Table 5's "init" row, the pre-trained network before fine-tuning.
func initialEvaluation(series map[string][]float64, dst map[string]float64) {
	epochs := series["curve/epoch"]
	if len(epochs) == 0 || epochs[0] != 0 {
		return
	}
	for k, vals := range series {
		name, ok := strings.CutPrefix(k, "curve/")
		if !ok || name == "epoch" || name == "loss" || len(vals) == 0 {
			continue
		}
		dst["init/"+strings.TrimPrefix(name, "test/")] = vals[0]
	}
}

// traceLoss stores the loss of every step (train.Options.LossTrace) as the series "trace/step"
// (1-based step numbers) and "trace/loss", thinned to at most sweep.TraceLossPoints points: every
// ⌈n/TraceLossPoints⌉-th step, the first and the last always kept.
func traceLoss(losses []float64, dst map[string][]float64) {
	n := len(losses)
	if n == 0 {
		return
	}
	every := (n + sweep.TraceLossPoints - 1) / sweep.TraceLossPoints
	var steps, vals []float64
	for i := 0; i < n; i += every {
		steps, vals = append(steps, float64(i+1)), append(vals, losses[i])
	}
	if int(steps[len(steps)-1]) != n {
		steps, vals = append(steps, float64(n)), append(vals, losses[n-1])
	}
	dst["trace/step"], dst["trace/loss"] = steps, vals
}

// higherIsBetter reports whether a retrieval or clustering metric improves upwards.
func higherIsBetter(metric string) bool {
	for _, p := range []string{"R@", "Recall@", "MAP@R", "R-Precision", "mAP", "NMI", "AMI", "P@", "acc@"} {
		if strings.HasPrefix(metric, p) {
			return true
		}
	}
	return false
}

// historySeries stores the evaluation history as per-evaluation curves.
func historySeries(h []train.EvalRecord, dst map[string][]float64) {
	if len(h) == 0 {
		return
	}
	keys := map[string]bool{}
	for _, r := range h {
		for k := range r.Metrics {
			keys[k] = true
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	epoch := make([]float64, len(h))
	loss := make([]float64, len(h))
	for i, r := range h {
		epoch[i] = r.Epoch
		loss[i] = math.NaN()
		if r.Loss != nil {
			loss[i] = *r.Loss
		}
	}
	dst["curve/epoch"] = epoch
	dst["curve/loss"] = loss
	for _, k := range names {
		v := make([]float64, len(h))
		for i, r := range h {
			x, ok := r.Metrics[k]
			if !ok {
				x = math.NaN()
			}
			v[i] = x
		}
		dst["curve/"+k] = v
	}
}

// progressReporter turns the trainer's progress into short messages: every evaluation, and the
// training step about every tenth of the run.
func progressReporter(progress func(string)) func(train.Progress) {
	if progress == nil {
		return nil
	}
	last := -1
	return func(p train.Progress) {
		switch p.Phase {
		case "features": // a frozen backbone's features being computed (model.freeze_backbone)
			if p.Step == p.TotalSteps || p.Step%(64*50) == 0 {
				progress(fmt.Sprintf("backbone features %d/%d images", p.Step, p.TotalSteps))
			}
			return
		case "warning": // e.g. a damaged feature-cache part, dropped and computed again
			progress(p.Message)
			return
		case "eval":
			keys := make([]string, 0, len(p.Metrics))
			for k := range p.Metrics {
				if strings.HasSuffix(k, "/R@1") || strings.HasSuffix(k, "/MAP@R") {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			var b strings.Builder
			fmt.Fprintf(&b, "eval step %d/%d", p.Step, p.TotalSteps)
			for _, k := range keys {
				fmt.Fprintf(&b, " %s=%.4f", k, p.Metrics[k])
			}
			progress(b.String())
		default:
			if p.TotalSteps <= 0 {
				return
			}
			tenth := p.Step * 10 / p.TotalSteps
			if tenth != last {
				last = tenth
				progress(fmt.Sprintf("step %d/%d epoch %d/%d loss %.4f eta %s", p.Step, p.TotalSteps, p.Epoch+1, p.Epochs, p.Loss, p.ETA.Round(time.Second)))
			}
		}
	}
}

// stepLogSeries stores a step log as series ("steplog/step" and one "steplog/<name>" per logged
// value) and, for each name, the means of its finite values over the first and the last
// ⌈len/10⌉ logged steps as the metrics "steplog/<name>/first" and "steplog/<name>/last" (a value
// early and late in training, paired within one run by a claim's Arm.Metric).
func stepLogSeries(l *train.StepLog, series map[string][]float64, m map[string]float64) {
	n := l.Len()
	if n == 0 {
		return
	}
	steps := make([]float64, n)
	for i, s := range l.Steps {
		steps[i] = float64(s)
	}
	series["steplog/step"] = steps
	w := (n + 9) / 10
	mean := func(v []float64) float64 {
		sum, c := 0.0, 0
		for _, x := range v {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				sum += x
				c++
			}
		}
		if c == 0 {
			return math.NaN()
		}
		return sum / float64(c)
	}
	for name, v := range l.Values {
		series["steplog/"+name] = slices.Clone(v)
		m["steplog/"+name+"/first"] = mean(v[:w])
		m["steplog/"+name+"/last"] = mean(v[n-w:])
	}
}

// runDiagnostics adds the paper diagnostics a spec names (evaluate.LookupDiagnostic) to out.
func runDiagnostics(names []string, seed int64, emb []float32, n, d int, labels []int64, out *sweep.Outcome) error {
	for _, name := range names {
		dg, ok := evaluate.LookupDiagnostic(name)
		if !ok {
			return fmt.Errorf("diagnostic %q: not one of evaluate.Diagnostics", name)
		}
		r := dg.Run(emb, n, d, labels, seed)
		for k, v := range r.Metrics {
			out.Metrics[k] = v
		}
		for k, v := range r.Series {
			out.Series[k] = v
		}
		for k, v := range r.Notes {
			if out.Notes == nil {
				out.Notes = map[string]string{}
			}
			out.Notes[k] = v
		}
	}
	return nil
}

// The spec validator knows the diagnostics evaluate implements.
func init() {
	docs := map[string]string{}
	for _, dg := range evaluate.Diagnostics() {
		docs[dg.Name] = dg.Doc
	}
	sweep.SetDiagnostics(docs)
}
