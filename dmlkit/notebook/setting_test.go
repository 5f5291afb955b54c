package notebook

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestSettingMarkdown, by hand: three groups a, b, c; the optimiser is adam everywhere (one line, in
// the shared vocabulary's words: Adam),
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
	got := SettingMarkdown(recs, "small", "name", rows, 2, sweep.LabelMap{})
	want := "**5 stored small-scale runs** in 3 groups (by `name`).\n\n" +
		"The same in every group: optimiser Adam; widths [16, 32]; queries 10.\n\n" +
		"<details><summary>What differs between the 3 groups: one column each, with its runs</summary>\n\n" +
		"<table>\n<thead><tr><th></th><th>a</th><th>b</th></tr></thead>\n<tbody>\n<tr><td>runs</td><td>2</td><td>1</td></tr>\n" +
		"<tr><td>seeds</td><td>0, 1</td><td>0</td></tr>\n<tr><td>batch</td><td>48</td><td>48</td></tr>\n</tbody>\n</table>\n\n" +
		"<table>\n<thead><tr><th></th><th>c</th></tr></thead>\n<tbody>\n<tr><td>runs</td><td>2</td></tr>\n" +
		"<tr><td>seeds</td><td>0, 1</td></tr>\n<tr><td>batch</td><td>48, 196</td></tr>\n<tr><td>τ</td><td>5</td></tr>\n</tbody>\n</table>\n\n" +
		"</details>\n"
	if got != want {
		t.Errorf("SettingMarkdown:\n got %q\nwant %q", got, want)
	}
	if p := ProvenanceMarkdown(recs); p != "Written at commit(s) `0123456789ab`; **0 of 5 records from a tree with uncommitted changes** (such records are excluded from verdicts unless counted as provisional, as below)." {
		t.Errorf("ProvenanceMarkdown: %q", p)
	}
}

// TestSettingMarkdownLabels: a key set to null is unset ("—", the row dropped where no group has
// a value), a record without the group key (and without a validation split) falls in "other
// runs", and a run reference reads as the run it names — the seeds of one source run give one
// value.
func TestSettingMarkdownLabels(t *testing.T) {
	rec := func(hash string, name any, seed int64, from string) sweep.Record {
		cfg := map[string]any{"seed": seed, "loss": map[string]any{"set": map[string]any{"g": nil}}}
		if name != nil {
			cfg["name"] = name
		}
		if from != "" {
			cfg["model"] = map[string]any{"init_from": "run:" + from}
		}
		return sweep.Record{Hash: hash, Seed: seed, Config: cfg}
	}
	recs := []sweep.Record{
		rec("h0", "pre", 0, ""), rec("h1", "pre", 1, ""),
		rec("f0", "fine", 0, "h0"), rec("f1", "fine", 1, "h1"),
		rec("x0", nil, 0, ""),
	}
	rows := []SettingRow{{"start", Key("model.init_from")}, {"g", Key("loss.set.g")}}
	got := SettingMarkdown(recs, "small", "name", rows, 0, sweep.LabelMap{})
	want := "**5 stored small-scale runs** in 3 groups (by `name`).\n\n" +
		"<details><summary>What differs between the 3 groups: one column each, with its runs</summary>\n\n" +
		"<table>\n<thead><tr><th></th><th>other runs</th><th>fine</th><th>pre</th></tr></thead>\n<tbody>\n" +
		"<tr><td>runs</td><td>1</td><td>2</td><td>2</td></tr>\n<tr><td>start</td><td>—</td><td>the pre run</td><td>—</td></tr>\n</tbody>\n</table>\n\n" +
		"</details>\n"
	if got != want {
		t.Errorf("SettingMarkdown:\n got %q\nwant %q", got, want)
	}
}

