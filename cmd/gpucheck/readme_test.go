package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderGPUBlock renders two rows whose cells are worked out by hand: a paired row (ratio
// 50/40 = 1.25×; dmlkit's memory 3072 − 1024 MiB = 2.0 GiB; PyTorch's the larger of its
// nvidia-smi reading 2048 − 1024 = 1024 MiB and max_memory_allocated 1536 MiB, 1.5 GiB; memory
// ratio 2048/1536 = 1.33×; XLA's step 1 + 2 + 3 − 0 + 4 GiB = 10.0, temporary 4.0) and a row whose
// dmlkit side did not run.
func TestRenderGPUBlock(t *testing.T) {
	const gib = 1 << 30
	rn, _ := findCase("full", "resnet50")
	vb, _ := findCase("full", "vit_b16")
	vb.Precision = "bf16"
	rep := namedReport{File: "reproductions/gpu/2026-01-02-h200.json", fullReport: &fullReport{
		OK:       false,
		Failures: []string{"bench vit_b16+bf16: dmlkit side did not run"},
		Meta:     map[string]string{"date": "2026-01-02", "gpu": "NVIDIA H200", "driver": "580", "jax": "0.11.2", "torch": "2.11", "cpu_model": "Xeon", "commit": "abc1234"},
		Bench: []benchRow{
			{Case: "resnet50", Params: rn, Ratio: 1.25,
				Dmlkit:    &benchReport{OK: true, StepMS: 50, XLAStep: &xlaExecMemory{Code: 1 * gib, Inputs: 2 * gib, Outputs: 3 * gib, Temporary: 4 * gib}},
				Torch:     &torchBench{OK: true, StepMS: 40, MaxAllocMiB: 1536},
				MemDmlkit: &gpuMem{PeakMiB: 3072, BaselineMiB: 1024}, MemTorch: &gpuMem{PeakMiB: 2048, BaselineMiB: 1024}},
			{Case: "vit_b16+bf16", Params: vb, Torch: &torchBench{OK: true, StepMS: 1234.4, MaxAllocMiB: 512}},
		},
	}}
	got := renderGPUBlock([]namedReport{rep}, ".")
	for _, want := range []string{
		"**2026-01-02, NVIDIA H200** (driver 580, JAX 0.11.2, PyTorch 2.11; host Xeon; commit in the report abc1234) — [`reproductions/gpu/2026-01-02-h200.md`](reproductions/gpu/2026-01-02-h200.md), not passed: 1 failure(s), listed in the report.",
		"| ResNet-50, batch 64, 224² | fp32 | 50.0 | 40.0 | 1.25× | 2.0 / 1.5 | 1.33× | 10.0 (4.0) |",
		"| ViT-B/16, batch 64, 224² | bf16 | – | 1,234 | – | – / 0.5 | – | – |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("block lacks %q:\n%s", want, got)
		}
	}
}

