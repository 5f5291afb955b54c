package train

import (
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
)

// synthImages builds nClasses classes of perClass side×side grey images: each class is a random
// 4×4 binary template upsampled to side×side; each image adds a random ±1-pixel shift and
// uniform noise. Labels start at offset.
func synthImages(seed uint64, nClasses, perClass, side int, offset int32) *data.Images {
	r := rand.New(rand.NewPCG(seed, 11))
	s := &data.Images{Name: "synth", N: nClasses * perClass, H: side, W: side, C: 1}
	s.Pix = make([]uint8, s.N*side*side)
	s.Labels = make([]int32, s.N)
	s.Coarse = make([]int32, s.N)
	cell := side / 4
	for c := 0; c < nClasses; c++ {
		var tpl [16]bool
		for i := range tpl {
			tpl[i] = r.IntN(2) == 1
		}
		for k := 0; k < perClass; k++ {
			i := c*perClass + k
			s.Labels[i] = offset + int32(c)
			s.Coarse[i] = int32(c % 3)
			dy, dx := r.IntN(3)-1, r.IntN(3)-1
			img := s.Pix[i*side*side : (i+1)*side*side]
			for y := 0; y < side; y++ {
				for x := 0; x < side; x++ {
					ty, tx := (y+dy+side)%side/cell, (x+dx+side)%side/cell
					v := r.IntN(90)
					if tpl[min(ty, 3)*4+min(tx, 3)] {
						v += 165
					}
					img[y*side+x] = uint8(v)
				}
			}
		}
	}
	return s
}

func init() {
	prepare.RegisterDataset("synth-test", func(opts map[string]any) (*data.Split, error) {
		return &data.Split{Train: synthImages(1, 16, 8, 12, 0), Test: synthImages(2, 10, 6, 12, 100)}, nil
	})
}

// testConfig is a tiny run: a 2-block CNN on 12×12 synthetic images, contrastive loss, Adam.
func testConfig() Config {
	cfg := Default()
	cfg.Data = DataConfig{Name: "synth-test"}
	cfg.Model.Channels = []int{4, 8}
	cfg.Model.Dim = 8
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 16, M: 4}
	cfg.Epochs = 2
	cfg.Eval = EvalConfig{Every: 1, Ks: []int{1, 2}, BatchSize: 32, Metric: "R@1"}
	cfg.Checkpoint = CheckpointConfig{Keep: 0}
	cfg.Optimizer.LR = 3e-3
	return cfg
}

// firstBatch validates cfg, loads its data, builds an engine on a fresh store and returns them
// with the first batch of epoch 0 of cfg's sampler (seeded with samplerSeed): its pixels
// ([n, h, w, c] row-major) and labels.
func firstBatch(t *testing.T, cfg *Config, samplerSeed int64) (eng *engine, store *model.Store, pix []float32, labels []int64) {
	t.Helper()
	return firstBatchOn(t, backend.MustShared(), cfg, samplerSeed)
}

// firstBatchOn is firstBatch with the engine on backend b.
func firstBatchOn(t *testing.T, b compute.Backend, cfg *Config, samplerSeed int64) (eng *engine, store *model.Store, pix []float32, labels []int64) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	split, err := loadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := split.train
	h, w, c := tr.Dims()
	store = model.NewStore()
	if eng, err = newEngine(cfg, b, store, len(classesOf(tr)), h, w, c); err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(cfg.Sampler, samplerSeed, tr.Labels(), nil)
	if err != nil {
		t.Fatal(err)
	}
	idx := s.Epoch(0)[0]
	pix = make([]float32, len(idx)*h*w*c)
	tr.Fill(idx, pix)
	labels = make([]int64, len(idx))
	for i, j := range idx {
		labels[i] = int64(tr.Labels()[j])
	}
	return eng, store, pix, labels
}
