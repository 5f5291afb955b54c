package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeDocs are the Markdown files whose sh blocks TestReadmeCommandsRunInCI checks.
var readmeDocs = []string{"README.md", "docker/README.md", "notebooks/README.md", "reproductions/README.md"}

// readmeExternal are the sh-block commands of readmeDocs that CI cannot run, each with the
// reason. Every other command must be a line of .ci/run or .ci/notebooks.sh, verbatim.
var readmeExternal = map[string]string{
	"GOTOOLCHAIN=auto GOEXPERIMENT=simd go run ./cmd/dmlkit data fetch omniglot":                "internet; CI reads ../shared/data/omniglot (fetch is tested against a local server)",
	"GOTOOLCHAIN=auto GOEXPERIMENT=simd go run ./cmd/dmlkit data fetch fashion-mnist":           "internet (fetch is tested against a local server)",
	"GOTOOLCHAIN=auto GOEXPERIMENT=simd go run ./cmd/dmlkit data fetch cifar10":                 "internet; CI reads ../shared/data/cifar10 (fetch and the binary format are tested against a local server)",
	"GOMLX_BACKEND=xla:/abs/path/to/xla_cuda_plugin.so GOPJRT_CUDA_CHECKS=0 bin/dmlkit-xla env": "a GPU and a PJRT plugin (CI runs the binary on the Go backend and with a missing plugin)",
	"scripts/install-onnxruntime.sh": "the npm registry (its offline path is tested in dmlkit/backend)",
	"GOMLX_BACKEND=onnx:cpu ONNXRUNTIME_SHARED_LIBRARY_PATH=$HOME/.local/lib/dmlkit/onnxruntime-1.30.0/libonnxruntime.so.1 bin/dmlkit-onnx env": "the ONNX Runtime library (CI runs the binary on the Go backend and with a missing library)",
	"bash out/cluster/tcm-k8s.sh storage":                                            "a Kubernetes cluster (TestEmittedK8sPhases decodes the manifests strictly against the API types)",
	"bash out/cluster/tcm-k8s.sh":                                                    "a Kubernetes cluster",
	"kubectl get jobs -l dmlkit/paper=tcm -w":                                        "a Kubernetes cluster",
	"kubectl cp dmlkit-tcm-small-files:/results/tcm out/cluster/tcm":                 "a Kubernetes cluster",
	"bash out/cluster/tcm-slurm.sh":                                                  "a SLURM cluster (TestEmittedPhasesRunInOrder runs the array tasks with bash and the submit part with a stub sbatch)",
	"squeue --me --name=dmlkit-tcm-small-p1,dmlkit-tcm-small-p2,dmlkit-tcm-small-p3": "a SLURM cluster",
	"docker build -f docker/Dockerfile -t dmlkit:cpu .":                              "docker and internet (TestDockerfilesLint checks the Dockerfiles; scripts/podman-build.sh builds offline)",
	"docker run --rm -p 127.0.0.1:8888:8888 dmlkit:cpu":                              "docker",
	`mkdir -p results && docker run --rm --network none -v "$PWD/results:/results" -e SCALE=smoke dmlkit:cpu reproduce tcm`: "docker",
	"docker compose -f docker/compose.yaml up notebook":                                                                     "docker",
	"PAPER=tcm SCALE=smoke docker compose -f docker/compose.yaml run --rm reproduce":                                        "docker",
	"export GOTOOLCHAIN=auto GOEXPERIMENT=simd PATH=$(go env GOPATH)/bin:$PATH":                                             "an interactive shell's set-up (.ci/notebooks.sh runs the notebooks headless)",
	"jupyter notebook notebooks/": "an interactive server (.ci/notebooks.sh runs the notebooks headless, scripts/check-browser.sh in the classic UI)",
	"python3 -m venv ~/.venvs/jupyter && ~/.venvs/jupyter/bin/pip install jupyterlab==4.6.6 nbconvert==7.17.2 nbclient==0.11.0": "PyPI",
	"export PATH=~/.venvs/jupyter/bin:$(go env GOPATH)/bin:$PATH":                                                               "the JupyterLab venv (PyPI)",
	"NB_STACK_APT=0 scripts/install-notebook-stack.sh":                                                                          "the JupyterLab venv (PyPI); .ci/notebooks.sh runs the script with Debian's Jupyter",
	"GOTOOLCHAIN=auto GOEXPERIMENT=simd jupyter lab notebooks/":                                                                 "JupyterLab (PyPI) and an interactive server",
	"JLAB_SERVE=1 scripts/check-jupyterlab.sh":                                                                                  "root, the Debian archive (a trixie root, 1.8 GB once) and an interactive server; the same script's check mode is the by-hand/nightly JupyterLab check",
}

