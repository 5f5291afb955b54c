package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
)

// The reader's check (browsercheck -read): every page a reader opens, laid out whole as they see
// it — the HTML exports of the notebooks full-page in a desktop window, the READMEs rendered as
// GitHub renders Markdown, in its 980-px column. Each page is measured (its height, and for a
// notebook the height of its results: everything above its first "Appendix" heading), its tables
// that do not fit are listed, and it is saved as a column of screenshots (<out>/<name>/NN.png,
// [TileHeight] px each) to be looked at; <out>/read.md and <out>/read.json sum it up. It fails
// when a notebook's results are longer than [MaxResults] or a table does not fit.

const (
	// MaxResults is the most a notebook's results may take, px: a reader scrolls through them in a
	// few minutes (the appendices, after them, are for who wants them).
	MaxResults = 20000
	// GitHubColumn is the width of a README's text on GitHub, px.
	GitHubColumn = 980
	// TileHeight is the height of one screenshot of a page's column, px.
	TileHeight = 2000
)

// PageState is what a page reports once laid out.
type PageState struct {
	Kind     string  `json:"kind"`     // "notebook" (an HTML export) or "readme" (Markdown as GitHub shows it)
	Height   float64 `json:"height"`   // the whole page, px
	Appendix float64 `json:"appendix"` // top of the first heading that starts with "Appendix", px (-1: none)
	// WideTables are the tables that do not fit the text's width: drawn past its right edge (an
	// export) or scrolled sideways in GitHub's column (a README): "<first header cells>: <width> px".
	WideTables []string `json:"wide_tables"`
	// Parts is where the results' height goes, px: "figures", "tables", "notes" (the paper's
	// numbers' sources under the tables), "lists" (the claims), "code" (code cells' inputs, a
	// README's code blocks); what a closed <details> folds is not counted.
	Parts  map[string]float64 `json:"parts"`
	Images int                `json:"images"` // images shown
	// Sections are the page's h1-h3 headings with the height of what each heads (to the next), px.
	Sections  []Section `json:"sections"`
	BadImages []string  `json:"bad_images"` // images that did not load (their src)
	Elided    []string  `json:"elided"`     // table cells cut with "…" (their text)
	Tiles     []string  `json:"tiles"`      // the screenshots, top to bottom
	Results   float64   `json:"results"`    // the results' height: Appendix, or Height without one
	Name      string    `json:"name"`       // the file read
	Seconds   float64   `json:"seconds"`    // time to lay out and shoot it
	Problems  []string  `json:"problems"`   // what Verdict found
}

// Section is one heading of a page and the height of what it heads, px.
type Section struct {
	Heading string  `json:"heading"`
	Height  float64 `json:"height"`
}

// results returns the height of the page's results: up to its first appendix, or all of it.
func (s PageState) results() float64 {
	if s.Appendix >= 0 {
		return s.Appendix
	}
	return s.Height
}

// Verdict returns nil when the page reads: a notebook's results within [MaxResults], every table
// within the text's width, every image loaded, no table cell cut with "…".
func (s PageState) Verdict() error {
	var errs []error
	if s.Kind == "notebook" && s.results() > MaxResults {
		where := "the whole page (no Appendix heading)"
		if s.Appendix >= 0 {
			where = "up to its first Appendix heading"
		}
		errs = append(errs, fmt.Errorf("its results take %.0f px, %s: more than %d px (move the tuning and other detail into an appendix)", s.results(), where, MaxResults))
	}
	if len(s.WideTables) > 0 {
		errs = append(errs, fmt.Errorf("%d tables wider than the text: %s", len(s.WideTables), strings.Join(s.WideTables, " | ")))
	}
	if len(s.BadImages) > 0 {
		errs = append(errs, fmt.Errorf("%d images did not load: %s", len(s.BadImages), strings.Join(s.BadImages, " | ")))
	}
	if len(s.Elided) > 0 {
		errs = append(errs, fmt.Errorf("%d table cells cut with \"…\": %s", len(s.Elided), strings.Join(s.Elided, " | ")))
	}
	return errors.Join(errs...)
}

