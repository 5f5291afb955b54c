package notebook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// notebookCode is the code of a committed notebook's code cells, joined.
func notebookCode(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "notebooks", name+".ipynb"))
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
	return code.String()
}

var (
	settingRowSrc  = regexp.MustCompile(`\{"([^"]+)", notebook\.(Key|Metric)\("([^"]+)"\)\}`)
	settingCallSrc = regexp.MustCompile(`P\.SettingMarkdown\("([^"]+)", rows, (\d+)\)`)
)

// settingOf rebuilds the setting table a paper notebook's setting cell shows: its rows and group
// key, read from the cell's code.
func settingOf(t *testing.T, code string) ([]SettingRow, string, int) {
	t.Helper()
	var rows []SettingRow
	for _, m := range settingRowSrc.FindAllStringSubmatch(code, -1) {
		if m[2] == "Key" {
			rows = append(rows, SettingRow{m[1], Key(m[3])})
		} else {
			rows = append(rows, SettingRow{m[1], Metric(m[3])})
		}
	}
	call := settingCallSrc.FindStringSubmatch(code)
	if call == nil || len(rows) == 0 {
		t.Fatal("no setting cell (notebook.SettingMarkdown with its rows)")
	}
	n := 0
	for _, c := range call[2] {
		n = n*10 + int(c-'0')
	}
	return rows, call[1], n
}

// TestNotebookTextsInWords renders what each paper notebook shows of its reproduction — the
// abstract, the setting tables, every table with records, every claim line, the verdict table, the
// regime table, the discussion, the conclusion and the figure captions — from the committed records
// through this package, as the export does, and fails on what a reader should not read: a null
// value, a run hash, a dotted config key, a config expression, a run group's name
// ([sweep.ReaderRawTexts]). nbcheck's "raw" lint checks the same in the committed exports.
func TestNotebookTextsInWords(t *testing.T) {
	for nbName, paper := range notebookPapers {
		t.Run(nbName, func(t *testing.T) {
			p := &Paper{Root: root, Name: paper, Scale: "small"}
			var texts []string
			add := func(s string, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				texts = append(texts, s)
			}
			add(p.AbstractMarkdown())
			add(p.ClaimsMarkdown())
			add(p.VerdictsHTML())
			add(p.DiscussionMarkdown())
			add(p.ConclusionMarkdown())
			rep, err := p.Report()
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, rep.RegimeMarkdown())
			rows, group, per := settingOf(t, notebookCode(t, nbName))
			add(p.SettingMarkdown(group, rows, per))
			names, err := p.TableNames("")
			if err != nil {
				t.Fatal(err)
			}
			tabs, err := p.TablesMarkdown(names...)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, tabs...)
			spec, err := p.Spec()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range spec.Figures {
				texts = append(texts, p.FigureCaption(Figure{Name: f.Name, Caption: f.Caption}))
			}
			for _, s := range texts {
				for _, prob := range sweep.ReaderRawTexts(s) {
					t.Error(prob)
				}
			}
		})
	}
}

// TestFrontPageInWords: the front page the tour shows (README.md's generated block and the
// benchmark's leaderboards, [ReadFrontPage]) has no raw configuration either.
func TestFrontPageInWords(t *testing.T) {
	fp, err := ReadFrontPage(root)
	if err != nil {
		t.Fatal(err)
	}
	if fp.Summary == "" {
		t.Fatal("no front page summary")
	}
	for _, s := range []string{fp.Summary, fp.Leaderboard} {
		for _, prob := range sweep.ReaderRawTexts(s) {
			t.Error(prob)
		}
	}
}
