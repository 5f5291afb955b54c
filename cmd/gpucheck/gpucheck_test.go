package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/gomlx/compute/support/humanize"
	"github.com/gomlx/gomlx/core/graph"
	"k8s.io/klog/v2"
)

// The comparison logic of the GPU check, run with the Go backend on both sides (never a GPU in
// tests): equal backends agree, and an injected mismatch is reported.

// scaled multiplies a loss by f on the backend under test.
type scaled struct {
	losses.Loss
	f float64
}

func (s scaled) Build(in losses.Inputs) *graph.Node { return graph.MulScalar(s.Loss.Build(in), s.f) }

func TestLossCompareDetectsInjectedMismatch(t *testing.T) {
	tb, err := backend.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := refBackend()
	if err != nil {
		t.Fatal(err)
	}
	batch := newLossBatch(1, 4, 4, 8)
	// proxyanchor: its proxies are drawn on the reference and copied into the test side's store,
	// which is seeded differently — agreement shows the copy is what the test side uses.
	names := []string{"contrastive", "proxyanchor", "smoothap"}
	for _, r := range compareLosses(tb, rb, names, batch, nil, nil) {
		if !r.OK {
			t.Errorf("%s: equal backends reported a mismatch: %+v", r.Name, r)
		}
		if r.Value == 0 || r.GradMax == 0 {
			t.Errorf("%s: degenerate test batch (value %v, max|g| %v)", r.Name, r.Value, r.GradMax)
		}
	}
	wrap := func(l losses.Loss) losses.Loss { return scaled{l, 1.01} }
	for _, r := range compareLosses(tb, rb, names, batch, wrap, nil) {
		if r.OK {
			t.Errorf("%s: a loss scaled by 1.01 on one side passed: %+v", r.Name, r)
		}
		if r.ValueDiff <= r.ValueTol || r.GradDiff <= r.GradTol {
			t.Errorf("%s: value (%g ≤ %g) or gradient (%g ≤ %g) difference not detected", r.Name, r.ValueDiff, r.ValueTol, r.GradDiff, r.GradTol)
		}
	}
}

