// Package train is dmlkit's training engine: a typed run configuration, in-graph optimisers
// (Adam, AdamW, SGD with momentum; weight decay, per-group learning-rate multipliers, gradient
// clipping by value), learning-rate schedules, deterministic batch samplers, multistage
// backpropagation for huge batches (seed 003, Algorithm 1), image-level mixup and cutmix (label sets
// with their λ weights, or the IDML code's λ-weighted sum of losses: mixup.loss), evaluation hooks
// (retrieval; closed-set classification against a loss's class weights), early stopping,
// checkpoints with exact resume, and the run directory (config.resolved.yaml, env.json,
// metrics.jsonl, checkpoints, final embeddings as .npy, with IDML's test uncertainty embeddings).
//
// The data a run sees is prepared by dmlkit/data in one pass (data.PrepareSets: classes,
// validation split, corruptions, augmentation; data.FrozenStage: cached backbone features): this
// package keeps the dataset registry, the loaders' options, the file-backed sets decoded on
// demand, and the backbone key and extractor of the feature cache, and consumes the prepared sets.
//
// Everything random is drawn in Go from PCG streams keyed by the run seed (parameter
// initialisation, sampling, mixup), so the same configuration and seed give identical metrics on
// the Go backend, and a run resumed from a checkpoint follows the uninterrupted trajectory.
package train

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/compute/dtypes"
	"gopkg.in/yaml.v3"
)

// Config is a complete training run.
type Config struct {
	Name      string          `yaml:"name" doc:"run name (informational)"`
	Seed      int64           `yaml:"seed" doc:"seed of initialisation, sampling and mixup"`
	Data      DataConfig      `yaml:"data"`
	Model     models.Config   `yaml:"model"`
	Loss      LossConfig      `yaml:"loss"`
	Optimizer OptimizerConfig `yaml:"optimizer"`
	Schedule  ScheduleConfig  `yaml:"schedule"`
	Sampler   SamplerConfig   `yaml:"sampler"`
	// Epochs is the number of passes of the sampler; Steps, when > 0, stops after that many
	// optimiser steps. Both 0: no optimiser step at all — the run evaluates the initialised model
	// once (step 0: a pretrained backbone's features, a fitted pca head, the untrained network) and
	// writes its records as a trained run's: the zero-shot floor of a regime.
	Epochs     int              `yaml:"epochs" doc:"number of epochs (passes of the sampler); epochs 0 with steps 0: no optimiser step, the initialised model is evaluated"`
	Steps      int              `yaml:"steps" doc:"if > 0, stop after this many optimiser steps"`
	Eval       EvalConfig       `yaml:"eval"`
	Checkpoint CheckpointConfig `yaml:"checkpoint"`
	Multistage MultistageConfig `yaml:"multistage"`
	Mixup      MixupConfig      `yaml:"mixup"`
	Log        LogConfig        `yaml:"log"`
	// Precision is the activation precision of training (see [Precision]); "" is fp32. Written to
	// config.resolved.yaml only when set, so fp32 configurations resolve and hash as before.
	Precision Precision `yaml:"precision,omitempty" doc:"activation precision: fp32 (default), bf16 or fp16 (float32 master weights, losses and metrics)"`
	// LossScale is the static loss scale of precision fp16 (0: DefaultLossScale); only with fp16.
	LossScale float64 `yaml:"loss_scale,omitempty" doc:"fp16 static loss scale (0 = 1024); only with precision fp16"`
}

// Precision is the dtype of the network's activations in training and embedding.
//
//   - "fp32" (or ""): float32 throughout.
//   - "bf16": mixed precision with bfloat16 activations. The inputs are converted to bfloat16 in
//     the graph and the network runs in bfloat16 (matmul and convolution products accumulate in
//     float32 on the Go backend and on GPUs); the variables stay float32 (master weights, which
//     the optimiser updates in float32), BatchNorm/LayerNorm statistics and the attention softmax
//     are computed in float32, and the embeddings are converted to float32 before the L2
//     normalisation, so losses, gradients of the loss, metrics and evaluation are float32
//     ([models.Build]). bfloat16 has float32's exponent range, so no loss scaling is needed.
//   - "fp16": as bf16 with float16 activations, whose range (6e-5 … 65504, subnormals to 6e-8)
//     underflows small gradients: the loss is multiplied by LossScale before backprop and the
//     float32 gradients divided by it (a static scale, not PyTorch GradScaler's dynamic one;
//     a step whose scaled gradients overflow gives non-finite parameters, which the trainer's
//     divergence check reports).
//
// The backend must support the dtype (compute.Capabilities.DTypes); the Go backend supports both.
type Precision string

// Values of Precision.
const (
	PrecisionFP32 Precision = "fp32"
	PrecisionBF16 Precision = "bf16"
	PrecisionFP16 Precision = "fp16"
)

// DefaultLossScale is the fp16 loss scale when loss_scale is 0.
const DefaultLossScale = 1024

