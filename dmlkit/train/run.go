package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/evaluate"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Evaluator computes retrieval metrics of embeddings emb ([n, d] row-major) with labels.
type Evaluator func(emb []float32, n, d int, labels []int64) (map[string]float64, error)

// RetrievalEvaluator returns the default evaluator: self-retrieval (leave-one-out) with cosine
// similarity through the metrics engine: R@k for ks, Recall@k, MAP@R, R-Precision; with opis
// also OPIS and ε-OPIS (seed 000, the paper's defaults: sampled negatives at 10:1 drawn with
// seed, FAR range [1e-2, 1e-1], 100 thresholds, ε = 10%; classes with one sample skipped).
func RetrievalEvaluator(ks []int, opis bool, seed uint64) Evaluator {
	return func(emb []float32, n, d int, labels []int64) (map[string]float64, error) {
		m, err := metrics.Retrieval(emb, n, d, labels, metrics.Options{K: ks})
		if err != nil || !opis {
			return m, err
		}
		o, err := metrics.OPIS(emb, n, d, labels, metrics.OPISOptions{Seed: seed, SkipClassesWithoutPositives: true})
		if err != nil {
			return nil, err
		}
		maps.Copy(m, o.Metrics()) // "OPIS", "10%-OPIS"
		return m, nil
	}
}

// Progress is reported through the callback after every optimiser step and every evaluation.
type Progress struct {
	Phase      string // "train", "eval", "features" (a fixed backbone's features computed) or "warning"
	Step       int    // optimiser steps done
	TotalSteps int
	Epoch      int // current epoch, 0-based
	Epochs     int
	Loss       float64 // loss of the last step
	LR         float64
	Elapsed    time.Duration
	ETA        time.Duration
	Metrics    map[string]float64 // eval phase only
	// Message, in Phase "warning", says what went wrong and what was done about it (e.g. a
	// feature-cache part that failed its checksum, left out and computed again).
	Message string
}

// Options are the non-configuration inputs of a run.
type Options struct {
	// Progress, when non-nil, receives progress reports.
	Progress func(Progress)
	// Evaluator replaces the default [RetrievalEvaluator].
	Evaluator Evaluator
	// Resume continues from the newest checkpoint in the run directory, if any.
	Resume bool
	// Backend replaces backend.MustShared().
	Backend compute.Backend
	// StopAfter, when > 0, stops (after checkpointing) once this many steps are done in total,
	// as if interrupted (for resume tests and time-sliced runs).
	StopAfter int
	// InitTrain, when > 0, evaluates the untrained model on an even subset of at most InitTrain
	// training images before the first step of a fresh run, into [Result.InitTrain]. It adds no
	// evaluation to the history and leaves early stopping alone, so the run trains exactly as
	// without it: the step-0 reference of the training rule (an arm must end above its own
	// untrained model).
	InitTrain int
	// LossTrace keeps the training loss of every step of this session in [Result.Losses]; it
	// reads what the step computes anyway and changes nothing in the run.
	LossTrace bool
}

// EvalRecord is one line of metrics.jsonl.
type EvalRecord struct {
	Step     int                `json:"step"`
	Epoch    float64            `json:"epoch"`
	Loss     *float64           `json:"loss,omitempty"` // mean training loss since the previous record
	LR       float64            `json:"lr"`
	Metrics  map[string]float64 `json:"metrics"`
	WallTime float64            `json:"wall_time_s"`
	// Failed, on the last record of a run that stopped on an error (e.g. a non-finite loss),
	// says why; such a record has no metrics.
	Failed string `json:"failed,omitempty"`
}

// DivergedError is the error of a run stopped at the first step whose loss, or whose batch
// embeddings, were not finite. The run directory's metrics.jsonl then ends with a record marked
// failed, and no test embeddings are written. Its message names the likely cause: a non-finite
// output of the untrained backbone or loss on the very first step (before any update, so no
// learning rate is to blame), fp16 gradients overflowing the static loss scale, or else a step
// too large for the parameters.
type DivergedError struct {
	Step       int     // 1-based number of the optimiser step that showed it
	Loss       float64 // that step's loss
	Embeddings bool    // the loss was finite but the batch's embeddings were not
	// BeforeUpdate: the step was the run's first (no update had happened; a resumed run's first
	// step is not one).
	BeforeUpdate bool
	// LossScale is the fp16 static loss scale of the run (0 with fp32 and bf16).
	LossScale float64
}

