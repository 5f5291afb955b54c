package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
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
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	fmt.Fprintf(stdout, "backend:      %s (%s)\n", info.Backend, info.Description)
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
