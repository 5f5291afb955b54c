package train

import (
	"context"
	"math"
	"testing"
)

// TestTiming checks the bookkeeping of Result.Timing on the tiny synthetic run (2 epochs × 8
// batches): every step but the first is timed, the epoch estimate is StepsPerEpoch × (Step +
// Data), and the loss is timed only with eval.time_loss — the loss alone (a 16×16 contrastive
// loss) must take less than a whole step, which runs it plus the CNN forward and backward.
func TestTiming(t *testing.T) {
	for _, timeLoss := range []bool{false, true} {
		cfg := testConfig()
		cfg.Eval.TimeLoss = timeLoss
		res, err := Run(context.Background(), cfg, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tm := res.Timing
		if tm.Steps != 15 || tm.StepsPerEpoch != 8 {
			t.Errorf("time_loss=%v: timed steps %d, steps/epoch %d; want 15 (16 minus the compiling first) and 8", timeLoss, tm.Steps, tm.StepsPerEpoch)
		}
		if !(tm.Step > 0 && tm.FirstStep > 0 && tm.Data >= 0 && tm.Eval > 0) {
			t.Errorf("time_loss=%v: non-positive times %+v", timeLoss, tm)
		}
		if got, want := tm.Epoch(), 8*(tm.Step+tm.Data); got != want {
			t.Errorf("Epoch() = %g, want %g", got, want)
		}
		switch {
		case !timeLoss && (tm.LossReps != 0 || !math.IsNaN(tm.Backbone())):
			t.Errorf("loss timed without eval.time_loss: %+v", tm)
		case timeLoss && (tm.LossReps < 3 || tm.Loss <= 0 || tm.Loss >= tm.Step):
			t.Errorf("loss timing %g s over %d runs; want ≥ 3 runs and 0 < loss < step (%g s)", tm.Loss, tm.LossReps, tm.Step)
		case timeLoss && math.Abs(tm.Backbone()-(tm.Step-tm.Loss)) > 0:
			t.Errorf("Backbone() = %g, want Step − Loss = %g", tm.Backbone(), tm.Step-tm.Loss)
		}
	}
}