func (e *DivergedError) Error() string {
	switch {
	case e.BeforeUpdate && e.Embeddings:
		return fmt.Sprintf("train: diverged at step %d: the backbone's output is not finite (NaN/Inf) on the first batch, before any "+
			"update: the inputs or the initial weights give it (check model.pretrained / model.init_from and the images' "+
			"scaling); no learning rate causes this", e.Step)
	case e.BeforeUpdate:
		return fmt.Sprintf("train: diverged at step %d: the loss is %v on the first batch, before any update, with finite "+
			"embeddings: the loss's configuration (loss.set) or the batch (sampler) gives it; no learning rate causes this", e.Step, e.Loss)
	case e.LossScale > 0:
		return fmt.Sprintf("train: diverged at step %d: loss %v, the parameters became non-finite in the update of step %d: with "+
			"precision fp16 the gradients scaled by train.loss_scale = %g overflow float16 (max 65504): lower loss_scale, "+
			"or use precision bf16 (then, if it persists, lower optimizer.lr)", e.Step, e.Loss, e.Step-1, e.LossScale)
	case e.Embeddings:
		return fmt.Sprintf("train: diverged at step %d: the batch's embeddings are not finite (NaN/Inf; the loss, %v, hides it), so the parameters "+
			"became non-finite in the update of step %d (lower optimizer.lr or set optimizer.clip_value)", e.Step, e.Loss, e.Step-1)
	}
	return fmt.Sprintf("train: diverged at step %d: loss is %v (lower optimizer.lr or set optimizer.clip_value)", e.Step, e.Loss)
}

// diverged appends the failed record of a diverged step to metrics.jsonl and returns its
// *DivergedError.
func (r *runner) diverged(loss float64) error {
	de := &DivergedError{Step: r.st.Step + 1, Loss: loss, Embeddings: !math.IsNaN(loss) && !math.IsInf(loss, 0),
		BeforeUpdate: r.st.Step == 0}
	if r.cfg.Precision == PrecisionFP16 {
		de.LossScale = r.cfg.lossScale()
	}
	rec := EvalRecord{Step: r.st.Step, Epoch: float64(r.st.Step) / float64(r.spe), LR: r.lastLR, WallTime: r.wall(), Failed: de.Error()}
	if err := appendJSONL(filepath.Join(r.out, "metrics.jsonl"), rec); err != nil {
		return fmt.Errorf("%w (and the failed record could not be written: %v)", de, err)
	}
	return de
}

// TestUncertaintyFile is the run directory's file of the test set's raw uncertainty embeddings
// [N, U] float32 (model.dual_head only; rows as test_embeddings.npy).
const TestUncertaintyFile = "test_uncertainty.npy"

// Result summarises a finished run.
type Result struct {
	Steps        int
	Epochs       int
	FinalLoss    float64
	Metrics      map[string]float64 // the last evaluation ("test/R@1", "val/MAP@R", ...)
	History      []EvalRecord       // the evaluations of this session
	StoppedEarly bool
	Interrupted  bool // StopAfter reached
	OutDir       string
	Timing       Timing // wall-clock times of this session (seed 000 Table 4)
	// StepLog holds the loss diagnostics logged by this session every log.every_steps steps (nil
	// when logging is off); the run directory's steplog.jsonl holds those of the whole run.
	StepLog *StepLog
	// ResumeChanges lists the configuration changes a resumed session accepted (more epochs or
	// steps, checkpoint and evaluation batch settings), "field: old → new"; any other difference
	// from the run directory's config.resolved.yaml makes a resume fail.
	ResumeChanges []string
	// Corruption is the realised corruption of the training set (data.corrupt, seed 004 §4.4):
	// the labels that actually changed and the images replaced, counts and fractions of the
	// training set they were drawn over; nil without label or image noise. corruption.json holds
	// the same counts per record.
	Corruption *data.Realised
	// UncDegraded (eval.degrade) holds, per listed degradation in order, the mean norm ‖u‖ of the
	// uncertainty embeddings of the degraded test images after training.
	UncDegraded []DegradedUnc
	// Digests holds the SHA-256 (hex) of the files the model's weights came from, by
	// configuration field ("model.pretrained", "model.init_from"; nil when none), as env.json
	// records them. A file listed in the SHA256SUMS beside it was checked against it before the
	// run started.
	Digests map[string]string
	// BestStep is the step of the evaluation reported with eval.restore_best (0 otherwise).
	BestStep int
	// InitTrain holds the untrained model's training-split metrics ("train/R@1", ...) when
	// [Options.InitTrain] asked for them; nil otherwise.
	InitTrain map[string]float64
	// Losses holds the training loss of every step of this session, in order, when
	// [Options.LossTrace] asked for it.
	Losses []float64
}

// Run trains cfg, writing the run directory outDir (created if needed), and reports progress
// through progress (may be nil). See [RunWithOptions].
func Run(ctx context.Context, cfg Config, outDir string, progress func(Progress)) (*Result, error) {
	return RunWithOptions(ctx, cfg, outDir, Options{Progress: progress})
}

