package judge

import (
	"fmt"
	"html"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The verdict table of a paper notebook, grouped by the table or figure of the paper each claim
// tests (issue #32): one short line per claim — id, the paper's words shortened, verdict, effect
// with its interval — and the rest (arms, seeds, comparability, the interval rule's own verdict,
// the stand-in) folded in an HTML <details> element under each group, so that no table is wider
// than the page and the 34–64 claims of a paper read group by group.

// paperItem matches a table or figure of the paper in a claim's source: "Table 4", "Tables 2-4",
// "Fig. 6", "Figs. 6, 8", "Figure 3".
var paperItem = regexp.MustCompile(`\b(Tables?|Figs?\.?|Figures?)\s*(\d+)(?:\s*[-–]\s*(\d+))?`)

// paperSection matches a section of the paper: "§4.3", "§ 5".
var paperSection = regexp.MustCompile(`§\s*(\d+(?:\.\d+)*)`)

// ClaimGroupName is the table or figure of the paper that a claim's source names first ("Table 4"
// for "Table 4, Fig. 6, §4.3"; "Tables 2–4" for "Tables 2-4, §5"; "Fig. 6" for "Figs. 6, 8");
// without one, its first section ("§1"); without either, "Other". claims.yaml has no field of its
// own for the table or figure: the source, "where in the paper", carries it.
func ClaimGroupName(source string) string {
	if m := paperItem.FindStringSubmatch(source); m != nil {
		kind := "Fig."
		if strings.HasPrefix(m[1], "Table") {
			kind = "Table"
		}
		if m[3] != "" {
			plural := map[string]string{"Table": "Tables", "Fig.": "Figs."}[kind]
			return plural + " " + m[2] + "–" + m[3]
		}
		return kind + " " + m[2]
	}
	if m := paperSection.FindStringSubmatch(source); m != nil {
		return "§" + m[1]
	}
	return "Other"
}

// groupOrder sorts group names: tables, then figures, then sections, then "Other"; by number
// within each.
func groupOrder(name string) (rank int, num []int) {
	switch {
	case strings.HasPrefix(name, "Table"):
		rank = 0
	case strings.HasPrefix(name, "Fig"):
		rank = 1
	case strings.HasPrefix(name, "§"):
		rank = 2
	default:
		return 3, nil
	}
	for _, f := range regexp.MustCompile(`\d+`).FindAllString(name, -1) {
		n, _ := strconv.Atoi(f)
		num = append(num, n)
	}
	return rank, num
}

// ClaimGroup is the verdicts of the claims that test one table or figure of the paper.
type ClaimGroup struct {
	Name     string // [ClaimGroupName] of their sources
	Verdicts []ClaimVerdict
}

// Groups splits the report's verdicts by [ClaimGroupName] of their source: tables first, then
// figures, sections and the rest, each by number; within a group, the claims in claims.yaml's order.
func (r *ClaimsReport) Groups() []ClaimGroup {
	idx := map[string]int{}
	var out []ClaimGroup
	for _, v := range r.Verdicts {
		name := ClaimGroupName(v.Claim.Source)
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, ClaimGroup{Name: name})
		}
		out[i].Verdicts = append(out[i].Verdicts, v)
	}
	sort.SliceStable(out, func(a, b int) bool {
		ra, na := groupOrder(out[a].Name)
		rb, nb := groupOrder(out[b].Name)
		if ra != rb {
			return ra < rb
		}
		for i := 0; i < len(na) && i < len(nb); i++ {
			if na[i] != nb[i] {
				return na[i] < nb[i]
			}
		}
		if len(na) != len(nb) {
			return len(na) < len(nb)
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// ShortClaim shortens the paper's words to at most max characters for a one-line row: the start
// and the end kept (claims expanded from one template differ at the end: "…: Omni-98"), cut at
// spaces, "…" between them.
func ShortClaim(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	headLen, tailLen := max*3/5, max-max*3/5-2
	head := string(r[:headLen])
	if i := strings.LastIndex(head, " "); i > headLen/2 {
		head = head[:i]
	}
	tail := string(r[len(r)-tailLen:])
	if i := strings.Index(tail, " "); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	return strings.TrimRight(head, " ,;:") + " … " + strings.TrimLeft(tail, " ")
}

// ShortClaimLen is the length [ClaimsReport.GroupedHTML] shortens the paper's words to.
const ShortClaimLen = 90

// verdictCell is the verdict of the one-line row: bold, with the rule that decided it when not
// the interval ("inconclusive (unequal)") and "weak baseline" when an arm is one; per form.
func (v *ClaimVerdict) verdictCell() string {
	forms := v.Forms
	if len(forms) == 0 {
		forms = []ClaimVerdict{*v}
	}
	var out []string
	for _, f := range forms {
		s := ""
		if f.Form != "" {
			s = html.EscapeString(f.Form) + ": "
		}
		s += "<b>" + html.EscapeString(f.Verdict) + "</b>"
		if RuleDecided(f.Cause) {
			s += " (" + html.EscapeString(f.Cause) + ")"
		}
		if f.WeakBaseline() {
			s += ", weak baseline"
		}
		out = append(out, s)
	}
	return strings.Join(out, "<br>")
}

// effectCell is the effect with its interval (per form); for a rank claim the order observed.
func (v *ClaimVerdict) effectCell() string {
	forms := v.Forms
	if len(forms) == 0 {
		forms = []ClaimVerdict{*v}
	}
	var out []string
	for _, f := range forms {
		pre := ""
		if f.Form != "" {
			pre = f.Form + ": "
		}
		e := f.effectText()
		if f.Claim.Kind == KindRank {
			e = "order by mean: " + f.Observed
			if f.Observed == "" {
				e = "—"
			}
		}
		out = append(out, html.EscapeString(pre+e))
	}
	return strings.Join(out, "<br>")
}

// detailItem is the folded part of one claim: the paper's words in full, where and in which
// regime, the kind, the arms, the seeds agreeing, the comparability note, the interval rule's own
// verdict and the reason, and the stand-in and the other details of [ClaimsReport.Markdown].
func (r *ClaimsReport) detailItem(v *ClaimVerdict) string {
	forms := v.Forms
	if len(forms) == 0 {
		forms = []ClaimVerdict{*v}
	}
	c := v.Claim
	var b strings.Builder
	fmt.Fprintf(&b, "<li><code>%s</code> — %s (%s; %s; %s)", html.EscapeString(c.ID), html.EscapeString(c.Paper),
		html.EscapeString(c.Source), html.EscapeString(v.Regime()), html.EscapeString(v.kindLabel()))
	b.WriteString("<ul>")
	for _, f := range forms {
		pre := ""
		if f.Form != "" {
			pre = "<i>" + html.EscapeString(f.Form) + "</i>: "
		}
		fmt.Fprintf(&b, "<li>%sarms (mean ± SE): %s; seeds agreeing: %s; comparability: %s; interval rule alone: <b>%s</b> (%s); verdict: <b>%s</b> (%s)</li>",
			pre, html.EscapeString(f.armsText()), html.EscapeString(f.seedsText()), html.EscapeString(r.Labels.Humanize(f.ComparabilityNote())),
			html.EscapeString(f.Raw), html.EscapeString(r.Labels.Humanize(f.RawReason)),
			html.EscapeString(f.Verdict), html.EscapeString(r.Labels.Humanize(f.Reason)))
	}
	if d := strings.TrimPrefix(strings.TrimPrefix(v.Details(), "`"+c.ID+"`"), " "); d != "" {
		d = strings.TrimPrefix(d, "; ")
		fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(d))
	}
	b.WriteString("</ul></li>\n")
	return b.String()
}

// GroupedHTML renders the verdicts as HTML, grouped by the table or figure of the paper each
// claim tests ([ClaimsReport.Groups]): a headline with the counts, then per group a heading with
// its counts, a four-column table with one line per claim (id, the paper's words shortened to
// [ShortClaimLen], verdict, effect [95 % CI]) and the details of its claims folded in a
// <details> element (closed: JupyterLab and the HTML export show only its summary line). Each
// group is folded too, under its heading: the sections of a paper notebook show each claim beside
// the table it rests on, and this index of all of them used to add 3,000-4,500 px to its results.
func (r *ClaimsReport) GroupedHTML() string {
	var b strings.Builder
	groups := r.Groups()
	fmt.Fprintf(&b, "<p><b>Claims of the paper (%s), tested at %s scale: %s%s</b>, in %d groups by the table or figure of the paper they test, each folded (click to open): one line per claim, then its arms, seeds, comparability and the interval rule's own verdict, folded again. Generated from the stored records and <code>claims.yaml</code>.</p>\n",
		html.EscapeString(r.Paper), html.EscapeString(r.Scale), html.EscapeString(r.OutcomeText()), html.EscapeString(r.InconclusiveSplit()), len(groups))
	if r.provisional() {
		b.WriteString("<p><b>Provisional:</b> records written from a tree with uncommitted changes are included in these verdicts.</p>\n")
	}
	left := ` style="text-align:left"`
	for _, g := range groups {
		n := len(g.Verdicts)
		fmt.Fprintf(&b, "<details><summary><b>%s</b> — %d claim%s: %s</summary>\n", html.EscapeString(g.Name), n, plural(n), html.EscapeString(OutcomeText(g.Verdicts)))
		fmt.Fprintf(&b, "<table>\n<thead><tr><th%s>id</th><th%s>claim</th><th%s>verdict</th><th%s>effect [95 %% CI]</th></tr></thead>\n<tbody>\n", left, left, left, left)
		for k := range g.Verdicts {
			v := &g.Verdicts[k]
			fmt.Fprintf(&b, "<tr><td%s><code>%s</code></td><td%s>%s</td><td%s>%s</td><td%s>%s</td></tr>\n",
				left, html.EscapeString(v.Claim.ID), left, html.EscapeString(ShortClaim(v.Claim.Paper, ShortClaimLen)),
				left, v.verdictCell(), left, v.effectCell())
		}
		b.WriteString("</tbody>\n</table>\n")
		fmt.Fprintf(&b, "<details><summary>Details of the %d claim%s of %s: arms, seeds, comparability, the interval rule's verdict</summary>\n<ul>\n", n, plural(n), html.EscapeString(g.Name))
		for k := range g.Verdicts {
			b.WriteString(r.detailItem(&g.Verdicts[k]))
		}
		b.WriteString("</ul>\n</details>\n</details>\n")
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// EffectText is the verdict's effect as the verdict tables print it: the mean paired difference
// with its 95 % interval and unit (×factor, the claim's digits; "per decade" for a trend on a log
// axis); "—" without paired differences.
func (v *ClaimVerdict) EffectText() string { return v.effectText() }
