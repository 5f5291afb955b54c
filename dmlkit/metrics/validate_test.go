package metrics

import (
	"math"
	"strings"
	"testing"
)

func TestValidationErrors(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	ok := []float32{1, 0, 0, 1, 1, 1}
	lab := []int64{0, 0, 1}
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"empty", func() error { _, err := Retrieval(nil, 0, 2, nil, Options{}); return err }, "labels"},
		{"empty emb", func() error { _, err := KNNSelf(nil, 0, 2, KNNOptions{K: 1}); return err }, "empty input"},
		{"length", func() error { _, err := KNNSelf(ok[:5], 3, 2, KNNOptions{K: 1}); return err }, "len = 5"},
		{"nan", func() error {
			x := append([]float32(nil), ok...)
			x[3] = nan
			_, err := Retrieval(x, 3, 2, lab, Options{K: []int{1}})
			return err
		}, "row 1, column 1"},
		{"inf", func() error {
			x := append([]float32(nil), ok...)
			x[4] = inf
			_, err := KNNSelf(x, 3, 2, KNNOptions{K: 1})
			return err
		}, "row 2, column 0"},
		{"zero norm cosine", func() error {
			x := []float32{1, 0, 0, 0, 1, 1}
			_, err := Retrieval(x, 3, 2, lab, Options{K: []int{1}})
			return err
		}, "row 1 has zero norm"},
		{"labels length", func() error { _, err := Retrieval(ok, 3, 2, lab[:2], Options{}); return err }, "2 labels for 3 rows"},
		{"k too large self", func() error { _, err := Retrieval(ok, 3, 2, lab, Options{K: []int{3}}); return err }, "k = 3 is larger than the 2 candidate"},
		{"K too large knn", func() error { _, err := KNN(ok, 3, ok[:2], 1, 2, KNNOptions{K: 2}); return err }, "K = 2 is larger"},
		{"gallery labels", func() error {
			_, err := RetrievalQG(ok, 3, ok, 3, 2, lab, lab[:1], Options{})
			return err
		}, "gallery labels"},
		{"exclude range", func() error {
			_, err := KNN(ok, 3, ok, 3, 2, KNNOptions{K: 1, Exclude: []int{0, 5, -1}})
			return err
		}, "Exclude[1] = 5"},
		{"rerank qg", func() error {
			_, err := RetrievalQG(ok, 3, ok, 3, 2, lab, lab, Options{Rerank: &RerankOptions{K: 2}})
			return err
		}, "self-retrieval"},
	}
	for _, c := range cases {
		err := c.run()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
	// Zero rows are fine for inner product.
	if _, err := KNNSelf([]float32{0, 0, 1, 0, 0, 1}, 3, 2, KNNOptions{K: 1, Similarity: InnerProduct}); err != nil {
		t.Errorf("zero row under inner product: %v", err)
	}
}

func TestL2Normalize(t *testing.T) {
	x := []float32{3, 4, 0, 2}
	if err := L2Normalize(x, 2, 2); err != nil {
		t.Fatal(err)
	}
	want := []float32{0.6, 0.8, 0, 1}
	for i := range x {
		if math.Abs(float64(x[i]-want[i])) > 1e-7 {
			t.Fatalf("got %v, want %v", x, want)
		}
	}
	y := []float32{1, 1, 0, 0}
	err := L2Normalize(y, 2, 2)
	if err == nil || !strings.Contains(err.Error(), "row 1 has zero norm") {
		t.Fatalf("zero row: err = %v", err)
	}
	if y[0] != 1 {
		t.Fatal("input modified on error")
	}
}
