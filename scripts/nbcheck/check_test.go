package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"
)

// validPNG is a real 3×2 PNG encoded by image/png.
func validPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ts formats the offset (seconds after a fixed instant) the way nbclient writes timestamps.
func ts(sec float64) string {
	base := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	return base.Add(time.Duration(sec * float64(time.Second))).Format("2006-01-02T15:04:05.000000Z")
}

// codeCell builds an executed code cell that ran from start to end seconds.
func codeCell(src any, start, end float64, budget float64, outputs ...map[string]any) map[string]any {
	md := map[string]any{"execution": map[string]string{
		"iopub.status.busy": ts(start), "iopub.execute_input": ts(start),
		"shell.execute_reply": ts(end), "iopub.status.idle": ts(end),
	}}
	if budget > 0 {
		md["dmlkit"] = map[string]any{"budget_s": budget}
	}
	if outputs == nil {
		outputs = []map[string]any{}
	}
	return map[string]any{"cell_type": "code", "source": src, "execution_count": 1, "metadata": md, "outputs": outputs}
}

func pngOutput(data any) map[string]any {
	return map[string]any{"output_type": "display_data", "data": map[string]any{"image/png": data, "text/plain": "<img>"}, "metadata": map[string]any{}}
}

func nbJSON(t *testing.T, expectImages int, cells ...map[string]any) []byte {
	t.Helper()
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 5, "cells": cells,
		"metadata": map[string]any{"dmlkit": map[string]any{"expect_images": expectImages}}}
	b, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheck(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(validPNG(t))
	// nbformat may split base64 into lines: a list of strings with newlines must decode too.
	goodLines := []string{good[:20] + "\n", good[20:]}
	gif := base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	truncated := base64.StdEncoding.EncodeToString(validPNG(t)[:12]) // signature, then a cut IHDR
	md := map[string]any{"cell_type": "markdown", "source": "# title", "metadata": map[string]any{}}
	empty := map[string]any{"cell_type": "code", "source": "  \n", "execution_count": nil, "metadata": map[string]any{}, "outputs": []any{}}
	errOut := map[string]any{"output_type": "error", "ename": "ERROR", "evalue": "exit status 2", "traceback": []string{}}
	panicOut := map[string]any{"output_type": "stream", "name": "stderr", "text": []string{"panic: boom\n", "\n", "goroutine 1\n"}}
	notRun := map[string]any{"cell_type": "code", "source": "%%\nx := 1", "execution_count": nil, "metadata": map[string]any{}, "outputs": []any{}}
	noTiming := map[string]any{"cell_type": "code", "source": "%%\nx := 1", "execution_count": 3, "metadata": map[string]any{}, "outputs": []any{}}

	tests := []struct {
		name       string
		data       []byte
		wantImages int
		want       []string // "cell:kind" of each problem, in order
	}{
		{"passes", nbJSON(t, 1, md, codeCell("%%\nfmt.Println(1)", 0, 1, 0), empty,
			codeCell([]string{"import (\n", "\t\"fmt\"\n", ")\n", "%%\n", "plot()\n"}, 1, 3, 0, pngOutput(good))), 1, nil},
		{"base64 split into lines", nbJSON(t, 1, codeCell("%%\nplot()", 0, 1, 0, pngOutput(goodLines))), 1, nil},
		{"error output", nbJSON(t, 0, codeCell("%%\nok()", 0, 1, 0), codeCell("%%\nfail()", 1, 2, 0, panicOut, errOut)), 0,
			[]string{"1:error"}},
		{"missing image", nbJSON(t, 2, codeCell("%%\nplot()", 0, 1, 0, pngOutput(good))), 1, []string{"-1:image"}},
		{"not a PNG", nbJSON(t, 1, codeCell("%%\nplot()", 0, 1, 0, pngOutput(gif))), 0, []string{"-1:image", "0:image"}},
		{"truncated PNG", nbJSON(t, 0, codeCell("%%\nplot()", 0, 1, 0, pngOutput(truncated))), 0, []string{"0:image"}},
		// Cell 0 has budget 5 s and ran 7 s; cell 1 uses the 10 s default and ran 9 s (fine); cell 2 ran 11 s.
		{"over budget", nbJSON(t, 0, codeCell("%%\na()", 0, 7, 5), codeCell("%%\nb()", 7, 16, 0), codeCell("%%\nc()", 16, 27, 0)), 0,
			[]string{"0:budget", "2:budget"}},
		{"budget exactly met", nbJSON(t, 0, codeCell("%%\na()", 0, 5, 5)), 0, nil},
		{"not executed", nbJSON(t, 0, codeCell("%%\na()", 0, 1, 0), notRun), 0, []string{"1:not-executed"}},
		{"no timing", nbJSON(t, 0, noTiming), 0, []string{"0:timing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(tc.name, tc.data, Options{DefaultBudget: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range r.Problems {
				got = append(got, strings.Join([]string{itoa(p.Cell), p.Kind}, ":"))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("problems = %v, want %v\n%v", got, tc.want, r.Problems)
			}
			if r.Images != tc.wantImages {
				t.Errorf("images = %d, want %d", r.Images, tc.wantImages)
			}
			if r.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %v with problems %v", r.OK(), r.Problems)
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestCheckDetails checks the measured durations, the cell headlines and the panic message.
func TestCheckDetails(t *testing.T) {
	errOut := map[string]any{"output_type": "error", "ename": "ERROR", "evalue": "exit status 2", "traceback": []string{}}
	panicOut := map[string]any{"output_type": "stream", "name": "stderr", "text": "panic: boom\n\ngoroutine 1 [running]:\n"}
	data := nbJSON(t, 0,
		codeCell("import (\n\t\"fmt\"\n)\n\n%%\nfmt.Println(Scale())\n", 10, 12.5, 0),
		codeCell("%%\nfail()", 12.5, 13, 0, panicOut, errOut))
	r, err := Check("x.ipynb", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Timings) != 2 || r.Timings[0].Duration != 2500*time.Millisecond || r.Timings[1].Duration != 500*time.Millisecond {
		t.Fatalf("timings = %+v, want 2.5 s and 0.5 s", r.Timings)
	}
	if r.Timings[0].Budget != 300*time.Second {
		t.Errorf("default budget = %v, want 300s when Options.DefaultBudget is zero", r.Timings[0].Budget)
	}
	if r.Timings[0].Head != "fmt.Println(Scale())" {
		t.Errorf("head = %q, want the first statement after the imports", r.Timings[0].Head)
	}
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Msg, "panic: boom") {
		t.Errorf("problems = %v, want one error naming the panic", r.Problems)
	}
	if _, err := Check("bad.ipynb", []byte("{not json"), Options{}); err == nil {
		t.Error("Check accepted a file that is not JSON")
	}
}

func TestBudgets(t *testing.T) {
	md := map[string]any{"cell_type": "markdown", "source": "# x", "metadata": map[string]any{}}
	data := nbJSON(t, 0, md, codeCell("a", 0, 1, 600), codeCell("b", 0, 1, 0), codeCell("c", 0, 1, 20))
	largest, sum := budgets(data, 300*time.Second)
	if largest != 600*time.Second || sum != 920*time.Second {
		t.Errorf("budgets = %v, %v; want 600s and 600+300+20 = 920s", largest, sum)
	}
}

func TestTailDropsKlogLines(t *testing.T) {
	log := "I1121 20:49:01.599 main.go:1] hello\nTraceback:\nE1121 20:49:01.6 x\nCellExecutionError: boom\n"
	if got, want := tail(log, 5), "Traceback:\nCellExecutionError: boom"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
	if got := tail("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("tail(…, 2) = %q, want the last two lines", got)
	}
}
