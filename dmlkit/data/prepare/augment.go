package prepare

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
)

var augmentedDatasets = map[string]bool{}

// RegisterAugmentedDataset registers an in-memory image dataset ([RegisterDataset]) that takes
// the augmentation keys of [data.AugmentOptions] in data.options: they are removed before fn sees
// the options, and the training set is wrapped in an [data.AugmentedImages] with the run seed.
func RegisterAugmentedDataset(name string, fn DatasetFunc) {
	RegisterDataset(name, fn)
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	augmentedDatasets[name] = true
}

// splitAugmentOptions separates the augmentation keys of a dataset registered with
// [RegisterAugmentedDataset] from its loader's options (nil augmentation for other datasets).
func splitAugmentOptions(name string, opts map[string]any) (map[string]any, *data.AugmentOptions, error) {
	datasetsMu.RLock()
	ok := augmentedDatasets[name]
	datasetsMu.RUnlock()
	if !ok {
		return opts, nil, nil
	}
	rest := map[string]any{}
	aug := map[string]any{}
	for k, v := range opts {
		if contains(data.AugmentKeys, k) {
			aug[k] = v
		} else {
			rest[k] = v
		}
	}
	var o data.AugmentOptions
	if err := config.SetAll(&o, aug); err != nil {
		return nil, nil, fmt.Errorf("data.options: %w", err)
	}
	if err := o.Resolve(); err != nil {
		return nil, nil, err
	}
	return rest, &o, nil
}
