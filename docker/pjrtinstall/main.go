// Command pjrtinstall installs the XLA PJRT CUDA plugin and the NVIDIA libraries it needs, with
// go-xla's own installer (the code behind its auto-install), for docker/Dockerfile.cuda:
//
//	pjrtinstall -plugin cuda13 -version 0.12.0.1 -dir /usr/local/lib/go-xla
//
// It downloads the `jax-<plugin>-pjrt` wheel from PyPI (checking its sha256 and that it comes
// from the JAX team), extracts `xla_cuda_plugin.so` as <dir>/nvidia/pjrt_c_api_cuda_plugin.so,
// and installs the nvidia-* wheels that `jax-<plugin>-plugin` depends on under <dir>/nvidia.
// It is a module of its own so go-xla's installer dependencies stay out of dmlkit's go.mod.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/go-xla/installer"
)

func main() {
	plugin := flag.String("plugin", "cuda13", "cuda13 or cuda12")
	version := flag.String("version", "", "exact version of the jax-<plugin>-pjrt wheel, e.g. 0.12.0.1 (no \"latest\")")
	dir := flag.String("dir", "/usr/local/lib/go-xla", "install directory (the plugin goes to <dir>/nvidia)")
	flag.Parse()
	if *version == "" || *version == "latest" {
		fmt.Fprintln(os.Stderr, "pjrtinstall: -version must name an exact wheel version")
		os.Exit(2)
	}
	if err := installer.CudaInstall(*plugin, *version, *dir, false, installer.Verbose); err != nil {
		fmt.Fprintf(os.Stderr, "pjrtinstall: installing the %s PJRT plugin %s: %+v\n", *plugin, *version, err)
		os.Exit(1)
	}
	so := filepath.Join(*dir, "nvidia", installer.NVIDIAPJRTPluginFileName)
	if _, err := os.Stat(so); err != nil {
		fmt.Fprintf(os.Stderr, "pjrtinstall: plugin not found after install: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(so)
}
