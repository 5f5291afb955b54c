package train

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// FeatureCacheEnv names the environment variable that overrides the directory of the frozen
// backbone's feature cache (model.freeze_backbone); default: <user cache dir>/dmlkit/features.
const FeatureCacheEnv = "DMLKIT_FEATURE_CACHE"

// featureCacheVersion is the layout of the cache's key and parts (it is part of the key); what
// the code computes is [featureCode]'s job. 2: settings that do not apply to a backbone left
// out. 3: the code fingerprint in the key, parts with a checksum (DMLKFC2).
const featureCacheVersion = 3

// featureSource is this package's part of the path from an input to its cached features: the
// loading of the data (sets.go), eval.degrade (degrade.go), the loading of the backbone's weights
// (init.go), the extractor (frozen.go) and the variables' mode (engine.go). The file sets' decoding and the
// dataset registry are dmlkit/data/prepare's (prepare.Source); the pixels' conversion to floats,
// the class views, the degraded sets and the batching of the extraction dmlkit/data's
// (data.SetSource); both are in the fingerprint too.
//
//go:embed frozen.go sets.go degrade.go init.go engine.go
var featureSource embed.FS

// featureCode fingerprints the code that computes a backbone's features, for the cache key
// ([backboneKey]): the SHA-256 of dmlkit/models' Go source ([models.SourceDigest]), of the
// files of featureSource, prepare.Source and data.SetSource, and the versions of the GoMLX
// modules that build and run the graph (from the binary's build information). Editing any of those files, or moving to another
// GoMLX, starts a new cache instead of reusing features the old code computed; it is a
// variable so that tests can stand in another build.
var featureCode = sync.OnceValue(func() string {
	h := sha256.New()
	fmt.Fprintf(h, "models %s\ntrain %s\nprepare %s\ndata %s\n", models.SourceDigest(), models.EmbeddedDigest(featureSource),
		models.EmbeddedDigest(prepare.Source), models.EmbeddedDigest(data.SetSource))
	if bi, ok := debug.ReadBuildInfo(); ok {
		var mods []string
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "github.com/gomlx/") {
				if d.Replace != nil {
					d = d.Replace
				}
				mods = append(mods, d.Path+"@"+d.Version)
			}
		}
		sort.Strings(mods)
		fmt.Fprintf(h, "%s\n", strings.Join(mods, " "))
	}
	return hex.EncodeToString(h.Sum(nil))
})

// extractBatch is the number of images per backbone call when features are computed (one
// compiled shape; the last batch is padded).
const extractBatch = 64

// featureCacheMagic heads every part of the feature cache ([data.FeatureCache]).
const featureCacheMagic = data.FeatureCacheMagic

// featureCacheDir is the cache directory: $DMLKIT_FEATURE_CACHE, else the user cache directory's
// dmlkit/features.
func featureCacheDir() (string, error) {
	if d := os.Getenv(FeatureCacheEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("train: feature cache: no user cache directory (%v); set %s", err, FeatureCacheEnv)
	}
	return filepath.Join(d, "dmlkit", "features"), nil
}

