package notebook

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notebookPapers maps each paper notebook to the reproduction it shows.
var notebookPapers = map[string]string{"tcm_opis": "tcm", "cit": "cit", "idml": "idml", "rsk": "rsk", "contextual": "contextual"}

var (
	showTablesCall = regexp.MustCompile(`ShowTables\(([^()]*(?:\([^()]*\)[^()]*)*)\)`)
	tableNamesCall = regexp.MustCompile(`TableNames\("([^"]*)"\)`)
	quoted         = regexp.MustCompile(`"([^"]*)"`)
)

// TestNotebooksShowEveryTable: every table of a paper's spec that has small-scale records, tuning
// tables included, is shown by its notebook — named in a ShowTables call or matched by a TableNames prefix — so that a tuning
// step or table added to the spec cannot go missing from the notebook (the CIT notebook showed
// tune_lr-cit but none of the lr-cit-g* steps added later; the TCM notebook none of tune_lr-*-tcm).
func TestNotebooksShowEveryTable(t *testing.T) {
	for nbName, paper := range notebookPapers {
		t.Run(nbName, func(t *testing.T) {
			code := notebookCode(t, nbName)
			shown := map[string]bool{}
			var prefixes []string
			for _, m := range showTablesCall.FindAllStringSubmatch(code, -1) {
				args := tableNamesCall.ReplaceAllString(m[1], "")
				for _, q := range quoted.FindAllStringSubmatch(args, -1) {
					shown[q[1]] = true
				}
			}
			for _, m := range tableNamesCall.FindAllStringSubmatch(code, -1) {
				prefixes = append(prefixes, m[1])
			}
			p := &Paper{Root: root, Name: paper, Scale: "small"}
			spec, err := p.Spec()
			if err != nil {
				t.Fatal(err)
			}
			recs, err := p.Records()
			if err != nil {
				t.Fatal(err)
			}
			for _, tab := range spec.AllTables() {
				if shown[tab.Name] || len(spec.TableRecords(tab, "small", recs)) == 0 {
					continue
				}
				covered := false
				for _, pre := range prefixes {
					covered = covered || strings.HasPrefix(tab.Name, pre)
				}
				if !covered {
					t.Errorf("notebooks/%s.ipynb does not show table %q (%s) of reproductions/%s/spec.yaml", nbName, tab.Name, tab.Caption, paper)
				}
			}
		})
	}
}

var (
	sectionFiguresSrc = regexp.MustCompile(`(?s)var SectionFigures = map\[string\]\[\]string\{(.*?)\n\}`)
	sectionEntrySrc   = regexp.MustCompile(`"([^"]+)":\s*\{([^}]*)\}`)
	sectionUseSrc     = regexp.MustCompile(`(?:ShowFigures\(|ShowFigureGrid\(\d+, |range )SectionFigures\["([^"]+)"\]`)
	showFigureSrc     = regexp.MustCompile(`ShowFigure\("([^"]+)"`)
)

// TestNotebooksShowEachFigureOnce counts, from each paper notebook's code, how often each committed
// figure (figures/<paper>/*.png) is shown — by a section (ShowFigures(SectionFigures[k]...), a grid
// of them, ShowFigureGrid(n, SectionFigures[k]...), or a loop over SectionFigures[k]), by ShowFigure("name", …), or by "Other figures", which shows every
// figure no SectionFigures entry names — and fails unless each is shown exactly once (the regime
// figure was shown by its section and again, without a caption, by "Other figures"; CIT's
// fig4_gradients likewise).
func TestNotebooksShowEachFigureOnce(t *testing.T) {
	for nbName, paper := range notebookPapers {
		t.Run(nbName, func(t *testing.T) {
			code := notebookCode(t, nbName)
			m := sectionFiguresSrc.FindStringSubmatch(code)
			if m == nil {
				t.Fatal("no SectionFigures map")
			}
			sections := map[string][]string{}
			inSection := map[string]bool{}
			for _, e := range sectionEntrySrc.FindAllStringSubmatch(m[1], -1) {
				for _, q := range quoted.FindAllStringSubmatch(e[2], -1) {
					if inSection[q[1]] {
						t.Errorf("SectionFigures names %s twice", q[1])
					}
					sections[e[1]] = append(sections[e[1]], q[1])
					inSection[q[1]] = true
				}
			}
			shown := map[string]int{}
			for _, u := range sectionUseSrc.FindAllStringSubmatch(code, -1) {
				if _, ok := sections[u[1]]; !ok {
					t.Errorf("SectionFigures[%q] is used but not declared", u[1])
				}
				for _, n := range sections[u[1]] {
					shown[n]++
				}
			}
			for _, u := range showFigureSrc.FindAllStringSubmatch(code, -1) {
				shown[u[1]]++
			}
			pngs, err := filepath.Glob(filepath.Join(root, "figures", paper, "*.png"))
			if err != nil || len(pngs) == 0 {
				t.Fatalf("no figures/%s/*.png", paper)
			}
			for _, f := range pngs {
				name := strings.TrimSuffix(filepath.Base(f), ".png")
				if !inSection[name] {
					shown[name]++ // "Other figures"
				}
				if shown[name] != 1 {
					t.Errorf("figure %s is shown %d times (a section, ShowFigure, or \"Other figures\" when no SectionFigures entry names it): show it once", name, shown[name])
				}
			}
		})
	}
}
