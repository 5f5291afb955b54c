package main

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
)

// TestRetestWhere: a re-test's label keeps what its claim text adds after the last ";" beyond the
// regime's own words, after the regime read from its arms' records.
func TestRetestWhere(t *testing.T) {
	fine := judge.ClaimVerdict{Facts: []judge.ArmFacts{{N: 5, Regime: judge.RegimeFineTuned + " (last block)"}}}
	frozen := judge.ClaimVerdict{Facts: []judge.ArmFacts{{N: 5, Regime: judge.RegimeFrozen}}}
	for _, c := range []struct {
		v     judge.ClaimVerdict
		paper string
		want  string
	}{
		{fine, "TCM raises R@1 of RS@k (> 1.0 point); pretrained backbone, fine-tuned, Omniglot", "pretrained, fine-tuned (last block), Omniglot"},
		{frozen, "TCM raises R@1 of RS@k; pretrained backbone, CIFAR-10", "pretrained, frozen, CIFAR-10"},
		{frozen, "SiMix improves RS@k (Omni-98); pretrained backbone", "pretrained, frozen"},
		{frozen, "RS@k outperforms Smooth-AP (a, b)", ""},
	} {
		c.v.Claim.Paper = c.paper
		if got := retestWhere(&c.v); got != c.want {
			t.Errorf("%q: %q, want %q", c.paper, got, c.want)
		}
	}
}