// DType is the activation dtype of p (Float32 for "" and fp32).
func (p Precision) DType() dtypes.DType {
	switch p {
	case PrecisionBF16:
		return dtypes.BFloat16
	case PrecisionFP16:
		return dtypes.Float16
	}
	return dtypes.Float32
}

// Validate checks p; the error names the field "precision".
func (p Precision) Validate() error {
	switch p {
	case "", PrecisionFP32, PrecisionBF16, PrecisionFP16:
		return nil
	}
	return fmt.Errorf("precision: %q: want fp32, bf16 or fp16", string(p))
}

// lossScale is the factor the loss is multiplied by before backprop (and the gradients divided
// by after): LossScale (or DefaultLossScale) with fp16, 1 otherwise.
func (c *Config) lossScale() float64 {
	if c.Precision != PrecisionFP16 {
		return 1
	}
	if c.LossScale > 0 {
		return c.LossScale
	}
	return DefaultLossScale
}

// LogConfig logs the loss's diagnostics (losses.Diagnoser: per-term values, counters such as the
// number of hard triplets) of the training batch every EverySteps optimiser steps, without an
// evaluation: Result.StepLog and the run directory's steplog.jsonl. 0 (default) logs nothing.
type LogConfig struct {
	EverySteps int `yaml:"every_steps" doc:"log the loss diagnostics of the training batch every N steps (0 = off)"`
}

// DataConfig selects the dataset and how its classes are prepared ([prepare.Config]).
type DataConfig = prepare.Config

// CorruptConfig is the corruption harness of data.corrupt ([prepare.CorruptConfig]).
type CorruptConfig = prepare.CorruptConfig

// LossConfig is the loss: either one named loss, or a weighted sum of terms.
type LossConfig struct {
	Name  string         `yaml:"name" doc:"registered loss name"`
	Set   map[string]any `yaml:"set" doc:"loss hyperparameters (yaml field names of the loss config)"`
	Terms []LossTerm     `yaml:"terms" doc:"weighted sum of losses (instead of name/set)"`
}

// LossTerm is one weighted loss of a sum.
type LossTerm struct {
	Name   string         `yaml:"name"`
	Weight float64        `yaml:"weight"`
	Set    map[string]any `yaml:"set"`
}

