package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// lintCell builds a committed (executed, no timing metadata) code cell.
func lintCell(src string, md map[string]any, outputs ...map[string]any) map[string]any {
	if md == nil {
		md = map[string]any{}
	}
	if outputs == nil {
		outputs = []map[string]any{}
	}
	return map[string]any{"cell_type": "code", "source": src, "execution_count": 1, "metadata": md, "outputs": outputs}
}

func mdCell(src string) map[string]any {
	return map[string]any{"cell_type": "markdown", "source": []string{src}, "metadata": map[string]any{}}
}

func stdout(text string) map[string]any {
	return map[string]any{"output_type": "stream", "name": "stdout", "text": text}
}

// lintOne lints the notebook with an up-to-date HTML export and returns the problem kinds.
func lintOne(t *testing.T, cells ...map[string]any) []Problem {
	t.Helper()
	data := nbJSON(t, 0, cells...)
	hash, err := ContentHash(data)
	if err != nil {
		t.Fatal(err)
	}
	html, err := Stamp([]byte("<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\" />\n</head><body></body></html>\n"), hash)
	if err != nil {
		t.Fatal(err)
	}
	probs, err := Lint("x.ipynb", data, html)
	if err != nil {
		t.Fatal(err)
	}
	return probs
}

func kinds(ps []Problem) string {
	var k []string
	for _, p := range ps {
		k = append(k, p.Kind)
	}
	return strings.Join(k, ",")
}

func TestLintOutputs(t *testing.T) {
	if ps := lintOne(t, mdCell("# title"), lintCell("fmt.Println(1)", nil, stdout("1\n"))); len(ps) != 0 {
		t.Errorf("a clean notebook: %v", ps)
	}
	ps := lintOne(t, lintCell("fmt.Println(1)", nil))
	if kinds(ps) != "no-output" || ps[0].Cell != 0 {
		t.Errorf("a cell without outputs: got %v", ps)
	}
	if ps := lintOne(t, lintCell("x := 1", map[string]any{"dmlkit": map[string]any{"no_output": true}})); len(ps) != 0 {
		t.Errorf("a cell marked no_output: %v", ps)
	}
	if ps := lintOne(t, lintCell("  \n", nil)); len(ps) != 0 {
		t.Errorf("an empty cell: %v", ps)
	}
	c := lintCell("fmt.Println(1)", nil)
	c["execution_count"] = nil
	if ps := lintOne(t, c); kinds(ps) != "not-executed,no-output" {
		t.Errorf("a cleared cell: %v", ps)
	}
	errOut := map[string]any{"output_type": "error", "ename": "ERROR", "evalue": "exit status 2", "traceback": []string{}}
	if ps := lintOne(t, lintCell("panic(1)", nil, errOut)); kinds(ps) != "error" {
		t.Errorf("an error output: %v", ps)
	}
	noise := stdout("table \"t5\": no stored results match (scale \"full\")\n")
	if ps := lintOne(t, lintCell("show()", nil, noise)); kinds(ps) != "noise" {
		t.Errorf("a noise line: %v", ps)
	}
}

func TestLintPaths(t *testing.T) {
	for _, bad := range []string{"/work/main/notebooks", "wrote /tmp/dmlkit-tour-small", "see `/root/.cache/x`", "(/home/me/data)", "file:///tmp/x"} {
		if ps := lintOne(t, mdCell("text "+bad)); kinds(ps) != "path" {
			t.Errorf("markdown %q: got %v", bad, ps)
		}
		if ps := lintOne(t, lintCell("f()", nil, stdout(bad+"\n"))); kinds(ps) != "path" || ps[0].Cell != 0 {
			t.Errorf("output %q: got %v", bad, ps)
		}
	}
	md := lintCell("f()", map[string]any{"note": "/work/x"}, stdout("ok\n"))
	if ps := lintOne(t, md); kinds(ps) != "path" {
		t.Errorf("a path in cell metadata: %v", ps)
	}
	for _, ok := range []string{"https://github.com/home/x", "${GONB_DIR}/..", "figures/tcm/x.png", "reproductions/tcm/results", "$TMPDIR/dmlkit", "~/home/x"} {
		if ps := lintOne(t, mdCell(ok), lintCell("f()", nil, stdout(ok+"\n"))); len(ps) != 0 {
			t.Errorf("%q is not a machine path: got %v", ok, ps)
		}
	}
	// Base64 image data is not text, even when a run of it looks like a path.
	img := map[string]any{"output_type": "display_data", "metadata": map[string]any{},
		"data": map[string]any{"image/png": "iVBORw0KGgo/tmp/work/AAAA", "text/html": `<img src="data:image/png;base64,AA/tmp/BB==">`}}
	if ps := lintOne(t, lintCell("show()", nil, img)); len(ps) != 0 {
		t.Errorf("base64 data: %v", ps)
	}
}

