package judge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Baseline is what a paper's claims table (tables/claims.md, every committed scale's claims) gave at
// a named commit: one verdict per claim and form. [ClaimsReport.ChangesMarkdown] compares today's
// verdicts with it, so that "What changed and why" lists every verdict that differs from a fixed
// point, not only those today's rules change on today's records.
type Baseline struct {
	Commit   string            // the commit (abbreviated hash) whose claims table this is
	Verdicts []BaselineVerdict // in the table's order
}

// BaselineVerdict is one claim's (or one form's) verdict in a baseline claims table.
type BaselineVerdict struct {
	Claim   string // claim id
	Form    string // the form's label ("" for a claim without forms)
	Verdict string // VerdictHeld, VerdictContradicted or VerdictInconclusive
	Reason  string // the reason in parentheses after the verdict
}

// Ruled reports whether the baseline's verdict was decided by a comparability or training rule
// (an unequal comparison, an arm that did not train, training not recorded) rather than by the
// interval rule alone.
func (v BaselineVerdict) Ruled() bool {
	return strings.Contains(v.Reason, "unequal comparison") || strings.Contains(v.Reason, "did not train") ||
		strings.Contains(v.Reason, "not recorded")
}

// ruleText is the rule of a ruled baseline verdict in a few words: "unequal comparison",
// "ProxyNCA did not train" or "training not recorded".
func (v BaselineVerdict) ruleText() string {
	switch {
	case strings.Contains(v.Reason, "unequal comparison"):
		return "unequal comparison"
	case strings.Contains(v.Reason, "did not train"):
		s, _, _ := strings.Cut(v.Reason, " did not train")
		if i := strings.LastIndex(s, "; "); i >= 0 {
			s = s[i+2:]
		}
		return s + " did not train"
	case strings.Contains(v.Reason, "not recorded"):
		return "training not recorded"
	}
	return v.Reason
}

func baselineKey(claim, form string) string { return claim + "\t" + form }

// Lookup returns the baseline's verdict of claim (form "" for a claim without forms).
func (b *Baseline) Lookup(claim, form string) (BaselineVerdict, bool) {
	for _, v := range b.Verdicts {
		if baselineKey(v.Claim, v.Form) == baselineKey(claim, form) {
			return v, true
		}
	}
	return BaselineVerdict{}, false
}

// HasClaim reports whether the baseline tested claim at all (in any form).
func (b *Baseline) HasClaim(claim string) bool {
	for _, v := range b.Verdicts {
		if v.Claim == claim {
			return true
		}
	}
	return false
}

// verdictPart matches one form's verdict in a claims table's verdict cell: an optional
// "label: " prefix, the bold verdict and its reason in parentheses (balanced to the last ")"
// before an optional " — weak baseline").
var verdictPart = regexp.MustCompile(`^(?:(.*?): )?\*\*(held|contradicted|inconclusive)\*\* \((.*)\)(?: — weak baseline)?$`)

// ParseClaimsTable reads the verdicts of a claims table as [ClaimsReport.Markdown] writes it: the
// rows of its table (id in the first cell, the verdict cell last; forms separated by "<br>").
func ParseClaimsTable(md string) ([]BaselineVerdict, error) {
	var out []BaselineVerdict
	header := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| id |") {
			header = true
			continue
		}
		if !header || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			if line == "" || strings.HasPrefix(line, "Details:") {
				break
			}
			continue
		}
		cells := splitRow(line)
		if len(cells) < 2 {
			return nil, fmt.Errorf("line %d: a table row with %d cells", i+1, len(cells))
		}
		id := unescapeMd(cells[0])
		for _, part := range strings.Split(cells[len(cells)-1], "<br>") {
			m := verdictPart.FindStringSubmatch(strings.TrimSpace(part))
			if m == nil {
				return nil, fmt.Errorf("line %d: claim %s: no verdict in %q", i+1, id, part)
			}
			out = append(out, BaselineVerdict{Claim: id, Form: unescapeMd(m[1]), Verdict: m[2], Reason: unescapeMd(m[3])})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no claims table (a row \"| id | …\" and verdict rows)")
	}
	return out, nil
}

// splitRow splits a Markdown table row into its cells, leaving escaped pipes ("\|") inside cells.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '|' {
			cur.WriteString(`\|`)
			i++
			continue
		}
		if line[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// unescapeMd undoes [MdEscape]'s escape of "|".
func unescapeMd(s string) string { return strings.ReplaceAll(s, `\|`, "|") }

// BaselineFile is the baseline's file name in a paper's directory (beside its README.md).
const BaselineFile = "baseline-verdicts.tsv"

// LoadBaseline reads dir's BaselineFile; a directory without one has no baseline (nil, nil).
func LoadBaseline(dir string) (*Baseline, error) {
	p := filepath.Join(dir, BaselineFile)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ReadBaseline(p)
}

// baselineHeader starts a baseline file; the commit follows it on the same line.
const baselineHeader = "# dmlkit baseline verdicts: tables/claims.md at commit "

// WriteBaseline writes b as a tab-separated file: a header line naming the commit, then one line
// per verdict (claim, form, verdict, reason).
func WriteBaseline(w io.Writer, b *Baseline) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s%s\n", baselineHeader, b.Commit)
	bw.WriteString("claim\tform\tverdict\treason\n")
	for _, v := range b.Verdicts {
		for _, f := range []string{v.Claim, v.Form, v.Verdict, v.Reason} {
			if strings.ContainsAny(f, "\t\n") {
				return fmt.Errorf("baseline: claim %s: a tab or newline in %q", v.Claim, f)
			}
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", v.Claim, v.Form, v.Verdict, v.Reason)
	}
	return bw.Flush()
}

// ReadBaseline reads a file WriteBaseline wrote.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseBaseline(path, data)
}

