// Command gpucheck is the accelerator check bundle of issue 22: it compares dmlkit on an
// accelerator backend (XLA/PJRT, e.g. the CUDA plugin of a JAX install) with the pure-Go backend,
// times training steps, and runs the full-scale specs for a few steps. scripts/gpu-check.sh
// drives it (and scripts/gpucheck_torch.py, the PyTorch side of the timings); each subcommand
// writes one JSON part, and `gpucheck report` merges the parts into the JSON report and the
// Markdown summary under reproductions/gpu/.
//
// The backend under test is the one GOMLX_BACKEND names ("xla:/abs/.../xla_cuda_plugin.so" on a
// GPU machine; "go" for the --cpu dry run); the reference is always the pure-Go backend.
//
//	gpucheck device  --json P                 list backend, plugin and devices (exit 2 if it cannot load)
//	gpucheck losses  --json P [--scale S]     every registered loss: value and gradient vs the Go backend
//	gpucheck metrics --json P [--scale S]     kNN on the backend + retrieval metrics vs dmlkit/metrics (CPU)
//	gpucheck bench   --case C --json P        time training steps (train.RunWithOptions, synthetic images;
//	                                          XLA's memory report of each compiled executable)
//	gpucheck torchargs --case C [--scale S]   the matching scripts/gpucheck_torch.py arguments
//	gpucheck memory  --case C [--batch N]     account for the case's step graph as built for XLA (runs nothing; CPU)
//	gpucheck smoke   --json P [--spec F]...   full-scale spec runs, deduplicated, a few steps each
//	gpucheck report  --parts DIR --json OUT --md OUT
//	gpucheck readme  [--reports DIR] [--readme F] [--check]   the README's GPU block from the stored reports
//	gpucheck version                          the commit the binary was built from (or "unknown")
//
// Build for a GPU machine here (cgo, linux/amd64), stamping the commit:
//
//	GOTOOLCHAIN=auto CGO_ENABLED=1 go build -tags xla -ldflags="-s -w -X main.buildCommit=$(git rev-parse --short HEAD)" -o bin/gpucheck/dmlkit-gpucheck ./cmd/gpucheck
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/gomlx/compute"
)

// errMismatch is returned by a check that ran but found a difference beyond its tolerance
// (exit status 1); other errors exit with 2.
var errMismatch = errors.New("mismatch")

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// buildCommit is the commit the binary was built from, set with
// -ldflags "-X main.buildCommit=<hash>". The report records it: the GPU machine's copy of the
// working tree is not the local repository, so `git rev-parse` there can name another commit.
var buildCommit string

func init() {
	register("version", "print the commit the binary was built from (-X main.buildCommit), or \"unknown\"", func(args []string, stdout, _ io.Writer) error {
		if len(args) > 0 {
			return fmt.Errorf("version takes no arguments, got %q", args)
		}
		c := buildCommit
		if c == "" {
			c = "unknown"
		}
		fmt.Fprintln(stdout, c)
		return nil
	})
}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{name, summary, run}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gpucheck: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errMismatch):
		fmt.Fprintf(stderr, "gpucheck %s: %v\n", c.name, err)
		return 1
	default:
		fmt.Fprintf(stderr, "gpucheck %s: %v\n", c.name, err)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: gpucheck COMMAND [flags]   (backend under test: $GOMLX_BACKEND; reference: the pure-Go backend)")
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// envNeeded is the environment a GPU run needs, printed whenever the backend cannot be created.
const envNeeded = `the backend under test is taken from GOMLX_BACKEND. On a GPU machine set:
  GOMLX_BACKEND=xla:/abs/path/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so[,tf32=false]
                       (a PJRT plugin file; scripts/gpu-check.sh finds it in the JAX install)
  GOPJRT_CUDA_CHECKS=0  skip go-xla's search for an nvidia/ directory two levels above the plugin
                       (leave it unset to let go-xla add --xla_gpu_cuda_data_dir from there)
  XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda   where ptxas/libdevice live, if not beside the plugin
  LD_LIBRARY_PATH=<site-packages>/nvidia/*/lib        if the plugin cannot find cuDNN/cuBLAS
and build this binary with -tags xla (cgo). For the CPU dry run: GOMLX_BACKEND=go.`

// testBackend creates the backend under test from GOMLX_BACKEND.
func testBackend() (compute.Backend, string, error) {
	cfg := strings.TrimSpace(os.Getenv(backend.EnvVar))
	if cfg == "" {
		return nil, "", fmt.Errorf("GOMLX_BACKEND is not set;\n%s", envNeeded)
	}
	b, err := backend.NewWithConfig(cfg)
	if err != nil {
		return nil, cfg, fmt.Errorf("%v\n%s", err, envNeeded)
	}
	return b, cfg, nil
}

// refConfig is the reference backend: GoMLX's pure-Go backend, as dmlkit's CPU default.
const refConfig = "go:ops_sequential"

func refBackend() (compute.Backend, error) { return backend.NewWithConfig(refConfig) }

// scale is the size preset: "full" (the GPU sizes of issue 22) or "small" (the --cpu dry run).
func scaleFlag(fs *flag.FlagSet) *string {
	return fs.String("scale", "full", "size preset: full (GPU sizes) or small (CPU dry run, a few minutes on 2 cores)")
}

func checkScale(s string) error {
	if s != "full" && s != "small" {
		return fmt.Errorf("--scale %q: want full or small", s)
	}
	return nil
}

// part is the common header of every JSON part.
type part struct {
	Phase   string `json:"phase"`
	OK      bool   `json:"ok"`
	Backend string `json:"backend,omitempty"`
	Ref     string `json:"reference_backend,omitempty"`
	Scale   string `json:"scale,omitempty"`
	Error   string `json:"error,omitempty"`
}

func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// peakRSSMiB is this process's peak resident set (VmHWM), in MiB; 0 where unknown.
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "VmHWM:"), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

// intBound is the range an integer flag accepts when it is given on the command line.
type intBound struct {
	name   string
	v      *int
	lo, hi int
}

// checkIntFlags refuses a given flag outside its range, naming the flag, the value and the range
// (a flag left out keeps its default, which may be a "not set" 0). Every size a gpucheck command
// takes is bounded so that no product of them overflows or asks for an absurd allocation.
func checkIntFlags(fs *flag.FlagSet, bounds ...intBound) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		for _, b := range bounds {
			if f.Name == b.name && err == nil && (*b.v < b.lo || *b.v > b.hi) {
				err = fmt.Errorf("--%s %d: want %d … %d", b.name, *b.v, b.lo, b.hi)
			}
		}
	})
	return err
}

// maxBatch bounds --batch: 65,536 images of 224² × 3 float32 (twice, with IDML's Mixup copies) are
// 39 GB, far past any device here, and every byte count derived from it fits an int64.
const maxBatch = 1 << 16