const jsPageState = `(() => {
  const readme = !!document.querySelector('article.markdown-body');
  const heads = Array.from(document.querySelectorAll('h1, h2, h3'));
  const app = heads.find(h => /^\s*Appendix\b/.test(h.textContent));
  // The text's right edge: GitHub's column, or an export's first Markdown cell.
  const text = document.querySelector('article.markdown-body') || document.querySelector('.jp-MarkdownCell .jp-RenderedMarkdown');
  const right = text ? text.getBoundingClientRect().right : document.documentElement.clientWidth;
  const label = t => (t.rows[0] ? t.rows[0].innerText.replace(/\s+/g, ' ').trim().slice(0, 50) : '');
  const wide = Array.from(document.querySelectorAll('table')).filter(t =>
      t.getBoundingClientRect().right > right + 1 || t.scrollWidth > t.clientWidth + 1)
    .map(t => label(t) + ': ' + Math.round(Math.max(t.scrollWidth, t.getBoundingClientRect().width)) + ' px');
  const imgs = Array.from(document.querySelectorAll('img'));
  const bad = imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => (i.getAttribute('src') || '').slice(0, 80));
  const elided = Array.from(document.querySelectorAll('td, th')).map(c => c.innerText.trim())
    .filter(t => /\u2026$/.test(t)).slice(0, 10);
  // Where the results' height goes: the figures, the tables, the notes on the paper's numbers under
  // them, the lists (claims), the code shown; each element counted once, above the first appendix.
  const end = app ? app.getBoundingClientRect().top + window.scrollY : Infinity;
  // (Chromium lays out a closed <details> when asked, so what it folds is left out by hand.)
  const shown = e => { const d = e.closest('details:not([open])'); return !d || (e.closest('summary') && e.closest('summary').parentElement === d); };
  const sum = els => Math.round(els.filter(e => shown(e) && e.getBoundingClientRect().top + window.scrollY < end)
    .reduce((a, e) => a + e.getBoundingClientRect().height, 0));
  const outer = sel => Array.from(document.querySelectorAll(sel)).filter(e => !e.parentElement.closest(sel));
  const parts = {figures: sum(outer('img')), tables: sum(outer('table')),
    notes: sum(Array.from(document.querySelectorAll('p, details')).filter(p => /^\s*Paper numbers/.test(p.textContent))),
    lists: sum(outer('ul, ol')), code: sum(outer('.jp-CodeCell .jp-InputArea, .markdown-body pre'))};
  // The sections (h1-h3) and their heights.
  const tops = heads.map(h => h.getBoundingClientRect().top + window.scrollY);
  const sections = heads.map((h, i) => ({heading: h.textContent.replace(/\s+/g, ' ').replace(/\u00b6/g, '').trim().slice(0, 70),
    height: Math.round((i + 1 < tops.length ? tops[i + 1] : document.documentElement.scrollHeight) - tops[i])}));
  return {kind: readme ? 'readme' : 'notebook', height: document.documentElement.scrollHeight, parts: parts, sections: sections,
    appendix: app ? app.getBoundingClientRect().top + window.scrollY : -1,
    wide_tables: wide, images: imgs.length, bad_images: bad, elided: elided};
})()`

// githubCSS lays a README out as GitHub's Markdown column does (github-markdown-css, the rules
// that decide sizes: font, headings, tables that scroll sideways, images scaled to the column).
const githubCSS = `
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: content-box; width: 980px; margin: 0 auto; padding: 32px 16px;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  font-size: 16px; line-height: 1.5; color: #1f2328; word-wrap: break-word; }
.markdown-body h1, .markdown-body h2 { padding-bottom: .3em; border-bottom: 1px solid #d1d9e0; }
.markdown-body h1 { font-size: 2em; } .markdown-body h2 { font-size: 1.5em; } .markdown-body h3 { font-size: 1.25em; }
.markdown-body h1, .markdown-body h2, .markdown-body h3, .markdown-body h4 { margin: 24px 0 16px; font-weight: 600; line-height: 1.25; }
.markdown-body p, .markdown-body ul, .markdown-body ol, .markdown-body table, .markdown-body pre, .markdown-body blockquote { margin: 0 0 16px; }
.markdown-body ul, .markdown-body ol { padding-left: 2em; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto; border-spacing: 0; border-collapse: collapse; }
.markdown-body td, .markdown-body th { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body img { max-width: 100%; box-sizing: content-box; }
.markdown-body code { padding: .2em .4em; font-size: 85%; background: rgba(129,139,152,.12); border-radius: 6px;
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45; background: #f6f8fa; border-radius: 6px; }
.markdown-body pre code { padding: 0; background: transparent; font-size: 100%; }
.markdown-body blockquote { padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; }
.markdown-body details summary { cursor: pointer; }
`

// RenderReadme renders Markdown (GitHub Flavored: tables, strikethrough, autolinks, task lists,
// raw HTML such as <details>) into a page laid out as GitHub's README column; relative links and
// images resolve from dir.
func RenderReadme(md []byte, dir string) ([]byte, error) {
	conv := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID()),
		goldmark.WithRendererOptions(html.WithUnsafe()),
	)
	var body bytes.Buffer
	if err := conv.Convert(md, &body); err != nil {
		return nil, err
	}
	base := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir) + "/"}).String()
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><base href=\"%s\"><style>%s</style></head>\n<body><article class=\"markdown-body\">\n", base, githubCSS)
	b.Write(body.Bytes())
	b.WriteString("</article></body></html>\n")
	return b.Bytes(), nil
}

