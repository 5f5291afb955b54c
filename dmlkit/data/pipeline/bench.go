package pipeline

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// BenchResult holds pipeline throughput in images per second.
type BenchResult struct {
	Images  int     `json:"images"`
	Workers int     `json:"workers"`
	ColdPS  float64 `json:"cold_per_s"` // decode + resize short side to 256, from files
	CropPS  float64 `json:"crop_per_s"` // 224 random crop + flip + normalise, from the 256-px cache
}

// Bench measures the two pipeline stages on paths with the given number of workers: a cold
// pass (decode + resize to short side 256 into the cache) and `epochs` training epochs of
// 224×224 random crops with flips and ImageNet normalisation from that cache.
func Bench(paths []string, workers, epochs int) (BenchResult, error) {
	r := BenchResult{Images: len(paths), Workers: workers}
	t0 := time.Now()
	c, err := BuildCache(paths, nil, 256, workers, nil)
	if err != nil {
		return r, err
	}
	r.ColdPS = float64(len(paths)) / time.Since(t0).Seconds()
	t0 = time.Now()
	n := 0
	for e := 0; e < epochs; e++ {
		l, err := NewLoader(c, Config{Crop: 224, BatchSize: 32, Train: true, Mean: ImageNetMean, Std: ImageNetStd, Workers: workers, Seed: 1}, nil, e)
		if err != nil {
			return r, err
		}
		for b := l.Next(); b != nil; b = l.Next() {
			n += len(b.Index)
		}
		l.Close()
	}
	r.CropPS = float64(n) / time.Since(t0).Seconds()
	return r, nil
}

// WriteSyntheticJPEGs writes n w×h JPEGs (quality 90) with smooth colour gradients plus noise,
// a stand-in for photographs of similar size (CUB/Cars images are about 500×375), and returns
// their paths.
func WriteSyntheticJPEGs(dir string, n, w, h int, seed uint64) ([]string, error) {
	r := rand.New(rand.NewPCG(seed, 7))
	var paths []string
	for i := 0; i < n; i++ {
		im := image.NewRGBA(image.Rect(0, 0, w, h))
		fx, fy := r.Float64()*0.05, r.Float64()*0.05
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				p := (y*w + x) * 4
				im.Pix[p] = uint8(128 + 100*math.Sin(fx*float64(x)+float64(i)) + float64(r.IntN(24)))
				im.Pix[p+1] = uint8(128 + 100*math.Sin(fy*float64(y)) + float64(r.IntN(24)))
				im.Pix[p+2] = uint8((x + y + i) % 200)
				im.Pix[p+3] = 255
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, im, &jpeg.Options{Quality: 90}); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, fmt.Sprintf("img_%05d.jpg", i))
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// PythonBaseline is a Pillow + NumPy re-implementation of the torchvision-style pipeline
// (Image.open().convert("RGB"), Resize(256) bilinear, RandomCrop(224), RandomHorizontalFlip,
// ToTensor + Normalize) for the same measurement. Usage:
//
//	python3 baseline.py LISTFILE WORKERS EPOCHS
//
// It prints one JSON object with cold_per_s and crop_per_s. Workers are processes
// (multiprocessing.Pool), as torch DataLoader workers are.
const PythonBaseline = `
import json, sys, time, random
from multiprocessing import Pool
import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)

def load(p):
    im = Image.open(p).convert("RGB")
    w, h = im.size
    if w <= h:
        size = (256, int(256 * h / w))
    else:
        size = (int(256 * w / h), 256)
    return im.resize(size, Image.BILINEAR)

def cold(p):
    load(p)
    return 1

def crops(args):
    paths, epochs = args
    cache = [load(p) for p in paths]
    rng = random.Random(1)
    t0 = time.perf_counter()
    n = 0
    for _ in range(epochs):
        for im in cache:
            w, h = im.size
            x0, y0 = rng.randint(0, w - 224), rng.randint(0, h - 224)
            c = im.crop((x0, y0, x0 + 224, y0 + 224))
            if rng.random() < 0.5:
                c = c.transpose(Image.FLIP_LEFT_RIGHT)
            a = np.asarray(c, dtype=np.float32) / 255.0
            a = (a - MEAN) / STD
            n += 1
    return n, time.perf_counter() - t0

if __name__ == "__main__":
    paths = [l.strip() for l in open(sys.argv[1]) if l.strip()]
    workers, epochs = int(sys.argv[2]), int(sys.argv[3])
    with Pool(workers) as pool:
        t0 = time.perf_counter()
        sum(pool.map(cold, paths, chunksize=8))
        cold_ps = len(paths) / (time.perf_counter() - t0)
        shards = [(paths[i::workers], epochs) for i in range(workers)]
        res = pool.map(crops, shards)
    crop_ps = sum(n for n, _ in res) / max(t for _, t in res)
    print(json.dumps({"images": len(paths), "workers": workers, "cold_per_s": cold_ps, "crop_per_s": crop_ps}))
`
