package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyBoard copies the leaderboard fixture (testdata/leaderboard: spec and results) to
// ROOT/reproductions/board and returns ROOT and the spec's path.
func copyBoard(t *testing.T) (root, spec string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "reproductions", "board")
	for _, f := range []string{"spec.yaml", "results/small.jsonl", "results/pretrained.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "leaderboard", f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, filepath.Join(dir, "spec.yaml")
}

// TestLeaderboardCommands: `dmlkit tables` writes each regime's leaderboard to the committed
// tables directories (tables/, tables/pretrained/) and the rank agreement to tables/; `dmlkit
// figures` writes the leaderboard and Pareto figures per regime and the rank agreement once, in
// figures/board, with their captions; a second run gives the same bytes. The fixture's numbers by
// hand: at small Contrastive 72.0 [67.0, 77.0] (sd 0.02, t(0.975, 2) = 4.3027), Triplet, then
// Multi-similarity (train R@1 0.2 < 0.5 × 0.9: did not train), ArcFace not run; at pretrained
// Triplet, Contrastive, Multi-similarity, ArcFace (no train R@1). The three common methods: one
// discordant pair of three, τ-b = (2 − 1)/3 = 0.33, and the seeds never overlap, so every
// bootstrap replicate gives 0.33.
func TestLeaderboardCommands(t *testing.T) {
	root, spec := copyBoard(t)
	files := []string{
		"reproductions/board/tables/leaderboard.md", "reproductions/board/tables/leaderboard.tex",
		"reproductions/board/tables/pretrained/leaderboard.md", "reproductions/board/tables/pretrained/leaderboard.tex",
		"reproductions/board/tables/rank_agreement.md",
		"figures/board/leaderboard.png", "figures/board/leaderboard.svg", "figures/board/leaderboard.pdf",
		"figures/board/leaderboard_pareto.png", "figures/board/rank_agreement.png", "figures/board/rank_agreement.pdf",
		"figures/board/README.md",
		"figures/board/pretrained/leaderboard.png", "figures/board/pretrained/leaderboard_pareto.svg", "figures/board/pretrained/README.md",
	}
	run := func() map[string][]byte {
		for _, scale := range []string{"small", "pretrained"} {
			for _, cmd := range []func([]string, *bytes.Buffer, *bytes.Buffer) error{
				func(a []string, o, e *bytes.Buffer) error { return runTables(a, o, e) },
				func(a []string, o, e *bytes.Buffer) error { return runFigures(a, o, e) },
			} {
				var stdout, stderr bytes.Buffer
				if err := cmd([]string{spec, "--scale", scale}, &stdout, &stderr); err != nil {
					t.Fatalf("scale %s: %v\n%s%s", scale, err, stdout.String(), stderr.String())
				}
			}
		}
		out := map[string][]byte{}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatalf("not written: %v", err)
			}
			out[f] = b
		}
		return out
	}
	first := run()
	second := run()
	for f, b := range first {
		if !bytes.Equal(b, second[f]) {
			t.Errorf("%s differs on a second run", f)
		}
	}
	for f, want := range map[string][]string{
		"reproductions/board/tables/leaderboard.md": {
			"| 1 | Contrastive | Hadsell, Chopra & LeCun, CVPR 2006 | TCM, Contextual | 72.0 [67.0, 77.0] | 30.0 [30.0, 30.0] | 2.0 [2.0, 2.0] | 3 | 90.0 | yes |",
			"| 3 | Multi-similarity | Wang et al., CVPR 2019 | CIT, RS@k | 22.0 [17.0, 27.0] |",
			"| 20.0 | did not train |",
			"| — | ArcFace | Deng et al., CVPR 2019 | TCM | — | — | — | 0 | — | not run |",
		},
		"reproductions/board/tables/pretrained/leaderboard.md": {
			"**Leaderboard — pretrained, CIFAR-10: 4 of 4 methods run",
			"| 1 | Triplet | Schroff et al., CVPR 2015 | RS@k | 81.0 [78.5, 83.5] |",
			"| 4 | ArcFace | Deng et al., CVPR 2019 | TCM | 31.0 [28.5, 33.5] | 10.0 [10.0, 10.0] | 30.0 [30.0, 30.0] | 3 | — | not recorded |",
		},
		"reproductions/board/tables/rank_agreement.md": {
			"Kendall's τ-b = 0.33 [0.33, 0.33]", "B = 2000", "| Contrastive | 1 | 2 |", "| Triplet | 2 | 1 |", "| Multi-similarity | 3 | 3 |",
		},
		"figures/board/README.md":            {"## leaderboard\n", "## leaderboard_pareto\n", "## rank_agreement\n", "Scale: small."},
		"figures/board/pretrained/README.md": {"## leaderboard\n", "## leaderboard_pareto\n", "Scale: pretrained."},
	} {
		for _, w := range want {
			if !strings.Contains(string(first[f]), w) {
				t.Errorf("%s lacks %q:\n%s", f, w, first[f])
			}
		}
	}
	if s := string(first["figures/board/pretrained/README.md"]); strings.Contains(s, "rank_agreement") {
		t.Errorf("the pretrained figures' README lists the rank agreement (drawn in figures/board):\n%s", s)
	}

	// With --out, the rank agreement goes beside the tables.
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runTables([]string{spec, "--scale", "pretrained", "--out", out, "--quiet"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"leaderboard.md", "leaderboard.tex", "rank_agreement.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("--out: %v", err)
		}
	}
}
