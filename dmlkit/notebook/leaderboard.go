package notebook

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

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

// RankAgreement is the rank agreement of one pair of the leaderboard's regimes as a notebook
// shows it: its table and where its committed figure is ([Paper.LeaderboardFigure]).
type RankAgreement struct {
	// Scales are the pair's regimes (committed scales), in the spec's order.
	Scales [2]string
	// Markdown is its table: the methods' ranks in both regimes and Kendall's τ-b with its
	// bootstrap intervals (report.RankAgreement.Markdown), or why τ-b is not computed yet.
	Markdown string
	// Scale and Figure name its committed figure: the spec's first regime, in whose figures
	// directory every pair's figure is drawn, and the figure's base name (report.AgreementName:
	// "rank_agreement" for the spec's first two regimes, "rank_agreement-<a>-<b>" for the others).
	Scale, Figure string
}

// RankAgreements is the rank agreement of every pair of the leaderboard's regimes (i < j in the
// spec's order, as report.Agreements), built from the stored records; none when the leaderboard
// has one regime.
func (p *Paper) RankAgreements() ([]RankAgreement, error) {
	spec, recs, err := p.leaderboardInputs()
	if err != nil {
		return nil, err
	}
	ras, err := report.Agreements(spec, recs)
	if err != nil {
		return nil, err
	}
	var out []RankAgreement
	for _, ra := range ras {
		out = append(out, RankAgreement{
			Scales:   [2]string{ra.Regimes[0].Scale, ra.Regimes[1].Scale},
			Markdown: ra.Markdown(spec.Labels),
			Scale:    spec.Leaderboard.Regimes[0].Scale,
			Figure:   ra.Name,
		})
	}
	return out, nil
}

// RankAgreementMarkdown is the rank agreement of every pair of the leaderboard's regimes
// ([Paper.RankAgreements]; Kendall's τ-b with its bootstrap interval over seeds, and the
// methods' ranks in each), the pairs' tables one after the other, or a line saying why there is
// none.
func (p *Paper) RankAgreementMarkdown() (string, error) {
	ras, err := p.RankAgreements()
	if err != nil {
		return "", err
	}
	if len(ras) == 0 {
		return "*The leaderboard has one regime: no rank agreement.*", nil
	}
	var parts []string
	for _, ra := range ras {
		parts = append(parts, ra.Markdown)
	}
	return strings.Join(parts, "\n"), nil
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
// where the scale directory is, as `dmlkit figures` writes it, "" for small and the scale's name
// for any other committed scale ("pretrained", or one the spec's committed list names, e.g.
// "converged"); a scale not committed reads small's (file: "leaderboard", "leaderboard_pareto";
// the rank agreements, [RankAgreement].Figure, live beside the spec's first regime's).
func (p *Paper) LeaderboardFigure(scale, file string) (Figure, bool, error) {
	sub := ""
	if scale == "pretrained" {
		sub = scale
	} else if scale != "small" {
		spec, err := p.Spec()
		if err != nil {
			return Figure{}, false, err
		}
		if slices.Contains(spec.Committed, scale) {
			sub = scale
		}
	}
	dir := filepath.Join(p.Root, "figures", p.Name, sub)
	png, err := os.ReadFile(filepath.Join(dir, file+".png"))
	if os.IsNotExist(err) {
		return Figure{}, false, nil
	}
	if err != nil {
		return Figure{}, false, err
	}
	return Figure{Name: path.Join(sub, file), PNG: png}, true, nil
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