func TestMetricsCompareDetectsInjectedMismatch(t *testing.T) {
	tb, err := backend.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	n, d, ks := 300, 16, []int{1, 4, 16}
	emb, labels := metricSet(1, n, d)
	cpu, err := metrics.Retrieval(emb, n, d, labels, metrics.Options{K: ks, Similarity: metrics.InnerProduct})
	if err != nil {
		t.Fatal(err)
	}
	k := neighboursNeeded(ks, labels)
	nb, _, err := deviceKNN(tb, emb, n, d, k, 64) // 300 = 4 full blocks + a padded one
	if err != nil {
		t.Fatal(err)
	}
	dev, err := metrics.RetrievalFromNeighbors(nb, labels, labels, nil, nil, true, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cpu["R@1"] <= 0.05 || cpu["R@1"] >= 0.99 {
		t.Errorf("test set R@1 %v: want a non-trivial set", cpu["R@1"])
	}
	if worst, key, bad := compareMetricMaps(cpu, dev, metricTol); len(bad) > 0 {
		t.Fatalf("Go-backend kNN differs from dmlkit/metrics: %v (worst %s %g)", bad, key, worst)
	}
	cpuNb, err := metrics.KNNSelf(emb, n, d, metrics.KNNOptions{K: 1, Similarity: metrics.InnerProduct})
	if err != nil {
		t.Fatal(err)
	}
	if agree, diff := top1Agreement(cpuNb, nb); agree < 0.999 || diff > 1e-5 {
		t.Errorf("top-1 agreement %v, score diff %v", agree, diff)
	}
	// Inject: the best and the last neighbour swapped for every 10th query.
	for i := 0; i < n; i += 10 {
		idx, sc := nb.Row(i)
		idx[0], idx[k-1] = idx[k-1], idx[0]
		sc[0], sc[k-1] = sc[k-1], sc[0]
	}
	dev2, err := metrics.RetrievalFromNeighbors(nb, labels, labels, nil, nil, true, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, bad := compareMetricMaps(cpu, dev2, metricTol); len(bad) == 0 {
		t.Errorf("swapped neighbours (R@1 %v vs %v) not detected", dev2["R@1"], cpu["R@1"])
	}
	if _, _, bad := compareMetricMaps(cpu, map[string]float64{"R@1": cpu["R@1"]}, metricTol); len(bad) == 0 {
		t.Error("missing keys not detected")
	}
}

// TestReportFailsOnMissingSideAndPhase: the merged report is not ok when a phase exited non-zero
// or one side of a benchmark is absent, and says so in the summary.
func TestReportFailsOnMissingSideAndPhase(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) {
		if err := appendPart(dir, strings.TrimSuffix(name, ".json"), v); err != nil {
			t.Fatal(err)
		}
	}
	write("device.json", deviceReport{part: part{Phase: "device", OK: true}, Devices: []string{"cpu"}})
	write("losses.json", lossesReport{part: part{Phase: "losses", OK: true}})
	write("bench-dmlkit-resnet50.json", benchReport{part: part{Phase: "bench", OK: true}, Case: benchCase{Name: "resnet50"}, StepMS: 10})
	write("bench-torch-resnet50.json", torchBench{Side: "torch", Case: "resnet50", OK: true, StepMS: 5})
	os.WriteFile(filepath.Join(dir, "phases.tsv"), []byte("device\t0\t1\t\nlosses\t0\t2\t\n"), 0o644)
	rep, err := mergeParts([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Bench) != 1 || rep.Bench[0].Ratio != 2 {
		t.Fatalf("complete parts: ok %v, bench %+v, failures %v", rep.OK, rep.Bench, rep.Failures)
	}
	write("bench-dmlkit-vit_b16.json", benchReport{part: part{Phase: "bench", OK: true}, Case: benchCase{Name: "vit_b16"}, StepMS: 10})
	os.WriteFile(filepath.Join(dir, "phases.tsv"), []byte("device\t0\t1\t\nmetrics\t124\t600\ttimeout\n"), 0o644)
	rep, err = mergeParts([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	md := renderMarkdown(rep, "t")
	if rep.OK || !strings.Contains(md, "vit_b16: PyTorch side did not run") || !strings.Contains(md, "phase metrics exited 124") {
		t.Errorf("missing side / failed phase not reported: ok %v failures %v", rep.OK, rep.Failures)
	}
}

// version prints the stamped commit, "unknown" when the build did not stamp one, and refuses
// arguments (exit 2).
func TestVersionPrintsStampedCommit(t *testing.T) {
	saved := buildCommit
	defer func() { buildCommit = saved }()
	for _, tc := range []struct{ stamp, want string }{{"", "unknown\n"}, {"a427046", "a427046\n"}} {
		buildCommit = tc.stamp
		var out, errb strings.Builder
		if rc := run([]string{"version"}, &out, &errb); rc != 0 || out.String() != tc.want {
			t.Errorf("stamp %q: rc %d, printed %q, want rc 0 and %q (stderr %q)", tc.stamp, rc, out.String(), tc.want, errb.String())
		}
	}
	var out, errb strings.Builder
	if rc := run([]string{"version", "x"}, &out, &errb); rc != 2 {
		t.Errorf("version x: rc %d, want 2", rc)
	}
}

// TestBenchPrecisionRows: torchargs passes the precision on to gpucheck_torch.py, an unknown
// precision is refused naming the flag, and the report keeps a bf16 row beside the fp32 row of
// the same case (fp32 first), each with its own ratio, and labels it in the summary.
func TestBenchPrecisionRows(t *testing.T) {
	var out, errb strings.Builder
	if rc := run([]string{"torchargs", "--case", "resnet50", "--scale", "small", "--precision", "bf16"}, &out, &errb); rc != 0 || !strings.HasSuffix(out.String(), "--precision bf16\n") {
		t.Errorf("torchargs --precision bf16: rc %d, printed %q (stderr %q)", rc, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := run([]string{"torchargs", "--case", "resnet50", "--scale", "small", "--precision", "fp8"}, &out, &errb); rc == 0 || !strings.Contains(errb.String(), "--precision: \"fp8\"") {
		t.Errorf("torchargs --precision fp8: rc %d, stderr %q; want an error naming --precision", rc, errb.String())
	}
	dir := t.TempDir()
	write := func(name string, v any) {
		if err := appendPart(dir, name, v); err != nil {
			t.Fatal(err)
		}
	}
	bf := benchCase{Name: "resnet50", Backbone: "resnet50", Precision: "bf16"}
	write("bench-dmlkit-"+bf.rowKey(), benchReport{part: part{Phase: "bench", OK: true}, Case: bf, StepMS: 6})
	write("bench-torch-"+bf.rowKey(), torchBench{Side: "torch", Case: "resnet50", OK: true, StepMS: 4, Precision: "bf16"})
	fp := benchCase{Name: "resnet50", Backbone: "resnet50"}
	write("bench-dmlkit-"+fp.rowKey(), benchReport{part: part{Phase: "bench", OK: true}, Case: fp, StepMS: 10})
	write("bench-torch-"+fp.rowKey(), torchBench{Side: "torch", Case: "resnet50", OK: true, StepMS: 5})
	rep, err := mergeParts([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bench) != 2 || rep.Bench[0].Case != "resnet50" || rep.Bench[1].Case != "resnet50+bf16" || rep.Bench[0].Ratio != 2 || rep.Bench[1].Ratio != 1.5 {
		t.Fatalf("bench rows %+v, want resnet50 (ratio 2) then resnet50+bf16 (ratio 1.5)", rep.Bench)
	}
	if md := renderMarkdown(rep, "t"); !strings.Contains(md, "| resnet50+bf16 | resnet50, batch 0, 0²×0, , bf16 (dmlkit train.precision; PyTorch AMP) |") {
		t.Errorf("summary lacks the labelled bf16 row:\n%s", md)
	}
}

// TestParseXLAMemoryLine reads go-xla's klog line into bytes and picks the largest executable.
// The line is rendered as go-xla renders it (compute/xla/executable.go's renderMemStats, which
// calls compute/support/humanize.Bytes: powers of 1024, one decimal), from sizes chosen here, so
// the test fails if the parser and go-xla's renderer disagree (they did: the GPU run of
// 2026-11-28 recorded no XLA report because the parser expected go-humanize's "295 MB"). Each
// parsed size is within half a displayed unit (0.05·1024^k) of the true one.
func TestParseXLAMemoryLine(t *testing.T) {
	want := xlaExecMemory{Code: 0, Inputs: 295_000_000, Outputs: 290_123_456, Aliases: 1000, Temporary: 5_400_000_000}
	render := func(m xlaExecMemory) string {
		return "I1128 03:10:11.123456   42 executable.go:95] Memory usage: On Device: [" +
			fmt.Sprintf("Code:%s, Inputs:%s, Outputs:%s, Aliases:%s, Temporary:%s",
				humanize.Bytes(m.Code), humanize.Bytes(m.Inputs), humanize.Bytes(m.Outputs),
				humanize.Bytes(m.Aliases), humanize.Bytes(m.Temporary)) +
			"]; On Host: [Code:0 B, Inputs:0 B, Outputs:0 B, Aliases:0 B, Temporary:0 B]\n"
	}
	line := render(want)
	// By hand: 295e6 B = 281.3 MiB, 290123456 B = 276.7 MiB, 1000 B = "1000 B", 5.4e9 B = 5.0 GiB.
	if !strings.Contains(line, "Inputs:281.3 MiB, Outputs:276.7 MiB, Aliases:1000 B, Temporary:5.0 GiB") {
		t.Fatalf("go-xla's rendering changed: %s", line)
	}
	m, ok := parseXLAMemoryLine(line)
	if !ok {
		t.Fatalf("%q not parsed", line)
	}
	close := func(got, exact int64) bool {
		unit := int64(1)
		for exact/unit >= 1024 {
			unit *= 1024
		}
		d := got - exact
		return d <= unit/20+1 && -d <= unit/20+1
	}
	for _, c := range []struct {
		name       string
		got, exact int64
	}{{"code", m.Code, want.Code}, {"inputs", m.Inputs, want.Inputs}, {"outputs", m.Outputs, want.Outputs}, {"aliases", m.Aliases, want.Aliases}, {"temporary", m.Temporary, want.Temporary}} {
		if !close(c.got, c.exact) {
			t.Errorf("%s = %d, want %d within half a displayed unit", c.name, c.got, c.exact)
		}
	}
	// Exact values of the displayed numbers: 281.3·2^20 = 294964428.8 → 294964429, 1000, 5.0·2^30.
	if m.Inputs != 294964429 || m.Temporary != 5<<30 || m.Aliases != 1000 {
		t.Errorf("parsed %+v", m)
	}
	if m.Total() != m.Inputs+m.Outputs-m.Aliases+m.Temporary {
		t.Errorf("Total = %d", m.Total())
	}
	// go-humanize's SI rendering (an older go-xla) is read too.
	if si, ok := parseXLAMemoryLine("Memory usage: On Device: [Code:0 B, Inputs:295 MB, Outputs:290 MB, Aliases:0 B, Temporary:5.4 GB]"); !ok || si.Temporary != 5.4e9 || si.Inputs != 295e6 {
		t.Errorf("SI line parsed as %+v, %v", si, ok)
	}
	for _, bad := range []string{"Compiled in 3s", "Memory usage: On Device: [Code:1 XB, Inputs:0 B, Outputs:0 B, Aliases:0 B, Temporary:0 B]",
		"Memory usage: On Device: [Code:0 B, Inputs:-1.0 MiB, Outputs:0 B, Aliases:0 B, Temporary:0 B]"} {
		if _, ok := parseXLAMemoryLine(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	// The capture splits writes at newlines, wherever they fall.
	small := want
	small.Temporary = 12 << 10
	c := &xlaMemCapture{}
	c.Write([]byte(line[:50]))
	c.Write([]byte(line[50:] + render(small)))
	if len(c.execs) != 2 || c.execs[1].Temporary != 12<<10 {
		t.Fatalf("captured %+v", c.execs)
	}
	if l := largestXLAExec(c.execs); l == nil || l.Temporary != 5<<30 {
		t.Errorf("largest = %+v", l)
	}
	if largestXLAExec(nil) != nil {
		t.Error("largest of none is not nil")
	}
	// Through klog, as bench captures it.
	stop := startXLAMemCapture()
	klog.V(1).Infof("Memory usage: On Device: [Code:0 B, Inputs:1.0 KiB, Outputs:0 B, Aliases:0 B, Temporary:2.0 MiB]; On Host: []")
	if got := stop(); len(got) != 1 || got[0].Temporary != 2<<20 || got[0].Inputs != 1024 {
		t.Errorf("klog capture = %+v", got)
	}
}

// TestMemoryCommand runs `gpucheck memory` on the small idml_pa case (batch 8 originals + 8
// mixup copies of 64×64×3 images) and checks the part's wiring against hand counts: 16 images a
// step; inputs = images 16·64·64·3 float32 + label sets 16·2 int64 + their weights 16·2 float32;
// the XLA graph built (the stem max-pool as a reduce-window, whose output is kept); fused
// BatchNorm asked for.
func TestMemoryCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.json")
	var out, errb strings.Builder
	if rc := run([]string{"memory", "--case", "idml_pa", "--scale", "small", "--json", path}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep memoryReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	acc := rep.Account
	if !rep.OK || acc == nil || rep.Backend != "xla" || rep.BatchNorm != "fused" || !rep.Paths {
		t.Fatalf("part %+v", rep)
	}
	if acc.Batch != 16 {
		t.Errorf("images a step %d, want 16", acc.Batch)
	}
	if want := int64(16*64*64*3*4 + 16*2*8 + 16*2*4); acc.Inputs != want {
		t.Errorf("inputs %d bytes, want %d", acc.Inputs, want)
	}
	window := false
	for _, o := range acc.SavedByOp {
		window = window || o.Name == "ReduceWindow"
	}
	if !window || acc.Saved <= 0 || !strings.Contains(out.String(), "activations saved for backward") {
		t.Errorf("no reduce-window output kept (%+v) or no summary printed: %s", acc.SavedByOp, out.String())
	}
	if rc := run([]string{"memory", "--case", "resnet50", "--scale", "small", "--bn", "cudnn"}, &out, &errb); rc == 0 {
		t.Error("--bn cudnn accepted")
	}
}