// RunWithOptions trains cfg. With opt.Resume and a checkpoint in outDir, cfg must equal the run's
// config.resolved.yaml except for the fields a resume may change (see [Result.ResumeChanges]);
// otherwise it fails naming the fields. The run directory receives config.resolved.yaml, env.json,
// metrics.jsonl (one line per evaluation), steplog.jsonl (with log.every_steps > 0, one line per
// logged step; see [StepLog]; a resume drops the lines after the checkpoint's step), checkpoints/ (every checkpoint.every_steps steps and at
// the end of every epoch) and, at the end, test_embeddings.npy [N, D] float32,
// test_labels.npy [N] int64 and, with model.dual_head, test_uncertainty.npy [N, U] float32 (IDML's
// raw uncertainty embeddings of the same rows, U = model.unc_dim or model.dim).
//
// The backbone is checked against the training images before any graph is built
// ([models.CheckImages]: model.input_size, an onnx network's input, output and gradients). A
// panic that still escapes the run's graph code becomes an error naming the backbone and its
// file ([panicError]); no Go panic trace reaches the caller.
func RunWithOptions(ctx context.Context, cfg Config, outDir string, opt Options) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, panicError(r, cfg.Model)
		}
	}()
	res, err = runWithOptions(ctx, cfg, outDir, opt)
	if err != nil {
		err = adviseGradient(err, cfg.Model)
	}
	return res, err
}

// runWithOptions is [RunWithOptions] without its recovery.
func runWithOptions(ctx context.Context, cfg Config, outDir string, opt Options) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("train: config: %w", err)
	}
	if cfg.Log.EverySteps > 0 && cfg.Multistage.Chunk > 0 {
		return nil, fmt.Errorf("train: config: log.every_steps: %d: step logging is not supported with multistage backprop (multistage.chunk %d > 0); set log.every_steps: 0",
			cfg.Log.EverySteps, cfg.Multistage.Chunk)
	}
	if outDir == "" {
		return nil, fmt.Errorf("train: empty output directory")
	}
	// The weights files are checked (and digested for the record) before anything is written.
	digests, err := weightDigests(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	split, err := loadData(&cfg)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	b := opt.Backend
	if b == nil {
		if b, err = backend.Shared(); err != nil {
			return nil, err
		}
	}
	// The backbone against the images, before any graph is built (the ONNX network once in a
	// throwaway graph: seconds for a ResNet-50, against minutes of compilation).
	if h, w, c := split.train.Dims(); cfg.Model.Backbone != "features" {
		if err := models.CheckImages(b, cfg.Model, h, w, c, !cfg.Model.FreezeBackbone); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	// With model.freeze_backbone the sets become cached backbone features and the model to
	// train is the head alone (trainedModel); with model.trainable_tail they become the cached
	// maps in front of the tail, which trains with the head. The run's files keep the
	// configuration as written.
	if cfg.Model.FreezeBackbone || cfg.Model.TrainableTail > 0 {
		if split, err = freezeBackbone(ctx, &cfg, b, split, opt.Progress); err != nil {
			return nil, err
		}
	}
	eval := opt.Evaluator
	if eval == nil {
		eval = RetrievalEvaluator(cfg.Eval.Ks, cfg.Eval.OPIS, uint64(cfg.Seed))
	}
	store := model.NewStore()
	var st State
	var resumeChanges []string
	ck, err := LatestCheckpoint(outDir)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	switch {
	case ck != "" && opt.Resume:
		if resumeChanges, err = checkResume(outDir, &cfg); err != nil {
			return nil, err
		}
		if st, err = loadCheckpoint(ck, store); err != nil {
			return nil, err
		}
		if err := truncateStepLog(outDir, st.Step); err != nil {
			return nil, err
		}
	case ck != "":
		return nil, fmt.Errorf("train: %s already holds a run (%s); resume it or choose another directory", outDir, filepath.Base(ck))
	default:
		for _, f := range []string{"metrics.jsonl", stepLogFile} {
			if err := os.Remove(filepath.Join(outDir, f)); err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("train: %w", err)
			}
		}
		if err := initModel(store, trainedModel(cfg)); err != nil {
			return nil, err
		}
		if cfg.Model.Head == "pca" {
			if err := fitPCAHead(store, split.train, cfg.Model.Dim); err != nil {
				return nil, err
			}
		}
	}
	runCfg := cfg // after a resume, which may change cfg
	runCfg.Model = trainedModel(cfg)
	if err := writeRunFiles(outDir, &cfg, digests); err != nil {
		return nil, err
	}
	if len(split.corruptions) > 0 {
		if err := data.SaveCorruptions(outDir, split.corruptions...); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	tr := split.train
	h, w, c := tr.Dims()
	classes := classesOf(tr)
	eng, err := newEngine(&runCfg, b, store, len(classes), h, w, c)
	if err != nil {
		return nil, err
	}
	sampler, err := NewSampler(cfg.Sampler, cfg.Seed, tr.Labels(), tr.Coarse())
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	spe := len(sampler.Epoch(0))
	if spe == 0 {
		return nil, fmt.Errorf("train: sampler: the training set (%d inputs, %d classes) yields no batch of %d", tr.Len(), len(classesOf(tr)), cfg.Sampler.BatchSize)
	}
	epochs := cfg.Epochs
	total := epochs * spe
	if cfg.Steps > 0 && (epochs <= 0 || cfg.Steps < total) {
		total = cfg.Steps
		epochs = (total + spe - 1) / spe
	}

	r := &runner{cfg: &runCfg, opt: opt, eng: eng, split: split, eval: eval, out: outDir, spe: spe, total: total, epochs: epochs, st: st, start: time.Now(),
		classIndex: classIndex(classes)}
	err = r.loop(ctx, sampler)
	if r.res != nil {
		r.res.ResumeChanges = resumeChanges
		r.res.Digests = digests
		if k := cfg.Data.Corrupt; k.LabelNoise > 0 || k.ImageNoise > 0 {
			rz := data.RealisedOf(split.corruptions)
			r.res.Corruption = &rz
		}
	}
	if err != nil {
		// A variable taken from model.init_from in another shape than the model's: the error
		// names it, both shapes and the source, not the graph compilation that noticed.
		var se *models.ShapeError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("train: %w", se)
		}
		return nil, err
	}
	return r.res, nil
}