// TestSettingMarkdownGroupWords: each group is headed by its words — the labels map's
// "name=lr-check" entry, else a figure's or table's group as the figure ("fig8" → "Fig. 8",
// "table4-qir" → "Table 4 (qir)") — and a run reference names the run by those words.
func TestSettingMarkdownGroupWords(t *testing.T) {
	rec := func(hash, name string, batch int, from string) sweep.Record {
		cfg := map[string]any{"name": name, "sampler": map[string]any{"batch_size": batch}}
		if from != "" {
			cfg["model"] = map[string]any{"init_from": "run:" + from}
		}
		return sweep.Record{Hash: hash, Config: cfg}
	}
	recs := []sweep.Record{rec("a1", "fig8", 48, ""), rec("b1", "lr-check", 96, "a1"), rec("c1", "table4-qir", 196, "")}
	rows := []SettingRow{{"batch", Key("sampler.batch_size")}, {"start", Key("model.init_from")}}
	labels := sweep.LabelMap{Keys: []string{"name=lr-check"}, Text: map[string]string{"name=lr-check": "half the tuned rate"}}
	got := SettingMarkdown(recs, "small", "name", rows, 0, labels)
	want := "**3 stored small-scale runs** in 3 groups (by `name`).\n\n" +
		"<details><summary>What differs between the 3 groups: one column each, with its runs</summary>\n\n" +
		"<table>\n<thead><tr><th></th><th>Fig. 8</th><th>half the tuned rate</th><th>Table 4 (qir)</th></tr></thead>\n<tbody>\n" +
		"<tr><td>runs</td><td>1</td><td>1</td><td>1</td></tr>\n<tr><td>batch</td><td>48</td><td>96</td><td>196</td></tr>\n" +
		"<tr><td>start</td><td>—</td><td>the Fig. 8 run</td><td>—</td></tr>\n</tbody>\n</table>\n\n" +
		"</details>\n"
	if got != want {
		t.Errorf("SettingMarkdown:\n got %q\nwant %q", got, want)
	}
}

// TestSettingMarkdownValueWords: the values of a setting table read in words — the spec's map
// first (contextual → Contextual, combo → baseline + regulariser), the shared vocabulary for what
// it does not name (omniglot → Omniglot, adam → Adam, cnn → CNN), without the symbol the row names
// (λ = 1 (…) → 1 (…)) and sorted by their numbers (0.8 before 1 (…)) — and the runs without a group
// that all hold out training classes are headed "tuning runs", not "(no name)".
func TestSettingMarkdownValueWords(t *testing.T) {
	rec := func(name any, loss, data string, val bool) sweep.Record {
		cfg := map[string]any{"loss": map[string]any{"name": loss}, "data": map[string]any{"name": data},
			"optimizer": map[string]any{"name": "adam"}, "model": map[string]any{"backbone": "cnn"}}
		if name != nil {
			cfg["name"] = name
		}
		if val {
			cfg["data"].(map[string]any)["val_classes"] = 0.1
		}
		return sweep.Record{Config: cfg}
	}
	recs := []sweep.Record{
		rec("fig6", "contextual", "omniglot", false), rec("fig6", "multisimilarity", "fashion-mnist", false),
		rec(nil, "combo", "omniglot", true), rec(nil, "contextual", "omniglot", true),
	}
	recs[0].Config["loss"].(map[string]any)["set"] = map[string]any{"lambda": 1.0}
	recs[1].Config["loss"].(map[string]any)["set"] = map[string]any{"lambda": 0.8}
	recs[3].Config["loss"].(map[string]any)["set"] = map[string]any{"lambda": 0.0}
	rows := []SettingRow{{"backbone", Key("model.backbone")}, {"optimiser", Key("optimizer.name")}, {"loss", Key("loss.name")}, {"dataset", Key("data.name")},
		{"λ", Key("loss.set.lambda")}}
	labels := sweep.LabelMap{Keys: []string{"contextual", "multisimilarity", "combo", "name=fig6"}, Text: map[string]string{
		"contextual": "Contextual", "multisimilarity": "Multi-similarity", "combo": "baseline + regulariser", "name=fig6": "Fig. 6 setting",
		"loss.set.lambda=1": "λ = 1 (contextual term alone)", "loss.set.lambda=0": "λ = 0 (contrastive term alone)"}}
	got := SettingMarkdown(recs, "small", "name", rows, 0, labels)
	want := "**4 stored small-scale runs** in 2 groups (by `name`).\n\n" +
		"The same in every group: backbone CNN; optimiser Adam.\n\n" +
		"<details><summary>What differs between the 2 groups: one column each, with its runs</summary>\n\n" +
		"<table>\n<thead><tr><th></th><th>tuning runs</th><th>Fig. 6 setting</th></tr></thead>\n<tbody>\n<tr><td>runs</td><td>2</td><td>2</td></tr>\n" +
		"<tr><td>loss</td><td>Contextual, baseline + regulariser</td><td>Contextual, Multi-similarity</td></tr>\n" +
		"<tr><td>dataset</td><td>Omniglot</td><td>Fashion-MNIST, Omniglot</td></tr>\n" +
		"<tr><td>λ</td><td>0 (contrastive term alone)</td><td>0.8, 1 (contextual term alone)</td></tr>\n</tbody>\n</table>\n\n" +
		"</details>\n"
	if got != want {
		t.Errorf("SettingMarkdown:\n got %q\nwant %q", got, want)
	}
}
