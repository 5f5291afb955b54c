package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// fineTunedClaim matches the ids of the pretrained regime's fine-tuned claims: the claim's number
// followed by "f-" (t2f-r1-omniglot-rsk, c1f-proxyanchor, h10f-gamma-0.5).
var fineTunedClaim = regexp.MustCompile(`^[a-z]+[0-9]+f-`)

// TestPretrainedClaimsMatchSpecs: every paper's pretrained regime (issue 30) plans to completion —
// its tuning steps first, then the points at their selections, every run a valid trainer
// configuration (an ImageNet MobileNetV2, frozen or with its last block fine-tuned) — and each claim at the pretrained scale finds
// 5 seeds in each of its arms in the simulated records, and names a twin.
func TestPretrainedClaimsMatchSpecs(t *testing.T) {
	reproduce.Register()
	for _, c := range []struct {
		paper  string
		claims int
	}{{"tcm", 16}, {"cit", 8}, {"idml", 4}, {"rsk", 10}, {"contextual", 18}} {
		t.Run(c.paper, func(t *testing.T) {
			dir := filepath.Join("..", "..", "reproductions", c.paper)
			s := mustLoadSpec(t, filepath.Join(dir, "spec.yaml"))
			cs, err := judge.LoadClaims(filepath.Join(dir, "claims.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			metrics := []string{"val/R@1"}
			n := 0
			for _, cl := range cs.Claims {
				if cl.Scale == "pretrained" {
					n++
					metrics = append(metrics, cl.Metric)
				}
			}
			for _, st := range s.Tune { // the metrics the tuning steps select on (TCM's margins: val/OPIS)
				metrics = append(metrics, st.Select.Metric)
				if st.Select.Guard != "" {
					metrics = append(metrics, st.Select.Guard)
				}
			}
			if n != c.claims {
				t.Errorf("%d claims at the pretrained scale, want %d", n, c.claims)
			}
			var recs []sweep.Record
			stored := map[string]bool{}
			var plan *sweep.Plan
			for range 6 {
				if plan, err = s.PlanWith("pretrained", recs); err != nil {
					t.Fatal(err)
				}
				added := 0
				for _, r := range plan.Runs {
					if stored[r.Hash] {
						continue
					}
					if err := reproduce.ValidateTrainConfig(r.Config); err != nil {
						t.Fatalf("run %s: %v", r.Label(), err)
					}
					stored[r.Hash] = true
					added++
					m := sweep.Metrics{}
					for _, k := range metrics {
						m[k] = fakeValue(r.Hash, k)
					}
					recs = append(recs, sweep.Record{Hash: r.Hash, Paper: s.Paper, Scale: "pretrained", Seed: r.Seed, Params: r.Params, Config: r.Config, Metrics: m})
				}
				if added == 0 {
					break
				}
			}
			if len(plan.Pending) > 0 {
				t.Fatalf("pending with every planned run stored: %s (%s)", plan.Pending[0].Point, plan.Pending[0].Reason)
			}
			for _, cl := range cs.Claims {
				if cl.Scale != "pretrained" {
					continue
				}
				if cl.Twin == "" && !strings.HasPrefix(cl.ID, "c1p-label0-") && !strings.HasPrefix(cl.ID, "c1f-label0-") {
					t.Errorf("%s: no twin", cl.ID)
				}
				v, err := judge.EvaluateClaim(cl, cs, recs, judge.ClaimOptions{Scale: "small", Spec: s})
				if err != nil {
					t.Errorf("%s: %v", cl.ID, err)
					continue
				}
				for _, f := range append([]judge.ClaimVerdict{v}, v.Forms...) {
					for _, a := range f.Arms {
						if a.N != 5 {
							t.Errorf("%s %s: arm %q has n = %d, want 5", cl.ID, f.Form, a.Label, a.N)
						}
					}
					// The fine-tuned mode's claims (ids with "f-" after the claim number: t2f-, c1f-,
					// h1f-, …) train the last block; every other pretrained claim a frozen backbone.
					want := judge.RegimeFrozen
					if fineTunedClaim.MatchString(cl.ID) {
						want = judge.RegimeFineTuned + " (last block)"
					}
					if f.Regime() != want {
						t.Errorf("%s %s: regime %q, want %q", cl.ID, f.Form, f.Regime(), want)
					}
				}
			}
		})
	}
}
