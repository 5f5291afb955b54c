package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// addConvergedRegime turns the leaderboard fixture copied to spec (copyBoard) into a three-regime
// one: a committed scale "converged" (the pretrained list, 3 epochs) as the third regime, with a
// record per planned run, test R@1 ranking Multi-similarity > ArcFace > Contrastive > Triplet
// (seeds 0.01 apart, train R@1 0.9).
func addConvergedRegime(t *testing.T, spec string) {
	t.Helper()
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\nscales:\n", "\ncommitted: [converged]\n\nscales:\n  converged:\n    epochs: 3\n    seeds: [0, 1, 2]\n    list:\n"+
		"      - {name: alpha, loss.name: contrastive}\n      - {name: beta, loss.name: triplet}\n      - {name: gamma, loss.name: multisimilarity}\n      - {name: delta, loss.name: arcface}\n", 1)
	s = strings.Replace(s, "    - {scale: pretrained, label: \"pretrained, CIFAR-10\"}\n", "    - {scale: pretrained, label: \"pretrained, CIFAR-10\"}\n    - {scale: converged, label: \"converged, frozen\"}\n", 1)
	if err := os.WriteFile(spec, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := sweep.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sp.PlanWith("converged", nil)
	if err != nil {
		t.Fatal(err)
	}
	r1 := map[string]float64{"gamma": 0.8, "delta": 0.6, "alpha": 0.4, "beta": 0.2}
	st := sweep.NewStore(filepath.Join(filepath.Dir(spec), "results"))
	for _, r := range p.Runs {
		v := r1[r.Params["name"].(string)] + 0.01*float64(r.Seed)
		rec := sweep.Record{Hash: r.Hash, Paper: sp.Paper, Scale: "converged", Seed: r.Seed, Params: r.Params, Config: r.Config,
			Metrics: sweep.Metrics{"R@1": v, "MAP@R": v / 2, "OPIS": 0.01 * (1 - v), sweep.TrainMetric: 0.9}}
		if err := st.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderboardThreeRegimes: with a third regime, the committed scale "converged", `dmlkit
// tables` and `dmlkit figures` at each of the three scales write its leaderboard to
// tables/converged and figures/board/converged, and every pair's rank agreement to the first
// regime's directories: rank_agreement (the first pair, byte-identical to the two-regime
// fixture's), rank_agreement-small-converged and rank_agreement-pretrained-converged, captioned
// in figures/board/README.md.
func TestLeaderboardThreeRegimes(t *testing.T) {
	root2, spec2 := copyBoard(t)
	root, spec := copyBoard(t)
	addConvergedRegime(t, spec)
	run := func(spec string, scales ...string) {
		for _, scale := range scales {
			for _, cmd := range []func(*bytes.Buffer, *bytes.Buffer) error{
				func(o, e *bytes.Buffer) error { return runTables([]string{spec, "--scale", scale, "--quiet"}, o, e) },
				func(o, e *bytes.Buffer) error {
					return runFigures([]string{spec, "--scale", scale, "--formats", "png"}, o, e)
				},
			} {
				var stdout, stderr bytes.Buffer
				if err := cmd(&stdout, &stderr); err != nil {
					t.Fatalf("scale %s: %v\n%s%s", scale, err, stdout.String(), stderr.String())
				}
			}
		}
	}
	run(spec2, "small", "pretrained")
	run(spec, "converged", "small", "pretrained")
	read := func(root, f string) string {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Errorf("not written: %v", err)
		}
		return string(b)
	}
	for _, f := range []string{"reproductions/board/tables/rank_agreement.md", "figures/board/rank_agreement.png", "reproductions/board/tables/leaderboard.md"} {
		if a, b := read(root, f), read(root2, f); a != b {
			t.Errorf("%s: three regimes differ from two", f)
		}
	}
	for f, want := range map[string]string{
		"reproductions/board/tables/converged/leaderboard.md":                 "| 1 | Multi-similarity |",
		"reproductions/board/tables/rank_agreement-small-converged.md":        "| method | rank: from scratch, Omniglot | rank: converged, frozen |",
		"reproductions/board/tables/rank_agreement-pretrained-converged.md":   "| method | rank: pretrained, CIFAR-10 | rank: converged, frozen |",
		"figures/board/converged/README.md":                                   "## leaderboard\n",
		"figures/board/rank_agreement-small-converged.png":                    "PNG",
		"figures/board/rank_agreement-pretrained-converged.png":               "PNG",
		"figures/board/README.md":                                             "## rank_agreement\n",
		"figures/board/README.md#2":                                           "## rank_agreement-small-converged\n",
		"figures/board/README.md#3":                                           "Rank agreement of pretrained, CIFAR-10 and converged, frozen (tables: rank_agreement-pretrained-converged.md)",
		"reproductions/board/tables/rank_agreement-pretrained-converged.md#2": "| Triplet | 1 | 4 |",
	} {
		f, _, _ = strings.Cut(f, "#")
		if s := read(root, f); !strings.Contains(s, want) {
			t.Errorf("%s lacks %q:\n%s", f, want, s)
		}
	}
	for _, d := range []string{"reproductions/board/tables/converged", "reproductions/board/tables/pretrained", "figures/board/converged", "figures/board/pretrained"} {
		ents, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "rank_agreement") {
				t.Errorf("%s/%s: a rank agreement outside the first regime's directory", d, e.Name())
			}
		}
		if !strings.HasPrefix(d, "figures") {
			continue
		}
		if s := read(root, filepath.Join(d, "README.md")); strings.Contains(s, "rank_agreement") {
			t.Errorf("%s/README.md lists a rank agreement", d)
		}
	}
}