// EvalConfig controls evaluation hooks and early stopping.
type EvalConfig struct {
	Every      int   `yaml:"every" doc:"evaluate every N epochs (0 = only at the end)"`
	EverySteps int   `yaml:"every_steps" doc:"evaluate every N steps (0 = off)"`
	Ks         []int `yaml:"ks" doc:"cutoffs for R@k"`
	Train      bool  `yaml:"train" doc:"also evaluate on the training set"`
	MaxTrain   int   `yaml:"max_train" doc:"evaluate on at most this many training images (0 = all)"`
	BatchSize  int   `yaml:"batch_size" doc:"embedding batch size"`
	// Patience > 0 stops training when the validation metric has not improved for this many
	// evaluations (needs data.val_classes > 0).
	Patience int    `yaml:"patience" doc:"early stop after this many evaluations without validation improvement"`
	Metric   string `yaml:"metric" doc:"metric watched for early stopping"`
	// RestoreBest reports the evaluation with the best validation metric instead of the last:
	// its test metrics, and its test embeddings for what is computed after training (OPIS, the
	// protocols) — the best validation checkpoint evaluated on the test classes, as Musgrave et
	// al.'s reality check does. Needs a validation split (data.val_classes > 0).
	RestoreBest bool `yaml:"restore_best" doc:"report the test metrics and embeddings of the evaluation with the best validation metric, not the last"`
	Initial     bool `yaml:"initial" doc:"evaluate the untrained model at step 0"`
	OPIS        bool `yaml:"opis" doc:"also compute OPIS and ε-OPIS (seed 000)"`
	// TimeLoss times the loss alone after training (Result.Timing.Loss): its forward and
	// backward pass on a batch of embeddings, for seed 000 Table 4's loss-vs-backbone split.
	TimeLoss bool `yaml:"time_loss" doc:"after training, time the loss's forward+backward alone (seed 000 Table 4)"`
	// Cluster, ReID and Verify add metrics of the final test embeddings that the experiments
	// runner (package reproduce) computes after training; the trainer itself ignores them.
	Cluster bool           `yaml:"cluster" doc:"after training, also k-means NMI/AMI of the test embeddings"`
	FullMAP bool           `yaml:"full_map" doc:"after training, also the exact full-ranking mAP of self-retrieval"`
	ReID    ReIDProtocol   `yaml:"reid" doc:"after training, also a re-identification protocol on the test set"`
	Verify  VerifyProtocol `yaml:"verify" doc:"after training, also pair verification on the test set"`
	// Rerank and Hierarchical (seed 004 Tables 10 and 9) are protocols of the experiments runner
	// too: contextual re-ranking R@k, and hierarchical / coarse-level retrieval.
	Rerank       RerankProtocol `yaml:"rerank" doc:"after training, also R@k after contextual re-ranking (seed 004 Table 10)"`
	Hierarchical bool           `yaml:"hierarchical" doc:"after training, also HR@k and coarse-level R@1/MAP@R when the test set has coarse labels (seed 004 Table 9)"`
	// SkipOPIS leaves out the experiments runner's OPIS of the final test embeddings (seed 000's
	// metric, computed for every run by default): on a few-class test set it scores every positive
	// pair and ten negatives each (Fashion-MNIST closed: 5·10⁶ positives per calibration range).
	SkipOPIS bool `yaml:"skip_opis" doc:"after training, do not compute the runner's OPIS / ε-OPIS of the test embeddings"`
	// ISM (seed 002 Table 8) is a protocol of the experiments runner too: self-retrieval on the
	// final test embeddings ranked by the introspective similarity of the idml loss (its τ, γ,
	// metric and code_metric) between the semantic and the uncertainty embeddings
	// (test_uncertainty.npy), beside the plain cosine ranking. ISMForm is the ranking score:
	// "cos" (C_IN, Eq. 19/20: the proxyanchor and multisimilarity bases), "dist" (−D_IN, Eq. 6: the
	// distance bases), "" the form of the loss's base. Needs model.dual_head and an idml loss.
	ISM     bool   `yaml:"ism" doc:"after training, also retrieval ranked by the introspective similarity (seed 002 Table 8; needs model.dual_head and the idml loss)"`
	ISMForm string `yaml:"ism_form" doc:"score of eval.ism: cos (C_IN), dist (D_IN) or empty (the idml base's form)"`
	// Classify adds closed-set classification accuracy at every evaluation: each test (and, with
	// eval.train, training) image's embedding is scored by cosine against the class weights of the
	// loss (losses.Classifier: normsoftmax, proxyanchor, arcface, cosface, idml with a proxy base;
	// evaluate.Classification), giving "acc@1" and "acc@5" (seed 002 Table 2's stand-in). The
	// evaluated labels must be training classes: a closed split (e.g. fashion-mnist with
	// data.options.closed: true) and no data.val_classes.
	Classify bool `yaml:"classify" doc:"also top-1/top-5 accuracy against the loss's class weights (closed split): acc@1, acc@5"`
	// Degrade (seed 002 §4.5: uncertainty of ambiguous images) embeds the test set once more after
	// training for each listed degradation (data.Degradation: Gaussian pixel noise or blur at a
	// level) and reports the mean norm ‖u‖ of the degraded images' uncertainty embeddings
	// (Result.UncDegraded; the experiments runner's "unc/norm_test_<kind>_<level>"). Needs
	// model.dual_head. Written to config.resolved.yaml only when set, so configurations without
	// it resolve and hash as before it existed.
	Degrade []data.Degradation `yaml:"degrade,omitempty" doc:"after training, mean ‖u‖ of the test images under each degradation (kind noise or blur, level σ); needs model.dual_head"`
	// Pull (seed 002 Fig. 7 stand-in) makes the experiments runner measure, on the final test
	// embeddings, how hard IDML pulls each image compared with its base loss (evaluate.IDMLPull:
	// the gradient norm on the semantic embedding, by tenth of ‖u‖); the trainer ignores it. Needs
	// model.dual_head and an idml loss with a pair base. Written to config.resolved.yaml only when
	// set, as Degrade.
	Pull bool `yaml:"pull,omitempty" doc:"after training, the experiments runner compares IDML's pull on each test image with its base loss's, by ‖u‖ (seed 002 Fig. 7; idml with a pair base)"`
}

// IDMLLoss returns the configuration of the run's idml loss (the loss, or the first idml term of
// loss.terms), or false when the run has none.
func (c *Config) IDMLLoss() (*losses.IDMLConfig, bool) {
	terms, err := c.lossTerms()
	if err != nil {
		return nil, false
	}
	for _, t := range terms {
		if ic, ok := t.loss.(*losses.IDMLConfig); ok {
			return ic, true
		}
	}
	return nil, false
}

// ISMFormFor is eval.ism_form, or, when empty, the form the idml base trains with: "cos" for the
// proxyanchor and multisimilarity bases (C_IN), "dist" for the others (D_IN).
func (e EvalConfig) ISMFormFor(ic *losses.IDMLConfig) string {
	if e.ISMForm != "" {
		return e.ISMForm
	}
	switch ic.Base {
	case "proxyanchor", "multisimilarity":
		return "cos"
	}
	return "dist"
}

// RerankProtocol is seed 004's test-time contextual re-ranking (App. I.5, Table 10; computed by
// metrics.ContextualRerank): score = β·w̃_ij + (1 − β)·exp(2s_ij − 2), with w̃ the contextual
// similarity of the neighbourhoods N(i) of size k (i and its k − 1 nearest neighbours). K 0
// disables it. Table 10 uses β = 0.1 and k = 16 or 32 (CUB, Cars), 4 (SOP).
type RerankProtocol struct {
	K int `yaml:"k" doc:"neighbourhood size k, counting the sample itself (0 = off; Table 10: 16, 32 on CUB/Cars, 4 on SOP)"`
	// MoreK re-ranks again at each further k (Table 10's second column). The runner stores every k
	// (K and MoreK) under rerank_k<k>/, and K also under rerank/.
	MoreK []int   `yaml:"more_k" doc:"further neighbourhood sizes (every k is stored as rerank_k<k>/R@k)"`
	Beta  float64 `yaml:"beta" doc:"weight of the contextual similarity (0 = the paper's 0.1)"`
	Eps   float64 `yaml:"eps" doc:"extend N(i) by near-ties within this squared distance (default 0)"`
}

