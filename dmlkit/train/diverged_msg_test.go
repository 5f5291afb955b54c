package train

import (
	"math"
	"strings"
	"testing"
)

// TestDivergedAdviceNamesTheCause: the divergence message names the likely cause instead of
// always advising a lower learning rate (issue 43: a backbone producing NaN and an fp16
// loss_scale of 1e30 both said "lower optimizer.lr").
func TestDivergedAdviceNamesTheCause(t *testing.T) {
	for _, c := range []struct {
		e         DivergedError
		want, not string
	}{
		{DivergedError{Step: 1, Loss: 0.5, Embeddings: true, BeforeUpdate: true}, "the backbone's output is not finite (NaN/Inf) on the first batch, before any update", "optimizer.lr"},
		{DivergedError{Step: 1, Loss: math.NaN(), BeforeUpdate: true}, "the loss is NaN on the first batch, before any update, with finite embeddings", "optimizer.lr"},
		{DivergedError{Step: 5, Loss: 0.7, Embeddings: true, LossScale: 1e30}, "scaled by train.loss_scale = 1e+30 overflow float16", ""},
		{DivergedError{Step: 5, Loss: 0.7, Embeddings: true}, "the batch's embeddings are not finite", "loss_scale"},
		{DivergedError{Step: 5, Loss: math.Inf(1)}, "loss is +Inf (lower optimizer.lr or set optimizer.clip_value)", "backbone"},
	} {
		msg := c.e.Error()
		if !strings.Contains(msg, c.want) || (c.not != "" && strings.Contains(msg, c.not)) {
			t.Errorf("%+v: %q; want %q without %q", c.e, msg, c.want, c.not)
		}
	}
}
