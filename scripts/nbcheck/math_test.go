package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// page is an HTML export's skeleton around body, the way nbconvert writes it.
func page(head, body string) []byte {
	return []byte("<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\" />\n" + head + "</head><body>" + body + "</body></html>\n")
}

// Today's exports (before issue #32): Debian's nbconvert links MathJax and require.js as file://
// paths, and the Markdown's formulas stay TeX text for that MathJax to typeset.
const todaysHead = `<script src="file:///usr/share/javascript/requirejs/require.min.js"></script>
<!-- Load mathjax -->
    <script src="file:///usr/share/javascript/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"> </script>
`

func TestFindMath(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string // the TeX found, $$ marked "D:"
	}{
		{`<p>With cosine similarities $S$ of an anchor $a$: $L_e = \frac{1}{N_T}\sum [1 - e^{-(S_{an} - S_{ap})}]_+$ (Eq. 4)</p>`, []string{"S", "a", `L_e = \frac{1}{N_T}\sum [1 - e^{-(S_{an} - S_{ap})}]_+`}},
		{"<p>a display\n$$\nL = \\gamma L_e + (1-\\gamma) L_p\n$$\nand $x &lt; 1$</p>", []string{`D:L = \gamma L_e + (1-\gamma) L_p`, "x < 1"}},
		{`<p>it costs $5 and $10, or \$x\$</p>`, nil},
		{`<p>run with <code>$SCALE</code> or <code>$x$</code></p><pre>fmt.Printf("$%d$", n)</pre>`, nil},
		{`<div class="highlight"><pre><span></span><span class="c1">// $S_{an}$ in a comment</span></pre></div><p>$m^+$</p>`, []string{"m^+"}},
		{`<script type="text/x-mathjax-config">inlineMath: [ ['$','$'], ["\\(","\\)"] ]</script><style>a{content:"$x$"}</style>`, nil},
		{`<p><span class="katex"><math><annotation encoding="application/x-tex">$S$</annotation></math></span></p>`, nil},
		{`<img src="data:image/png;base64,AA$x$BB" alt="$y$"><p>$ not math $</p>`, nil},
	} {
		var got []string
		for _, m := range FindMath(page("", c.body)) {
			s := m.TeX
			if m.Display {
				s = "D:" + s
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("FindMath(%q) = %q, want %q", c.body, got, c.want)
		}
	}
}

func TestRenderMath(t *testing.T) {
	in := page("", `<p>$S$ and $$x^2$$, <code>$y$</code></p>`)
	out, n, err := RenderMath(in, func(ms []Math) ([]string, error) {
		var r []string
		for _, m := range ms {
			r = append(r, fmt.Sprintf("<math>%s/%v</math>", m.TeX, m.Display))
		}
		return r, nil
	})
	if err != nil || n != 2 {
		t.Fatalf("RenderMath: %d formulas, %v", n, err)
	}
	if want := `<p><math>S/false</math> and <math>x^2/true</math>, <code>$y$</code></p>`; !strings.Contains(string(out), want) {
		t.Errorf("RenderMath: %s", out)
	}
	if ms := FindMath(out); len(ms) != 0 {
		t.Errorf("formulas left after RenderMath: %v", ms)
	}
	if strings.Count(string(out), `id="dmlkit-math"`) != 1 {
		t.Errorf("RenderMath did not add its style once: %s", out)
	}
}

// TestKaTeX runs the real renderer when Node.js and KaTeX are installed (the export needs them).
func TestKaTeX(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	if err := exec.Command("node", "-e", `require(process.env.KATEX_JS || "/usr/share/javascript/katex/katex.js")`).Run(); err != nil {
		t.Skip("no KaTeX (apt-get install libjs-katex)")
	}
	html, err := KaTeX("../katex-render.js")([]Math{{TeX: `S_{an}`}, {TeX: `\frac{1}{N_T}\sum_i x_i`, Display: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(html) != 2 || !strings.Contains(html[0], "<math") || !strings.Contains(html[1], `display="block"`) {
		t.Errorf("KaTeX: %q", html)
	}
	if _, err := KaTeX("../katex-render.js")([]Math{{TeX: `\frac{1}{`}}); err == nil {
		t.Errorf("KaTeX accepted a broken formula")
	}
}

func TestLintExport(t *testing.T) {
	// Today's defect: file:// sources and raw TeX.
	ps := lintExport(page(todaysHead, `<p>With cosine similarities $S$ of an anchor</p>`))
	if kinds(ps) != "html-source,html-source,math" {
		t.Errorf("today's export: %v", ps)
	}
	for _, bad := range []string{`<link rel="stylesheet" href="file:///usr/share/javascript/katex/katex.min.css">`, `<script src='file:/x.js'></script>`} {
		if ps := lintExport(page(bad, "")); kinds(ps) != "html-source" {
			t.Errorf("%s: %v", bad, ps)
		}
	}
	// What the export script writes: public URLs and typeset formulas.
	good := `<script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/MathJax.js?config=TeX-AMS_CHTML-full,Safe"> </script>`
	if ps := lintExport(page(good, `<p>similarities <span class="katex"><math><mi>S</mi><annotation>S</annotation></math></span>, <code>$SCALE</code>, a file: URL in prose</p>`)); len(ps) != 0 {
		t.Errorf("a good export: %v", ps)
	}
}