// panicError turns a panic r that escaped a run into an error naming the backbone and its file,
// with the panic's first line (no trace): graph-building code panics, GoMLX's convention, and a
// panic that is not an error value passes GoMLX's executors; a damaged image panics in
// [prepare.FileSet.Fill]. An op without a gradient gets [adviseGradient]'s advice.
func panicError(r any, m models.Config) error {
	msg := fmt.Sprint(r)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	where := "model.backbone " + m.Backbone
	if m.Pretrained != "" {
		where += ", model.pretrained " + m.Pretrained
	}
	return adviseGradient(fmt.Errorf("train: the run stopped (%s): %s", where, msg), m)
}

// adviseGradient adds to err, when it is GoMLX's "no gradient is defined" for an op of the
// model (an ONNX network's TopK becomes a Sort), the setting that trains without the backbone's
// gradients: model.freeze_backbone: true.
func adviseGradient(err error, m models.Config) error {
	if !strings.Contains(err.Error(), "no gradient is defined") || m.FreezeBackbone || strings.Contains(err.Error(), "model.freeze_backbone") {
		return err
	}
	return fmt.Errorf("%w; the model has an op without a gradient: to train a head on the fixed features of backbone %s set model.freeze_backbone: true", err, m.Backbone)
}

// adviseZeroNorm adds to an evaluation error about an all-zero embedding row ("zero norm") what
// produces one and the field that sets it: backbone features that vanish on images too small
// for the backbone's downsampling (model.input_size, with the images' size h×w).
func adviseZeroNorm(err error, m models.Config, h, w int) error {
	if !strings.Contains(err.Error(), "zero norm") {
		return err
	}
	size := fmt.Sprintf("model.input_size %d", m.InputSize)
	if m.InputSize == 0 {
		size = fmt.Sprintf("model.input_size 0: the images' %d×%d", h, w)
	}
	return fmt.Errorf("%w; the model gives some images an all-zero embedding: backbone %s (%s) may leave no features at that size: raise model.input_size", err, m.Backbone, size)
}

// trainedModel is the network a run trains: the head alone on cached features with
// model.freeze_backbone ([models.Config.HeadOnly]), the backbone's last blocks and the head on
// cached maps with model.trainable_tail ([models.Config.TailOnly]), otherwise cfg.Model.
func trainedModel(cfg Config) models.Config {
	if cfg.Model.FreezeBackbone {
		return cfg.Model.HeadOnly()
	}
	if cfg.Model.TrainableTail > 0 {
		return cfg.Model.TailOnly()
	}
	return cfg.Model
}

type runner struct {
	cfg    *Config
	opt    Options
	eng    *engine
	split  *sets
	eval   Evaluator
	out    string
	spe    int
	total  int
	epochs int
	st     State
	start  time.Time
	res    *Result
	lastLR float64
	// test holds the test embeddings of the last evaluation (finish reuses them at the same step).
	test *testEmbeddings
	// classIndex maps a training label to its class index in [0, number of classes) when the
	// labels are not already 0, 1, …, n−1 (nil: they are, and are used as they are).
	classIndex map[int32]int64

	firstLabels []int64 // labels of the session's first batch (for Timing.Loss)
	stepSum     float64 // seconds in trainStep after the session's first step
	dataSum     float64 // seconds assembling batches
	evalSum     float64 // seconds in evaluations
}

func (r *runner) wall() float64 { return r.st.WallSeconds + time.Since(r.start).Seconds() }

