package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// citLogConfig is testConfig (16 steps of 16 = 4 classes × 4) with the cit loss at γ = 0.5 (both
// of its terms count) and the step log every 2 steps.
func citLogConfig() Config {
	cfg := testConfig()
	cfg.Loss = LossConfig{Name: "cit", Set: map[string]any{"gamma": 0.5}}
	cfg.Log.EverySteps = 2
	return cfg
}

// runLosses runs cfg in dir and returns the result and the loss of every step (from Progress).
func runLosses(t *testing.T, cfg Config, dir string, opt Options) (*Result, []float64) {
	t.Helper()
	var ls []float64
	opt.Progress = func(p Progress) {
		if p.Phase == "train" {
			ls = append(ls, p.Loss)
		}
	}
	res, err := RunWithOptions(context.Background(), cfg, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res, ls
}

func sortedKeys(m map[string][]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestStepLogCIT: a 16-step cit run logging every 2 steps logs steps 2, 4, …, 16 with the loss
// and cit's diagnostics; the logged loss is the step's loss reported by Progress (bit for bit),
// L = γ·L_e + (1 − γ)·L_p (float32 graph: |L| ≲ 2, so 1e-5 is a few hundred ulps), every batch of
// 4 classes × 4 has 16·3·12 = 576 triplets (anchor × other same-class sample × other-class
// sample) of which 0…576 are hard; steplog.jsonl reads back equal to Result.StepLog. The same
// run without logging has bit-identical per-step losses, final metrics and test embeddings.
func TestStepLogCIT(t *testing.T) {
	cfg := citLogConfig()
	dirOn, dirOff := t.TempDir(), t.TempDir()
	on, lossesOn := runLosses(t, cfg, dirOn, Options{})
	log := on.StepLog
	if want := []int{2, 4, 6, 8, 10, 12, 14, 16}; log == nil || !reflect.DeepEqual(log.Steps, want) {
		t.Fatalf("logged steps %v, want %v", log, want)
	}
	if keys, want := sortedKeys(log.Values), []string{"L_e", "L_p", "hard_triplets", "loss", "triplets"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("logged values %q, want %q", keys, want)
	}
	const gamma = 0.5
	for i, step := range log.Steps {
		l, le, lp := log.Values["loss"][i], log.Values["L_e"][i], log.Values["L_p"][i]
		if l != lossesOn[step-1] {
			t.Errorf("step %d: logged loss %.9g, the step's loss %.9g", step, l, lossesOn[step-1])
		}
		if c := gamma*le + (1-gamma)*lp; math.Abs(c-l) > 1e-5 {
			t.Errorf("step %d: γ·L_e + (1−γ)·L_p = %.9g, L = %.9g", step, c, l)
		}
		if n := log.Values["triplets"][i]; n != 576 {
			t.Errorf("step %d: %g triplets, want 576", step, n)
		}
		if h := log.Values["hard_triplets"][i]; h < 0 || h > 576 || h != math.Trunc(h) {
			t.Errorf("step %d: %g hard triplets, want an integer in [0, 576]", step, h)
		}
	}
	read, err := ReadStepLog(dirOn)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, log) {
		t.Errorf("steplog.jsonl reads back %+v, Result.StepLog %+v", read, log)
	}

	cfg.Log.EverySteps = 0
	off, lossesOff := runLosses(t, cfg, dirOff, Options{})
	if off.StepLog != nil {
		t.Errorf("logging off: StepLog %+v", off.StepLog)
	}
	if _, err := os.Stat(filepath.Join(dirOff, stepLogFile)); !os.IsNotExist(err) {
		t.Errorf("logging off wrote %s (%v)", stepLogFile, err)
	}
	if !reflect.DeepEqual(lossesOn, lossesOff) {
		t.Errorf("per-step losses differ with logging on/off:\n%v\n%v", lossesOn, lossesOff)
	}
	if !reflect.DeepEqual(on.Metrics, off.Metrics) || on.FinalLoss != off.FinalLoss {
		t.Errorf("final metrics differ with logging on/off: %v (loss %v) vs %v (loss %v)", on.Metrics, on.FinalLoss, off.Metrics, off.FinalLoss)
	}
	eOn, _ := os.ReadFile(filepath.Join(dirOn, "test_embeddings.npy"))
	eOff, _ := os.ReadFile(filepath.Join(dirOff, "test_embeddings.npy"))
	if len(eOn) == 0 || string(eOn) != string(eOff) {
		t.Error("test embeddings differ with logging on/off")
	}
}

// TestStepLogResume: a run stopped after 5 steps and resumed has the step log of the
// uninterrupted run, in steplog.jsonl and split between the two sessions' Result.StepLog (2, 4
// then 6, …, 16). A record after the checkpoint's step (as left by a session that died after
// logging step 6 but before saving it) is dropped on resume, not duplicated.
func TestStepLogResume(t *testing.T) {
	cfg := citLogConfig()
	whole := t.TempDir()
	full, _ := runLosses(t, cfg, whole, Options{})
	want, err := ReadStepLog(whole)
	if err != nil {
		t.Fatal(err)
	}
	for _, crashed := range []bool{false, true} {
		dir := t.TempDir()
		first, _ := runLosses(t, cfg, dir, Options{StopAfter: 5})
		if !first.Interrupted || !reflect.DeepEqual(first.StepLog.Steps, []int{2, 4}) {
			t.Fatalf("first session: interrupted %v, logged %v, want steps [2 4]", first.Interrupted, first.StepLog.Steps)
		}
		if crashed {
			stale := `{"step":6,"values":{"loss":123,"L_e":1,"L_p":1,"hard_triplets":1,"triplets":1}}` + "\n"
			f, err := os.OpenFile(filepath.Join(dir, stepLogFile), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(stale)
			f.Close()
		}
		second, _ := runLosses(t, cfg, dir, Options{Resume: true})
		got, err := ReadStepLog(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("crashed=%v: resumed step log %+v, uninterrupted %+v", crashed, got, want)
		}
		merged := &StepLog{}
		for _, s := range []*StepLog{first.StepLog, second.StepLog} {
			for i, step := range s.Steps {
				v := map[string]float64{}
				for k, xs := range s.Values {
					v[k] = xs[i]
				}
				merged.add(step, v)
			}
		}
		if !reflect.DeepEqual(merged, full.StepLog) {
			t.Errorf("crashed=%v: sessions' StepLogs %+v + %+v, uninterrupted %+v", crashed, first.StepLog, second.StepLog, full.StepLog)
		}
	}
}

// TestStepLogLosses: a loss without diagnostics logs "loss" only; a sum of terms (loss.terms)
// logs each weighted term as loss/<name> (summing to the loss, 1e-5 in float32) and the
// diagnostics of the terms that have them as <name>/<diagnostic>; multistage runs refuse step
// logging naming log.every_steps.
func TestStepLogLosses(t *testing.T) {
	plain := testConfig() // contrastive
	plain.Steps, plain.Log.EverySteps = 3, 1
	res, _ := runLosses(t, plain, t.TempDir(), Options{})
	if keys := sortedKeys(res.StepLog.Values); !reflect.DeepEqual(keys, []string{"loss"}) || !reflect.DeepEqual(res.StepLog.Steps, []int{1, 2, 3}) {
		t.Errorf("contrastive: logged %q at %v, want loss at [1 2 3]", keys, res.StepLog.Steps)
	}

	sum := testConfig()
	sum.Steps, sum.Log.EverySteps = 3, 3
	sum.Loss = LossConfig{Terms: []LossTerm{{Name: "cit", Weight: 0.7}, {Name: "contrastive", Weight: 0.3}}}
	res, losses := runLosses(t, sum, t.TempDir(), Options{})
	want := []string{"cit/L_e", "cit/L_p", "cit/hard_triplets", "cit/triplets", "loss", "loss/cit", "loss/contrastive"}
	if keys := sortedKeys(res.StepLog.Values); !reflect.DeepEqual(keys, want) || !reflect.DeepEqual(res.StepLog.Steps, []int{3}) {
		t.Fatalf("cit+contrastive: logged %q at %v, want %q at [3]", keys, res.StepLog.Steps, want)
	}
	v := func(k string) float64 { return res.StepLog.Values[k][0] }
	if v("loss") != losses[2] || math.Abs(v("loss/cit")+v("loss/contrastive")-v("loss")) > 1e-5 {
		t.Errorf("cit+contrastive: loss %v (step loss %v), terms %v + %v", v("loss"), losses[2], v("loss/cit"), v("loss/contrastive"))
	}
	if math.Abs(v("loss/cit")-0.7*v("cit/L_e")) > 1e-5 { // γ = 1: L_cit = L_e
		t.Errorf("cit+contrastive: loss/cit %v, want 0.7·L_e = %v", v("loss/cit"), 0.7*v("cit/L_e"))
	}

	ms := citLogConfig()
	ms.Multistage.Chunk, ms.Model.FrozenBN = 8, true
	if err := ms.Validate(); err != nil {
		t.Fatalf("multistage config: %v", err)
	}
	if _, err := Run(context.Background(), ms, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "log.every_steps") {
		t.Errorf("multistage with step logging: %v, want an error naming log.every_steps", err)
	}
}