// TestReplaceGPUBlock keeps everything outside the markers byte for byte and names the file when
// a marker is missing.
func TestReplaceGPUBlock(t *testing.T) {
	doc := "a\n" + gpuBlockBegin + "\nold\n" + gpuBlockEnd + "\nb\n"
	got, err := replaceGPUBlock([]byte(doc), "new\n", "R.md")
	if err != nil || string(got) != "a\n"+gpuBlockBegin+"\nnew\n"+gpuBlockEnd+"\nb\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, bad := range []string{"a\n", gpuBlockEnd + "\n" + gpuBlockBegin + "\n", doc + doc} {
		if _, err := replaceGPUBlock([]byte(bad), "x", "R.md"); err == nil || !strings.Contains(err.Error(), "R.md") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

// TestREADMEGPUBlockCurrent: the README's GPU block is what the stored reports give (the block is
// generated, never typed), and a failing --check writes nothing.
func TestREADMEGPUBlockCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	var out, errb bytes.Buffer
	if err := runReadme([]string{"--check", "--reports", filepath.Join(root, "reproductions", "gpu"), "--readme", filepath.Join(root, "README.md")}, &out, &errb); err != nil {
		t.Fatalf("%v (regenerate with `go run ./cmd/gpucheck readme`)", err)
	}
	stale := filepath.Join(t.TempDir(), "README.md")
	doc := "x\n" + gpuBlockBegin + "\nstale\n" + gpuBlockEnd + "\n"
	if err := os.WriteFile(stale, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runReadme([]string{"--check", "--reports", filepath.Join(root, "reproductions", "gpu"), "--readme", stale}, &out, &errb); err == nil {
		t.Error("--check passed a stale block")
	}
	if b, _ := os.ReadFile(stale); string(b) != doc {
		t.Error("--check wrote the file")
	}
}

// TestMergePartsKeepsPairs: a row's sides come from the folder where dmlkit's side ran. A later
// folder whose dmlkit step was skipped (an idle-GPU memory sample, a PyTorch rerun) changes
// nothing; a row whose dmlkit side ran nowhere takes the last PyTorch side. This is the merge of
// the 2026-11-28 run, whose second call skipped ViT's dmlkit steps and reran its PyTorch ones.
func TestMergePartsKeepsPairs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	vit, _ := findCase("full", "vit_b16")
	must(appendPart(a, "bench-dmlkit-vit_b16", benchReport{part: part{Phase: "bench", OK: true}, Case: vit, StepMS: 88}))
	must(appendPart(a, "gpumem-dmlkit-vit_b16", gpuMem{PeakMiB: 22000, BaselineMiB: 1000}))
	must(appendPart(a, "bench-torch-vit_b16", torchBench{OK: true, StepMS: 63.9}))
	must(appendPart(a, "gpumem-torch-vit_b16", gpuMem{PeakMiB: 10000, BaselineMiB: 1000}))
	must(appendPart(b, "gpumem-dmlkit-vit_b16", gpuMem{PeakMiB: 1000, BaselineMiB: 1000}))
	must(appendPart(b, "bench-torch-vit_b16", torchBench{OK: true, StepMS: 64.1}))
	must(appendPart(b, "bench-torch-vit_b16+bf16", torchBench{OK: true, StepMS: 37.7}))
	rep, err := mergeParts([]string{a, b})
	must(err)
	if len(rep.Bench) != 2 {
		t.Fatalf("rows %+v", rep.Bench)
	}
	r := rep.Bench[0]
	if r.Case != "vit_b16" || r.Torch.StepMS != 63.9 || r.MemDmlkit.PeakMiB != 22000 || r.MemTorch.PeakMiB != 10000 || math.Abs(r.Ratio-88.0/63.9) > 1e-12 {
		t.Errorf("fp32 row %+v (torch %+v, mem %+v)", r, r.Torch, r.MemDmlkit)
	}
	r = rep.Bench[1]
	if r.Case != "vit_b16+bf16" || r.Dmlkit != nil || r.Torch.StepMS != 37.7 || r.Params.Batch != 64 || r.Params.Precision != "bf16" {
		t.Errorf("bf16 row %+v", r)
	}
}

// TestSizeFlagsBounded: every size flag refuses values outside its range, naming flag, value and
// range, before any work (issue 43: `memory --batch 1000000000` printed negative sizes, `--batch
// -8` fell back silently to the case's batch, `bench --steps 1` silently ran 2).
func TestSizeFlagsBounded(t *testing.T) {
	for _, c := range []struct {
		run  func([]string, io.Writer, io.Writer) error
		args []string
		want string
	}{
		{runMemory, []string{"--case", "resnet50", "--batch", "1000000000"}, "--batch 1000000000: want 1 … 65536"},
		{runMemory, []string{"--case", "resnet50", "--batch", "-8"}, "--batch -8: want 1 … 65536"},
		{runMemory, []string{"--case", "resnet50", "--batch", "0"}, "--batch 0: want 1 … 65536"},
		{runBench, []string{"--case", "resnet50", "--steps", "1"}, "--steps 1: want 2 … 100000"},
		{runMetrics, []string{"--n", "-5"}, "--n -5: want 2 … 10000000"},
		{runMetrics, []string{"--d", "100000"}, "--d 100000: want 1 … 65536"},
		{runSmoke, []string{"--steps", "0"}, "--steps 0: want 1 … 100000"},
		{runSmoke, []string{"--only", "-2"}, "--only -2: want -1 … 1048576"},
	} {
		var out, errb bytes.Buffer
		err := c.run(c.args, &out, &errb)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}