func (r *runner) loop(ctx context.Context, sampler *Sampler) error {
	cfg := r.cfg
	tr := r.split.train
	h, w, c := tr.Dims()
	size := h * w * c
	trLabels := tr.Labels()
	r.res = &Result{OutDir: r.out, Epochs: r.epochs}
	sessionStart, startStep := time.Now(), r.st.Step
	if r.opt.InitTrain > 0 && r.st.Step == 0 {
		bs := cfg.Eval.BatchSize
		if bs <= 0 {
			bs = 512
		}
		m, err := r.evalSet(evalSet{"train", tr, r.opt.InitTrain}, bs)
		if err != nil {
			return err
		}
		r.res.InitTrain = map[string]float64{}
		for k, v := range m {
			r.res.InitTrain["train/"+k] = v
		}
	}
	// eval.initial, or a run of no optimiser step (epochs 0, steps 0): its one evaluation.
	if (cfg.Eval.Initial || r.total == 0) && r.st.Step == 0 {
		if err := r.evaluate(); err != nil {
			return err
		}
	}
	setSize := 1
	if cfg.Mixup.Enabled {
		setSize = 2
	}
	lastLoss := math.NaN()
	for r.st.Step < r.total && r.st.Epoch < r.epochs {
		batches := sampler.Epoch(r.st.Epoch)
		for r.st.BatchInEpoch < len(batches) && r.st.Step < r.total {
			if err := ctx.Err(); err != nil {
				return err
			}
			tData := time.Now()
			idx := batches[r.st.BatchInEpoch]
			n := len(idx)
			pix := make([]float32, n*size)
			if err := fillTrain(tr, r.st.Epoch, idx, batches[r.st.BatchInEpoch+1:], pix); err != nil {
				return fmt.Errorf("train: step %d: %w", r.st.Step, err)
			}
			labels := make([]int64, n)
			for i, j := range idx {
				labels[i] = int64(trLabels[j])
				if r.classIndex != nil {
					labels[i] = r.classIndex[trLabels[j]]
				}
			}
			var weights []float32
			if cfg.Mixup.Enabled {
				mr := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x3c0000000^uint64(r.st.Step)))
				var lam float64
				if cfg.Mixup.Mode == "cutmix" {
					pix, labels, lam = CutMix(mr, cfg.Mixup.Alpha, pix, labels, h, w, c)
				} else {
					pix, labels, lam = Mixup(mr, cfg.Mixup.Alpha, pix, labels, size)
				}
				weights = MixWeights(labels, lam)
				n *= 2
			}
			lr := cfg.Optimizer.LR * cfg.Schedule.Factor(r.st.Step, r.spe, float64(r.total)/float64(r.spe))
			r.lastLR = lr
			r.dataSum += time.Since(tData).Seconds()
			if r.firstLabels == nil {
				r.firstLabels = labels
			}
			tStep := time.Now()
			loss, err := r.eng.trainStepWeighted(pix, n, labels, weights, setSize, lr, r.st.Step)
			if err != nil {
				return fmt.Errorf("train: step %d: %w", r.st.Step, err)
			}
			if r.st.Step == startStep {
				r.res.Timing.FirstStep = time.Since(tStep).Seconds()
			} else {
				r.stepSum += time.Since(tStep).Seconds()
				r.res.Timing.Steps++
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) || !r.eng.embFinite {
				return r.diverged(loss)
			}
			lastLoss = loss
			if r.opt.LossTrace {
				r.res.Losses = append(r.res.Losses, loss)
			}
			r.st.Step++
			r.st.BatchInEpoch++
			r.st.LossSum += loss
			r.st.LossCount++
			if r.opt.Progress != nil {
				el := time.Since(sessionStart)
				done := r.st.Step - startStep
				eta := time.Duration(float64(el) / float64(done) * float64(r.total-r.st.Step))
				r.opt.Progress(Progress{Phase: "train", Step: r.st.Step, TotalSteps: r.total, Epoch: r.st.Epoch, Epochs: r.epochs,
					Loss: loss, LR: lr, Elapsed: el, ETA: eta})
			}
			if err := r.logStep(loss); err != nil {
				return err
			}
			epochEnd := r.st.BatchInEpoch == len(batches)
			if epochEnd {
				r.st.Epoch++
				r.st.BatchInEpoch = 0
			}
			last := r.st.Step >= r.total || r.st.Epoch >= r.epochs
			doEval := (cfg.Eval.EverySteps > 0 && r.st.Step%cfg.Eval.EverySteps == 0) ||
				(epochEnd && cfg.Eval.Every > 0 && r.st.Epoch%cfg.Eval.Every == 0) || last
			if doEval {
				tEval := time.Now()
				if err := r.evaluate(); err != nil {
					return err
				}
				r.evalSum += time.Since(tEval).Seconds()
			}
			stop := r.earlyStop()
			interrupted := r.opt.StopAfter > 0 && r.st.Step >= r.opt.StopAfter && !last
			if epochEnd || last || stop || interrupted || (cfg.Checkpoint.EverySteps > 0 && r.st.Step%cfg.Checkpoint.EverySteps == 0) {
				st := r.st
				st.WallSeconds = r.wall()
				if err := saveCheckpoint(r.out, r.eng.store, st, cfg.Checkpoint.Keep); err != nil {
					return err
				}
			}
			if stop {
				r.res.StoppedEarly = true
				return r.finish(lastLoss)
			}
			if interrupted {
				r.res.Interrupted = true
				r.res.Steps, r.res.FinalLoss = r.st.Step, lastLoss
				return nil
			}
			if epochEnd {
				break
			}
		}
	}
	return r.finish(lastLoss)
}

