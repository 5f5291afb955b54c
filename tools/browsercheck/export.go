package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The check of the HTML exports (notebooks/<name>.html) as a reader sees them: each is opened
// from disk in headless Chromium with the network cut off (every request goes to a proxy that
// does not exist) and the page's own scripts disabled, so what it shows is what it shows offline
// on any machine (this one has Debian's MathJax under file:///usr/share, which the exports used
// to load). It fails when a formula is left as
// TeX text or a typeset formula has no size, when the notebook's first result (the cell tagged
// first-result) starts below the first screen, or when a table runs past the right edge of the
// page's text (a Markdown cell's, as the browser lays it out: the drawn counterpart of nbcheck's
// wide-table estimate); it saves a screenshot of the first screen.

// Screen is "one screen": the window the exports are opened in. A notebook opens on its abstract
// and first result when the first-result cell starts at least FirstResultShown pixels above the
// screen's bottom edge.
const (
	ScreenWidth, ScreenHeight = 1200, 1080
	FirstResultShown          = 120
)

// ExportState is what an export's page reports once loaded.
type ExportState struct {
	Math        int      `json:"math"`         // typeset formulas (<math> elements)
	EmptyMath   int      `json:"empty_math"`   // of them, drawn with no width or height
	RawTeX      []string `json:"raw_tex"`      // $…$ left in the visible text outside code
	Abstract    float64  `json:"abstract"`     // top of the cell tagged abstract, px (-1: none)
	FirstResult float64  `json:"first_result"` // top of the cell tagged first-result, px (-1: none)
	Height      float64  `json:"height"`       // the whole page, px
	// PageRight is the right edge of the page's text (the first Markdown cell's rendered text), px;
	// WideTables the tables whose right edge lies past it: "<first header cells>: <width> px".
	PageRight  float64  `json:"page_right"`
	WideTables []string `json:"wide_tables"`
}

// Verdict returns nil when the export reads: every formula typeset and drawn, and, where the
// notebook tags its first result, that result starting within the first screen (below the abstract).
func (s ExportState) Verdict() error {
	var errs []error
	if len(s.RawTeX) > 0 {
		errs = append(errs, fmt.Errorf("%d formulas shown as TeX: %s", len(s.RawTeX), strings.Join(s.RawTeX, " | ")))
	}
	if s.EmptyMath > 0 {
		errs = append(errs, fmt.Errorf("%d of %d formulas drawn empty", s.EmptyMath, s.Math))
	}
	if s.FirstResult >= 0 {
		if s.FirstResult > ScreenHeight-FirstResultShown {
			errs = append(errs, fmt.Errorf("the first result starts at %.0f px, below the first screen (%d px)", s.FirstResult, ScreenHeight))
		}
		if s.Abstract < 0 || s.Abstract > s.FirstResult {
			errs = append(errs, fmt.Errorf("no abstract before the first result (abstract at %.0f px, first result at %.0f px)", s.Abstract, s.FirstResult))
		}
	}
	if len(s.WideTables) > 0 {
		errs = append(errs, fmt.Errorf("%d tables wider than the page (its text ends at %.0f px): %s", len(s.WideTables), s.PageRight, strings.Join(s.WideTables, " | ")))
	}
	return errors.Join(errs...)
}

const jsExportState = `(() => {
  const top = (sel) => { const e = document.querySelector(sel); return e ? e.getBoundingClientRect().top + window.scrollY : -1; };
  const maths = Array.from(document.querySelectorAll('math'));
  const empty = maths.filter(m => { const r = m.getBoundingClientRect(); return r.width < 1 || r.height < 1; }).length;
  // Visible prose: the text of the page without code, preformatted output and typeset formulas.
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, math, .katex').forEach(e => e.remove());
  const raw = [];
  const re = /\$\$[\s\S]+?\$\$|\$[^\s$][^$\n]*?[^\s$\\]\$(?![0-9])|\$[^\s$]\$(?![0-9])/g;
  let m;
  while ((m = re.exec(clone.textContent)) !== null && raw.length < 10) raw.push(m[0].slice(0, 80));
  // Tables past the right edge of the text (1 px of rounding allowed).
  const text = document.querySelector('.jp-MarkdownCell .jp-RenderedMarkdown');
  const right = text ? text.getBoundingClientRect().right : document.documentElement.clientWidth;
  const wide = Array.from(document.querySelectorAll('table')).filter(t => t.getBoundingClientRect().right > right + 1)
    .map(t => (t.rows[0] ? t.rows[0].innerText.replace(/\s+/g, ' ').slice(0, 50) : '') + ': ' + Math.round(t.getBoundingClientRect().width) + ' px');
  return {math: maths.length, empty_math: empty, raw_tex: raw, page_right: right, wide_tables: wide,
    abstract: top('.celltag_abstract'), first_result: top('.celltag_first-result'),
    height: document.documentElement.scrollHeight};
})()`

// checkExports opens each HTML export offline, checks it and saves <out>/<name>-export.png, the
// first screen.
func checkExports(ctx context.Context, chromium string, files []string, absOut string, stdout io.Writer) error {
	userData, err := os.MkdirTemp("", "browsercheck-export-")
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
		// Offline: every request (the CDN's MathJax included) goes to a proxy nobody listens on.
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	var errs []error
	summary := map[string]ExportState{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		u := (&url.URL{Scheme: "file", Path: abs}).String()
		var st ExportState
		var shot []byte
		err = chromedp.Run(bctx,
			emulation.SetScriptExecutionDisabled(true),
			chromedp.Navigate(u),
			chromedp.WaitReady("body"),
			chromedp.Sleep(2*time.Second), // the (failing) CDN requests and layout
			chromedp.Evaluate(jsExportState, &st),
			chromedp.CaptureScreenshot(&shot),
		)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		shotFile := filepath.Join(absOut, name+"-export.png")
		if err := os.WriteFile(shotFile, shot, 0o644); err != nil {
			return err
		}
		summary[f] = st
		fmt.Fprintf(stdout, "browsercheck: export %s offline: %d formulas typeset (%d empty), %d as TeX, abstract at %.0f px, first result at %.0f px of %.0f, %d tables wider than the page; first screen %s\n",
			f, st.Math, st.EmptyMath, len(st.RawTeX), st.Abstract, st.FirstResult, st.Height, len(st.WideTables), shotFile)
		if err := st.Verdict(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		}
	}
	if b, err := json.MarshalIndent(summary, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(absOut, "exports.json"), append(b, '\n'), 0o644)
	}
	return errors.Join(errs...)
}
