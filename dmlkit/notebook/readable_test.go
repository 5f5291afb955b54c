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
// ([sweep.ReaderRawTexts]), a tuning difference's value the labels map or the shared vocabulary
// writes in words ([sweep.LabelMap.UnwordedTexts]: "dataset: tuned at omniglot"). nbcheck's "raw"
// lint checks the first in the committed exports.
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
			setting, err := p.SettingMarkdown(group, rows, per)
			add(setting, err)
			spec, err := p.Spec()
			if err != nil {
				t.Fatal(err)
			}
			// The setting's values in words: no cell item that the labels map or the shared
			// vocabulary writes otherwise ("omniglot", "multisimilarity"), no "(no name)" group.
			for _, line := range strings.Split(setting, "\n") {
				if strings.Contains(line, "| (no ") {
					t.Errorf("setting: a group headed by the key's absence: %q", line)
				}
				if !strings.HasPrefix(line, "| ") {
					continue
				}
				for _, cell := range strings.Split(strings.Trim(line, "| "), " | ") {
					for _, item := range strings.Split(cell, ", ") {
						if w, ok := spec.Labels.RawValue(item); ok {
							t.Errorf("setting: %q, which the labels write as %q, in %q", item, w, line)
						}
					}
				}
			}
			for _, line := range strings.Split(setting, "\n") {
				if rest, ok := strings.CutPrefix(line, "The same in every group: "); ok {
					for _, item := range strings.Split(strings.TrimSuffix(rest, "."), "; ") {
						if f := strings.Fields(item); len(f) > 0 {
							if w, ok := spec.Labels.RawValue(f[len(f)-1]); ok {
								t.Errorf("setting: %q, which the labels write as %q, in %q", f[len(f)-1], w, item)
							}
						}
					}
				}
			}
			names, err := p.TableNames("")
			if err != nil {
				t.Fatal(err)
			}
			tabs, err := p.TablesMarkdown(names...)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, tabs...)
			for _, f := range spec.Figures {
				texts = append(texts, p.FigureCaption(Figure{Name: f.Name, Caption: f.Caption}))
			}
			for _, s := range texts {
				for _, prob := range sweep.ReaderRawTexts(s) {
					t.Error(prob)
				}
				for _, prob := range spec.Labels.UnwordedTexts(s) {
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
		// The front page speaks of every paper: its values are checked against the shared
		// vocabulary ("tuned at omniglot" where every paper says Omniglot).
		for _, prob := range (sweep.LabelMap{}).UnwordedTexts(s) {
			t.Error(prob)
		}
	}
}