// earlyStop reports whether the validation metric has not improved for eval.patience evaluations.
func (r *runner) earlyStop() bool {
	return r.cfg.Eval.Patience > 0 && r.st.BadEvals >= r.cfg.Eval.Patience
}

// evaluate embeds the test (and validation, and optionally training) sets, computes metrics,
// appends a metrics.jsonl record and updates early-stopping state.
func (r *runner) evaluate() error {
	cfg := r.cfg
	bs := cfg.Eval.BatchSize
	if bs <= 0 {
		bs = 512
	}
	all := map[string]float64{}
	list := []evalSet{{"test", r.split.test, 0}, {"val", r.split.val, 0}}
	if cfg.Eval.Train {
		list = append(list, evalSet{"train", r.split.train, cfg.Eval.MaxTrain})
	}
	for _, set := range list {
		m, err := r.evalSet(set, bs)
		if err != nil {
			return err
		}
		for k, v := range m {
			all[set.name+"/"+k] = v
		}
	}
	rec := EvalRecord{Step: r.st.Step, Epoch: float64(r.st.Step) / float64(r.spe), LR: r.lastLR, Metrics: all, WallTime: r.wall()}
	if r.st.LossCount > 0 {
		l := r.st.LossSum / float64(r.st.LossCount)
		rec.Loss = &l
	}
	r.st.LossSum, r.st.LossCount = 0, 0
	if err := appendJSONL(filepath.Join(r.out, "metrics.jsonl"), rec); err != nil {
		return err
	}
	r.res.History = append(r.res.History, rec)
	r.res.Metrics = all
	if r.split.val != nil {
		metric := cfg.Eval.Metric
		if metric == "" {
			metric = "R@1"
		}
		v, ok := all["val/"+metric]
		if !ok {
			return fmt.Errorf("train: eval.metric: %q is not among the evaluator's metrics", metric)
		}
		if !r.st.HaveBest || v > r.st.BestVal {
			r.st.BestVal, r.st.HaveBest, r.st.BadEvals = v, true, 0
			if cfg.Eval.RestoreBest {
				if err := r.saveBest(rec); err != nil {
					return err
				}
			}
		} else {
			r.st.BadEvals++
		}
	}
	if r.opt.Progress != nil {
		r.opt.Progress(Progress{Phase: "eval", Step: r.st.Step, TotalSteps: r.total, Epoch: r.st.Epoch, Epochs: r.epochs, Metrics: all})
	}
	return nil
}

// evalSet is one split an evaluation embeds: its name ("test", "val", "train"), its images and
// the most images to embed (0: all; otherwise an even subset, [evenSubset]).
type evalSet struct {
	name string
	s    Set
	max  int
}

// evalSet embeds one split at the current step (the test set through [runner.embedTest]) and
// returns its metrics without the split's prefix ("R@1"); nil for an empty or absent split.
func (r *runner) evalSet(set evalSet, bs int) (map[string]float64, error) {
	cfg := r.cfg
	if set.s == nil || set.s.Len() == 0 {
		return nil, nil
	}
	var idx []int
	if set.max > 0 && set.max < set.s.Len() {
		idx = evenSubset(set.s.Len(), set.max)
	}
	setLabels := set.s.Labels()
	var emb []float32
	var d int
	var err error
	if set.name == "test" {
		emb, d, err = r.embedTest(bs)
	} else {
		emb, d, err = r.eng.embedAll(set.s, idx, bs)
	}
	if err != nil {
		return nil, fmt.Errorf("train: embedding %s set: %w", set.name, err)
	}
	n := len(emb) / max(d, 1)
	labels := make([]int64, n)
	for i := range labels {
		j := i
		if idx != nil {
			j = idx[i]
		}
		labels[i] = int64(setLabels[j])
	}
	m, err := r.eval(emb, n, d, labels)
	if err != nil {
		h, w, _ := r.split.train.Dims()
		return nil, adviseZeroNorm(fmt.Errorf("train: evaluating %s set: %w", set.name, err), cfg.Model, h, w)
	}
	if cfg.Eval.Classify && set.name != "val" {
		acc, err := r.classify(emb, n, d, labels)
		if err != nil {
			return nil, fmt.Errorf("train: eval.classify: %s set: %w", set.name, err)
		}
		maps.Copy(m, acc)
	}
	return m, nil
}

