package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

func TestLossCommand(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	dir := t.TempDir()
	emb, labels, grad := filepath.Join(dir, "e.npy"), filepath.Join(dir, "y.npy"), filepath.Join(dir, "g.npy")
	// e0=(1,0), e1=(0,1) class 0; e2=(−1,0) class 1 (float32 file, int32 labels: both are converted).
	if err := npy.Write(emb, []float32{1, 0, 0, 1, -1, 0}, 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(labels, []int32{0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"loss", "--name", "triplet", "--set", "margin=0.05", "--emb", emb, "--labels", labels,
		"--grad", grad, "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	// Hand-worked: normalised distances d01=√2, d02=2, d12=√2. Triplets (a,p,n): (0,1,2):
	// √2−2+0.05 < 0 -> 0; (1,0,2): √2−√2+0.05 = 0.05. AvgNonZero -> 0.05.
	if v, _ := rep["value"].(float64); math.Abs(v-0.05) > 1e-12 || rep["loss"] != "triplet" {
		t.Fatalf("report %s", out.String())
	}
	cfg, _ := rep["config"].(map[string]any)
	if cfg["margin"] != 0.05 || cfg["mining"] != "all" || cfg["avg_nonzero"] != true {
		t.Errorf("resolved config %v", cfg)
	}
	// Gradient of the one active term d(e1,e0) − d(e1,e2) + m through the normalisation
	// (Jacobian (I − êêᵀ)/‖e‖): e0: (0, −1/√2); e1: (−√2, 0); e2: (0, 1/√2).
	g, shape, err := npy.ReadFloat64(grad)
	if err != nil {
		t.Fatal(err)
	}
	r := 1 / math.Sqrt2
	want := []float64{0, -r, -math.Sqrt2, 0, 0, r}
	if len(shape) != 2 || shape[0] != 3 || shape[1] != 2 {
		t.Fatalf("grad shape %v", shape)
	}
	for i := range want {
		if math.Abs(g[i]-want[i]) > 1e-12 {
			t.Fatalf("grad %v, want %v", g, want)
		}
	}

	// Text output and float32 compute.
	out.Reset()
	if code := run([]string{"loss", "--name", "triplet", "--dtype", "float32", "--emb", emb, "--labels", labels}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "value:") {
		t.Fatalf("text output: exit %d %q %s", code, out.String(), errb.String())
	}

	// Errors: unknown loss and bad setting (exit 1, message names it), bad flag (exit 2),
	// labels that do not match the batch (message names the file).
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"loss", "--name", "nosuch", "--emb", emb, "--labels", labels}, 1, "nosuch"},
		{[]string{"loss", "--name", "triplet", "--set", "mining=easy", "--emb", emb, "--labels", labels}, 1, "mining"},
		{[]string{"loss", "--name", "triplet", "--emb", emb, "--labels", emb}, 1, "y.npy"},
		{[]string{"loss", "--bogus"}, 2, ""},
		{[]string{"loss", "--name", "triplet"}, 2, "required"},
	} {
		if tc.msg == "y.npy" {
			tc.args[len(tc.args)-1] = filepath.Join(dir, "y3.npy")
			if err := npy.Write(tc.args[len(tc.args)-1], []int64{0, 1}); err != nil {
				t.Fatal(err)
			}
			tc.msg = "y3.npy"
		}
		errb.Reset()
		if code := run(tc.args, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: exit %d (want %d), stderr %q", tc.args, code, tc.code, errb.String())
		}
	}
}

// TestLossCommandLabels: labels outside the class count (given by --num-classes or, by default,
// max label + 1) and negative labels other than −1 in a label-set slot are errors naming the file,
// the row and the value, for proxy and pair losses alike; the valid cases still give a value.
func TestLossCommandLabels(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	dir := t.TempDir()
	emb := filepath.Join(dir, "e.npy")
	e := make([]float32, 7*2)
	for i := range 7 {
		e[2*i], e[2*i+1] = float32(math.Cos(float64(i))), float32(math.Sin(float64(i)))
	}
	if err := npy.Write(emb, e, 7, 2); err != nil {
		t.Fatal(err)
	}
	write := func(name string, v []int64, shape ...int) string {
		p := filepath.Join(dir, name)
		if err := npy.Write(p, v, shape...); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seven := write("y7.npy", []int64{0, 1, 2, 3, 4, 5, 6}, 7)
	neg := write("yneg.npy", []int64{0, 0, 1, 1, -2, 2, 2}, 7)
	minus1 := write("yminus1.npy", []int64{0, 0, 1, 1, -1, 2, 2}, 7)
	sets := write("ysets.npy", []int64{0, -1, 0, 1, 1, -1, 1, 2, 2, -1, 2, 0, 0, -1}, 7, 2)
	badSets := write("ybadsets.npy", []int64{0, -1, 0, 1, 1, -3, 1, 2, 2, -1, 2, 0, 0, -1}, 7, 2)
	for _, tc := range []struct {
		args []string
		msg  string // "" = success
	}{
		{[]string{"--name", "proxyanchor", "--num-classes", "3", "--labels", seven}, "row 3 is 3, outside the 3 classes"},
		{[]string{"--name", "contrastive", "--num-classes", "3", "--labels", seven}, "row 3 is 3, outside the 3 classes"},
		{[]string{"--name", "proxyanchor", "--num-classes", "-1", "--labels", seven}, "--num-classes -1"},
		{[]string{"--name", "proxyanchor", "--labels", neg}, "row 4 is -2"},
		{[]string{"--name", "triplet", "--labels", minus1}, "row 4 is -1"},
		{[]string{"--name", "contrastive", "--labels", badSets}, "row 2, slot 1 is -3"},
		{[]string{"--name", "proxyanchor", "--num-classes", "7", "--labels", seven}, ""},
		{[]string{"--name", "contrastive", "--labels", sets}, ""},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"loss", "--emb", emb}, tc.args...), &out, &errb)
		if tc.msg == "" {
			if code != 0 || !strings.Contains(out.String(), "value:") {
				t.Errorf("%v: exit %d, stderr %q; want a value", tc.args, code, errb.String())
			}
			continue
		}
		file := tc.args[len(tc.args)-1]
		if code != 1 || !strings.Contains(errb.String(), tc.msg) || (!strings.Contains(tc.msg, "num-classes") && !strings.Contains(errb.String(), file)) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming %s and %q", tc.args, code, errb.String(), filepath.Base(file), tc.msg)
		}
	}
}

func TestLossList(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"loss", "--list", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var list []struct {
		Name     string
		Paper    string
		Defaults []struct {
			Key   string
			Value any
		}
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != len(losses.Names()) {
		t.Fatalf("listed %d losses, registered %d", len(list), len(losses.Names()))
	}
	for _, l := range list {
		if l.Paper == "" {
			t.Errorf("%s: no paper reference", l.Name)
		}
		if l.Name == "arcface" && (len(l.Defaults) != 2 || l.Defaults[0].Key != "margin" || l.Defaults[0].Value != 0.5) {
			t.Errorf("arcface defaults %+v", l.Defaults)
		}
	}
	out.Reset()
	if code := run([]string{"loss", "--list"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "smoothap") {
		t.Fatalf("text list: exit %d", code)
	}
}
