package train

import (
	"fmt"
	"os"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/gomlx/ml/model"
)

// initModel initialises the model variables of a fresh store before the first graph is built:
// from model.pretrained (an ONNX or .tflite file, [models.LoadPretrained]) or from model.init_from (a stored
// run, [initFromRun]). The model's other variables are created by their initialisers later.
func initModel(store *model.Store, cfg models.Config) error {
	if err := models.LoadPretrained(store.RootScope().At(modelScope), cfg); err != nil {
		return err
	}
	return initFromRun(store, cfg)
}

// initFromCheckpoint is the checkpoint file model.init_from names: the file itself, or a run
// directory's newest checkpoint. Errors name model.init_from and say what is missing.
func initFromCheckpoint(initFrom string) (string, error) {
	fi, err := os.Stat(initFrom)
	if err != nil {
		if os.IsNotExist(err) {
			return "", fmt.Errorf("model.init_from: %s: no such run directory or checkpoint file", initFrom)
		}
		return "", fmt.Errorf("model.init_from: %w", err)
	}
	if !fi.IsDir() {
		return initFrom, nil
	}
	path, err := LatestCheckpoint(initFrom)
	if err != nil {
		return "", fmt.Errorf("model.init_from: %s: %w", initFrom, err)
	}
	if path == "" {
		return "", fmt.Errorf("model.init_from: %s: the run directory holds no checkpoint (%s/ckpt-*.gob)", initFrom, checkpointDir)
	}
	return path, nil
}

// initFromRun copies the backbone variables (/model/backbone/...; with model.init_head all of
// /model/...) of the checkpoint named by cfg.InitFrom — a run directory (its newest checkpoint) or
// a checkpoint file — into store, keeping their trainable flags. Nothing else of the checkpoint is
// taken (loss variables such as proxies, optimiser moments, the RNG state, the step). Errors name
// model.init_from.
func initFromRun(store *model.Store, cfg models.Config) error {
	if cfg.InitFrom == "" {
		return nil
	}
	path, err := initFromCheckpoint(cfg.InitFrom)
	if err != nil {
		return err
	}
	src := model.NewStore()
	if _, err := loadCheckpoint(path, src); err != nil {
		return fmt.Errorf("model.init_from: %w", err)
	}
	prefix := "/" + modelScope + "/backbone/"
	if cfg.InitHead {
		prefix = "/" + modelScope + "/"
	}
	n := 0
	for v := range src.IterVariables() {
		if !strings.HasPrefix(v.Path(), prefix) {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("model.init_from: %s: %s: %w", path, v.Path(), err)
		}
		if old := store.GetVariable(v.Path()); old != nil {
			if !old.Shape().Equal(t.Shape()) {
				return fmt.Errorf("model.init_from: %s: variable %s has shape %s, the model's is %s", path, v.Path(), t.Shape(), old.Shape())
			}
			if err := old.SetValue(t); err != nil {
				return fmt.Errorf("model.init_from: %s: %s: %w", path, v.Path(), err)
			}
		} else {
			nv, err := store.CreateVariable(v.Path(), t)
			if err != nil {
				return fmt.Errorf("model.init_from: %s: %s: %w", path, v.Path(), err)
			}
			nv.SetTrainable(v.Trainable)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("model.init_from: %s has no variables under %s (not a run of a model with a backbone?)", path, prefix)
	}
	// Variables created here take the stored run's shapes before the graph exists: models.Param
	// refuses one the model needs in another shape, naming this source.
	store.SetParam("/"+models.SourceParam, "model.init_from "+cfg.InitFrom)
	return nil
}