// pageName is the name of a page's screenshots and report row: notebooks/cit.html -> cit,
// README.md -> README, reproductions/cit/README.md -> reproductions-cit-README.
func pageName(f string) string {
	f = filepath.ToSlash(filepath.Clean(f))
	f = strings.TrimSuffix(f, filepath.Ext(f))
	f = strings.TrimPrefix(f, "notebooks/")
	return strings.ReplaceAll(f, "/", "-")
}

// checkRead lays out each page (an .html export or a .md README), measures it and saves its
// screenshots under absOut, and writes absOut/read.json and absOut/read.md.
func checkRead(ctx context.Context, chromium string, files []string, absOut string, stdout io.Writer) error {
	userData, err := os.MkdirTemp("", "browsercheck-read-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(userData)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(ScreenWidth, ScreenHeight),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("allow-file-access-from-files", true),
		chromedp.ProxyServer("http://127.0.0.1:9"), // offline, as checkExports
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	var errs []error
	var states []PageState
	for _, f := range files {
		t0 := time.Now()
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		name := pageName(f)
		target := abs
		if strings.EqualFold(filepath.Ext(f), ".md") {
			md, err := os.ReadFile(abs)
			if err != nil {
				return err
			}
			page, err := RenderReadme(md, filepath.Dir(abs))
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			target = filepath.Join(absOut, name+".html")
			if err := os.WriteFile(target, page, 0o644); err != nil {
				return err
			}
		}
		var st PageState
		err = chromedp.Run(bctx,
			emulation.SetScriptExecutionDisabled(true),
			chromedp.Navigate((&url.URL{Scheme: "file", Path: target}).String()),
			chromedp.WaitReady("body"),
			chromedp.Sleep(2*time.Second), // images, the (failing) CDN requests and layout
			chromedp.Evaluate(jsPageState, &st),
		)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		st.Name, st.Results = filepath.ToSlash(f), st.results()
		dir := filepath.Join(absOut, name)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		n := int(math.Ceil(st.Height / TileHeight))
		for i := range n {
			var shot []byte
			h := math.Min(TileHeight, st.Height-float64(i*TileHeight))
			err := chromedp.Run(bctx, chromedp.ActionFunc(func(ctx context.Context) error {
				var err error
				shot, err = page.CaptureScreenshot().WithFormat(page.CaptureScreenshotFormatPng).
					WithCaptureBeyondViewport(true).
					WithClip(&page.Viewport{X: 0, Y: float64(i * TileHeight), Width: ScreenWidth, Height: h, Scale: 1}).Do(ctx)
				return err
			}))
			if err != nil {
				return fmt.Errorf("%s: screenshot %d: %w", f, i, err)
			}
			tile := filepath.Join(name, fmt.Sprintf("%02d.png", i))
			if err := os.WriteFile(filepath.Join(absOut, tile), shot, 0o644); err != nil {
				return err
			}
			st.Tiles = append(st.Tiles, tile)
		}
		st.Seconds = time.Since(t0).Seconds()
		if err := st.Verdict(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			st.Problems = strings.Split(err.Error(), "\n")
		}
		states = append(states, st)
		fmt.Fprintf(stdout, "browsercheck: read %s (%s): %.0f px, results %.0f px, %d images, %d wide tables, %d screenshots in %s/\n",
			f, st.Kind, st.Height, st.Results, st.Images, len(st.WideTables), len(st.Tiles), dir)
	}
	b, err := json.MarshalIndent(states, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(absOut, "read.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(absOut, "read.md"), []byte(ReadReport(states)), 0o644); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// ReadReport is the Markdown summary of a read: one row per page, heights in px.
func ReadReport(states []PageState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The pages as a reader sees them\n\n")
	fmt.Fprintf(&b, "Written by `scripts/check-reading.sh` (headless Chromium, `tools/browsercheck -read`): each notebook's HTML export\n")
	fmt.Fprintf(&b, "laid out whole in a %d-px window, each README rendered as GitHub renders it, in its %d-px column.\n", ScreenWidth, GitHubColumn)
	fmt.Fprintf(&b, "A notebook's results are what lies above its first Appendix heading; they may take at most %s px.\n\n", thousands(MaxResults))
	b.WriteString("| page | height (px) | results (px) | images | tables too wide | verdict |\n|---|--:|--:|--:|--:|---|\n")
	for _, s := range states {
		res := "—"
		if s.Kind == "notebook" {
			res = thousands(s.Results)
		}
		verdict := "reads"
		if len(s.Problems) > 0 {
			verdict = strings.ReplaceAll(strings.Join(s.Problems, "; "), "|", `\|`)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %d | %s |\n", s.Name, thousands(s.Height), res, s.Images, len(s.WideTables), verdict)
	}
	return b.String()
}

// thousands formats px rounded to a whole number with a comma every three digits: 20000 -> 20,000.
func thousands(px float64) string {
	s := fmt.Sprintf("%.0f", math.Round(px))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
