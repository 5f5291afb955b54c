package notebook

import (
	"os"
	"path/filepath"

	"github.com/dmlkit/dmlkit/dmlkit/report"
)

// FrontPage is what the tour shows of the cross-paper front page: the blocks `dmlkit tables` /
// `dmlkit summary` generate into the committed READMEs from every paper's records (kept current by
// `dmlkit summary --check` in the tests) and the central-claims figure.
type FrontPage struct {
	// Summary is reproductions/README.md's "summary" block: per paper and regime the claims held,
	// contradicted and inconclusive, split by reason.
	Summary string
	// Leaderboard is README.md's "leaderboard" block: the benchmark's top methods per regime and
	// their rank agreement ("" when the README has no such block).
	Leaderboard string
	// Figure is figures/summary/central_claims.png (nil when not drawn).
	Figure []byte
}

// ReadFrontPage reads the front page of the checkout at root.
func ReadFrontPage(root string) (*FrontPage, error) {
	var f FrontPage
	var err error
	if f.Summary, err = report.Marked(filepath.Join(root, "reproductions", "README.md"), "summary"); err != nil {
		return nil, err
	}
	readme := filepath.Join(root, "README.md")
	if ok, err := report.HasMarked(readme, "leaderboard"); err != nil {
		return nil, err
	} else if ok {
		if f.Leaderboard, err = report.Marked(readme, "leaderboard"); err != nil {
			return nil, err
		}
	}
	png, err := os.ReadFile(filepath.Join(root, "figures", "summary", "central_claims.png"))
	switch {
	case err == nil:
		f.Figure = png
	case !os.IsNotExist(err):
		return nil, err
	}
	return &f, nil
}
