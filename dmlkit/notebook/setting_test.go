package notebook

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestSettingMarkdown, by hand: three groups a, b, c; the optimiser is adam everywhere (one line),
// the batch differs (48 in a and b … 196 and 48 in c, sorted by value), the block widths are a
// list (written with spaces), γ is set nowhere (left out), τ only in c (left out of a and b's
// table); two groups per table gives two tables.
func TestSettingMarkdown(t *testing.T) {
	rec := func(name string, batch int, seed int64) sweep.Record {
		return sweep.Record{Seed: seed, Env: map[string]any{"git_commit": "0123456789abcdef"}, Metrics: sweep.Metrics{"n_queries": 10},
			Config: map[string]any{"name": name, "optimizer": map[string]any{"name": "adam"}, "sampler": map[string]any{"batch_size": batch},
				"model": map[string]any{"channels": []any{16, 32}}}}
	}
	recs := []sweep.Record{rec("b", 48, 0), rec("a", 48, 0), rec("a", 48, 1), rec("c", 196, 0), rec("c", 48, 1)}
	recs[3].Config["loss"] = map[string]any{"set": map[string]any{"tau": 5}}
	rows := []SettingRow{
		{"seeds", Key("seed")},
		{"optimiser", Key("optimizer.name")},
		{"batch", Key("sampler.batch_size")},
		{"widths", Key("model.channels")},
		{"τ", Key("loss.set.tau")},
		{"γ", Key("loss.set.gamma")},
		{"queries", Metric("n_queries")},
	}
	got := SettingMarkdown(recs, "small", "name", rows, 2)
	want := "**5 stored small-scale runs** in 3 groups (by `name`).\n\n" +
		"The same in every group: optimiser adam; widths [16, 32]; queries 10.\n\n" +
		"| | a | b |\n|---|---|---|\n| runs | 2 | 1 |\n| seeds | 0, 1 | 0 |\n| batch | 48 | 48 |\n\n" +
		"| | c |\n|---|---|\n| runs | 2 |\n| seeds | 0, 1 |\n| batch | 48, 196 |\n| τ | 5 |\n\n"
	if got != want {
		t.Errorf("SettingMarkdown:\n got %q\nwant %q", got, want)
	}
	if p := ProvenanceMarkdown(recs); p != "Written at commit(s) 0123456789ab; **0 of 5 records from a tree with uncommitted changes** (such records are excluded from verdicts unless counted as provisional, as below)." {
		t.Errorf("ProvenanceMarkdown: %q", p)
	}
}
