package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func init() {
	register("device", "list the backend under test, its plugin and devices; exit 2 with the needed environment if it cannot load", runDevice)
}

type deviceReport struct {
	part
	Name        string            `json:"backend_name,omitempty"`
	Description string            `json:"backend_description,omitempty"`
	Plugin      string            `json:"plugin,omitempty"`
	Devices     []string          `json:"devices,omitempty"`
	Compiled    []string          `json:"backends_compiled_in"`
	Env         map[string]string `json:"env"`
	CPUModel    string            `json:"cpu_model"`
	NumCPU      int               `json:"num_cpu"`
	GoVersion   string            `json:"go_version"`
	SIMD        bool              `json:"simd"`
	// SmokeSum is 1+2+…+1000 computed on the device: a first graph compiled and run.
	SmokeSum  float64 `json:"smoke_sum,omitempty"`
	LoadSec   float64 `json:"load_seconds,omitempty"`
	Timestamp string  `json:"timestamp"`
}

func runDevice(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("device", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonPath := fs.String("json", "", "write the JSON part here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rep := deviceReport{part: part{Phase: "device"}, Compiled: backend.Available(), Env: map[string]string{},
		CPUModel: reproduce.CPUModel(), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), SIMD: backend.SIMD,
		Timestamp: time.Now().UTC().Format(time.RFC3339)}
	for _, k := range []string{"GOMLX_BACKEND", "GOPJRT_CUDA_CHECKS", "XLA_FLAGS", "PJRT_PLUGIN_LIBRARY_PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"} {
		if v, ok := os.LookupEnv(k); ok {
			rep.Env[k] = v
		}
	}
	cfg := os.Getenv(backend.EnvVar)
	rep.Backend = cfg
	if name, rest, ok := strings.Cut(cfg, ":"); ok && name == "xla" {
		rep.Plugin, _, _ = strings.Cut(rest, ",")
	}
	fmt.Fprintf(stdout, "backends compiled in: %s\n", strings.Join(rep.Compiled, ", "))
	fmt.Fprintf(stdout, "GOMLX_BACKEND=%s\n", cfg)
	if rep.Plugin != "" {
		st, err := os.Stat(rep.Plugin)
		if err != nil {
			rep.Error = fmt.Sprintf("plugin %s: %v", rep.Plugin, err)
			writeJSON(*jsonPath, rep)
			return fmt.Errorf("%s\n%s", rep.Error, envNeeded)
		}
		fmt.Fprintf(stdout, "plugin: %s (%.1f MB)\n", rep.Plugin, float64(st.Size())/1e6)
	}
	t0 := time.Now()
	b, _, err := testBackend()
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	rep.LoadSec = time.Since(t0).Seconds()
	rep.Name, rep.Description = b.Name(), b.Description()
	for i := 0; i < b.NumDevices(); i++ {
		rep.Devices = append(rep.Devices, b.DeviceDescription(compute.DeviceNum(i)))
	}
	fmt.Fprintf(stdout, "backend: %s — %s (loaded in %.1fs)\n", rep.Name, rep.Description, rep.LoadSec)
	for i, d := range rep.Devices {
		fmt.Fprintf(stdout, "device %d: %s\n", i, d)
	}
	sum, err := smokeGraph(b)
	if err != nil {
		rep.Error = fmt.Sprintf("first graph on the device: %v", err)
		writeJSON(*jsonPath, rep)
		return fmt.Errorf("%s\n%s", rep.Error, envNeeded)
	}
	rep.SmokeSum = sum
	rep.OK = sum == 500500
	fmt.Fprintf(stdout, "first graph: Σ 1..1000 = %.0f (want 500500)\n", sum)
	if err := writeJSON(*jsonPath, rep); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%w: first graph computed %v, want 500500", errMismatch, sum)
	}
	return nil
}

// smokeGraph computes Σ 1..1000 in float32 on b (exact in float32).
func smokeGraph(b compute.Backend) (sum float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	e, err := graph.NewExec(b, func(x *graph.Node) *graph.Node { return graph.ReduceAllSum(graph.AddScalar(x, 1)) })
	if err != nil {
		return 0, err
	}
	v := make([]float32, 1000)
	for i := range v {
		v[i] = float32(i)
	}
	out, err := e.Exec(tensors.FromFlatDataAndDimensions(v, 1000))
	if err != nil {
		return 0, err
	}
	return float64(tensors.ToScalar[float32](out[0])), nil
}
