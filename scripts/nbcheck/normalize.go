package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Normalize turns a notebook executed by nbconvert into the form committed in notebooks/, so that
// executing it again from the same stored results gives the same file:
//
//   - the cells' nbclient timing metadata ("execution") is removed;
//   - in stream outputs, GoNB's klog lines and the go command's bookkeeping lines of the setup
//     cell ("go: downloading …" with a cold module cache, "go: added …" / "go: upgraded …" for
//     GoNB's own temporary module) are dropped, consecutive outputs of one stream are
//     merged (how the kernel split them depends on timing), and emptied outputs removed;
//   - code cells are numbered 1, 2, … in order (execute_result outputs alike);
//   - the notebook's kernelspec and language_info are set to fixed values (language_info otherwise
//     carries the kernel's Go version).
//
// The result is written the way nbformat writes notebooks (keys sorted, one-space indent, UTF-8,
// multiline strings as lists of lines), so that Jupyter saving it again changes little.
func Normalize(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var nb map[string]any
	if err := dec.Decode(&nb); err != nil {
		return nil, fmt.Errorf("not a notebook: %v", err)
	}
	cells, _ := nb["cells"].([]any)
	count := 0
	for i, c := range cells {
		cell, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("cell %d is not an object", i)
		}
		if md, ok := cell["metadata"].(map[string]any); ok {
			delete(md, "execution")
		}
		if cell["cell_type"] != "code" {
			continue
		}
		outs, _ := cell["outputs"].([]any)
		src, _ := cell["source"].([]any)
		srcText, _ := joinLines(src)
		if s, ok := cell["source"].(string); ok {
			srcText = s
		}
		if strings.TrimSpace(srcText) == "" {
			cell["execution_count"] = nil
			continue
		}
		count++
		cell["execution_count"] = count
		var kept []any
		for _, o := range outs {
			out, ok := o.(map[string]any)
			if !ok {
				continue
			}
			if _, has := out["execution_count"]; has {
				out["execution_count"] = count
			}
			if out["output_type"] != "stream" {
				kept = append(kept, out)
				continue
			}
			text := textOf(out["text"])
			text = cleanStream(text)
			if text == "" {
				continue
			}
			if n := len(kept); n > 0 {
				if prev := kept[n-1].(map[string]any); prev["output_type"] == "stream" && prev["name"] == out["name"] {
					prev["text"] = textOf(prev["text"]) + text
					continue
				}
			}
			out["text"] = text
			kept = append(kept, out)
		}
		for _, o := range kept {
			if out := o.(map[string]any); out["output_type"] == "stream" {
				out["text"] = splitLines(textOf(out["text"]))
			}
		}
		if kept == nil {
			kept = []any{}
		}
		cell["outputs"] = kept
	}
	md, _ := nb["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		nb["metadata"] = md
	}
	md["kernelspec"] = map[string]any{"display_name": "Go (gonb)", "language": "go", "name": "gonb"}
	md["language_info"] = map[string]any{"codemirror_mode": "go", "file_extension": ".go", "mimetype": "text/x-go", "name": "go", "pygments_lexer": "go"}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// textOf returns an nbformat multiline string's text.
func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		s, _ := joinLines(x)
		return s
	}
	return ""
}

// splitLines splits text into lines that keep their "\n", as nbformat stores multiline strings.
func splitLines(text string) []any {
	var out []any
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// klogLine matches a line GoNB logs with klog, e.g. "I1121 20:49:01.599123   123 file.go:12] …".
var klogLine = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^ ]+:\d+\] `)

// goBookkeeping matches the go command's module bookkeeping lines.
var goBookkeeping = regexp.MustCompile(`^go: (downloading|finding|added|upgraded|downgraded) [^ ]+ v[^ ]+( => .*)?$`)

// cleanStream drops the lines of a stream output that depend on the machine's state rather than
// on the notebook: klog lines and the go command's module bookkeeping ("go: downloading",
// "go: finding", "go: added", "go: upgraded", "go: downgraded").
func cleanStream(text string) string {
	var b strings.Builder
	for _, l := range splitLines(text) {
		line := l.(string)
		t := strings.TrimRight(line, "\n")
		if klogLine.MatchString(t) || goBookkeeping.MatchString(t) {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
