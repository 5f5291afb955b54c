package losses

import (
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// BuildDiagnosed implements Diagnoser. Beside the loss (the node Build returns) it gives, as
// scalars of the embeddings' dtype, in this order:
//
//   - "unc_norm": mean over the batch of ‖u_i‖, the norm of the raw uncertainty embedding (the
//     uncertainty head's output as the loss receives it, before code_metric's normalisation);
//
// and, when the labels are [B, S] label sets (mixup):
//
//   - "unc_norm_orig", "orig_count": mean ‖u_i‖ over the original rows and their number;
//   - "unc_norm_mixed", "mixed_count": the same over the mixed rows.
//
// A row is mixed when its set holds two distinct labels (slots ≠ −1); a mixup of two images of
// the same class carries {y, −1} and counts as original (the labels cannot tell it apart, and it
// holds one class). A mean over an empty group is 0, never NaN; its count says it is empty. The
// diagnostics carry no gradient.
func (c *IDMLConfig) BuildDiagnosed(in Inputs) (*Node, []Diagnostic) {
	loss := c.Build(in)
	_, u := c.idmlSplit(in.Emb)
	norms := StopGradient(idmlNorm(u)) // [B]
	ds := []Diagnostic{{Name: "unc_norm", Value: ReduceAllMean(norms)}}
	if in.Labels.Rank() == 2 {
		mixed := idmlMixedRows(in.Labels)
		orig := LogicalNot(mixed)
		dt := norms.DType()
		ds = append(ds,
			Diagnostic{Name: "unc_norm_orig", Value: MaskedMean(norms, orig)},
			Diagnostic{Name: "orig_count", Value: Count(orig, dt)},
			Diagnostic{Name: "unc_norm_mixed", Value: MaskedMean(norms, mixed)},
			Diagnostic{Name: "mixed_count", Value: Count(mixed, dt)})
	}
	return loss, ds
}

// idmlMixedRows returns the [B] boolean "the label set of row i holds two distinct labels" for
// [B, S] label sets (−1 = empty slot).
func idmlMixedRows(sets *Node) *Node {
	b, s := sets.Shape().Dim(0), sets.Shape().Dim(1)
	shape := shapes.Make(sets.DType(), b, s, s)
	x := BroadcastToShape(InsertAxes(sets, 2), shape) // slot k at [i, k, m]
	y := BroadcastToShape(InsertAxes(sets, 1), shape) // slot m at [i, k, m]
	zero := ZerosLike(x)
	valid := LogicalAnd(GreaterOrEqual(x, zero), GreaterOrEqual(y, zero))
	return ReduceLogicalOr(LogicalAnd(valid, NotEqual(x, y)), 1, 2)
}