// backboneKey identifies the function from an input image to its backbone features: the
// backbone's configuration (for backbone onnx also model.onnx_output, onnx_layout and
// input_norm; with model.trainable_tail the tail's length and the op where it is cut, so that the
// cached value is the prefix's map), the digests of the files its weights come from
// (model.pretrained and the model.init_from checkpoint, both for a mobilenet whose .tflite
// weights a run replaces) or, without one, the seed of its random initialisation, the input
// shape, the cache version and the fingerprint of the code that computes the features
// ([featureCode]). Head, loss and optimiser settings are not part of it.
func backboneKey(cfg *Config, h, w, c int) (string, error) {
	m := cfg.Model
	k := struct {
		Version            int
		Code               string
		Backbone           string
		Channels           []int
		Norm, Pool         string
		FrozenBN           bool
		GeMP               float64
		InputSize, H, W, C int
		Weights            string
		Seed               int64
		// Backbone onnx: which output, layout and input normalisation (empty for the others,
		// which leaves their keys as they were).
		ONNXOutput, ONNXLayout, InputNorm string `json:",omitempty"`
		// model.trainable_tail: the number of trainable blocks and the first op of the tail
		// (0 for the frozen backbone, which leaves its keys as they were).
		Tail, TailOp int `json:",omitempty"`
	}{Version: featureCacheVersion, Code: featureCode(), Backbone: m.Backbone, Channels: m.Channels, Norm: m.Norm, Pool: m.Pool,
		FrozenBN: m.FrozenBN, GeMP: m.GeMP, InputSize: m.InputSize, H: h, W: w, C: c,
		ONNXOutput: m.ONNXOutput, ONNXLayout: m.ONNXLayout, InputNorm: m.InputNorm}
	// Settings that do not shape this backbone's features stay out of the key, so that every
	// paper's spec shares one cache whatever its small-CNN settings say.
	switch {
	case m.Backbone == "mobilenet_v2" || m.Backbone == "mobilenet_v1": // pools globally, no BatchNorm
		k.Channels, k.Norm, k.Pool, k.FrozenBN, k.GeMP = nil, "", "", false, 0
	case m.Backbone == "onnx": // its own BatchNorm statistics; model.pool pools an intermediate output
		k.Channels, k.Norm, k.FrozenBN = nil, "", false
	case m.Backbone != "cnn":
		k.Channels = nil
	}
	if k.Pool != "gem" {
		k.GeMP = 0
	}
	if m.TrainableTail > 0 {
		_, start, err := models.TailConfig(m)
		if err != nil {
			return "", err
		}
		k.Tail, k.TailOp = m.TrainableTail, start
	}
	digests, err := weightDigests(m)
	if err != nil {
		return "", err
	}
	if d, ok := digests["model.pretrained"]; ok {
		k.Weights = "pretrained:" + d
	}
	if d, ok := digests["model.init_from"]; ok { // with a mobilenet's .tflite file too: the run's weights replace the file's
		if k.Weights != "" {
			k.Weights += ";"
		}
		k.Weights += "init_from:" + d
	}
	if k.Weights == "" {
		k.Seed = int64(cfg.Seed)
	}
	b, err := json.Marshal(k)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// freezeBackbone replaces the image sets of split by what cfg's fixed backbone part computes
// from them, cached on disk: with model.freeze_backbone the pooled features [F] of the whole
// backbone, with model.trainable_tail the map [H', W', C'] in front of the trainable tail
// ([models.BuildPrefix]). Every input's digest is looked up in the feature cache of the
// backbone's key, the missing ones are computed (float32, inference mode, batches of
// extractBatch) and added, and each set becomes [Features] (the frozen backbone) or
// [data.CutMaps] (the trainable tail) with its labels and coarse labels. progress, when not nil,
// receives Phase "features" reports (Step = images computed so far, TotalSteps = images to
// compute); a damaged cache part (see data.FeatureCache) is reported as Phase "warning", and its
// features are computed again.
func freezeBackbone(ctx context.Context, cfg *Config, b compute.Backend, split *sets, progress func(Progress)) (*sets, error) {
	field, tail := "model.freeze_backbone", cfg.Model.TrainableTail > 0
	if tail {
		field = "model.trainable_tail"
	}
	if augmented(split.train) {
		return nil, fmt.Errorf("train: %s: data.options.augment changes the training images every epoch, so what the fixed backbone computes from them cannot be cached; set augment: none", field)
	}
	h, w, c := split.train.Dims()
	key, err := backboneKey(cfg, h, w, c)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", field, err)
	}
	// The cut map's shape with a trainable tail (from the resized input when model.input_size
	// is set); the features' width is the cache's.
	var cut []int
	if tail {
		m, start, err := models.TailConfig(cfg.Model)
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		ih, iw := h, w
		if s := cfg.Model.InputSize; s > 0 {
			ih, iw = s, s
		}
		cut = m.CutShape(start, ih, iw)
	}
	root, err := featureCacheDir()
	if err != nil {
		return nil, err
	}
	warn := func(msg string) {
		if progress != nil {
			progress(Progress{Phase: "warning", Message: msg})
		}
	}
	cache, err := data.OpenFeatureCache(filepath.Join(root, key[:24]), warn)
	if err != nil {
		return nil, err
	}
	if cut != nil && cache.Width() != 0 && cache.Width() != cut[0]*cut[1]*cut[2] {
		return nil, fmt.Errorf("train: %s: feature cache %s holds maps of %d values, want %v", field, cache.Dir(), cache.Width(), cut)
	}
	stage := &data.FrozenStage{Field: field, Cache: cache, Batch: extractBatch, Cut: cut,
		Extractor: func() (func(in []float32, n int) ([]float32, int, error), error) {
			store := model.NewStore()
			models.SetInitSeed(store, cfg.Seed)
			if err := initModel(store, cfg.Model); err != nil {
				return nil, err
			}
			ex, err := model.NewExec(b, store, func(scope *model.Scope, x *Node) *Node {
				liveVariables(scope, x.Graph())
				if tail {
					y := models.BuildPrefix(scope.At(modelScope), cfg.Model, x)
					return Reshape(y, y.Shape().Dim(0), -1)
				}
				// The features do not depend on the head; a pca head is fitted on them later.
				m := cfg.Model
				m.Head = "identity"
				return models.Build(scope.At(modelScope), m, x, models.Mode{}).Features
			})
			if err != nil {
				return nil, fmt.Errorf("train: %s: %w", field, err)
			}
			return func(in []float32, _ int) ([]float32, int, error) {
				out, err := ex.Call(tensors.FromFlatDataAndDimensions(in, extractBatch, h, w, c))
				if err != nil {
					return nil, 0, fmt.Errorf("train: %s: computing features: %w", field, err)
				}
				if out[0].Rank() != 2 {
					return nil, 0, fmt.Errorf("train: %s: backbone features have shape %s, want [batch, F]", field, out[0].Shape())
				}
				return tensors.MustCopyFlatData[float32](out[0]), out[0].Shape().Dim(1), nil
			}, nil
		},
	}
	if progress != nil {
		stage.Progress = func(done, total int) { progress(Progress{Phase: "features", Step: done, TotalSteps: total}) }
	}
	p, err := stage.Apply(ctx, &data.PreparedSets{Train: split.train, Val: split.val, Test: split.test, Corruptions: split.corruptions})
	if err != nil {
		return nil, err
	}
	return &sets{train: p.Train, val: p.Val, test: p.Test, corruptions: p.Corruptions}, nil
}

// augmented reports whether s draws new training views every epoch (data.options.augment).
func augmented(s Set) bool {
	_, ok := baseSet(s).(*AugmentedImages)
	return ok
}
