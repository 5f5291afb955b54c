package prepare

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// npyFeatureOptions are the options of the built-in "npy-features" dataset: float32 [N, F]
// feature files and int32/int64 [N] label files, as dmlkit/train's ExtractFeatures writes them.
type npyFeatureOptions struct {
	Dir         string `yaml:"dir" doc:"directory with {train,test}_{features,labels}.npy (and optional val_*)"`
	Train       string `yaml:"train"`
	TrainLabels string `yaml:"train_labels"`
	Test        string `yaml:"test"`
	TestLabels  string `yaml:"test_labels"`
}

func init() {
	RegisterFeatureDataset("npy-features", func(opts map[string]any) (*data.FeatureSplit, error) {
		var o npyFeatureOptions
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		pick := func(explicit, name string) string {
			if explicit != "" {
				return explicit
			}
			return filepath.Join(o.Dir, name)
		}
		if o.Dir == "" && (o.Train == "" || o.Test == "") {
			return nil, fmt.Errorf("data.options: set dir, or train, train_labels, test and test_labels")
		}
		tr, err := ReadFeatures(pick(o.Train, "train_features.npy"), pick(o.TrainLabels, "train_labels.npy"))
		if err != nil {
			return nil, err
		}
		te, err := ReadFeatures(pick(o.Test, "test_features.npy"), pick(o.TestLabels, "test_labels.npy"))
		if err != nil {
			return nil, err
		}
		s := &data.FeatureSplit{Train: tr, Test: te}
		if o.Dir != "" {
			if _, err := os.Stat(filepath.Join(o.Dir, "val_features.npy")); err == nil {
				if s.Val, err = ReadFeatures(filepath.Join(o.Dir, "val_features.npy"), filepath.Join(o.Dir, "val_labels.npy")); err != nil {
					return nil, err
				}
			}
		}
		return s, nil
	})
}

// ReadFeatures reads a float32 [N, F] feature file and its [N] label file (each checked against a
// PATH.sha256 beside it, when there is one).
func ReadFeatures(featPath, labelPath string) (*data.Features, error) {
	for _, p := range []string{featPath, labelPath} {
		if err := data.VerifySidecar("npy-features", p); err != nil {
			return nil, err
		}
	}
	x, shape, err := npy.ReadFloat32(featPath)
	if err != nil {
		return nil, err
	}
	if len(shape) != 2 {
		return nil, fmt.Errorf("train: %s: shape %v, want [N, F]", featPath, shape)
	}
	l, lshape, err := npy.ReadInt64(labelPath)
	if err != nil {
		return nil, err
	}
	if len(lshape) != 1 || lshape[0] != shape[0] {
		return nil, fmt.Errorf("train: %s: shape %v, want [%d] labels for %s", labelPath, lshape, shape[0], featPath)
	}
	f := &data.Features{N: shape[0], F: shape[1], X: x, Label: make([]int32, len(l))}
	for i, v := range l {
		f.Label[i] = int32(v)
	}
	return f, nil
}
