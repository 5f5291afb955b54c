// Command browsercheck runs a notebook the way a user does: in the classic Jupyter Notebook web
// UI, in headless Chromium driven with chromedp. It
//
//  1. starts `jupyter notebook --no-browser --ip=127.0.0.1` on a free port with a random token
//     (and --allow-root when run as root), serving the notebook's directory;
//  2. opens the notebook in Chromium, waits for the kernel to connect, turns autosave off so the
//     committed notebook is never rewritten, clears all outputs and runs all cells;
//  3. waits until no cell is pending and the kernel is idle;
//  4. fails if any `.output_error` is shown or fewer than -min-images images rendered in output
//     areas, and saves a full-page PNG screenshot (and a JSON summary) under -out.
//
// Usage (scripts/check-browser.sh sets up the environment):
//
//	browsercheck [-notebook notebooks/00_tour.ipynb] [-out out/browser] [-scale smoke] [-timeout 10m]
//	browsercheck -exports 'notebooks/*.html' [-out out/browser]
//	browsercheck -read 'notebooks/*.html README.md reproductions/*/README.md' [-out DIR]
//	JUPYTER_TOKEN=… browsercheck -lab http://127.0.0.1:PORT -lab-open a.ipynb,b.ipynb -lab-run a.ipynb [-out out/jupyterlab]
//
// With -exports it runs no notebook: it opens the HTML exports offline and checks their
// formulas and first screen instead (see [checkExports]). With -lab it starts no server either: it
// drives a running JupyterLab (scripts/check-jupyterlab.sh starts one) through its UI (see
// [checkLab]). With -read it lays out pages whole and screenshots them (see [checkRead]).
//
// SCALE and DMLKIT_FIGURES_DIR (default <out>/figures) are put in the server's, hence the
// kernel's, environment. It lives in the tools module so chromedp stays out of dmlkit's go.mod.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "browsercheck:", err)
		os.Exit(1)
	}
}

// State is what the page reports once all cells have run.
type State struct {
	Cells     int      `json:"cells"`      // non-empty code cells
	Pending   int      `json:"pending"`    // code cells not yet finished ("*" or never run)
	Idle      bool     `json:"idle"`       // the kernel indicator shows idle
	Images    int      `json:"images"`     // <img> elements inside output areas
	Errors    int      `json:"errors"`     // .output_error elements
	ErrorText []string `json:"error_text"` // their text, for the report
}

// Verdict returns nil when the run passed: every cell finished, no error output, at least
// minImages images.
func (s State) Verdict(minImages int) error {
	var errs []error
	if s.Pending > 0 {
		errs = append(errs, fmt.Errorf("%d of %d code cells did not finish", s.Pending, s.Cells))
	}
	if s.Errors > 0 {
		errs = append(errs, fmt.Errorf("%d error outputs: %s", s.Errors, strings.Join(s.ErrorText, " | ")))
	}
	if s.Images < minImages {
		errs = append(errs, fmt.Errorf("%d images rendered, want at least %d", s.Images, minImages))
	}
	return errors.Join(errs...)
}