// DefaultRerankBeta is the paper's weight of the contextual similarity (seed 004 Table 10).
const DefaultRerankBeta = 0.1

// BetaOrDefault is Beta, or DefaultRerankBeta when Beta is 0.
func (r RerankProtocol) BetaOrDefault() float64 {
	if r.Beta == 0 {
		return DefaultRerankBeta
	}
	return r.Beta
}

// ReIDProtocol turns a class-labelled test set into a re-identification benchmark (a stand-in for
// Market-1501; seed 001 Table 1): every class is an identity and the i-th image of a class (in test
// order) is seen by camera i mod Cameras. Each identity's first Queries images are queries, the
// rest the gallery; gallery images of the query's identity and camera are junk (Market-1501 rules).
// Queries 0 disables the protocol.
type ReIDProtocol struct {
	Queries int `yaml:"queries" doc:"queries per identity: its first n images (0 = off)"`
	Cameras int `yaml:"cameras" doc:"number of cameras: image i of an identity is seen by camera i mod cameras"`
}

// VerifyProtocol turns a class-labelled test set into a verification benchmark (a stand-in for
// LFW / IJB-C; seed 001 Tables 4-6, Fig. 2): all positive pairs (or at most MaxPositives sampled),
// Negatives random different-class pairs, and, with a coarse label (Omniglot alphabets), HardNegatives
// pairs of different classes of the same coarse label as a second, harder set. Negatives 0 disables it.
type VerifyProtocol struct {
	MaxPositives  int       `yaml:"max_positives" doc:"at most this many positive pairs, sampled (0 = all)"`
	Negatives     int       `yaml:"negatives" doc:"random negative pairs (0 = off)"`
	HardNegatives int       `yaml:"hard_negatives" doc:"same-coarse-label negative pairs for the hard set (0 = none)"`
	FARs          []float64 `yaml:"fars" doc:"false-accept rates of TAR@FAR (default 1e-1 ... 1e-4)"`
}

// CheckpointConfig controls checkpoints.
type CheckpointConfig struct {
	EverySteps int `yaml:"every_steps" doc:"save every N steps (0 = only at the end of each epoch)"`
	Keep       int `yaml:"keep" doc:"keep the last N checkpoints"`
}

// MultistageConfig enables multistage backprop (seed 003, Algorithm 1): stage 1 embeds the batch
// in chunks of Chunk images without keeping activations, stage 2 computes the loss and ∂L/∂E, stage
// 3 re-embeds each chunk and backpropagates its slice of ∂L/∂E.
//
// LossBlock selects stage 2. 0 (the default) builds the loss on all B embeddings in one graph, as
// before: its pairwise matrices are B×B, which bounds the batch by memory (about 13 GB peak at
// B = 19,280). K > 0 runs stage 2 in blocks of K anchors scored against the whole batch (a count
// pass, then a loss/gradient pass; multistage.go), memory O(K·B); the loss must decompose over
// anchors (losses.Blockwise: contrastive, tcm, smoothap, rsk with or without SiMix, and combos of these),
// otherwise validation fails. Setting it to Chunk bounds both stages by the chunk.
type MultistageConfig struct {
	Chunk     int `yaml:"chunk" doc:"embed the batch in chunks of this size (0 = direct backprop)"`
	LossBlock int `yaml:"loss_block" doc:"compute the loss stage in blocks of this many anchors against the whole batch (0 = one whole-batch graph)"`
}

// MixupConfig is image-level mixup (IDML, seed 002): for each batch a second copy is mixed with a
// random permutation of itself, x̃ = λx_i + (1−λ)x_π(i), λ ~ Beta(α, α), and carries the label set
// {y_i, y_π(i)}; originals carry {y_i}.
//
// Mode "cutmix" (Yun et al. 2019, seed 002 Table 2) pastes instead one box of x_π(i) into x_i (the
// same box for the whole batch, as the official code): its side ratio is sqrt(1 − λ), its centre
// uniform in the image, clipped at the borders, and the set's weights are the realised areas
// (λ' = 1 − box area / image area). The set weights (λ, 1 − λ) reach the loss as
// losses.Inputs.LabelWeights (soft targets of normsoftmax; set losses ignore them).
//
// Loss selects how the batch of 2n rows (n originals, then the n mixed images) is scored:
//
//   - "" or "set" (the default; seed 002's paper): one loss over the whole batch, with the label
//     sets [2n, 2] and their slot weights [2n, 2]: a mixed image is a positive of both its classes.
//   - "weighted" (the authors' code, image_retrieval/code; papers-vs-code.md §4 "Mixup"):
//     L = L(x, y) + λ·L(x̃, y_a) + (1 − λ)·L(x̃, y_b), three plain losses with hard [n] labels:
//     the originals x (rows [0, n)) with their labels y, and the mixed images x̃ (rows [n, 2n))
//     once with y_a = y_i and once with y_b = y_π(i). λ is the batch's mixing weight: Beta(α, α)
//     with mode mixup, the realised λ' (1 − box area / image area) with cutmix, whose box is also
//     one per batch, so the formula applies unchanged. Each of the three terms is the whole
//     configured loss (every term of loss.terms with its weight), with shared learnable proxies.
//
// Loss is written to config.resolved.yaml only when set (omitempty), so configurations without it
// resolve and hash as before it existed.
type MixupConfig struct {
	Enabled bool    `yaml:"enabled"`
	Alpha   float64 `yaml:"alpha" doc:"Beta(α, α) parameter (IDML: 1)"`
	Mode    string  `yaml:"mode" doc:"mixup (default: pixel-wise blend) or cutmix (a pasted box)"`
	Loss    string  `yaml:"loss,omitempty" doc:"set (default: one loss over the label sets, the paper) or weighted (L(x, y) + λ·L(x̃, y_a) + (1 − λ)·L(x̃, y_b), the authors' code)"`
}

