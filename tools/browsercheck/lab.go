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

	"github.com/chromedp/chromedp"
)

// LabState is what a JupyterLab notebook panel reports: read from the notebook's model (cells,
// execution counts, output types) and from the DOM (rendered images), with the kernel's status.
type LabState struct {
	Path      string   `json:"path"`
	Cells     int      `json:"cells"`      // all cells of the notebook model
	Rendered  int      `json:"rendered"`   // .jp-Cell elements in the panel
	CodeCells int      `json:"code_cells"` // non-empty code cells
	Pending   int      `json:"pending"`    // code cells without an execution count (not run, or running)
	Kernel    string   `json:"kernel"`     // the kernel's name ("gonb")
	Status    string   `json:"status"`     // the kernel's status ("idle", "busy", …)
	Images    int      `json:"images"`     // <img> elements in output areas (rendered)
	PNGs      int      `json:"pngs"`       // outputs with an image/png entry in the model
	Errors    int      `json:"errors"`     // outputs of type "error" in the model
	ErrorText []string `json:"error_text"` // their ename/evalue, for the report
}

// Verdict returns nil when a run passed: every code cell ran, the kernel is idle, no error output,
// at least minImages images rendered.
func (s LabState) Verdict(minImages int) error {
	var errs []error
	if s.Pending > 0 {
		errs = append(errs, fmt.Errorf("%d of %d code cells did not run", s.Pending, s.CodeCells))
	}
	if s.Errors > 0 {
		errs = append(errs, fmt.Errorf("%d error outputs: %s", s.Errors, strings.Join(s.ErrorText, " | ")))
	}
	if s.Images < minImages {
		errs = append(errs, fmt.Errorf("%d images rendered, want at least %d", s.Images, minImages))
	}
	return errors.Join(errs...)
}

// jsLabPanel finds the notebook panel of path PATH among JupyterLab's main-area widgets (the app is
// window.jupyterapp: the server runs with --LabApp.expose_app_in_browser).
const jsLabPanel = `(() => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  return Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === PATH && w.content && w.content.model) || null;
})()`

// labJS returns JavaScript that evaluates body with `panel` bound to the panel of path (or returns
// fallback when there is none yet).
func labJS(path, body, fallback string) string {
	p, _ := json.Marshal(path)
	return "(() => { const panel = " + strings.Replace(jsLabPanel, "PATH", string(p), 1) +
		"; if (!panel) return " + fallback + "; " + body + " })()"
}

const jsLabState = `
  const s = panel.sessionContext;
  const k = s && s.session && s.session.kernel;
  const cells = Array.from(panel.content.model.cells);
  const code = cells.filter(c => c.type === 'code' && c.sharedModel.getSource().trim() !== '');
  let pngs = 0, errors = 0; const errText = [];
  for (const c of code) {
    for (const o of c.outputs.toJSON()) {
      if (o.output_type === 'error') { errors++; errText.push((o.ename + ': ' + o.evalue).slice(0, 300)); }
      if (o.data && o.data['image/png']) pngs++;
    }
  }
  return {
    path: panel.context.path,
    cells: cells.length,
    rendered: panel.content.node.querySelectorAll('.jp-Cell').length,
    code_cells: code.length,
    pending: code.filter(c => c.executionCount === null || c.executionCount === undefined || c.executionState === 'running').length,
    kernel: k ? k.name : '',
    status: k ? k.status : '',
    images: panel.content.node.querySelectorAll('.jp-OutputArea-output img').length,
    pngs: pngs, errors: errors, error_text: errText,
  };`

