package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// Four points on the unit circle at 0°, 20° (class 0) and 90°, 100° (class 1): every point's
// nearest neighbour is its class-mate, so R@1 = Recall@1 = MAP@R = 1.
func writeCircle(t *testing.T, dir string) (string, string) {
	emb := []float32{}
	for _, a := range []float64{0, 20, 90, 100} {
		r := a * math.Pi / 180
		emb = append(emb, float32(3*math.Cos(r)), float32(3*math.Sin(r))) // norm 3: eval normalises
	}
	e, l := filepath.Join(dir, "e.npy"), filepath.Join(dir, "y.npy")
	if err := npy.Write(e, emb, 4, 2); err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(l, []int64{0, 0, 1, 1}); err != nil {
		t.Fatal(err)
	}
	return e, l
}

func TestEvalCommandJSON(t *testing.T) {
	dir := t.TempDir()
	e, l := writeCircle(t, dir)
	var out, errb bytes.Buffer
	code := run([]string{"eval", "--emb", e, "--labels", l, "--k", "1,2", "--no-opis", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var m map[string]float64
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// R@2: the 2 nearest always include the class-mate -> 1. Recall@1 = 1/|P| with |P| = 1 -> 1.
	for k, want := range map[string]float64{"R@1": 1, "R@2": 1, "Recall@1": 1, "MAP@R": 1, "R-Precision": 1, "NMI": 1} {
		if got, ok := m[k]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
}

func TestEvalCommandErrors(t *testing.T) {
	dir := t.TempDir()
	e, l := writeCircle(t, dir)
	short := filepath.Join(dir, "short.npy")
	npy.Write(short, []int64{0, 1, 1})
	floatLabels := filepath.Join(dir, "fl.npy")
	npy.Write(floatLabels, []float32{0, 0, 1, 1})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--emb", e, "--labels", short}, "labels must have shape [4]"},
		{[]string{"eval", "--emb", e, "--labels", floatLabels}, "dtype float32, want int32 or int64 labels"},
		{[]string{"eval", "--emb", filepath.Join(dir, "missing.npy"), "--labels", l}, "missing.npy"},
		{[]string{"eval", "--emb", e, "--labels", l, "--k", "0"}, `--k: "0" is not a positive integer`},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != 1 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to contain %q", tc.args[1:], code, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"eval", "--emb", e}, &out, &errb); code != 2 {
		t.Errorf("missing --labels: exit %d, want 2", code)
	}
}

// failWriter fails every write, like stdout on a full disk.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestEvalNothingSilentlyDropped: on the 4-point circle (leave-one-out: 3 candidates per query;
// with the query mask 1,0,0,1: 2 gallery items) a cutoff above the candidates is an error naming
// the flag and the count instead of a missing key; --rerank-k with --query-mask is an error;
// a failing output write exits 1; text output orders R@k numerically. (The default --k list
// stops at the candidates, as before.)
func TestEvalNothingSilentlyDropped(t *testing.T) {
	dir := t.TempDir()
	e, l := writeCircle(t, dir)
	mask := filepath.Join(dir, "q.npy")
	npy.Write(mask, []int64{1, 0, 0, 1})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--k", "1,4"}, "--k 4: larger than the 3 other embeddings"},
		{[]string{"--k", "1", "--map-at-k", "5"}, "--map-at-k 5: larger than the 3 other embeddings"},
		{[]string{"--query-mask", mask, "--k", "3"}, "--k 3: larger than the 2 gallery items"},
		{[]string{"--query-mask", mask, "--k", "1", "--rerank-k", "2"}, "--rerank-k"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"eval", "--emb", e, "--labels", l, "--no-opis", "--no-cluster"}, tc.args...), &out, &errb); code != 1 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	var errb bytes.Buffer
	if code := run([]string{"eval", "--emb", e, "--labels", l, "--no-opis", "--k", "1,2"}, failWriter{}, &errb); code != 1 || !strings.Contains(errb.String(), "no space left") {
		t.Errorf("failing stdout: exit %d, stderr %q; want exit 1", code, errb.String())
	}
	var out bytes.Buffer
	if code := run([]string{"eval", "--emb", e, "--labels", l, "--no-opis", "--no-cluster", "--k", "1,3,2"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var order []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "R@") {
			order = append(order, f[0])
		}
	}
	if strings.Join(order, " ") != "R@1 R@2 R@3" {
		t.Errorf("R@k keys in order %v, want R@1 R@2 R@3", order)
	}
}