// Values of MixupConfig.Loss.
const (
	MixupLossSet      = "set"      // one loss over the label sets (also ""): seed 002's paper
	MixupLossWeighted = "weighted" // L(x, y) + λ·L(x̃, y_a) + (1 − λ)·L(x̃, y_b): the authors' code
)

// Default returns a configuration that trains the small CNN on Omniglot with the contrastive
// loss, Adam, m-per-class batches of 32×4.
func Default() Config {
	return Config{
		Seed:      0,
		Data:      DataConfig{Name: "omniglot"},
		Model:     models.Default(),
		Loss:      LossConfig{Name: "contrastive"},
		Optimizer: DefaultOptimizer(),
		Schedule:  ScheduleConfig{Name: "constant"},
		Sampler:   SamplerConfig{Name: "m_per_class", BatchSize: 128, M: 4},
		Epochs:    1,
		Eval:      EvalConfig{Ks: []int{1, 2, 4, 8}, BatchSize: 512, Metric: "R@1"},
		Checkpoint: CheckpointConfig{
			Keep: 2,
		},
		Mixup: MixupConfig{Alpha: 1},
	}
}

// Validate checks the whole configuration; errors name the field path (e.g. "optimizer.lr").
func (c *Config) Validate() error {
	if err := c.Data.Validate(); err != nil {
		return err
	}
	if err := c.Model.Validate("model"); err != nil {
		return err
	}
	terms, err := c.lossTerms()
	if err != nil {
		return err
	}
	for _, t := range terms {
		// The idml loss (and normsoftmax with ism) splits its input [B, Dim + UncWidth] at the
		// uncertainty width it is told (unc_dim; 0 = halves): it must agree with the model's heads.
		if us, ok := t.loss.(losses.UncertaintySplitter); ok && c.Model.DualHead {
			if u, splits := us.UncSplit(); splits {
				if w := c.Model.UncWidth(); !(u == w || (u == 0 && w == c.Model.Dim)) {
					return fmt.Errorf("loss.set.unc_dim: %d, but the model's uncertainty head has width %d (model.unc_dim %d, model.dim %d): set loss.set.unc_dim: %d",
						u, w, c.Model.UncDim, c.Model.Dim, w)
				}
			}
		}
	}
	if err := c.Precision.Validate(); err != nil {
		return err
	}
	if ls := c.LossScale; ls < 0 || math.IsNaN(ls) || math.IsInf(ls, 0) {
		return fmt.Errorf("loss_scale: %g: want a finite value > 0 (0 = %d)", ls, DefaultLossScale)
	} else if ls > 0 && c.Precision != PrecisionFP16 {
		return fmt.Errorf("loss_scale: %g: only with precision fp16 (precision is %q)", ls, c.Precision)
	}
	if err := c.Optimizer.Validate("optimizer"); err != nil {
		return err
	}
	if err := c.Schedule.Validate("schedule"); err != nil {
		return err
	}
	if err := c.Sampler.Validate("sampler"); err != nil {
		return err
	}
	if c.Epochs < 0 || c.Steps < 0 {
		return fmt.Errorf("epochs: %d, steps: %d: want ≥ 0 (both 0: no optimiser step)", c.Epochs, c.Steps)
	}
	if c.Eval.Every < 0 || c.Eval.EverySteps < 0 || c.Eval.Patience < 0 || c.Eval.MaxTrain < 0 || c.Eval.BatchSize < 0 {
		return fmt.Errorf("eval: every, every_steps, patience, max_train and batch_size must be ≥ 0")
	}
	for i, k := range c.Eval.Ks {
		if k <= 0 {
			return fmt.Errorf("eval.ks[%d]: %d: want > 0", i, k)
		}
	}
	if c.Eval.RestoreBest && !c.Data.HasVal() {
		return fmt.Errorf("eval.restore_best: the best validation evaluation needs a validation split (data.val_classes > 0 or data.val_folds)")
	}
	if c.Eval.Patience > 0 && !c.Data.HasVal() {
		return fmt.Errorf("eval.patience: early stopping needs a validation split (data.val_classes > 0)")
	}
	if r := c.Eval.ReID; r.Queries < 0 || r.Cameras < 0 || (r.Queries > 0 && r.Cameras < 2) {
		return fmt.Errorf("eval.reid: queries %d, cameras %d: want queries ≥ 0 and, with queries, cameras ≥ 2", r.Queries, r.Cameras)
	}
	if v := c.Eval.Verify; v.MaxPositives < 0 || v.Negatives < 0 || v.HardNegatives < 0 {
		return fmt.Errorf("eval.verify: max_positives, negatives and hard_negatives must be ≥ 0")
	}
	if r := c.Eval.Rerank; r.K < 0 || r.K == 1 || r.Beta < 0 || r.Beta > 1 || r.Beta != r.Beta || r.Eps < 0 || r.Eps != r.Eps || (r.K == 0 && len(r.MoreK) > 0) {
		return fmt.Errorf("eval.rerank: k %d, beta %g, eps %g: want k ≥ 2 (0 = off, needed by more_k), beta in [0, 1], eps ≥ 0", r.K, r.Beta, r.Eps)
	}
	for i, k := range c.Eval.Rerank.MoreK {
		if k < 2 {
			return fmt.Errorf("eval.rerank.more_k[%d]: %d: want ≥ 2", i, k)
		}
	}
	for i, f := range c.Eval.Verify.FARs {
		if !(f > 0 && f < 1) {
			return fmt.Errorf("eval.verify.fars[%d]: %g: want 0 < FAR < 1", i, f)
		}
		// A FAR below 1/negatives cannot be resolved (no negative may be accepted): its TAR would
		// be left out of the record without a word.
		for _, n := range []struct {
			field string
			count int
		}{{"negatives", c.Eval.Verify.Negatives}, {"hard_negatives", c.Eval.Verify.HardNegatives}} {
			if n.count > 0 && f*float64(n.count) < 1 {
				return fmt.Errorf("eval.verify.fars[%d]: %g is below 1/eval.verify.%s (1/%d): the TAR at it cannot be resolved; raise %s to ≥ %.0f or drop the FAR",
					i, f, n.field, n.count, n.field, math.Ceil(1/f))
			}
		}
	}
	if c.Eval.ISM {
		if !c.Model.DualHead {
			return fmt.Errorf("eval.ism: testing with the introspective similarity needs model.dual_head (the uncertainty embeddings)")
		}
		if _, ok := c.IDMLLoss(); !ok {
			return fmt.Errorf("eval.ism: testing with the introspective similarity needs the idml loss (its tau, gamma and metric)")
		}
	}
	if f := c.Eval.ISMForm; f != "" && f != "cos" && f != "dist" {
		return fmt.Errorf("eval.ism_form: %q: want cos, dist or empty (the idml base's form)", f)
	}
	if c.Eval.Pull {
		ic, ok := c.IDMLLoss()
		switch {
		case !c.Model.DualHead:
			return fmt.Errorf("eval.pull: IDML's pull needs model.dual_head (the uncertainty embeddings)")
		case !ok:
			return fmt.Errorf("eval.pull: IDML's pull needs the idml loss")
		case ic.Base == "proxyanchor" || ic.Base == "proxynca":
			return fmt.Errorf("eval.pull: the idml base %s needs the training classes' proxies; the pull is measured on test images (want a pair base)", ic.Base)
		}
	}
	for i, d := range c.Eval.Degrade {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("eval.degrade[%d].%w", i, err)
		}
		for _, e := range c.Eval.Degrade[:i] {
			if e.Key() == d.Key() {
				return fmt.Errorf("eval.degrade[%d]: %s is listed twice", i, d.Key())
			}
		}
		if !c.Model.DualHead {
			return fmt.Errorf("eval.degrade: the uncertainty of degraded test images needs model.dual_head (the uncertainty embeddings)")
		}
	}
	if c.Eval.Classify {
		if classifierVariable(terms) == "" {
			return fmt.Errorf("eval.classify: the loss has no class weights (want a classifier loss: normsoftmax, proxyanchor, arcface, cosface, or idml with a proxy base)")
		}
		if c.Data.HasVal() {
			return fmt.Errorf("eval.classify: data.val_classes %g / val_folds %d holds out classes the classifier never learns: classification needs a closed split", c.Data.ValClasses, c.Data.ValFolds)
		}
	}
	if m := c.Mixup.Mode; m != "" && m != "mixup" && m != "cutmix" {
		return fmt.Errorf("mixup.mode: %q: want mixup or cutmix", m)
	} else if m == "cutmix" && c.Model.Backbone == "features" {
		return fmt.Errorf("mixup.mode: cutmix pastes an image box; model.backbone features has no image")
	} else if m == "cutmix" && c.Model.TrainableTail > 0 {
		return fmt.Errorf("mixup.mode: cutmix pastes an image box; model.trainable_tail trains on cached maps of fixed images")
	}
	if c.Log.EverySteps < 0 {
		return fmt.Errorf("log.every_steps: %d: want ≥ 0", c.Log.EverySteps)
	}
	if c.Checkpoint.EverySteps < 0 || c.Checkpoint.Keep < 0 {
		return fmt.Errorf("checkpoint: every_steps and keep must be ≥ 0")
	}
	if c.Multistage.Chunk < 0 {
		return fmt.Errorf("multistage.chunk: %d: want ≥ 0", c.Multistage.Chunk)
	}
	if c.Multistage.Chunk > 0 && c.Model.Norm != "none" && !c.Model.FrozenBN && c.Model.Backbone != "features" &&
		!strings.HasPrefix(c.Model.Backbone, "vit_") && // ViTs use LayerNorm only: per-sample, chunk-independent
		!strings.HasPrefix(c.Model.Backbone, "mobilenet_") { // TFLite MobileNets: BatchNorm folded into the convolutions
		return fmt.Errorf("multistage.chunk: multistage backprop needs model.frozen_bn: true or model.norm: none (batch statistics would differ per chunk)")
	}
	if c.Multistage.Chunk > 0 && c.Mixup.Enabled {
		return fmt.Errorf("multistage.chunk: multistage backprop with mixup is not supported")
	}
	if err := c.validateLossBlock(); err != nil {
		return err
	}
	if c.Mixup.Enabled && c.Mixup.Alpha <= 0 {
		return fmt.Errorf("mixup.alpha: %g: want > 0", c.Mixup.Alpha)
	}
	switch l := c.Mixup.Loss; {
	case l != "" && l != MixupLossSet && l != MixupLossWeighted:
		return fmt.Errorf("mixup.loss: %q: want set (default) or weighted", l)
	case l == MixupLossWeighted && !c.Mixup.Enabled:
		return fmt.Errorf("mixup.loss: weighted scores the mixed images of a mixup batch: it needs mixup.enabled: true")
	}
	return nil
}