func TestLintHTML(t *testing.T) {
	data := nbJSON(t, 0, lintCell("fmt.Println(1)", nil, stdout("1\n")))
	hash, err := ContentHash(data)
	if err != nil {
		t.Fatal(err)
	}
	html := []byte("<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\" />\n</head><body></body></html>\n")
	check := func(name string, html []byte, want string) {
		t.Helper()
		ps, err := Lint("x.ipynb", data, html)
		if err != nil {
			t.Fatal(err)
		}
		if kinds(ps) != want {
			t.Errorf("%s: got %v, want kinds %q", name, ps, want)
		}
	}
	check("missing", nil, "html")
	check("not stamped", html, "html")
	stamped, err := Stamp(html, hash)
	if err != nil {
		t.Fatal(err)
	}
	check("stamped", stamped, "")
	// Restamping replaces the stamp rather than adding a second one.
	again, err := Stamp(stamped, hash)
	if err != nil || !bytes.Equal(again, stamped) {
		t.Errorf("restamping changed the export (err %v)", err)
	}
	// The notebook's outputs changed after the export: the export is stale.
	changed := nbJSON(t, 0, lintCell("fmt.Println(1)", nil, stdout("2\n")))
	ps, err := Lint("x.ipynb", changed, stamped)
	if err != nil {
		t.Fatal(err)
	}
	if kinds(ps) != "html" || !strings.Contains(ps[0].Msg, "other content") {
		t.Errorf("a stale export: %v", ps)
	}
	// Metadata and the form of multiline strings do not count as content.
	var nb map[string]any
	if err := json.Unmarshal(data, &nb); err != nil {
		t.Fatal(err)
	}
	c := nb["cells"].([]any)[0].(map[string]any)
	c["metadata"] = map[string]any{"dmlkit": map[string]any{"budget_s": 5}}
	c["source"] = []string{"fmt.", "Println(1)"}
	c["execution_count"] = 7
	c["outputs"].([]any)[0].(map[string]any)["text"] = []string{"1\n"}
	b, _ := json.Marshal(nb)
	if h2, _ := ContentHash(b); h2 != hash {
		t.Errorf("metadata / line splitting changed the content hash")
	}
}

func TestNormalize(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(validPNG(t))
	nb := nbJSON(t, 1,
		codeCell("!*go get x", 0, 1, 0, stdout("go: downloading github.com/x/y v1.0.0\n"), stdout("go: added x v1\ngo: upgraded golang.org/x/sys v0.1.0 => v0.2.0\nSet: X=1\n")),
		codeCell("   ", 1, 1, 0),
		codeCell("fmt.Println(\"a\"); fmt.Println(\"b\")", 1, 2, 30, stdout("a\n"), stdout("b\n"),
			map[string]any{"output_type": "stream", "name": "stderr", "text": "I1121 20:49:01.599123   12345 goexec.go:12] compiling\n"}),
		codeCell("show()", 2, 3, 0, pngOutput(png)),
	)
	out, err := Normalize(nb)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			Kernelspec   map[string]string `json:"kernelspec"`
			LanguageInfo map[string]string `json:"language_info"`
			Dmlkit       map[string]int    `json:"dmlkit"`
		} `json:"metadata"`
		Cells []struct {
			ExecutionCount *int           `json:"execution_count"`
			Metadata       map[string]any `json:"metadata"`
			Outputs        []struct {
				Name string   `json:"name"`
				Text []string `json:"text"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Kernelspec["name"] != "gonb" || got.Metadata.LanguageInfo["name"] != "go" || got.Metadata.Dmlkit["expect_images"] != 1 {
		t.Errorf("metadata: %+v", got.Metadata)
	}
	c := got.Cells
	if len(c) != 4 || c[1].ExecutionCount != nil || *c[0].ExecutionCount != 1 || *c[2].ExecutionCount != 2 || *c[3].ExecutionCount != 3 {
		t.Fatalf("execution counts: %s", out)
	}
	for i, cell := range c {
		if _, ok := cell.Metadata["execution"]; ok {
			t.Errorf("cell %d kept its timing metadata", i)
		}
	}
	if len(c[0].Outputs) != 1 || strings.Join(c[0].Outputs[0].Text, "") != "Set: X=1\n" {
		t.Errorf("cell 0 outputs: %+v", c[0].Outputs)
	}
	if len(c[2].Outputs) != 1 || strings.Join(c[2].Outputs[0].Text, "|") != "a\n|b\n" {
		t.Errorf("cell 2: streams not merged / klog not dropped: %+v", c[2].Outputs)
	}
	if c[2].Metadata["dmlkit"] == nil {
		t.Errorf("cell 2 lost its dmlkit metadata")
	}
	if len(c[3].Outputs) != 1 {
		t.Errorf("cell 3 lost its image")
	}
	again, err := Normalize(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("Normalize is not idempotent (err %v)", err)
	}
	if bytes.Contains(out, []byte(`\u003c`)) || !bytes.HasPrefix(out, []byte("{\n \"cells\": [\n")) {
		t.Errorf("not written the way nbformat writes: %.60q", out)
	}
}

// TestLintSetup: a setup cell that `go get`s modules must write the checkout's checksums into
// GoNB's module first, and get gonbui rather than GoNB's kernel package.
func TestLintSetup(t *testing.T) {
	const edit = "!*go mod edit -require=github.com/dmlkit/dmlkit@v0.0.0-00010101000000-000000000000 -replace=github.com/dmlkit/dmlkit=${GONB_DIR}/..\n"
	const get = "!*go get github.com/gomlx/gomlx@v0.28.16 github.com/janpfeifer/gonb/gonbui@v0.11.5 gonum.org/v1/plot@v0.17.0\n"
	const env = "%env GOMLX_BACKEND=go"
	out := stdout("Set: GOMLX_BACKEND=\"go\"\n")
	for _, c := range []struct {
		name, src, want string
	}{
		{"seeded", edit + SetupGoSum + "\n" + get + env, ""},
		{"no go get", edit + env, ""},
		{"not seeded", edit + get + env, "setup"},
		{"seeded after the go get", edit + get + SetupGoSum + "\n" + env, "setup"},
		{"only dmlkit's go.sum", edit + `!*cat "${GONB_DIR}/../go.sum" >> go.sum` + "\n" + get + env, "setup"},
		{"GoNB's kernel package", edit + SetupGoSum + "\n" + strings.Replace(get, "gonb/gonbui@", "gonb@", 1) + env, "setup"},
	} {
		if got := kinds(lintOne(t, mdCell("# title"), lintCell(c.src, nil, out))); got != c.want {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
}