// JavaScript run in the classic Notebook 6 page.
const (
	jsKernelReady = `typeof Jupyter !== 'undefined' && !!Jupyter.notebook && !!Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected()`
	jsRunAll      = `(() => { Jupyter.notebook.set_autosave_interval(0); Jupyter.notebook.clear_all_output(); Jupyter.notebook.execute_all_cells(); return true; })()`
	jsState       = `(() => {
  const cells = Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code' && c.get_text().trim() !== '');
  const pending = cells.filter(c => typeof c.input_prompt_number !== 'number').length;
  const errs = Array.from(document.querySelectorAll('.output_error')).map(e => e.innerText.slice(0, 300));
  return {
    cells: cells.length,
    pending: pending,
    idle: !!document.querySelector('#kernel_indicator_icon.kernel_idle_icon'),
    images: document.querySelectorAll('.output_area img').length,
    errors: errs.length,
    error_text: errs,
  };
})()`
)

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("browsercheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nbPath := fs.String("notebook", "notebooks/00_tour.ipynb", "notebook to run")
	out := fs.String("out", "out/browser", "directory for the screenshot, summary, server log and figures")
	scale := fs.String("scale", "smoke", "SCALE for the notebook: smoke, small or full")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit for the whole check")
	chromium := fs.String("chromium", "/usr/bin/chromium", "Chromium binary")
	jupyter := fs.String("jupyter", "jupyter", "the jupyter command")
	minImages := fs.Int("min-images", 1, "images that must render")
	exports := fs.String("exports", "", "do not run a notebook: check these HTML exports (a glob) offline")
	lab := fs.String("lab", "", "do not start a server: drive the JupyterLab server at this URL (token in $JUPYTER_TOKEN)")
	labOpen := fs.String("lab-open", "", "with -lab: notebooks to open, comma-separated, relative to the server's root directory")
	labRun := fs.String("lab-run", "", "with -lab: of those, the notebooks to run (Run All Cells), comma-separated")
	read := fs.String("read", "", "do not run a notebook: lay out these pages whole as a reader sees them (globs, space-separated: HTML exports, Markdown READMEs) and screenshot them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t0 := time.Now()
	absOut, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(absOut, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *exports != "" {
		files, err := filepath.Glob(*exports)
		if err != nil || len(files) == 0 {
			return fmt.Errorf("-exports %q: no files", *exports)
		}
		if err := checkExports(ctx, *chromium, files, absOut, stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "browsercheck: ok, %d exports in %.1f s\n", len(files), time.Since(t0).Seconds())
		return nil
	}
	if *read != "" {
		var files []string
		for _, g := range strings.Fields(*read) {
			m, err := filepath.Glob(g)
			if err != nil || len(m) == 0 {
				return fmt.Errorf("-read %q: no files", g)
			}
			files = append(files, m...)
		}
		if err := checkRead(ctx, *chromium, files, absOut, stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "browsercheck: ok, %d pages read in %.1f s\n", len(files), time.Since(t0).Seconds())
		return nil
	}
	if *lab != "" {
		split := func(s string) []string {
			var r []string
			for _, f := range strings.Split(s, ",") {
				if f = strings.TrimSpace(f); f != "" {
					r = append(r, f)
				}
			}
			return r
		}
		open, runs := split(*labOpen), split(*labRun)
		if len(open) == 0 {
			return fmt.Errorf("-lab needs -lab-open")
		}
		if err := checkLab(ctx, *chromium, strings.TrimRight(*lab, "/"), os.Getenv("JUPYTER_TOKEN"), open, runs, *minImages, absOut, stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "browsercheck: ok, JupyterLab: %d notebooks opened, %d run, in %.1f s\n", len(open), len(runs), time.Since(t0).Seconds())
		return nil
	}
	absNB, err := filepath.Abs(*nbPath)
	if err != nil {
		return err
	}
	original, err := os.ReadFile(absNB)
	if err != nil {
		return err
	}
	// Belt and braces to autosave off: put the notebook back byte for byte if the UI saved it.
	defer func() {
		if now, err := os.ReadFile(absNB); err == nil && !bytes.Equal(now, original) {
			fmt.Fprintf(stderr, "browsercheck: %s was rewritten by the UI; restoring it\n", *nbPath)
			_ = os.WriteFile(absNB, original, 0o644)
		}
	}()

	// 1. The notebook server.
	port, err := freePort()
	if err != nil {
		return err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	token := hex.EncodeToString(tok)
	srvArgs := []string{"notebook", "--no-browser", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--port-retries=0", "--NotebookApp.token=" + token, "--notebook-dir=" + filepath.Dir(absNB)}
	if os.Geteuid() == 0 {
		srvArgs = append(srvArgs, "--allow-root")
	}
	srv := exec.Command(*jupyter, srvArgs...)
	srv.Env = append(os.Environ(), "SCALE="+*scale, "PYDEVD_DISABLE_FILE_VALIDATION=1")
	if os.Getenv("DMLKIT_FIGURES_DIR") == "" {
		srv.Env = append(srv.Env, "DMLKIT_FIGURES_DIR="+filepath.Join(absOut, "figures"))
	}
	srvLog, err := os.Create(filepath.Join(absOut, "server.log"))
	if err != nil {
		return err
	}
	defer srvLog.Close()
	srv.Stdout, srv.Stderr = srvLog, srvLog
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its kernels join its process group
	if err := srv.Start(); err != nil {
		return fmt.Errorf("starting jupyter notebook: %w", err)
	}
	defer stopGroup(srv)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHTTP(ctx, base+"/api/status?token="+token); err != nil {
		return fmt.Errorf("notebook server did not come up (see %s): %w", srvLog.Name(), err)
	}
	fmt.Fprintf(stdout, "browsercheck: server up on %s after %.1f s\n", base, time.Since(t0).Seconds())

	// 2. Chromium.
	userData, err := os.MkdirTemp("", "browsercheck-chromium-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(userData)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(*chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(1200, 1800),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	pageURL := fmt.Sprintf("%s/notebooks/%s?token=%s", base, url.PathEscape(filepath.Base(absNB)), token)
	if err := chromedp.Run(bctx, chromedp.Navigate(pageURL)); err != nil {
		return fmt.Errorf("opening the notebook in Chromium: %w", err)
	}
	if err := poll(bctx, 200*time.Millisecond, func() (bool, error) {
		var ok bool
		err := chromedp.Run(bctx, chromedp.Evaluate(jsKernelReady, &ok))
		return ok, err
	}); err != nil {
		return fmt.Errorf("waiting for the kernel to connect: %w", err)
	}
	fmt.Fprintf(stdout, "browsercheck: kernel connected after %.1f s; running all cells\n", time.Since(t0).Seconds())
	tRun := time.Now()
	var started bool
	if err := chromedp.Run(bctx, chromedp.Evaluate(jsRunAll, &started)); err != nil {
		return fmt.Errorf("running all cells: %w", err)
	}

	// 3. Wait for the run to finish.
	// After an error the kernel may abort the queued cells, which then never finish: stop once
	// an error is shown and the kernel has stayed idle for 5 s.
	var st State
	idleWithErrors := 0
	waitErr := poll(bctx, 500*time.Millisecond, func() (bool, error) {
		if err := chromedp.Run(bctx, chromedp.Evaluate(jsState, &st)); err != nil {
			return false, err
		}
		if st.Idle && st.Errors > 0 {
			idleWithErrors++
		} else {
			idleWithErrors = 0
		}
		return st.Idle && (st.Pending == 0 || idleWithErrors >= 10), nil
	})
	runTime := time.Since(tRun)
	fmt.Fprintf(stdout, "browsercheck: cells ran in %.1f s: %d code cells, %d pending, %d images, %d errors\n",
		runTime.Seconds(), st.Cells, st.Pending, st.Images, st.Errors)

	// 4. Screenshot and summary, also when the run failed.
	var shot []byte
	shotFile := filepath.Join(absOut, strings.TrimSuffix(filepath.Base(absNB), ".ipynb")+".png")
	// Use a fresh deadline: the screenshot is most useful exactly when the main one ran out.
	sctx, cancelShot := context.WithTimeout(context.WithoutCancel(bctx), 30*time.Second)
	defer cancelShot()
	if err := chromedp.Run(sctx, chromedp.FullScreenshot(&shot, 100)); err != nil {
		fmt.Fprintf(stderr, "browsercheck: screenshot failed: %v\n", err)
	} else if err := os.WriteFile(shotFile, shot, 0o644); err != nil {
		return err
	} else {
		fmt.Fprintf(stdout, "browsercheck: screenshot %s (%d bytes)\n", shotFile, len(shot))
	}
	summary := struct {
		State
		Notebook string  `json:"notebook"`
		RunS     float64 `json:"run_s"`
		TotalS   float64 `json:"total_s"`
	}{st, *nbPath, runTime.Seconds(), time.Since(t0).Seconds()}
	if b, err := json.MarshalIndent(summary, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(absOut, "browsercheck.json"), append(b, '\n'), 0o644)
	}
	if waitErr != nil {
		return fmt.Errorf("waiting for the cells to finish: %w (%+v)", waitErr, st)
	}
	if err := st.Verdict(*minImages); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "browsercheck: ok %s in %.1f s\n", *nbPath, time.Since(t0).Seconds())
	return nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls u until it answers 200.
func waitHTTP(ctx context.Context, u string) error {
	return poll(ctx, 250*time.Millisecond, func() (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// poll calls f every interval until it reports done, returns an error, or ctx ends.
func poll(ctx context.Context, interval time.Duration, f func() (bool, error)) error {
	for {
		done, err := f()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// stopGroup ends the notebook server and its kernels (its process group): SIGTERM, then SIGKILL
// after 10 s.
func stopGroup(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}