// TestEvalMapConventions: --map-convention oml,pml adds OML's and PML's mAP@k and precision@k on the
// 5-point case of metrics.TestRetrievalHandWorked (angles 0, 10, 25, 55, 105°; labels 0, 0, 1, 1, 0):
// mAP@2 ÷ min(k, |P|) 0.4, as OML (÷ hits in the top 2) 0.6, as PML (÷ |P|) 0.4; P@2 as OML
// (÷ min(k, |P|)) 0.4, as PML (÷ k) 0.3.
func TestEvalMapConventions(t *testing.T) {
	dir := t.TempDir()
	var emb []float32
	for _, a := range []float64{0, 10, 25, 55, 105} {
		r := a * math.Pi / 180
		emb = append(emb, float32(math.Cos(r)), float32(math.Sin(r)))
	}
	e, l := filepath.Join(dir, "e.npy"), filepath.Join(dir, "y.npy")
	if err := npy.Write(e, emb, 5, 2); err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(l, []int64{0, 0, 1, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"eval", "--emb", e, "--labels", l, "--k", "2,4", "--map-at-k", "2,4", "--no-opis", "--no-cluster", "--json"}
	if code := run(append(args, "--map-convention", "oml,pml"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var m map[string]float64
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"mAP@2": 0.4, "oml/mAP@2": 0.6, "pml/mAP@2": 0.4, "oml/mAP@4": 0.65, "pml/mAP@4": 0.65, "oml/P@2": 0.4, "pml/P@2": 0.3} {
		if got, ok := m[k]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	errb.Reset()
	if code := run(append(args, "--map-convention", "faiss"), &out, &errb); code != 1 || !strings.Contains(errb.String(), "want oml or pml") {
		t.Errorf("--map-convention faiss: exit %d, %s", code, errb.String())
	}
}

// TestEvalTextPrintsPercent: the text output prints rates in percent, says so in its header, and
// leaves counts and OPIS as computed; --json keeps fractions. On the 5-point case of
// TestEvalMapConventions (angles 0, 10, 25, 55, 105°; labels 0, 0, 1, 1, 0) the nearest neighbours
// are 10°, 0°, 10°, 25°, 55° with labels 0, 0, 0, 1, 1: hits for the points 1, 2 and 4, so
// R@1 = 3/5 = 60 %; PML's P@2 is 0.3 = 30 %; n_queries is 5.
func TestEvalTextPrintsPercent(t *testing.T) {
	dir := t.TempDir()
	var emb []float32
	for _, a := range []float64{0, 10, 25, 55, 105} {
		r := a * math.Pi / 180
		emb = append(emb, float32(math.Cos(r)), float32(math.Sin(r)))
	}
	e, l := filepath.Join(dir, "e.npy"), filepath.Join(dir, "y.npy")
	if err := npy.Write(e, emb, 5, 2); err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(l, []int64{0, 0, 1, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"eval", "--emb", e, "--labels", l, "--k", "1,2", "--no-opis", "--no-cluster", "--map-convention", "pml"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "%") || !strings.Contains(lines[0], "percent") {
		t.Errorf("header %q does not state the unit (percent)", lines[0])
	}
	got := map[string]string{}
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	for k, want := range map[string]string{"R@1": "60", "pml/P@2": "30", "n_queries": "5"} {
		if got[k] != want {
			t.Errorf("%s printed as %q, want %q\n%s", k, got[k], want, out.String())
		}
	}
	out.Reset()
	if code := run(append(args, "--json"), &out, &errb); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	var m map[string]float64
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if math.Abs(m["R@1"]-0.6) > 1e-9 {
		t.Errorf("--json R@1 = %v, want the fraction 0.6", m["R@1"])
	}
}
