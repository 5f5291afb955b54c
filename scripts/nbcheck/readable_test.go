package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLintReadable: a notebook whose setting table is headed by raw group names and a null column,
// whose claim line names a raw config key, and which shows one figure twice (the second time under
// an empty caption) fails with each; the same notebook in words, each figure once, passes.
func TestLintReadable(t *testing.T) {
	png := func(b string) string {
		return `{"output_type": "display_data", "data": {"image/png": "` + b + `"}, "metadata": {}}`
	}
	md := func(s string) string {
		j, _ := json.Marshal(s)
		return `{"output_type": "display_data", "data": {"text/markdown": ` + string(j) + `}, "metadata": {}}`
	}
	cells := func(outs ...string) []proseCell {
		var cs []proseCell
		for _, o := range outs {
			var c proseCell
			if err := json.Unmarshal([]byte(`{"cell_type": "code", "source": "", "metadata": {}, "outputs": [`+o+`]}`), &c); err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	bad := cells(
		md("| | fig8 | lr-check | null |\n|---|---|---|---|\n| runs | 18 | 5 | 72 |"),
		md("- **inconclusive** — τ1 = 1 gives the best results (`c10-best`, Fig. 8; unequal comparison (sampler.batch_size: tuned at 196, this arm 392))"),
		png("QUJD")+`, `+md("*`figures/rsk/regimes.png`* — **From scratch and pretrained.** …"),
		png("QUJD")+`, `+md("*`figures/rsk/regimes.png`* — "),
	)
	got := map[string]int{}
	for _, p := range lintReadable(bad) {
		got[p.Kind]++
	}
	if got["raw"] != 3 || got["figure-twice"] != 1 || got["caption"] != 1 {
		var all []string
		for _, p := range lintReadable(bad) {
			all = append(all, p.String())
		}
		t.Errorf("lintReadable: %v, want 3 raw (fig8, null, sampler.batch_size), 1 figure-twice, 1 caption:\n%s", got, strings.Join(all, "\n"))
	}
	good := cells(
		md("| | Fig. 8 | half the tuned rate | (no name) |\n|---|---|---|---|\n| runs | 18 | 5 | 72 |"),
		md("- **inconclusive** — τ1 = 1 gives the best results (`c10-best`, Fig. 8; unequal comparison (batch size: tuned at 196, this arm 392))"),
		png("QUJD")+`, `+md("*`figures/rsk/regimes.png`* — **From scratch and pretrained.** …"),
		png("REVG")+`, `+md("*`figures/rsk/fig8_tau1.png`* — **Fig. 8.** τ1."),
	)
	if probs := lintReadable(good); len(probs) > 0 {
		t.Errorf("lintReadable of the notebook in words: %v", probs)
	}
}
