package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ExtractFeatures runs the backbone of cfg.Model once over the train, validation and test sets
// of cfg.Data and writes {train,val,test}_{features,labels}.npy into outDir: the cache of
// precomputed-feature mode (seed 004 Fig. 8–9), read back by the "npy-features" dataset with
// model.backbone: features. Weights come from the newest checkpoint of runDir when runDir is not
// empty, else from model.pretrained (an ONNX ResNet/ViT or a .tflite MobileNet) or model.init_from (a stored run's backbone), or
// the seeded initialisation. The backbone is checked against the images first
// ([models.CheckImages]); a panic of the graph code becomes an error ([panicError]).
func ExtractFeatures(cfg Config, runDir, outDir string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(r, cfg.Model)
		}
	}()
	return extractFeatures(cfg, runDir, outDir)
}

// extractFeatures is [ExtractFeatures] without its recovery.
func extractFeatures(cfg Config, runDir, outDir string) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("train: config: %w", err)
	}
	if cfg.Model.Backbone == "features" {
		return fmt.Errorf("model.backbone: features has no backbone to extract with")
	}
	split, err := loadData(&cfg)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	store := model.NewStore()
	models.SetInitSeed(store, cfg.Seed)
	if runDir == "" {
		if err := initModel(store, cfg.Model); err != nil {
			return err
		}
	} else {
		ck, err := LatestCheckpoint(runDir)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		if ck == "" {
			return fmt.Errorf("train: %s has no checkpoint", runDir)
		}
		if _, err := loadCheckpoint(ck, store); err != nil {
			return err
		}
	}
	b, err := backend.Shared()
	if err != nil {
		return err
	}
	h, w, c := split.train.Dims()
	if err := models.CheckImages(b, cfg.Model, h, w, c, false); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	ex, err := model.NewExec(b, store, func(scope *model.Scope, x *Node) *Node {
		liveVariables(scope, x.Graph())
		return models.Build(scope.At(modelScope), cfg.Model, x, models.Mode{}).Features
	})
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	const batch = 256
	size := h * w * c
	for _, p := range []struct {
		name string
		s    Set
	}{{"train", split.train}, {"val", split.val}, {"test", split.test}} {
		if p.s == nil {
			continue
		}
		n := p.s.Len()
		var feats []float32
		f := 0
		buf := make([]float32, batch*size)
		for st := 0; st < n; st += batch {
			m := min(batch, n-st)
			idx := make([]int, m)
			for i := range idx {
				idx[i] = st + i
			}
			clear(buf)
			p.s.Fill(idx, buf[:m*size])
			out, err := ex.Call(tensors.FromFlatDataAndDimensions(buf, batch, h, w, c))
			if err != nil {
				return fmt.Errorf("train: extracting %s features: %w", p.name, err)
			}
			f = out[0].Shape().Dim(1)
			feats = append(feats, tensors.MustCopyFlatData[float32](out[0])[:m*f]...)
		}
		labels := make([]int64, n)
		for i, l := range p.s.Labels() {
			labels[i] = int64(l)
		}
		if err := npy.Write(filepath.Join(outDir, p.name+"_features.npy"), feats, n, f); err != nil {
			return err
		}
		if err := npy.Write(filepath.Join(outDir, p.name+"_labels.npy"), labels, n); err != nil {
			return err
		}
	}
	return nil
}
