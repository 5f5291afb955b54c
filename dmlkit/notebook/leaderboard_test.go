package notebook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// boardPaper copies cmd/dmlkit's leaderboard fixture (spec and records of two scales; its header
// states the hand-chosen metrics) into a checkout layout: ROOT/reproductions/board/.
func boardPaper(t *testing.T) *Paper {
	t.Helper()
	src := filepath.Join("..", "..", "cmd", "dmlkit", "testdata", "leaderboard")
	root := t.TempDir()
	dir := filepath.Join(root, "reproductions", "board")
	for _, f := range []string{"spec.yaml", "results/small.jsonl", "results/pretrained.jsonl"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &Paper{Root: root, Name: "board", Scale: "small"}
}

// TestLeaderboardMarkdown: at small the fixture's test R@1 per seed is alpha (labelled Contrastive)
// .70/.72/.74, beta (Triplet) .60/.63/.66, gamma (Multi-similarity) .20/.22/.24 (train R@1 0.2,
// below 0.5 × alpha's 0.9: did not train), delta (ArcFace) not run. Alpha's cell, worked by hand: mean 72.0, sd 2.0, t(0.975, 2) = 4.3027, half-width
// 4.3027 × 2 / √3 = 4.97 → [67.0, 77.0]. The rank agreement over the three methods run in both
// regimes (small: alpha 1, beta 2, gamma 3; pretrained: beta .81 > alpha .52 > gamma .42) has one
// discordant pair of three: τ-b = (2 − 1) / 3 = 0.33.
func TestLeaderboardMarkdown(t *testing.T) {
	p := boardPaper(t)
	md, err := p.LeaderboardMarkdown("small")
	if err != nil {
		t.Fatal(err)
	}
	ia, ib, ig := strings.Index(md, "| 1 | Contrastive |"), strings.Index(md, "| 2 | Triplet |"), strings.Index(md, "| 3 | Multi-similarity |")
	if ia < 0 || ib < ia || ig < ib || !strings.Contains(md, "72.0 [67.0, 77.0]") || !strings.Contains(md, "did not train") || !strings.Contains(md, "not run") {
		t.Errorf("small leaderboard:\n%s", md)
	}
	ra, err := p.RankAgreementMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ra, "τ-b = 0.33") {
		t.Errorf("rank agreement, want τ-b = 0.33:\n%s", ra)
	}
	sum, err := p.LeaderboardSummaryMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum, "1. Contrastive 72.0 [67.0, 77.0]") || !strings.Contains(sum, "τ-b = 0.33") {
		t.Errorf("summary:\n%s", sum)
	}
	if _, ok, err := p.LeaderboardFigure("pretrained", "leaderboard"); ok || err != nil {
		t.Errorf("a figure that was never drawn: found %v, error %v", ok, err)
	}
}
