package notebook

import (
	"encoding/json"
	"os"
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
			data, err := os.ReadFile(filepath.Join(root, "notebooks", nbName+".ipynb"))
			if err != nil {
				t.Fatal(err)
			}
			var nb struct {
				Cells []struct {
					CellType string          `json:"cell_type"`
					Source   json.RawMessage `json:"source"`
				} `json:"cells"`
			}
			if err := json.Unmarshal(data, &nb); err != nil {
				t.Fatal(err)
			}
			var code strings.Builder
			for _, c := range nb.Cells {
				if c.CellType != "code" {
					continue
				}
				var lines []string
				if json.Unmarshal(c.Source, &lines) != nil {
					var s string
					_ = json.Unmarshal(c.Source, &s)
					lines = []string{s}
				}
				code.WriteString(strings.Join(lines, "") + "\n")
			}
			shown := map[string]bool{}
			var prefixes []string
			for _, m := range showTablesCall.FindAllStringSubmatch(code.String(), -1) {
				args := tableNamesCall.ReplaceAllString(m[1], "")
				for _, q := range quoted.FindAllStringSubmatch(args, -1) {
					shown[q[1]] = true
				}
			}
			for _, m := range tableNamesCall.FindAllStringSubmatch(code.String(), -1) {
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
