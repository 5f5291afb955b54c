package train

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/dmlkit/dmlkit/dmlkit/pca"
	"github.com/gomlx/gomlx/ml/model"
)

// fitPCAHead fits model.head pca ([models.Config].Head) on the training split's features: the
// top dim principal components of all tr's inputs ([pca.Fit]: the mean and the leading
// eigenvectors of the sample covariance, float64 on the host), stored as the head's
// non-trainable variables ([models.SetPCAHead]). tr must hold feature vectors (the cached
// features of model.freeze_backbone, or backbone features' input): Dims (1, 1, F). Errors name
// model.head and model.dim.
func fitPCAHead(store *model.Store, tr Set, dim int) error {
	h, w, f := tr.Dims()
	if h != 1 || w != 1 {
		return fmt.Errorf("train: model.head: pca needs feature vectors, the training inputs are %d×%d×%d images", h, w, f)
	}
	if dim > f {
		return fmt.Errorf("train: model.dim: %d: the pca head keeps at most the features' %d components", dim, f)
	}
	n := tr.Len()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	x := make([]float32, n*f)
	tr.Fill(idx, x)
	p, err := pca.Fit(x, n, f, dim)
	if err != nil {
		return fmt.Errorf("train: model.head: pca on %d training features of width %d: %w", n, f, err)
	}
	return models.SetPCAHead(store.RootScope().At(modelScope), p)
}
