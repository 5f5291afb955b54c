package models

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// coralDir is the shared copy of the Coral MobileNets (../shared/weights/coral beside the
// repository), relative to this package's directory.
const coralDir = "../../../shared/weights/coral"

// The four Coral files (../shared/weights/coral/README.md) and the reference images.
const (
	tfliteV2   = "mobilenet_v2_1.0_224_quant.tflite"
	tfliteTF2  = "tf2_mobilenet_v2_1.0_224_ptq.tflite"
	tfliteINat = "mobilenet_v2_1.0_224_inat_bird_quant.tflite"
	tfliteV1   = "mobilenet_v1_1.0_224_quant_embedding_extractor.tflite"
)

var coralImages = []string{"cat.bmp", "grace_hopper.bmp", "bird.bmp"}

// coralFile returns the path of a Coral file, skipping the test when ../shared is absent.
func coralFile(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(coralDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no ../shared/weights/coral: %v", err)
	}
	return p
}

// coralModel returns the parsed file (cached across tests by CachedTFLite).
func coralModel(t testing.TB, name string) *TFLiteModel {
	t.Helper()
	m, err := CachedTFLite(coralFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// oracleOut holds ../shared/tools/tflite_ref.py's outputs for one model and resize: the exact
// float input [1, 224, 224, 3] and logits of each reference image.
type oracleOut struct{ inputs, logits map[string][]float32 }

var oracleCache sync.Map // "model|resize" → *oracleOut

// pythonOracle runs the NumPy reference interpreter (Debian's /usr/bin/python3 with NumPy) on
// the three reference images. Without python3 or NumPy the test fails saying what to install,
// unless DMLKIT_SKIP_PYTHON_ORACLE=1.
func pythonOracle(t *testing.T, modelName, resize string) *oracleOut {
	t.Helper()
	key := modelName + "|" + resize
	if o, ok := oracleCache.Load(key); ok {
		return o.(*oracleOut)
	}
	mp := coralFile(t, modelName)
	tool := filepath.Join(coralDir, "..", "..", "tools", "tflite_ref.py")
	if err := exec.Command("/usr/bin/python3", "-c", "import numpy").Run(); err != nil {
		if os.Getenv("DMLKIT_SKIP_PYTHON_ORACLE") == "1" {
			t.Skip("DMLKIT_SKIP_PYTHON_ORACLE=1: no /usr/bin/python3 with NumPy")
		}
		t.Fatalf("the TFLite oracle needs /usr/bin/python3 with NumPy (apt-get install python3-numpy), or set DMLKIT_SKIP_PYTHON_ORACLE=1: %v", err)
	}
	dir := t.TempDir()
	args := []string{tool, mp}
	for _, im := range coralImages {
		args = append(args, filepath.Join(coralDir, im))
	}
	args = append(args, "--out", dir, "--resize", resize)
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tflite_ref.py: %v\n%s", err, out)
	}
	o := &oracleOut{inputs: map[string][]float32{}, logits: map[string][]float32{}}
	for _, im := range coralImages {
		stem := filepath.Join(dir, strings.TrimSuffix(im, ".bmp"))
		x, xs, err := npy.ReadFloat32(stem + ".input.npy")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(xs) != "[1 224 224 3]" {
			t.Fatalf("%s.input.npy has shape %v", stem, xs)
		}
		l, _, err := npy.ReadFloat32(stem + ".logits.npy")
		if err != nil {
			t.Fatal(err)
		}
		o.inputs[im], o.logits[im] = x, l
	}
	oracleCache.Store(key, o)
	return o
}

// tfliteLogits runs m.Logits on the network inputs xs (each [224, 224, 3]) as one batch with the
// file's weights, returning one logits row per input.
func tfliteLogits(t *testing.T, m *TFLiteModel, xs [][]float32) [][]float32 {
	t.Helper()
	b := len(xs)
	flat := make([]float32, 0, b*224*224*3)
	for _, x := range xs {
		flat = append(flat, x...)
	}
	store := model.NewStore()
	if err := m.LoadVariables(store.RootScope().At("backbone")); err != nil {
		t.Fatal(err)
	}
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
		return m.Logits(scope.At("backbone"), x)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(flat, b, 224, 224, 3))
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	rows := make([][]float32, b)
	n := len(got) / b
	for i := range rows {
		rows[i] = got[i*n : (i+1)*n]
	}
	return rows
}

// TestTFLiteMatchesOracle feeds the oracle's exact input tensors of the three reference images
// (bilinear resize) through each of the four files and compares the logits (the softmax input;
// the embedding for the V1 extractor) with the NumPy interpreter's: |Δ| ≤ 1e-4 absolute. Both run
// the same float graph in float32 but sum in different orders (im2col MatMul vs NumPy's BLAS):
// about 60 layers of rounding at ~6e-8 relative each on logits up to ~15 give |Δ| of 3e-6–2e-5
// (logged), so 1e-4 leaves a margin of 5 without hiding a wrong op (a wrong padding or scale moves
// logits by ≥ 1e-2).
func TestTFLiteMatchesOracle(t *testing.T) {
	for _, name := range []string{tfliteV2, tfliteTF2, tfliteINat, tfliteV1} {
		t.Run(strings.TrimSuffix(name, ".tflite"), func(t *testing.T) {
			m := coralModel(t, name)
			o := pythonOracle(t, name, "bilinear")
			var xs [][]float32
			for _, im := range coralImages {
				xs = append(xs, o.inputs[im])
			}
			got := tfliteLogits(t, m, xs)
			for i, im := range coralImages {
				want := o.logits[im]
				if len(got[i]) != len(want) {
					t.Fatalf("%s: %d logits, oracle %d", im, len(got[i]), len(want))
				}
				scale, worst := 0.0, 0.0
				for j := range want {
					scale = math.Max(scale, math.Abs(float64(want[j])))
					worst = math.Max(worst, math.Abs(float64(got[i][j]-want[j])))
				}
				t.Logf("%s: max |Δ| = %.3g (max |logit| %.3g)", im, worst, scale)
				if worst > 1e-4 || math.IsNaN(worst) {
					t.Errorf("%s: max |Δ| = %g > 1e-4", im, worst)
				}
			}
		})
	}
}
