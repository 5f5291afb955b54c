package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
)

func init() {
	register("env", "print the compute backend, devices, Go/GoMLX versions and SIMD status", runEnv)
}

func runEnv(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print as one JSON object")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	info := backend.Describe()
	used, desc := usedParallelism(info.Description)
	if *asJSON {
		b, err := json.Marshal(info)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		if used > 0 {
			m["parallelism"] = used
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	fmt.Fprintf(stdout, "backend:      %s (%s)\n", info.Backend, desc)
	fmt.Fprintf(stdout, "devices:      %s\n", strings.Join(info.Devices, "; "))
	fmt.Fprintf(stdout, "compiled in:  %s\n", strings.Join(info.Available, ", "))
	fmt.Fprintf(stdout, "go:           %s (%s/%s, %d CPUs)\n", info.GoVersion, info.GOOS, info.GOARCH, info.NumCPU)
	fmt.Fprintf(stdout, "gomlx:        %s (compute %s)\n", info.GoMLXVersion, info.ComputeVer)
	simd := "off — rebuild with GOEXPERIMENT=simd: the Go backend is 15-25x faster with it"
	if info.SIMD {
		simd = "on (GOEXPERIMENT=simd)"
	}
	fmt.Fprintf(stdout, "simd:         %s\n", simd)
	if info.Error != "" {
		fmt.Fprintf(stdout, "error:        %s\n", info.Error)
		return fmt.Errorf("backend unavailable: %s", info.Error)
	}
	return nil
}

var parallelismRE = regexp.MustCompile(`parallelism=(-?\d+)`)

// usedParallelism reads the Go backend's "parallelism=N" from its description and returns the
// number of workers it actually runs at once, with the description rewritten to say so. N is the
// worker pool's soft target, 2 × GOMAXPROCS by default (4 on 2 cores), but the pool never runs
// more than GOMAXPROCS workers: min(max(N, 1), GOMAXPROCS), GOMAXPROCS when N < 0 (unlimited), 1
// when N = 0 (sequential). Other backends: 0 and the description unchanged.
func usedParallelism(desc string) (int, string) {
	m := parallelismRE.FindStringSubmatchIndex(desc)
	if m == nil {
		return 0, desc
	}
	n, err := strconv.Atoi(desc[m[2]:m[3]])
	if err != nil {
		return 0, desc
	}
	procs := runtime.GOMAXPROCS(0)
	used := min(max(n, 1), procs)
	if n < 0 {
		used = procs
	}
	text := fmt.Sprintf("parallelism=%d", used)
	if used != n {
		text += fmt.Sprintf(": %d workers at once on GOMAXPROCS=%d, the pool's target being %d", used, procs, n)
	}
	return used, desc[:m[0]] + text + desc[m[1]:]
}
