package train

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/data"
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
// file sets' decoding (data_images.go) and degrade.go (the pixels' conversion to floats and the
// class views are dmlkit/data's data.SetSource, also in the fingerprint), the loading of the
// backbone's weights (init.go), the extraction (frozen.go) and the variables' mode (engine.go).
//
//go:embed frozen.go data.go data_images.go degrade.go init.go engine.go
var featureSource embed.FS

// featureCode fingerprints the code that computes a backbone's features, for the cache key
// ([backboneKey]): the SHA-256 of dmlkit/models' Go source ([models.SourceDigest]), of the
// files of featureSource, and the versions of the GoMLX modules that build and run the graph
// (from the binary's build information). Editing any of those files, or moving to another
// GoMLX, starts a new cache instead of reusing features the old code computed; it is a
// variable so that tests can stand in another build.
var featureCode = sync.OnceValue(func() string {
	h := sha256.New()
	fmt.Fprintf(h, "models %s\ntrain %s\ndata %s\n", models.SourceDigest(), models.EmbeddedDigest(featureSource), models.EmbeddedDigest(data.SetSource))
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

// featureCache maps image digests (SHA-256 of an input's pixels) to backbone features of one
// backbone key. On disk it is a directory of part files, each written whole (atomically):
//
//	"DMLKFC2\n", F and n as little-endian uint32, n 32-byte digests, n·F little-endian float32,
//	then the SHA-256 of all the bytes before it.
//
// Parts only add features; readers take the union, so concurrent runs that compute the same
// images write duplicate entries that agree, and an interrupted run loses only its unwritten part.
// A part whose checksum, length or header is wrong (or one of the older layout without a
// checksum) is not trusted: its entries count as missing, so they are computed again, and the
// file is removed.
type featureCache struct {
	dir string
	f   int
	m   map[[32]byte][]float32
}

const featureCacheMagic = "DMLKFC2\n"

// openFeatureCache reads the parts in dir. Each part that fails its check is removed and
// reported through warn (when not nil) naming the file and what was wrong; its entries are
// then missing. Parts that pass their checks but disagree on the feature width are an error.
func openFeatureCache(dir string, warn func(string)) (*featureCache, error) {
	c := &featureCache{dir: dir, m: map[[32]byte][]float32{}}
	names, err := filepath.Glob(filepath.Join(dir, "part-*.bin"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, p := range names {
		damaged, err := c.readPart(p)
		if err != nil {
			return nil, err
		}
		if damaged == "" {
			continue
		}
		msg := fmt.Sprintf("feature cache: %s: %s; not used, its features are computed again", p, damaged)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			msg += fmt.Sprintf(" (removing it: %v)", err)
		}
		if warn != nil {
			warn(msg)
		}
	}
	return c, nil
}

// readPart adds the entries of the part at path. When the part fails a check it adds nothing
// and returns what is wrong as damaged; err is for a file that cannot be read or a width that
// disagrees with the other parts'.
func (c *featureCache) readPart(path string) (damaged string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("train: feature cache: %w", err)
	}
	if len(b) >= len(featureCacheMagic) && string(b[:len(featureCacheMagic)]) == "DMLKFC1\n" {
		return "written by an older dmlkit without a checksum", nil
	}
	if len(b) < len(featureCacheMagic)+8+sha256.Size || string(b[:len(featureCacheMagic)]) != featureCacheMagic {
		return "not a feature-cache part", nil
	}
	body, stored := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	b = body[len(featureCacheMagic):]
	f, n := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	if f <= 0 || len(b) != n*32+n*f*4 {
		return fmt.Sprintf("%d bytes for %d features of width %d", len(b), n, f), nil
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], stored) {
		return fmt.Sprintf("checksum mismatch: sha256 of its first %d bytes (header, digests, values) %x, stored %x", len(body), sum, stored), nil
	}
	if c.f != 0 && c.f != f {
		return "", fmt.Errorf("train: feature cache: %s: feature width %d, other parts %d (delete the directory to recompute it)", path, f, c.f)
	}
	c.f = f
	vals := b[n*32:]
	for i := 0; i < n; i++ {
		var k [32]byte
		copy(k[:], b[i*32:])
		v := make([]float32, f)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(vals[(i*f+j)*4:]))
		}
		c.m[k] = v
	}
	return "", nil
}