// ParseBaseline parses the content of a file WriteBaseline wrote (path names it in errors).
func ParseBaseline(path string, data []byte) (*Baseline, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], baselineHeader) || lines[1] != "claim\tform\tverdict\treason" {
		return nil, fmt.Errorf("%s: not a baseline file (want the lines %q<commit> and the column names)", path, baselineHeader)
	}
	b := &Baseline{Commit: strings.TrimPrefix(lines[0], baselineHeader)}
	for i, l := range lines[2:] {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 4 (claim, form, verdict, reason)", path, i+3, len(f))
		}
		switch f[2] {
		case VerdictHeld, VerdictContradicted, VerdictInconclusive:
		default:
			return nil, fmt.Errorf("%s:%d: verdict %q", path, i+3, f[2])
		}
		b.Verdicts = append(b.Verdicts, BaselineVerdict{Claim: f[0], Form: f[1], Verdict: f[2], Reason: f[3]})
	}
	return b, nil
}

// baselineChange is one row of the changes table against a baseline.
type baselineChange struct {
	id, where, was, raw, now, cause string
}

// changesSince lists every claim (and form) of r whose verdict differs from b's, with the cause:
// "new claim" / "new form"; "rule: …" when the interval alone gives today what the baseline gave
// and a comparability or training rule decides now (or a baseline rule no longer applies);
// "records: …" when the interval alone now gives another verdict on today's records (new runs,
// reruns at an arm's own rate, another form's runs).
func (r *ClaimsReport) changesSince(b *Baseline) (rows []baselineChange, total int) {
	for _, v := range r.Verdicts {
		forms := v.Forms
		if len(forms) == 0 {
			forms = []ClaimVerdict{v}
		}
		for _, f := range forms {
			total++
			id := v.Claim.ID
			if f.Form != "" {
				id += " (" + f.Form + ")"
			}
			ch := baselineChange{id: id, where: v.Claim.Source, raw: f.Raw, now: f.Verdict}
			old, ok := b.Lookup(v.Claim.ID, f.Form)
			ruledNow := f.Raw != f.Verdict || RuleDecided(f.Cause)
			nowWhy := CauseLabel(f.Cause)
			if why, _, _ := strings.Cut(f.Reason, "; the interval alone: "); why != "" && ruledNow {
				if strings.HasPrefix(why, nowWhy) { // "unequal comparison (…)", "training not recorded for …"
					nowWhy = why
				} else {
					nowWhy += ": " + why
				}
			}
			switch {
			case !ok && b.HasClaim(v.Claim.ID):
				ch.was, ch.cause = "—", "new form"
			case !ok:
				ch.was, ch.cause = "—", "new claim"
			case old.Verdict == f.Verdict:
				continue
			case old.Ruled() && ruledNow:
				ch.was, ch.cause = old.Verdict, "rule: was "+old.ruleText()+"; now "+nowWhy
			case old.Ruled():
				ch.was, ch.cause = old.Verdict, "rule: "+old.ruleText()+" no longer applies (the arms are comparable and trained under today's rules and runs)"
			case old.Verdict == f.Raw:
				ch.was, ch.cause = old.Verdict, "rule: "+nowWhy
			case ruledNow:
				ch.was, ch.cause = old.Verdict, "records: the interval alone now gives "+f.Raw+" (new or rerun records); then rule: "+nowWhy
			default:
				ch.was, ch.cause = old.Verdict, "records: the interval alone now gives "+f.Raw+" (new or rerun records)"
			}
			rows = append(rows, ch)
		}
	}
	return rows, total
}

// counts counts the baseline's claims by verdict (a claim with forms by its first form's, as
// [ClaimsReport.RawCounts] and the headline count them): held, contradicted, inconclusive.
func (b *Baseline) counts() (held, contradicted, inconclusive int) {
	seen := map[string]bool{}
	for _, v := range b.Verdicts {
		if seen[v.Claim] {
			continue
		}
		seen[v.Claim] = true
		tallyVerdict(v.Verdict, &held, &contradicted, &inconclusive)
	}
	return
}

// causeKinds counts rows by their cause: "N by a rule, M by the records, K new claims or forms"
// (the kinds present, in that order).
func causeKinds(rows []baselineChange) string {
	var rule, recs, fresh int
	for _, c := range rows {
		switch {
		case strings.HasPrefix(c.cause, "rule:"):
			rule++
		case strings.HasPrefix(c.cause, "records:"):
			recs++
		default:
			fresh++
		}
	}
	var parts []string
	if rule > 0 {
		parts = append(parts, fmt.Sprintf("%d by a rule", rule))
	}
	if recs > 0 {
		parts = append(parts, fmt.Sprintf("%d by the records", recs))
	}
	if fresh > 0 {
		parts = append(parts, fmt.Sprintf("%d new claims or forms", fresh))
	}
	return strings.Join(parts, ", ")
}
