package pipeline

import (
	"os"
	"runtime"
	"testing"
)

// BenchmarkPipeline reports cold (decode + resize to 256) and warm (224 crop + flip + normalise)
// images/s on 2 workers over 64 synthetic 500×375 JPEGs. For the comparison with Python see
// `dmlkit data bench`.
func BenchmarkPipeline(b *testing.B) {
	dir := b.TempDir()
	paths, err := WriteSyntheticJPEGs(dir, 64, 500, 375, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	workers := min(2, runtime.GOMAXPROCS(0))
	var r BenchResult
	for i := 0; i < b.N; i++ {
		if r, err = Bench(paths, workers, 2); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(r.ColdPS, "cold-img/s")
	b.ReportMetric(r.CropPS, "crop-img/s")
}

// BenchmarkDecode and BenchmarkResizeShort split the cold stage: one 500×375 JPEG per op.
func BenchmarkDecode(b *testing.B) {
	paths, err := WriteSyntheticJPEGs(b.TempDir(), 1, 500, 375, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeFile(paths[0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResizeShort(b *testing.B) {
	im := testImage(500, 375)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ResizeShort(im, 256)
	}
}