// classifierVariable returns the store path of the class weights of the first loss term that is
// a losses.Classifier with weights ("/loss/<name>", or "/loss/term_<i>/<name>" with several
// terms), or "".
func classifierVariable(terms []weightedLoss) string {
	for i, t := range terms {
		cl, ok := t.loss.(losses.Classifier)
		if !ok || cl.ClassWeights() == "" {
			continue
		}
		if len(terms) > 1 {
			return fmt.Sprintf("/%s/term_%d/%s", lossScope, i, cl.ClassWeights())
		}
		return "/" + lossScope + "/" + cl.ClassWeights()
	}
	return ""
}

// weightedLoss is one configured term of the loss.
type weightedLoss struct {
	loss   losses.Loss
	weight float64
	proxy  bool
}

// lossTerms creates the configured loss terms (validated by the losses package).
func (c *Config) lossTerms() ([]weightedLoss, error) {
	if c.Loss.Name != "" && len(c.Loss.Terms) > 0 {
		return nil, fmt.Errorf("loss: set either name or terms, not both")
	}
	if c.Loss.Name == "" && len(c.Loss.Terms) == 0 {
		return nil, fmt.Errorf("loss.name: empty; registered losses: %s", strings.Join(losses.Names(), ", "))
	}
	terms := c.Loss.Terms
	if c.Loss.Name != "" {
		terms = []LossTerm{{Name: c.Loss.Name, Weight: 1, Set: c.Loss.Set}}
	}
	var out []weightedLoss
	for i, t := range terms {
		l, err := losses.New(t.Name, t.Set)
		if err != nil {
			if c.Loss.Name != "" {
				return nil, fmt.Errorf("loss: %w", err)
			}
			return nil, fmt.Errorf("loss.terms[%d]: %w", i, err)
		}
		e, _ := losses.Lookup(t.Name)
		out = append(out, weightedLoss{loss: l, weight: t.Weight, proxy: e.Proxies})
	}
	return out, nil
}

