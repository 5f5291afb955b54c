// Package backend is the one place in dmlkit that picks a GoMLX compute backend.
//
// Selection order (see [New]):
//
//  1. GOMLX_BACKEND, if set, is honoured as GoMLX documents it: "go", "go:parallelism=2",
//     "xla:cuda", "xla:/abs/path/to/pjrt_plugin.so", "onnx:cpu", ...
//  2. Otherwise the best backend compiled into this binary: "xla:cuda" when dmlkit was built
//     with `-tags xla` (GPU machines), else GoMLX's pure-Go backend as "go:ops_sequential": graph
//     ops run one at a time, each still using every core inside (matmuls, large element-wise ops).
//     On 2 cores that made the 2048→512 head's training step 1.6× faster than the concurrent op
//     scheduling of plain "go" (17.2 vs 27.3 ms; the small CNN's step is unchanged) with
//     byte-identical results (dmlkit/train's benchmark, issue 4).
//
// The default build imports only the pure-Go backend (github.com/gomlx/compute/gobackend), so
// it needs no cgo and never downloads anything. The XLA backend is added by the build tag `xla`
// (cgo; PJRT plugins are opened with dlopen at run time) and the ONNX Runtime backend by the
// build tag `onnx`. dmlkit never imports GoMLX's plugin auto-installer: a missing plugin is an
// error, never a download. GOMLX_NO_AUTO_INSTALL=1 is set by [New] as a second guard for
// third-party code that might import it.
//
// The pure-Go backend is 15–25× faster when the binary is built with GOEXPERIMENT=simd
// (AVX2/AVX-512 kernels on amd64); [SIMD] reports whether this binary was.
package backend

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // registers "go"
	// Linked so that the binary's build info always carries the GoMLX version Describe reports.
	_ "github.com/gomlx/gomlx/core/graph"
)

// EnvVar is the environment variable GoMLX reads the backend configuration from.
const EnvVar = compute.ConfigEnvVar

// NoAutoInstallEnvVar disables go-xla's PJRT plugin auto-installer.
const NoAutoInstallEnvVar = "GOMLX_NO_AUTO_INSTALL"

// preferred lists the default configurations in order of preference; the first whose backend is
// compiled in is used when GOMLX_BACKEND is unset.
var preferred = []string{"xla:cuda", defaultGo}

// defaultGo is the pure-Go backend's default configuration (see the package comment).
const defaultGo = "go:ops_sequential"

// Config returns the backend configuration [New] will try first: GOMLX_BACKEND if set, otherwise
// the best compiled-in default.
func Config() string { return candidates()[0] }

// candidates lists the configurations New tries, in order: only GOMLX_BACKEND when it is set;
// otherwise every compiled-in preferred default (so a -tags xla build on a machine without a CUDA
// plugin falls back to the Go backend).
func candidates() []string {
	if c, ok := os.LookupEnv(EnvVar); ok && strings.TrimSpace(c) != "" {
		return []string{strings.TrimSpace(c)}
	}
	avail := compute.List()
	var out []string
	for _, p := range preferred {
		name, _, _ := strings.Cut(p, ":")
		if slices.Contains(avail, name) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{defaultGo}
	}
	return out
}

// Available lists the backend names compiled into this binary, sorted.
func Available() []string {
	l := compute.List()
	slices.Sort(l)
	return l
}

// NewWithConfig creates a backend from an explicit configuration string ("go", "xla:cuda",
// "xla:/abs/plugin.so", ...). It returns an error (never panics) for an unknown backend name or a
// plugin that cannot be loaded.
func NewWithConfig(config string) (b compute.Backend, err error) {
	os.Setenv(NoAutoInstallEnvVar, "1")
	name, _, _ := strings.Cut(config, ":")
	if !slices.Contains(compute.List(), name) {
		hint := ""
		switch name {
		case "xla":
			hint = " (rebuild with -tags xla for XLA/PJRT support)"
		case "onnx":
			hint = " (rebuild with -tags onnx for ONNX Runtime support)"
		}
		return nil, fmt.Errorf("backend: %s=%q names backend %q, which is not compiled into this binary%s; available: %s",
			EnvVar, config, name, hint, strings.Join(Available(), ", "))
	}
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("backend: creating %q: %v", config, r)
		}
	}()
	b, err = compute.NewWithConfig(config)
	if err != nil {
		return nil, fmt.Errorf("backend: creating %q: %w", config, err)
	}
	return b, nil
}

// New creates a backend: the one GOMLX_BACKEND names, or else the first compiled-in default that
// can be created.
func New() (compute.Backend, error) {
	b, _, err := newChosen()
	return b, err
}

func newChosen() (compute.Backend, string, error) {
	var errs []string
	for _, c := range candidates() {
		b, err := NewWithConfig(c)
		if err == nil {
			return b, c, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, "", fmt.Errorf("%s", strings.Join(errs, "; "))
}

var (
	sharedOnce   sync.Once
	shared       compute.Backend
	sharedConfig string
	sharedErr    error
)

// Shared returns a process-wide backend created once with [New]. Library code that needs a
// backend and was not handed one uses it.
func Shared() (compute.Backend, error) {
	sharedOnce.Do(func() { shared, sharedConfig, sharedErr = newChosen() })
	return shared, sharedErr
}

// MustShared is [Shared] for graph-building code and tests: it panics on error.
func MustShared() compute.Backend {
	b, err := Shared()
	if err != nil {
		panic(err)
	}
	return b
}

// Info describes the running environment: what `dmlkit env` prints and what every run records
// in env.json.
type Info struct {
	Backend       string   `json:"backend"`             // configuration string used, e.g. "go"
	BackendName   string   `json:"backend_name"`        // backend's short name
	Description   string   `json:"backend_description"` // backend's own description
	Devices       []string `json:"devices"`             // one description per device
	Available     []string `json:"backends_compiled_in"`
	GoVersion     string   `json:"go_version"`
	GoMLXVersion  string   `json:"gomlx_version"`
	ComputeVer    string   `json:"compute_version"`
	SIMD          bool     `json:"simd"` // built with GOEXPERIMENT=simd
	GOEXPERIMENT  string   `json:"goexperiment,omitempty"`
	GOOS          string   `json:"goos"`
	GOARCH        string   `json:"goarch"`
	NumCPU        int      `json:"num_cpu"`
	Error         string   `json:"error,omitempty"` // set when the backend could not be created
	DmlkitVersion string   `json:"dmlkit_version,omitempty"`
}

// Describe reports on the backend chosen by [Config]. It creates the backend to read its device
// list; a failure is recorded in Info.Error rather than returned, so `dmlkit env` can still print
// everything else.
func Describe() Info {
	info := Info{
		Backend:   Config(),
		Available: Available(),
		GoVersion: runtime.Version(),
		SIMD:      SIMD,
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		NumCPU:    runtime.NumCPU(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.DmlkitVersion = bi.Main.Version
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version
			}
			switch d.Path {
			case "github.com/gomlx/gomlx":
				info.GoMLXVersion = v
			case "github.com/gomlx/compute":
				info.ComputeVer = v
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "GOEXPERIMENT" {
				info.GOEXPERIMENT = s.Value
			}
		}
	}
	b, err := Shared()
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.Backend = sharedConfig
	info.BackendName = b.Name()
	info.Description = b.Description()
	for i := 0; i < b.NumDevices(); i++ {
		info.Devices = append(info.Devices, b.DeviceDescription(compute.DeviceNum(i)))
	}
	return info
}