// testEmbeddings are the test set's embeddings [N, d] (and, with model.dual_head, the uncertainty
// embeddings [N, du]) at a step: the last evaluation's, which finish reuses when it ends at that step.
type testEmbeddings struct {
	step  int
	emb   []float32
	unc   []float32
	d, du int
}

// embedTest embeds the whole test set at the current step (with the uncertainty embeddings when
// the model has IDML's dual head), keeps the result in r.test and returns the embeddings.
func (r *runner) embedTest(bs int) ([]float32, int, error) {
	t := &testEmbeddings{step: r.st.Step}
	if r.eng.embDual != nil {
		outs, dims, err := r.eng.embedAllWith(r.eng.embDual, r.split.test, nil, bs)
		if err != nil {
			return nil, 0, err
		}
		t.emb, t.unc, t.d, t.du = outs[0], outs[1], dims[0], dims[1]
	} else {
		var err error
		if t.emb, t.d, err = r.eng.embedAll(r.split.test, nil, bs); err != nil {
			return nil, 0, err
		}
	}
	r.test = t
	return t.emb, t.d, nil
}

// classify scores the embeddings emb [n, d] with their dataset labels against the class weights of
// the loss (eval.classify): "acc@1", "acc@5" (evaluate.Classification). A label that is not a
// training class is an error: classification needs a closed split.
func (r *runner) classify(emb []float32, n, d int, labels []int64) (map[string]float64, error) {
	path := classifierVariable(r.eng.terms)
	v := r.eng.store.GetVariable(path)
	if v == nil {
		return nil, fmt.Errorf("the loss's class weights %s do not exist yet", path)
	}
	t, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("class weights %s: %w", path, err)
	}
	if t.Rank() != 2 || t.Shape().Dim(1) != d {
		return nil, fmt.Errorf("class weights %s have shape %s, want [classes, %d] (the evaluated embedding's width)", path, t.Shape(), d)
	}
	var w []float32
	switch t.DType() {
	case dtypes.Float32:
		w = tensors.MustCopyFlatData[float32](t)
	case dtypes.Float64:
		for _, x := range tensors.MustCopyFlatData[float64](t) {
			w = append(w, float32(x))
		}
	default:
		return nil, fmt.Errorf("class weights %s have dtype %s", path, t.DType())
	}
	idx := make([]int64, n)
	for i, l := range labels {
		idx[i] = l
		if r.classIndex != nil {
			c, ok := r.classIndex[int32(l)]
			if !ok {
				return nil, fmt.Errorf("row %d has label %d, not a training class: classification needs a closed split (e.g. data.options.closed: true)", i, l)
			}
			idx[i] = c
		}
	}
	return evaluate.Classification(emb, n, d, w, t.Shape().Dim(0), idx, evaluate.DefaultAccK)
}

// finish writes the final test embeddings and fills the result.
func (r *runner) finish(lastLoss float64) error {
	bs := r.cfg.Eval.BatchSize
	if bs <= 0 {
		bs = 512
	}
	if r.test == nil || r.test.step != r.st.Step {
		if _, _, err := r.embedTest(bs); err != nil {
			return fmt.Errorf("train: final test embeddings: %w", err)
		}
	}
	if r.cfg.Eval.RestoreBest {
		if err := r.restoreBest(); err != nil {
			return err
		}
	}
	emb, unc, d, du := r.test.emb, r.test.unc, r.test.d, r.test.du
	n := len(emb) / max(d, 1)
	if err := npy.Write(filepath.Join(r.out, "test_embeddings.npy"), emb, n, d); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if r.eng.embDual != nil {
		if err := npy.Write(filepath.Join(r.out, TestUncertaintyFile), unc, n, du); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	labels := make([]int64, n)
	testLabels := r.split.test.Labels()
	for i := range labels {
		labels[i] = int64(testLabels[i])
	}
	if err := npy.Write(filepath.Join(r.out, "test_labels.npy"), labels, n); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if len(r.cfg.Eval.Degrade) > 0 && r.eng.embDual != nil {
		var err error
		if r.res.UncDegraded, err = r.degradedUncertainty(bs); err != nil {
			return err
		}
	}
	r.res.Steps, r.res.FinalLoss = r.st.Step, lastLoss
	return r.finishTiming()
}

// Files of the best validation evaluation (eval.restore_best), kept in the run directory so that a
// resumed run still knows them: its test embeddings (and uncertainty embeddings) and its record.
const (
	bestTestFile = "best_test_embeddings.npy"
	bestUncFile  = "best_test_uncertainty.npy"
	bestEvalFile = "best_eval.json"
)

// saveBest keeps the test embeddings of the evaluation just made (r.test) and its record as the
// best validation evaluation's.
func (r *runner) saveBest(rec EvalRecord) error {
	t := r.test
	if t == nil || t.step != r.st.Step {
		return fmt.Errorf("train: eval.restore_best: no test embeddings at step %d", r.st.Step)
	}
	n := len(t.emb) / max(t.d, 1)
	if err := npy.Write(filepath.Join(r.out, bestTestFile), t.emb, n, t.d); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if t.unc != nil {
		if err := npy.Write(filepath.Join(r.out, bestUncFile), t.unc, n, t.du); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(r.out, bestEvalFile), b, 0o644)
}

// restoreBest makes the best validation evaluation's test embeddings and metrics the run's result
// ([EvalConfig.RestoreBest]); Result.BestStep says which step it was.
func (r *runner) restoreBest() error {
	b, err := os.ReadFile(filepath.Join(r.out, bestEvalFile))
	if err != nil {
		return fmt.Errorf("train: eval.restore_best: %w", err)
	}
	var rec EvalRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("train: eval.restore_best: %s: %w", bestEvalFile, err)
	}
	emb, dims, err := npy.ReadFloat32(filepath.Join(r.out, bestTestFile))
	if err != nil || len(dims) != 2 {
		return fmt.Errorf("train: eval.restore_best: %s: %v (dims %v)", bestTestFile, err, dims)
	}
	t := &testEmbeddings{step: rec.Step, emb: emb, d: dims[1]}
	if r.eng.embDual != nil {
		unc, udims, err := npy.ReadFloat32(filepath.Join(r.out, bestUncFile))
		if err != nil || len(udims) != 2 {
			return fmt.Errorf("train: eval.restore_best: %s: %v (dims %v)", bestUncFile, err, udims)
		}
		t.unc, t.du = unc, udims[1]
	}
	r.test = t
	r.res.Metrics = rec.Metrics
	r.res.BestStep = rec.Step
	return nil
}