// LoadConfig reads a YAML run configuration on top of [Default]. Unknown fields are errors
// naming the line.
func LoadConfig(path string) (Config, error) {
	cfg := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("train: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("train: %s: the file is empty (want a YAML mapping of run settings, e.g. data: {name: mnist})", path)
		}
		// The decoder's type errors name Go types ("cannot unmarshal !!map into
		// []data.Degradation"): name the field and what it wants instead.
		var doc yaml.Node
		if yaml.Unmarshal(b, &doc) == nil {
			if e := config.ExplainYAML(&doc, reflect.TypeOf(cfg)); e != nil {
				return cfg, fmt.Errorf("train: %s: %w", path, e)
			}
		}
		return cfg, fmt.Errorf("train: %s: %w", path, err)
	}
	return cfg, nil
}

// Apply assigns key=value overrides (as from --set). Keys under loss.set., data.options. and
// loss.terms.N.set. go into those maps verbatim; every other key must name a field (errors say
// which).
//
// A key naming a map-valued path (loss.set, data.options, loss.terms.N.set) or a group of fields
// (loss, data, optimizer, loss.terms.N, ...) as a whole replaces it entirely: the map becomes
// exactly the given one, and a group's fields not given are reset to their zero values (so
// loss={name: triplet} drops the previous loss's set and terms). The value is a mapping, or a
// string holding a YAML mapping such as "{name: triplet, set: {margin: 0.1}}" (the form --set
// passes). Keys are applied by depth, then by name, so a whole key comes before its sub-keys:
// loss={name: cit} with loss.set.gamma=0.5 gives cit with gamma 0.5.
func (c *Config) Apply(kv map[string]any) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		di, dj := strings.Count(keys[i], "."), strings.Count(keys[j], ".")
		if di != dj {
			return di < dj
		}
		return keys[i] < keys[j]
	})
	fields := config.Fields(c) // the leaves' keys and types (independent of the values)
	isMap := func(k string) bool {
		for _, f := range fields {
			if f.Key == k {
				return strings.HasPrefix(f.Type, "map[string]")
			}
		}
		return false
	}
	isGroup := func(k string) bool {
		for _, f := range fields {
			if strings.HasPrefix(f.Key, k+".") {
				return true
			}
		}
		return false
	}
	asMap := func(k string, v any) (map[string]any, error) {
		switch x := v.(type) {
		case map[string]any:
			return x, nil
		case nil:
			return map[string]any{}, nil
		case string:
			var m map[string]any
			if err := yaml.Unmarshal([]byte(x), &m); err != nil {
				return nil, fmt.Errorf("train: %s: want a mapping such as {a: 1, b: x}, got %q", k, x)
			}
			if m == nil {
				m = map[string]any{}
			}
			return m, nil
		}
		return nil, fmt.Errorf("train: %s: want a mapping, got %v (%T)", k, v, v)
	}
	var clone func(v any) any
	clone = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = clone(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = clone(e)
			}
			return out
		}
		return v
	}
	var apply func(k string, v any) error
	applyAll := func(prefix string, m map[string]any) error {
		subs := make([]string, 0, len(m))
		for s := range m {
			subs = append(subs, s)
		}
		sort.Strings(subs)
		for _, s := range subs {
			if err := apply(prefix+"."+s, m[s]); err != nil {
				return err
			}
		}
		return nil
	}
	apply = func(k string, v any) error {
		switch {
		case isMap(k): // loss.set, data.options as a whole
			m, err := asMap(k, v)
			if err != nil {
				return err
			}
			if err := config.Set(c, k, clone(m)); err != nil {
				return fmt.Errorf("train: %w", err)
			}
		case isGroup(k): // loss, data, ... as a whole: zero every field under it, then set the given ones
			m, err := asMap(k, v)
			if err != nil {
				return err
			}
			for _, f := range fields {
				if strings.HasPrefix(f.Key, k+".") {
					if err := config.Set(c, f.Key, nil); err != nil {
						return fmt.Errorf("train: %w", err)
					}
				}
			}
			return applyAll(k, m)
		case strings.HasPrefix(k, "loss.set."):
			if c.Loss.Set == nil {
				c.Loss.Set = map[string]any{}
			}
			c.Loss.Set[strings.TrimPrefix(k, "loss.set.")] = v
		case strings.HasPrefix(k, "data.options."):
			if c.Data.Options == nil {
				c.Data.Options = map[string]any{}
			}
			c.Data.Options[strings.TrimPrefix(k, "data.options.")] = v
		case strings.HasPrefix(k, "loss.terms."):
			var idx int
			var sub string
			rest := strings.TrimPrefix(k, "loss.terms.")
			n, _ := fmt.Sscanf(rest, "%d.%s", &idx, &sub)
			if n == 0 || idx < 0 || idx >= len(c.Loss.Terms) || (n == 1 && rest != fmt.Sprint(idx)) {
				return fmt.Errorf("train: --set %s: want loss.terms.<index>.<field> with index < %d", k, len(c.Loss.Terms))
			}
			t := &c.Loss.Terms[idx]
			switch {
			case n == 1: // a whole term
				m, err := asMap(k, v)
				if err != nil {
					return err
				}
				*t = LossTerm{}
				return applyAll(k, m)
			case sub == "set":
				m, err := asMap(k, v)
				if err != nil {
					return err
				}
				t.Set = clone(m).(map[string]any)
			case strings.HasPrefix(sub, "set."):
				if t.Set == nil {
					t.Set = map[string]any{}
				}
				t.Set[strings.TrimPrefix(sub, "set.")] = v
			default:
				if err := config.Set(t, sub, v); err != nil {
					return fmt.Errorf("train: loss.terms[%d]: %w", idx, err)
				}
			}
		default:
			if err := config.Set(c, k, v); err != nil {
				return fmt.Errorf("train: %w", err)
			}
		}
		return nil
	}
	for _, k := range keys {
		if err := apply(k, kv[k]); err != nil {
			return err
		}
	}
	return nil
}

// MarshalYAML-friendly dump of the configuration.
func (c *Config) YAML() ([]byte, error) { return yaml.Marshal(c) }
