package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// The committed verdicts are what `dmlkit tables` computes now from the committed records, specs and
// claims files: each paper's tables/claims.md, its README's claims and "What changed and why"
// blocks, and the cross-paper summary in README.md and reproductions/README.md (`dmlkit summary
// --check`). A change to the verdict rules, a claims file or the stored records without
// regenerating them fails here.
func TestCommittedVerdictsCurrent(t *testing.T) {
	reproduce.Register()
	root := filepath.Join("..", "..")
	for _, paper := range paperOrder {
		t.Run(paper, func(t *testing.T) {
			spec, err := sweep.Load(filepath.Join(root, "reproductions", paper, "spec.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cs, err := judge.LoadClaims(filepath.Join(spec.Dir, "claims.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := loadRecords(spec, "small", "", false, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := cs.Report(recs, judge.ClaimOptions{Scale: "small", Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(spec.Dir, "tables", "claims.md"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != rep.Markdown() {
				t.Errorf("reproductions/%s/tables/claims.md is not current: run dmlkit tables %s", paper, paper)
			}
			readme := filepath.Join(spec.Dir, "README.md")
			base, err := judge.LoadBaseline(spec.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for block, want := range map[string]string{"claims": rep.ReadmeMarkdown(), "changes": rep.ChangesMarkdown(base), "regimes": rep.RegimeMarkdown()} {
				ok, err := report.MarkedIs(readme, block, want)
				if err != nil || !ok {
					t.Errorf("the %q block of reproductions/%s/README.md is not current (%v): run dmlkit tables %s", block, paper, err, paper)
				}
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if err := runSummary([]string{"--check", "--root", root}, &stdout, &stderr); err != nil {
		t.Errorf("dmlkit summary --check: %v", err)
	} else if !strings.Contains(stdout.String(), "| **all** |") {
		t.Errorf("summary lacks its totals row:\n%s", stdout.String())
	}
}