// add stores features [len(keys), F] as a new part.
func (c *featureCache) add(keys [][32]byte, feats []float32, f int) error {
	if len(keys) == 0 {
		return nil
	}
	if c.f != 0 && c.f != f {
		return fmt.Errorf("train: feature cache %s: feature width %d, cached %d", c.dir, f, c.f)
	}
	c.f = f
	var buf bytes.Buffer
	buf.WriteString(featureCacheMagic)
	var u [4]byte
	binary.LittleEndian.PutUint32(u[:], uint32(f))
	buf.Write(u[:])
	binary.LittleEndian.PutUint32(u[:], uint32(len(keys)))
	buf.Write(u[:])
	h := sha256.New()
	for _, k := range keys {
		buf.Write(k[:])
		h.Write(k[:])
	}
	for _, v := range feats[:len(keys)*f] {
		binary.LittleEndian.PutUint32(u[:], math.Float32bits(v))
		buf.Write(u[:])
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("train: feature cache: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	name := filepath.Join(c.dir, "part-"+hex.EncodeToString(h.Sum(nil))[:16]+".bin")
	if err := atomicfile.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("train: feature cache: %w", err)
	}
	for i, k := range keys {
		c.m[k] = append([]float32(nil), feats[i*f:(i+1)*f]...)
	}
	return nil
}

// inputDigest is the SHA-256 of input i of s: of its uint8 pixels for image datasets, of its
// float32 values otherwise (buf holds at least one input's floats).
func inputDigest(s Set, i int, buf []float32) [32]byte {
	switch v := s.(type) {
	case ImageSet:
		return sha256.Sum256(v.Image(i))
	case *data.ClassSubset:
		return inputDigest(v.Base(), v.Index(i), buf)
	}
	h, w, c := s.Dims()
	x := buf[:h*w*c]
	s.Fill([]int{i}, x)
	b := make([]byte, 4*len(x))
	for j, f := range x {
		binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
	}
	return sha256.Sum256(b)
}

// freezeBackbone replaces the image sets of split by what cfg's fixed backbone part computes
// from them, cached on disk: with model.freeze_backbone the pooled features [F] of the whole
// backbone, with model.trainable_tail the map [H', W', C'] in front of the trainable tail
// ([models.BuildPrefix]). Every input's digest is looked up in the feature cache of the
// backbone's key, the missing ones are computed (float32, inference mode, batches of
// extractBatch) and added, and each set becomes [Features] (the frozen backbone) or
// [cutMaps] (the trainable tail) with its labels and coarse labels. progress, when not nil,
// receives Phase "features" reports (Step = images computed so far, TotalSteps = images to
// compute); a damaged cache part (see featureCache) is reported as Phase "warning", and its
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
	cache, err := openFeatureCache(filepath.Join(root, key[:24]), warn)
	if err != nil {
		return nil, err
	}
	if cut != nil && cache.f != 0 && cache.f != cut[0]*cut[1]*cut[2] {
		return nil, fmt.Errorf("train: %s: feature cache %s holds maps of %d values, want %v", field, cache.dir, cache.f, cut)
	}
	named := []struct {
		name string
		s    Set
	}{{"train", split.train}, {"val", split.val}, {"test", split.test}}
	// Digests of every input, and the inputs still to compute (each distinct digest once).
	buf := make([]float32, h*w*c)
	digests := make([][][32]byte, len(named))
	type ref struct{ set, i int }
	var todo []ref
	queued := map[[32]byte]bool{}
	for si, p := range named {
		if p.s == nil {
			continue
		}
		digests[si] = make([][32]byte, p.s.Len())
		for i := range digests[si] {
			d := inputDigest(p.s, i, buf)
			digests[si][i] = d
			if _, ok := cache.m[d]; !ok && !queued[d] {
				queued[d] = true
				todo = append(todo, ref{si, i})
			}
		}
	}
	if len(todo) > 0 {
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
			return models.Build(scope.At(modelScope), cfg.Model, x, models.Mode{}).Features
		})
		if err != nil {
			return nil, fmt.Errorf("train: %s: %w", field, err)
		}
		size := h * w * c
		in := make([]float32, extractBatch*size)
		// Parts of about 4,096 images: an interrupted extraction keeps what it wrote.
		const part = 4096
		var keys [][32]byte
		var feats []float32
		f := 0
		for st := 0; st < len(todo); st += extractBatch {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m := min(extractBatch, len(todo)-st)
			clear(in)
			for j := 0; j < m; j++ {
				r := todo[st+j]
				named[r.set].s.Fill([]int{r.i}, in[j*size:(j+1)*size])
			}
			out, err := ex.Call(tensors.FromFlatDataAndDimensions(in, extractBatch, h, w, c))
			if err != nil {
				return nil, fmt.Errorf("train: %s: computing features: %w", field, err)
			}
			if out[0].Rank() != 2 {
				return nil, fmt.Errorf("train: %s: backbone features have shape %s, want [batch, F]", field, out[0].Shape())
			}
			f = out[0].Shape().Dim(1)
			if cut != nil && f != cut[0]*cut[1]*cut[2] {
				return nil, fmt.Errorf("train: %s: the backbone's prefix gives %d values per image, want %v", field, f, cut)
			}
			feats = append(feats, tensors.MustCopyFlatData[float32](out[0])[:m*f]...)
			for j := 0; j < m; j++ {
				r := todo[st+j]
				keys = append(keys, digests[r.set][r.i])
			}
			if len(keys) >= part || st+m == len(todo) {
				if err := cache.add(keys, feats, f); err != nil {
					return nil, err
				}
				keys, feats = keys[:0], feats[:0]
			}
			if progress != nil {
				progress(Progress{Phase: "features", Step: st + m, TotalSteps: len(todo)})
			}
		}
	}
	out := &sets{corruptions: split.corruptions}
	for si, p := range named {
		if p.s == nil {
			continue
		}
		n := p.s.Len()
		fs := &Features{N: n, F: cache.f, X: make([]float32, 0, n*cache.f), Label: append([]int32(nil), p.s.Labels()...)}
		if co := p.s.Coarse(); co != nil {
			fs.Super = append([]int32(nil), co...)
		}
		for i := 0; i < n; i++ {
			v, ok := cache.m[digests[si][i]]
			if !ok {
				return nil, fmt.Errorf("train: %s: %s input %d has no cached features", field, p.name, i)
			}
			fs.X = append(fs.X, v...)
		}
		var set Set = fs
		if cut != nil {
			set = &cutMaps{Features: fs, h: cut[0], w: cut[1], c: cut[2]}
		}
		switch p.name {
		case "train":
			out.train = set
		case "val":
			out.val = set
		default:
			out.test = set
		}
	}
	return out, nil
}

// cutMaps are the cached maps [H', W', C'] in front of a model.trainable_tail backbone's tail,
// one per input (row-major in Features.X, F = H'·W'·C'), given to the model as [B, H', W', C']
// ([models.Config.TailOnly]).
type cutMaps struct {
	*Features
	h, w, c int
}

func (m *cutMaps) Dims() (int, int, int) { return m.h, m.w, m.c }

// augmented reports whether s draws new training views every epoch (data.options.augment).
func augmented(s Set) bool {
	_, ok := baseSet(s).(*AugmentedImages)
	return ok
}
