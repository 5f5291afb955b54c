package fusedbn

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/gomlx/compute"
)

// TestAsXLAOps checks the op sets: the wrapper adds the two fused BatchNorm ops to the Go
// backend's; under XLA's name it also drops the Go backend's own fused ops, and building one of
// them fails with compute.ErrNotImplemented (the error on which GoMLX decomposes the op), while
// the plain wrapper delegates them.
func TestAsXLAOps(t *testing.T) {
	goB := backend.MustShared()
	if !goB.Capabilities().Operations[compute.OpTypeFusedSoftmax] {
		t.Skip("the Go backend has no fused softmax: nothing to drop")
	}
	plain, _ := Wrap(goB)
	xla := plain.AsXLA()
	for _, tc := range []struct {
		b           Backend
		name        string
		softmax, bn bool
	}{{plain, goB.Name(), true, true}, {xla, "xla", false, true}} {
		ops := tc.b.Capabilities().Operations
		if tc.b.Name() != tc.name || ops[compute.OpTypeFusedSoftmax] != tc.softmax ||
			!ops[compute.OpTypeBatchNormForTraining] || !ops[compute.OpTypeBatchNormGradient] {
			t.Errorf("%s: fused softmax %v (want %v), batch-norm ops %v %v", tc.b.Name(), ops[compute.OpTypeFusedSoftmax], tc.softmax,
				ops[compute.OpTypeBatchNormForTraining], ops[compute.OpTypeBatchNormGradient])
		}
		f := tc.b.Builder("t").Main()
		x, err := f.Constant([]float32{1, 2, 3}, 3)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.FusedSoftmax(x, 0)
		if tc.softmax && err != nil {
			t.Errorf("%s: FusedSoftmax: %v", tc.b.Name(), err)
		}
		if !tc.softmax && !compute.IsNotImplemented(err) {
			t.Errorf("%s: FusedSoftmax error %v, want ErrNotImplemented", tc.b.Name(), err)
		}
	}
}