// checkLab opens each notebook (its path relative to the server's root directory) through
// JupyterLab's UI at base/lab/tree/PATH, waits until its panel has rendered every cell and its
// kernel is idle, and screenshots it (<out>/<name>-lab.png). For each notebook in runs it then
// clears the outputs, runs all cells with JupyterLab's own command, waits for the run to finish,
// screenshots the last rendered image (<out>/<name>-lab-run.png) and applies [LabState.Verdict].
// The token goes in the first URL only; JupyterLab keeps it in a cookie.
func checkLab(ctx context.Context, chromium, base, token string, notebooks, runs []string, minImages int, absOut string, stdout io.Writer) error {
	t0 := time.Now()
	userData, err := os.MkdirTemp("", "browsercheck-lab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(userData)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	toRun := map[string]bool{}
	for _, r := range runs {
		toRun[r] = true
	}
	type result struct {
		Opened LabState  `json:"opened"`
		OpenS  float64   `json:"open_s"`
		Run    *LabState `json:"run,omitempty"`
		RunS   float64   `json:"run_s,omitempty"`
		Error  string    `json:"error,omitempty"`
	}
	results := map[string]*result{}
	var errs []error
	first := true
	for _, nb := range notebooks {
		res := &result{}
		results[nb] = res
		err := func() error {
			tOpen := time.Now()
			u := fmt.Sprintf("%s/lab/tree/%s?reset", base, (&url.URL{Path: nb}).EscapedPath())
			if first {
				u += "&token=" + url.QueryEscape(token)
				first = false
			}
			if err := chromedp.Run(bctx, chromedp.Navigate(u)); err != nil {
				return fmt.Errorf("navigating: %w", err)
			}
			var st LabState
			if err := poll(bctx, 250*time.Millisecond, func() (bool, error) {
				var ok bool
				err := chromedp.Run(bctx, chromedp.Evaluate(labJS(nb, jsLabState, "null"), &st))
				if err != nil {
					// null before the panel exists: keep waiting.
					if strings.Contains(err.Error(), "null") || strings.Contains(err.Error(), "encountered an undefined") {
						return false, nil
					}
					return false, err
				}
				ok = st.Cells > 0 && st.Rendered == st.Cells && st.Kernel != "" && st.Status == "idle"
				return ok, nil
			}); err != nil {
				return fmt.Errorf("waiting for the notebook panel to render with an idle kernel: %w (%+v)", err, st)
			}
			// Let Markdown, formulas and images finish drawing.
			if err := chromedp.Run(bctx, chromedp.Sleep(1500*time.Millisecond), chromedp.Evaluate(labJS(nb, jsLabState, "null"), &st)); err != nil {
				return err
			}
			res.Opened, res.OpenS = st, time.Since(tOpen).Seconds()
			fmt.Fprintf(stdout, "browsercheck: opened %s in JupyterLab in %.1f s: %d cells rendered, kernel %s %s, %d images\n",
				nb, res.OpenS, st.Rendered, st.Kernel, st.Status, st.Images)
			if err := labShot(bctx, filepath.Join(absOut, labName(nb)+"-lab.png"), ""); err != nil {
				return err
			}
			if !toRun[nb] {
				return nil
			}
			tRun := time.Now()
			var ok bool
			runAll := `app = window.jupyterapp; app.shell.activateById(panel.id);
  app.commands.execute('notebook:clear-all-cell-outputs').then(() => app.commands.execute('notebook:run-all-cells'));
  return true;`
			if err := chromedp.Run(bctx, chromedp.Evaluate(labJS(nb, "let "+runAll, "false"), &ok)); err != nil || !ok {
				return fmt.Errorf("running all cells: %v (started %v)", err, ok)
			}
			// The run is over when every code cell has an execution count and the kernel is idle; after
			// an error the kernel skips the queued cells, so also stop once an error shows and the kernel
			// has stayed idle for 5 s.
			idleWithErrors := 0
			waitErr := poll(bctx, 500*time.Millisecond, func() (bool, error) {
				if err := chromedp.Run(bctx, chromedp.Evaluate(labJS(nb, jsLabState, "null"), &st)); err != nil {
					return false, err
				}
				if time.Since(tRun) < 2*time.Second {
					return false, nil // the clear and the first execute request are still on their way
				}
				if st.Status == "idle" && st.Errors > 0 {
					idleWithErrors++
				} else {
					idleWithErrors = 0
				}
				return st.Status == "idle" && (st.Pending == 0 || idleWithErrors >= 10), nil
			})
			_ = chromedp.Run(bctx, chromedp.Sleep(time.Second), chromedp.Evaluate(labJS(nb, jsLabState, "null"), &st))
			res.Run, res.RunS = &st, time.Since(tRun).Seconds()
			fmt.Fprintf(stdout, "browsercheck: ran %s in JupyterLab in %.1f s: %d code cells, %d pending, %d images (%d PNG outputs), %d errors\n",
				nb, res.RunS, st.CodeCells, st.Pending, st.Images, st.PNGs, st.Errors)
			if err := labShot(bctx, filepath.Join(absOut, labName(nb)+"-lab-run.png"), ".jp-OutputArea-output img"); err != nil {
				fmt.Fprintf(stdout, "browsercheck: screenshot of %s: %v\n", nb, err)
			}
			if waitErr != nil {
				return fmt.Errorf("waiting for the cells to finish: %w (%+v)", waitErr, st)
			}
			return st.Verdict(minImages)
		}()
		if err != nil {
			res.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", nb, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	if b, err := json.MarshalIndent(struct {
		Notebooks map[string]*result `json:"notebooks"`
		TotalS    float64            `json:"total_s"`
	}{results, time.Since(t0).Seconds()}, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(absOut, "summary.json"), append(b, '\n'), 0o644)
	}
	return errors.Join(errs...)
}

func labName(nb string) string { return strings.TrimSuffix(filepath.Base(nb), ".ipynb") }

// labShot saves a screenshot of the browser window to file; with sel, it first scrolls the last
// element that matches sel (a run's last figure) to the middle of the notebook's view.
func labShot(ctx context.Context, file, sel string) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var shot []byte
	actions := []chromedp.Action{}
	if sel != "" {
		js := fmt.Sprintf(`(() => { const all = document.querySelectorAll(%q); const e = all[all.length - 1]; if (e) e.scrollIntoView({block: 'center'}); return !!e; })()`, sel)
		var found bool
		actions = append(actions, chromedp.Evaluate(js, &found), chromedp.Sleep(500*time.Millisecond))
	}
	actions = append(actions, chromedp.CaptureScreenshot(&shot))
	if err := chromedp.Run(sctx, actions...); err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	return os.WriteFile(file, shot, 0o644)
}
