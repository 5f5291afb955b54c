package train

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// TestHeavyTrainableTailPilot (DMLKIT_HEAVY=1) is the pilot of model.trainable_tail whose numbers
// README.md's "Pretrained ImageNet backbones" section reports: MobileNetV2 on Omniglot (28 px
// resized to 96; 100 training and 50 test classes, 3,000 images), contrastive loss, Adam, m_per_class
// m 4, backbone lr_mul 0.1, for the frozen backbone, the last 1, 2 and 3 blocks and (batch 60 only,
// 4 steps) the whole network. Each run is a child process (this test binary again, with
// DMLKIT_PILOT_RUN set) so that its peak RSS (VmHWM) is its own: first one cold run per cached mode
// (the one-time cache: ms per image, MB on disk), then 12 steps at batches 60 and 100 with the cache
// warm (step time: the mean after the first). The cache lives in a temporary directory.
func TestHeavyTrainableTailPilot(t *testing.T) {
	if spec := os.Getenv("DMLKIT_PILOT_RUN"); spec != "" {
		pilotChild(t, spec)
		return
	}
	if os.Getenv("DMLKIT_HEAVY") == "" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	if _, err := data.FindOmniglot(""); err != nil {
		t.Skipf("Omniglot not available: %v", err)
	}
	if _, err := os.Stat(coralV2); err != nil {
		t.Skipf("no ../shared/weights/coral: %v", err)
	}
	cache := t.TempDir()
	run := func(mode string, batch, steps int) map[string]any {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHeavyTrainableTailPilot$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("DMLKIT_PILOT_RUN=%s,%d,%d", mode, batch, steps), FeatureCacheEnv+"="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s batch %d: %v\n%s", mode, batch, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if i := strings.Index(l, "PILOT "); i >= 0 {
				var m map[string]any
				if err := json.Unmarshal([]byte(l[i+6:]), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
		t.Fatalf("%s batch %d: no PILOT line in\n%s", mode, batch, out)
		return nil
	}
	before := map[string]bool{}
	for _, mode := range []string{"frozen", "tail1", "tail2", "tail3"} {
		m := run(mode, 60, 2)
		dirs, _ := filepath.Glob(filepath.Join(cache, "*"))
		var size int64
		for _, d := range dirs {
			if before[d] {
				continue
			}
			before[d] = true
			parts, _ := filepath.Glob(filepath.Join(d, "part-*.bin"))
			for _, p := range parts {
				if fi, err := os.Stat(p); err == nil {
					size += fi.Size()
				}
			}
		}
		n := m["computed"].(float64)
		t.Logf("%-6s cache: %.0f images, %.1f ms/image, %.2f MB per 1,000 images, peak RSS %.0f MB", mode, n,
			m["extract_ms_per_image"], float64(size)/n/1000, m["vmhwm_kb"].(float64)/1024)
	}
	for _, mode := range []string{"frozen", "tail1", "tail2", "tail3", "full"} {
		for _, batch := range []int{60, 100} {
			steps := 12
			if mode == "full" {
				if batch != 60 {
					continue
				}
				steps = 4
			}
			m := run(mode, batch, steps)
			t.Logf("%-6s batch %3d: step %.1f ms (mean of %.0f), first step %.2f s, peak RSS %.0f MB", mode, batch,
				1000*m["step_s"].(float64), m["timed_steps"], m["first_step_s"], m["vmhwm_kb"].(float64)/1024)
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average: %s", strings.TrimSpace(string(b)))
	}
}

// pilotChild runs one pilot configuration "MODE,BATCH,STEPS" and prints its measurements as a
// "PILOT {json}" line.
func pilotChild(t *testing.T, spec string) {
	f := strings.Split(spec, ",")
	batch, _ := strconv.Atoi(f[1])
	steps, _ := strconv.Atoi(f[2])
	cfg := Default()
	cfg.Data = DataConfig{Name: "omniglot", Options: map[string]any{"size": 28}, MaxTrainClasses: 100, MaxTestClasses: 50}
	cfg.Model.Backbone, cfg.Model.Pretrained, cfg.Model.InputSize = "mobilenet_v2", coralV2, 96
	switch mode := f[0]; {
	case mode == "frozen":
		cfg.Model.FreezeBackbone = true
	case strings.HasPrefix(mode, "tail"):
		cfg.Model.TrainableTail, _ = strconv.Atoi(strings.TrimPrefix(mode, "tail"))
		cfg.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0.1}}
	}
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: batch, M: 4}
	cfg.Steps, cfg.Epochs = steps, 100
	cfg.Eval = EvalConfig{Every: 0, Ks: []int{1}, BatchSize: 100, Metric: "R@1"}
	cfg.Checkpoint = CheckpointConfig{Keep: 1}
	var first, last time.Time
	computed := 0
	res, err := Run(context.Background(), cfg, t.TempDir(), func(p Progress) {
		if p.Phase == "features" {
			if first.IsZero() {
				first = time.Now()
			}
			last, computed = time.Now(), p.Step
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{"step_s": res.Timing.Step, "first_step_s": res.Timing.FirstStep, "timed_steps": res.Timing.Steps,
		"computed": computed, "vmhwm_kb": vmHWM()}
	if computed > extractBatch { // the first report comes after the first batch
		out["extract_ms_per_image"] = last.Sub(first).Seconds() * 1000 / float64(computed-extractBatch)
	}
	b, _ := json.Marshal(out)
	fmt.Println("PILOT " + string(b))
}

// vmHWM is this process's peak resident set size in KiB (/proc/self/status; 0 elsewhere).
func vmHWM() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseFloat(f[1], 64)
			return n
		}
	}
	return 0
}
