package notebook

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// LeaderboardMarkdown is the leaderboard of one regime (a committed scale named in the spec's
// leaderboard section: "small" or "pretrained") built from the stored records, as `dmlkit tables
// <name> --scale <scale>` writes it: one row per method, ranked by the first metric, each metric's
// mean with its 95 % t-interval over seeds, train R@1 and whether the method trained.
func (p *Paper) LeaderboardMarkdown(scale string) (string, error) {
	spec, recs, err := p.leaderboardInputs()
	if err != nil {
		return "", err
	}
	lb, err := report.BuildLeaderboard(spec, scale, recs)
	if err != nil {
		return "", err
	}
	return lb.Markdown(spec.Labels), nil
}

// RankAgreementMarkdown is the rank agreement of the leaderboard's two regimes (Kendall's τ-b
// with its bootstrap interval over seeds, and the methods' ranks in each), or a line saying why it
// is not computed yet.
func (p *Paper) RankAgreementMarkdown() (string, error) {
	spec, recs, err := p.leaderboardInputs()
	if err != nil {
		return "", err
	}
	ra, err := report.Agreement(spec, recs)
	if err != nil {
		return "", err
	}
	if ra == nil {
		return "*The leaderboard has one regime: no rank agreement.*", nil
	}
	return ra.Markdown(spec.Labels), nil
}

// LeaderboardSummaryMarkdown is the short summary the READMEs show (report.LeaderboardSummary):
// the top three methods of each regime and the rank agreement.
func (p *Paper) LeaderboardSummaryMarkdown() (string, error) {
	spec, recs, err := p.leaderboardInputs()
	if err != nil {
		return "", err
	}
	by := map[string][]sweep.Record{}
	for _, r := range recs {
		by[r.Scale] = append(by[r.Scale], r)
	}
	return report.LeaderboardSummary(spec, by)
}

// LeaderboardFigure reads a committed leaderboard figure: figures/<name>/<scale dir>/<file>.png,
// where the scale directory is "" for small and "pretrained" for the pretrained regime (file:
// "leaderboard", "leaderboard_pareto"; "rank_agreement" lives beside the small scale's).
func (p *Paper) LeaderboardFigure(scale, file string) (Figure, bool, error) {
	dir := filepath.Join(p.Root, "figures", p.Name)
	if scale == "pretrained" {
		dir = filepath.Join(dir, "pretrained")
	}
	png, err := os.ReadFile(filepath.Join(dir, file+".png"))
	if os.IsNotExist(err) {
		return Figure{}, false, nil
	}
	if err != nil {
		return Figure{}, false, err
	}
	name := file
	if scale == "pretrained" {
		name = "pretrained/" + file
	}
	return Figure{Name: name, PNG: png}, true, nil
}

// leaderboardInputs loads the spec (which must have a leaderboard section) and the stored records
// of every scale, superseded ones left out.
func (p *Paper) leaderboardInputs() (*sweep.Spec, []sweep.Record, error) {
	spec, err := p.Spec()
	if err != nil {
		return nil, nil, err
	}
	if spec.Leaderboard == nil {
		return nil, nil, fmt.Errorf("%s: no leaderboard section", filepath.Join(p.Dir(), "spec.yaml"))
	}
	recs, err := p.allRecords()
	if err != nil {
		return nil, nil, err
	}
	return spec, recs, nil
}
