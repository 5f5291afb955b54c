package evaluate

import (
	"strings"
	"testing"
)

// TestClassificationHandWorked: class weights (2, 0), (0, 1), (−1, −1) (normalised: cosine only
// matters). Rows: (1, 0.1) class 0 → cosines 0.995, 0.0995, −0.77: rank 0. (1, 1) class 1 →
// 0.707, 0.707, −1: a tie with class 0, which the smaller index wins, so rank 1. (−1, 0) class 1 →
// −1, 0, 0.707: rank 1 behind class 2. (0, −1) class 0 → 0, −1, 0.707: rank 1. acc@1 = 1/4,
// acc@2 = 4/4; acc@5 is dropped (3 classes).
func TestClassificationHandWorked(t *testing.T) {
	w := []float32{2, 0, 0, 1, -1, -1}
	emb := []float32{1, 0.1, 1, 1, -1, 0, 0, -1}
	m, err := Classification(emb, 4, 2, w, 3, []int64{0, 1, 1, 0}, []int{1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	if m["acc@1"] != 0.25 || m["acc@2"] != 1 || m["n_classified"] != 4 {
		t.Errorf("acc = %v, want acc@1 0.25, acc@2 1", m)
	}
	if _, ok := m["acc@5"]; ok {
		t.Error("acc@5 with 3 classes")
	}
	if _, err := Classification(emb, 4, 2, w, 3, []int64{0, 1, 3, 0}, nil); err == nil || !strings.Contains(err.Error(), "row 2 has class 3") {
		t.Errorf("class outside the classifier: %v", err)
	}
}
