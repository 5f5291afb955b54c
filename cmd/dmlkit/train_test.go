package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/train"
	"gopkg.in/yaml.v3"
)

// exampleConfig is the example run configuration shipped with the trainer.
const exampleConfig = "../../dmlkit/train/testdata/omniglot-cnn.yaml"

func TestTrainPrintConfigAndErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--config", exampleConfig, "--set", "optimizer.lr=0.01", "--print-config"}, &out, &errb); code != 0 {
		t.Fatalf("--print-config: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "lr: 0.01") || !strings.Contains(out.String(), "name: omniglot-cnn") {
		t.Errorf("resolved config lacks the override or the name:\n%s", out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--config", exampleConfig, "--set", "optimizer.lrr=1", "--out", t.TempDir()}, "optimizer.lrr"},
		{[]string{"train", "--config", exampleConfig, "--set", "optimizer.lr=-1", "--out", t.TempDir()}, "optimizer.lr"},
		{[]string{"train", "--config", "nosuch.yaml", "--out", t.TempDir()}, "nosuch.yaml"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(tc.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %q", tc.args[1:], code, errb.String(), tc.want)
		}
	}
}

// TestTrainCommandSmoke trains the example configuration for a few steps on 10 Omniglot
// characters and checks the run directory the command promises.
func TestTrainCommandSmoke(t *testing.T) {
	if _, err := os.Stat("../../../shared/data/omniglot/images_background.npz"); err != nil {
		t.Skip("no ../shared/data/omniglot")
	}
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	code := run([]string{"train", "--config", exampleConfig, "--quiet", "--out", dir,
		"--set", "data.max_train_classes=16", "--set", "data.max_test_classes=10", "--set", "data.val_classes=0",
		"--set", "eval.patience=0", "--set", "eval.opis=false", "--set", "steps=4", "--set", "sampler.batch_size=32"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"config.resolved.yaml", "env.json", "metrics.jsonl", "test_embeddings.npy", "test_labels.npy"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	hist, err := train.ReadHistory(dir)
	if err != nil || len(hist) == 0 {
		t.Fatalf("metrics.jsonl: %v (%d records)", err, len(hist))
	}
	last := hist[len(hist)-1]
	if last.Step != 4 || last.Metrics["test/R@1"] <= 0 || last.Metrics["test/R@1"] > 1 {
		t.Errorf("last record %+v: want step 4 and a test R@1 in (0, 1]", last)
	}

	// Resume: a changed model is refused naming the field; more steps are accepted and stated.
	resumeArgs := []string{"train", "--config", exampleConfig, "--quiet", "--out", dir, "--resume",
		"--set", "data.max_train_classes=16", "--set", "data.max_test_classes=10", "--set", "data.val_classes=0",
		"--set", "eval.patience=0", "--set", "eval.opis=false", "--set", "sampler.batch_size=32"}
	out.Reset()
	errb.Reset()
	if code := run(append(resumeArgs, "--set", "steps=4", "--set", "model.dim=64"), &out, &errb); code == 0 || !strings.Contains(errb.String(), "model.dim: 128 → 64") {
		t.Errorf("resume with model.dim=64: exit %d, stderr %q; want a refusal naming model.dim", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(append(resumeArgs, "--set", "steps=6"), &out, &errb); code != 0 || !strings.Contains(errb.String(), "steps: 4 → 6") {
		t.Errorf("resume with steps=6: exit %d, stderr %q; want success stating steps: 4 → 6", code, errb.String())
	}
}

// TestTrainSetReplacesWholeLoss: --set with a YAML mapping replaces the whole loss (name, set and
// terms), and a sub-key given alongside is applied after it.
func TestTrainSetReplacesWholeLoss(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"train", "--config", exampleConfig, "--set", "loss={name: triplet, set: {margin: 0.1}}",
		"--set", "loss.set.swap=true", "--print-config"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got train.Config
	if err := yaml.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"margin": 0.1, "swap": "true"}
	if got.Loss.Name != "triplet" || !reflect.DeepEqual(got.Loss.Set, want) || len(got.Loss.Terms) != 0 {
		t.Errorf("loss = %+v, want triplet with set %v and no terms\n%s", got.Loss, want, out.String())
	}
}

// TestTrainBadInputsNoTrace (issue 43 item 4): `dmlkit train` with model.input_size 100000 (an
// out-of-memory trace before) and with an ONNX backbone whose layout is read the wrong way
// round (a Go panic trace before) exits non-zero with one error naming the field and the value
// to set, and no trace.
func TestTrainBadInputsNoTrace(t *testing.T) {
	const onnxSmoke = "../../dmlkit/train/testdata/onnx-backbone-smoke.yaml"
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"train", "--config", exampleConfig, "--set", "model.input_size=100000", "--out", t.TempDir()},
			[]string{"model.input_size: 100000", "16 … 1024"}},
	}
	if _, err := os.Stat("../../../shared/data/omniglot/images_background.npz"); err == nil {
		cases = append(cases, struct {
			args []string
			want []string
		}{[]string{"train", "--config", onnxSmoke, "--quiet", "--out", t.TempDir(), "--set", "model.pretrained=../../dmlkit/models/testdata/onnx_backbone.onnx",
			"--set", "model.onnx_layout=nhwc", "--set", "data.max_train_classes=16", "--set", "data.max_test_classes=10"},
			[]string{"model.onnx_layout: nhwc", "onnx_backbone.onnx", "28×28×1", "set model.onnx_layout: nchw"}})
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code == 0 {
			t.Errorf("%v: exit 0", tc.args[1:])
			continue
		}
		t.Logf("%s", errb.String())
		for _, s := range tc.want {
			if !strings.Contains(errb.String(), s) {
				t.Errorf("%v: stderr %q lacks %q", tc.args[1:], errb.String(), s)
			}
		}
		if strings.Contains(errb.String(), "goroutine") || strings.Count(errb.String(), "\n") > 1 {
			t.Errorf("%v: stderr is not one line:\n%s", tc.args[1:], errb.String())
		}
	}
}