// finishTiming fills Result.Timing from the session's sums and, with eval.time_loss, times the loss.
func (r *runner) finishTiming() error {
	t := &r.res.Timing
	t.StepsPerEpoch = r.spe
	t.Eval = r.evalSum
	if r.firstLabels != nil { // every step of the session assembled a batch, the first included
		t.Data = r.dataSum / float64(t.Steps+1)
	}
	if t.Steps > 0 {
		t.Step = r.stepSum / float64(t.Steps)
	}
	if r.cfg.Eval.TimeLoss && r.firstLabels != nil && !r.cfg.Mixup.Enabled { // mixup batches carry label sets
		var err error
		if t.Loss, t.LossReps, err = r.eng.timeLoss(r.firstLabels, 2*time.Second, 50); err != nil {
			return err
		}
	}
	return nil
}

// classIndex returns the map from the sorted training classes to 0, 1, …, n−1, or nil when they
// are those already. The loss sees class indices: a proxy loss has one proxy per class, indexed by
// label, and labels left with gaps (a data.val_classes split, a dataset numbering from 1) would
// index past its n proxies. The map keeps the order, so nothing else changes.
func classIndex(classes []int32) map[int32]int64 {
	m := map[int32]int64{}
	ident := true
	for i, c := range classes {
		m[c] = int64(i)
		ident = ident && c == int32(i)
	}
	if ident {
		return nil
	}
	return m
}

// evenSubset returns m indices spread evenly over [0, n).
func evenSubset(n, m int) []int {
	out := make([]int, m)
	for i := range out {
		out[i] = i * n / m
	}
	return out
}

func appendJSONL(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("train: %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("train: %s: %w", path, err)
	}
	return f.Close()
}

// Env is what env.json records.
type Env struct {
	backend.Info
	GitCommit string    `json:"git_commit,omitempty"`
	GitDirty  bool      `json:"git_dirty,omitempty"`
	Started   time.Time `json:"started"`
	Hostname  string    `json:"hostname,omitempty"`
	Args      []string  `json:"args,omitempty"`
	// Digests: the SHA-256 of the weights files by configuration field ([Result.Digests]).
	Digests map[string]string `json:"digests,omitempty"`
}

// CurrentEnv describes the running environment (backend, versions, git commit when run inside
// a git checkout).
func CurrentEnv() Env {
	e := Env{Info: backend.Describe(), Started: time.Now().UTC(), Args: os.Args}
	e.Hostname, _ = os.Hostname()
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		e.GitCommit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			e.GitDirty = len(strings.TrimSpace(string(st))) > 0
		}
	}
	return e
}

func writeRunFiles(dir string, cfg *Config, digests map[string]string) error {
	y, err := cfg.YAML()
	if err != nil {
		return fmt.Errorf("train: config.resolved.yaml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.resolved.yaml"), y, 0o644); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	env := CurrentEnv()
	env.Digests = digests
	j, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return fmt.Errorf("train: env.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "env.json"), append(j, '\n'), 0o644); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}
