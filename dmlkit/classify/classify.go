package classify

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// LabelFiles are the label files looked for beside a model, in order; the first with one line
// per model output is used.
var LabelFiles = []string{"imagenet_labels.txt", "inat_bird_labels.txt"}

// Classifier is a TFLite classifier (or embedding extractor) ready to run on one backend.
type Classifier struct {
	Model *models.TFLiteModel
	// Labels has one label per output (index 0 of the ImageNet files is "background"); nil when
	// no label file beside the model has that many lines.
	Labels []string
	// Digest is the SHA-256 (hex) of the .tflite file, checked against the SHA256SUMS beside it
	// where that lists the file.
	Digest string
	exec   *model.Exec
}

// Load reads the .tflite file at path ([models.CachedTFLite]), its labels ([LabelFiles] in the
// same directory) and prepares the graph on backend b with the file's weights. The model and the
// label file must match the SHA256SUMS beside them where it lists them ([checksum.File]): a
// damaged file is refused naming it and both digests. Digest is the model file's SHA-256.
func Load(b compute.Backend, path string) (*Classifier, error) {
	m, err := models.CachedTFLite(path)
	if err != nil {
		return nil, err
	}
	d, err := checksum.File(path)
	if err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	c := &Classifier{Model: m, Digest: d}
	for _, name := range LabelFiles {
		lp := filepath.Join(filepath.Dir(path), name)
		data, err := os.ReadFile(lp)
		if err != nil {
			continue
		}
		if _, err := checksum.File(lp); err != nil {
			return nil, fmt.Errorf("classify: labels: %w", err)
		}
		lines := strings.Split(strings.TrimRight(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n"), "\n")
		if len(lines) == m.NumOutputs {
			c.Labels = lines
			break
		}
	}
	store := model.NewStore()
	if err := m.LoadVariables(store.RootScope().At("backbone"), true); err != nil {
		return nil, fmt.Errorf("classify: %s: %w", path, err)
	}
	c.exec, err = model.NewExec(b, store, func(scope *model.Scope, x *Node) *Node {
		return m.Logits(scope.At("backbone"), m.InputFromPixels(x, 255))
	})
	if err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	return c, nil
}

// Result is the output for one image.
type Result struct {
	// Logits are the network's outputs before the softmax (the embedding for an extractor).
	Logits []float32
	// Probs are softmax(β·Logits) in float64; nil for a model without a final softmax.
	Probs []float64
}

// Top returns the indices of the k largest probabilities (logits for an extractor), largest
// first; ties keep the lower index first.
func (r Result) Top(k int) []int {
	idx := make([]int, len(r.Logits))
	for i := range idx {
		idx[i] = i
	}
	score := func(i int) float64 {
		if r.Probs != nil {
			return r.Probs[i]
		}
		return float64(r.Logits[i])
	}
	sort.SliceStable(idx, func(a, b int) bool { return score(idx[a]) > score(idx[b]) })
	return idx[:min(k, len(idx))]
}

// Norm is the L2 norm of the logits (the embedding's norm for an extractor).
func (r Result) Norm() float64 {
	s := 0.0
	for _, v := range r.Logits {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

// Prepare reads an image file and resizes it to the model's input size by method (bilinear or
// nearest).
func (c *Classifier) Prepare(path, method string) (*RGB, error) {
	img, err := ReadImage(path)
	if err != nil {
		return nil, err
	}
	return Resize(img, c.Model.InputH, c.Model.InputW, method)
}

// Run classifies images of the model's input size as one batch.
func (c *Classifier) Run(images []*RGB) ([]Result, error) {
	h, w := c.Model.InputH, c.Model.InputW
	flat := make([]float32, 0, len(images)*h*w*3)
	for i, im := range images {
		if im.H != h || im.W != w {
			return nil, fmt.Errorf("classify: image %d is %d×%d, the model takes %d×%d", i, im.H, im.W, h, w)
		}
		for _, p := range im.Pix {
			flat = append(flat, float32(p))
		}
	}
	out, err := c.exec.Call(tensors.FromFlatDataAndDimensions(flat, len(images), h, w, 3))
	if err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	logits := tensors.MustCopyFlatData[float32](out[0])
	n := len(logits) / len(images)
	res := make([]Result, len(images))
	for i := range res {
		res[i].Logits = logits[i*n : (i+1)*n]
		if beta := c.Model.SoftmaxBeta; beta != 0 {
			res[i].Probs = softmax(res[i].Logits, beta)
		}
	}
	return res, nil
}

// Files classifies image files (resized by method) as one batch.
func (c *Classifier) Files(paths []string, method string) ([]Result, error) {
	images := make([]*RGB, len(paths))
	for i, p := range paths {
		im, err := c.Prepare(p, method)
		if err != nil {
			return nil, err
		}
		images[i] = im
	}
	return c.Run(images)
}

// softmax returns exp(β·(l − max l)) normalised, in float64.
func softmax(l []float32, beta float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range l {
		mx = math.Max(mx, float64(v))
	}
	p := make([]float64, len(l))
	s := 0.0
	for i, v := range l {
		p[i] = math.Exp(beta * (float64(v) - mx))
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}
