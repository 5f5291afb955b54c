package config

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type degr struct {
	Kind  string  `yaml:"kind"`
	Level float64 `yaml:"level"`
}

type listCfg struct {
	Degrade  []degr   `yaml:"degrade"`
	Channels []int    `yaml:"channels"`
	Names    []string `yaml:"names"`
	Eval     struct {
		Degrade []degr `yaml:"degrade"`
	} `yaml:"eval"`
}

// TestSetListsOfMaps: --set with a YAML list whose elements are groups of fields fills them (before:
// "cannot set … from the string '{kind: noise'", the list cut at its commas); a list with
// unbalanced brackets is an error naming the value (before: [8,16 set channels to [8, 16]); plain
// lists keep working with and without brackets.
func TestSetListsOfMaps(t *testing.T) {
	var c listCfg
	kv, err := ParseAssignments([]string{"degrade=[{kind: noise, level: 0.1}, {kind: blur, level: 2}]", "channels=[8, 16]", "names=a,b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetAll(&c, kv); err != nil {
		t.Fatal(err)
	}
	want := listCfg{Degrade: []degr{{"noise", 0.1}, {"blur", 2}}, Channels: []int{8, 16}, Names: []string{"a", "b"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
	for _, tc := range []struct{ kv, want string }{
		{"channels=[8,16", `field "channels": malformed list "[8,16": unbalanced brackets`},
		{"channels=8,16]", `malformed list "8,16]"`},
		{"degrade=[{kind: noise, lvl: 0.1}]", `unknown field "lvl"`},
		{"channels=[8, x]", `element 1: cannot parse "x" as an integer`},
	} {
		kv, err := ParseAssignments([]string{tc.kv})
		if err == nil {
			err = SetAll(&listCfg{}, kv)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.kv, err, tc.want)
		}
	}
	// A list given as a group of fields (a spec's eval.degrade: {kind: noise, level: 0.1}).
	err = Set(&listCfg{}, "eval.degrade.kind", "noise")
	if want := `field "eval.degrade": a list of {kind, level}, given as a group of fields (eval.degrade.kind)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("list given as a group: %v, want %q", err, want)
	}
}

// TestExplainYAML: a mapping for a list, a list for a group and a group for a plain value are
// named by field and line; a document that fits gives nil.
func TestExplainYAML(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"eval:\n  degrade: {kind: noise, level: 0.1}\n", `field "eval.degrade" (line 2): a list of {kind, level}, given as a mapping`},
		{"eval: [1, 2]\n", `field "eval" (line 1): a group of fields, given as a list`},
		{"degrade:\n  - kind: {a: 1}\n", `field "degrade[0].kind" (line 2): a plain value (string), given as a mapping`},
		{"eval:\n  degrade: [{kind: noise, level: 0.1}]\nchannels: [8]\n", ""},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.doc), &n); err != nil {
			t.Fatal(err)
		}
		err := ExplainYAML(&n, reflect.TypeOf(listCfg{}))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
