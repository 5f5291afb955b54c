package config

import (
	"strings"
	"testing"
	"time"
)

type inner struct {
	LR    float64 `yaml:"lr"`
	Steps []int   `yaml:"steps"`
}

type cfg struct {
	Name    string        `yaml:"name"`
	MPos    float64       `yaml:"m_pos"`
	K       []int         `yaml:"k"`
	Exact   bool          `yaml:"exact"`
	Epochs  int           `yaml:"epochs"`
	Timeout time.Duration `yaml:"timeout"`
	Opt     inner         `yaml:"optimizer"`
	Hidden  int           `yaml:"-"`
	NoTag   float32
}

func TestSetFromStrings(t *testing.T) {
	var c cfg
	kv, err := ParseAssignments([]string{"name=rsk", "m_pos=0.9", "k=1,2,4", "exact=true", "epochs=3",
		"timeout=90s", "optimizer.lr=1e-4", "optimizer.steps=[10,20]", "notag=2.5"})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetAll(&c, kv); err != nil {
		t.Fatal(err)
	}
	want := cfg{Name: "rsk", MPos: 0.9, K: []int{1, 2, 4}, Exact: true, Epochs: 3, Timeout: 90 * time.Second,
		Opt: inner{LR: 1e-4, Steps: []int{10, 20}}, NoTag: 2.5}
	if c.Name != want.Name || c.MPos != want.MPos || len(c.K) != 3 || c.K[2] != 4 || !c.Exact || c.Epochs != 3 ||
		c.Timeout != want.Timeout || c.Opt.LR != 1e-4 || c.Opt.Steps[1] != 20 || c.NoTag != 2.5 {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

func TestSetFromYAMLValues(t *testing.T) {
	var c cfg
	err := SetAll(&c, map[string]any{"epochs": 5.0, "k": []any{1, 8.0}, "optimizer": map[string]any{"lr": 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Epochs != 5 || c.K[1] != 8 || c.Opt.LR != 0.01 {
		t.Fatalf("got %+v", c)
	}
}

func TestErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		key  string
		val  any
		want string
	}{
		{"m_pos", "abc", `field "m_pos": cannot parse "abc" as a number`},
		{"epochs", 2.5, `field "epochs": want an integer`},
		{"optimizer.lrr", "1", `unknown field "optimizer.lrr" (valid here: lr, steps)`},
		{"nosuch", "1", `unknown field "nosuch"`},
		{"hidden", "1", `unknown field "hidden"`},
		{"k", "1,x", `field "k": element 1: cannot parse "x" as an integer`},
		{"exact", 1.0, `field "exact": want a boolean`},
	} {
		var c cfg
		err := Set(&c, tc.key, tc.val)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%q, %v) error = %v, want it to contain %q", tc.key, tc.val, err, tc.want)
		}
	}
	if _, err := ParseAssignments([]string{"novalue"}); err == nil {
		t.Error("ParseAssignments accepted an entry without '='")
	}
}

func TestFields(t *testing.T) {
	c := cfg{MPos: 0.9}
	fs := Fields(&c)
	keys := []string{}
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	got := strings.Join(keys, " ")
	if got != "name m_pos k exact epochs timeout optimizer.lr optimizer.steps notag" {
		t.Fatalf("Fields keys = %q", got)
	}
	if fs[1].Value.(float64) != 0.9 {
		t.Fatalf("m_pos value = %v", fs[1].Value)
	}
}

type term struct {
	Name   string         `yaml:"name"`
	Weight float64        `yaml:"weight"`
	Set    map[string]any `yaml:"set"`
}

type combo struct {
	Terms []term `yaml:"terms"`
}

// A list of structs from YAML/JSON arrives as []any of map[string]any.
func TestSliceOfStructsFromMaps(t *testing.T) {
	var c combo
	err := Set(&c, "terms", []any{
		map[string]any{"name": "rsk", "weight": 1.0},
		map[string]any{"name": "tcm", "weight": 0.5, "set": map[string]any{"m_pos": 0.8}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Terms) != 2 || c.Terms[1].Name != "tcm" || c.Terms[1].Weight != 0.5 || c.Terms[1].Set["m_pos"] != 0.8 {
		t.Fatalf("got %+v", c)
	}
	err = Set(&c, "terms", []any{map[string]any{"nmae": "x"}})
	if err == nil || !strings.Contains(err.Error(), `element 0`) || !strings.Contains(err.Error(), `unknown field "nmae"`) {
		t.Fatalf("error %v, want element 0 / unknown field", err)
	}
}