// TestReadmeCommandsRunInCI keeps the READMEs true: every command of their sh blocks is run
// verbatim by CI (.ci/run, .ci/notebooks.sh: a trailing "# comment" aside) or is listed in
// readmeExternal with what it needs; and every go build/run/test/vet they show — in sh blocks,
// inline code and the papers' READMEs — carries GOTOOLCHAIN=auto and GOEXPERIMENT=simd, without
// which a Go older than go.mod's refuses to build (CI runs them with neither variable set).
func TestReadmeCommandsRunInCI(t *testing.T) {
	var ci []string
	for _, f := range []string{".ci/run", ".ci/notebooks.sh"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		ci = append(ci, strings.Split(string(b), "\n")...)
	}
	ciLines := map[string]bool{}
	for _, l := range ci {
		ciLines[strings.TrimSpace(l)] = true
	}
	if !regexp.MustCompile(`(?m)^unset GOTOOLCHAIN GOEXPERIMENT$`).MatchString(strings.Join(ci, "\n")) {
		t.Error(".ci/run does not unset GOTOOLCHAIN and GOEXPERIMENT: the README's commands would not prove they set them")
	}
	used := map[string]bool{}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```")
	for _, doc := range readmeDocs {
		b, err := os.ReadFile(filepath.Join("../..", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(b), -1) {
			for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
				cmd := strings.TrimSpace(regexp.MustCompile(`\s+# .*$`).ReplaceAllString(line, ""))
				switch {
				case cmd == "":
				case readmeExternal[cmd] != "":
					used[cmd] = true
				case !ciLines[cmd]:
					t.Errorf("%s: command %q is neither run verbatim by .ci/run or .ci/notebooks.sh nor listed in readmeExternal", doc, cmd)
				}
			}
		}
	}
	for cmd := range readmeExternal {
		if !used[cmd] {
			t.Errorf("readmeExternal lists %q, which no README shows any more", cmd)
		}
	}
	// Every go build/run/test/vet a reader may copy, in any README.
	docs := append([]string{}, readmeDocs...)
	more, _ := filepath.Glob("../../reproductions/*/README.md")
	for _, m := range more {
		docs = append(docs, strings.TrimPrefix(m, "../../"))
	}
	goCmd := regexp.MustCompile("(?m)(?:^|`)([A-Z_]+=[^` ]* )*go (?:build|run|test|vet)\\b[^`\n]*")
	for _, doc := range docs {
		b, err := os.ReadFile(filepath.Join("../..", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goCmd.FindAllString(string(b), -1) {
			if !strings.Contains(m, "GOTOOLCHAIN=auto") || !strings.Contains(m, "GOEXPERIMENT=simd") {
				t.Errorf("%s: %q lacks GOTOOLCHAIN=auto GOEXPERIMENT=simd", doc, strings.TrimPrefix(m, "`"))
			}
		}
	}
	// The ONNX script's header shows the README's build line, not -o dmlkit (which collides with
	// the dmlkit/ library folder).
	onnx, err := os.ReadFile("../../scripts/install-onnxruntime.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(onnx), "#   GOTOOLCHAIN=auto GOEXPERIMENT=simd go build -tags onnx -o bin/dmlkit-onnx ./cmd/dmlkit\n") || strings.Contains(string(onnx), "-o dmlkit ") {
		t.Error("scripts/install-onnxruntime.sh's header does not show the README's ONNX build line")
	}
}

// TestJupyterRecipesAgree: the notebooks README, the docker README and the Dockerfiles name the
// same JupyterLab pins and the same CUDA backend setting for notebooks.
func TestJupyterRecipesAgree(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	nb, dr, df, dc := read("notebooks/README.md"), read("docker/README.md"), read("docker/Dockerfile"), read("docker/Dockerfile.cuda")
	for _, arg := range []struct{ arg, pip string }{{"JUPYTERLAB_VERSION", "jupyterlab"}, {"NBCONVERT_VERSION", "nbconvert"}, {"NBCLIENT_VERSION", "nbclient"}} {
		for name, d := range map[string]string{"Dockerfile": df, "Dockerfile.cuda": dc} {
			m := regexp.MustCompile(`(?m)^ARG ` + arg.arg + `=(\S+)$`).FindStringSubmatch(d)
			if m == nil || !strings.Contains(nb, arg.pip+"=="+m[1]) {
				t.Errorf("docker/%s's %s (%v) is not the notebooks README's %s pin", name, arg.arg, m, arg.pip)
			}
		}
	}
	backend := regexp.MustCompile(`GOMLX_BACKEND=(xla:/\S+\.so)`).FindStringSubmatch(dc)
	if backend == nil {
		t.Fatal("docker/Dockerfile.cuda sets no GOMLX_BACKEND=xla:/….so")
	}
	for name, d := range map[string]string{"notebooks/README.md": nb, "docker/README.md": dr} {
		if !strings.Contains(d, "%env GOMLX_BACKEND="+backend[1]) && !strings.Contains(d, "GOMLX_BACKEND="+backend[1]) {
			t.Errorf("%s does not give the CUDA image's backend %s", name, backend[1])
		}
		if strings.Contains(d, "GOMLX_BACKEND=xla:cuda`") {
			t.Errorf("%s gives GOMLX_BACKEND=xla:cuda for the CUDA image", name)
		}
	}
	if strings.Contains(nb, "both notebooks") {
		t.Error(`notebooks/README.md says "both notebooks"`)
	}
}
