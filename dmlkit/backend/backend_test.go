package backend

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func TestConfigHonoursEnv(t *testing.T) {
	t.Setenv(EnvVar, "go:parallelism=2")
	if got := Config(); got != "go:parallelism=2" {
		t.Fatalf("Config() = %q, want the GOMLX_BACKEND value", got)
	}
	t.Setenv(EnvVar, "")
	want := []string{"go:ops_sequential"} // the default build compiles only the Go backend
	if slices.Contains(Available(), "xla") {
		want = []string{"xla:cuda", "go:ops_sequential"} // -tags xla: CUDA first, falling back to Go
	}
	if got := candidates(); !slices.Equal(got, want) {
		t.Fatalf("candidates() with empty env = %q, want %q", got, want)
	}
}

func TestUnknownBackendIsAnError(t *testing.T) {
	for _, cfg := range []string{"nosuch", "xla:cuda", "onnx:cpu"} {
		_, err := NewWithConfig(cfg)
		if err == nil {
			if cfg == "xla:cuda" && strings.Contains(strings.Join(Available(), ","), "xla") {
				continue // built with -tags xla on a GPU machine
			}
			t.Errorf("NewWithConfig(%q): want an error, got nil", cfg)
			continue
		}
		if !strings.Contains(err.Error(), "not compiled into this binary") && !strings.Contains(err.Error(), "creating") {
			t.Errorf("NewWithConfig(%q) error %q does not explain the problem", cfg, err)
		}
	}
}

// TestGoBackendComputes runs a tiny graph: (1·4 + 2·5 + 3·6) = 32.
func TestGoBackendComputes(t *testing.T) {
	b, err := NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	e, err := graph.NewExec(b, func(x, y *graph.Node) *graph.Node { return graph.ReduceAllSum(graph.Mul(x, y)) })
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call([]float32{1, 2, 3}, []float32{4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.ToScalar[float32](out[0]); got != 32 {
		t.Fatalf("dot = %v, want 32", got)
	}
	info := Describe()
	if info.SIMD != SIMD || (SIMD && !strings.Contains(info.GOEXPERIMENT, "simd")) {
		t.Errorf("Describe().SIMD = %v with GOEXPERIMENT %q; the build says %v", info.SIMD, info.GOEXPERIMENT, SIMD)
	}
	if !strings.HasPrefix(info.Backend, "go") || info.BackendName == "" || len(info.Devices) == 0 || info.GoVersion == "" || info.GoMLXVersion == "" {
		t.Fatalf("Describe() = %+v, want backend go with at least one device", info)
	}
}
