package sweep

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSeriesJSONRoundTrip: every float64 a record's series can hold — non-finite values, −0,
// subnormals, the extremes and random bit patterns — comes back from its JSON with the same
// bits (NaN as NaN), the precondition of stored metrics verified bit for bit.
func TestSeriesJSONRoundTrip(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-320, -5e-324, math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, 1e300, 123456789.125, math.Inf(1), math.Inf(-1), math.NaN()}
	rng := rand.New(rand.NewPCG(1, 2))
	for len(vals) < 5000 {
		f := math.Float64frombits(rng.Uint64())
		if !math.IsNaN(f) {
			vals = append(vals, f)
		}
	}
	in := Series{"a": vals, "empty": {}, "one": {0.25}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Series
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || len(out["empty"]) != 0 || out["empty"] == nil || len(out["one"]) != 1 || out["one"][0] != 0.25 {
		t.Fatalf("decoded %v, want the keys a, empty ([]) and one ([0.25])", out)
	}
	for i, want := range vals {
		got := out["a"][i]
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("value %d: got %v (%#x), want %v (%#x)", i, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// TestSeriesJSONForms: the forms a hand-edited or older store may hold — white space, null
// (decoded as 0, as encoding/json decodes null into a float64), escaped strings of non-finite
// values, exponents — and the errors of what no series holds, naming the key and the element.
func TestSeriesJSONForms(t *testing.T) {
	var s Series
	src := `{ "x" : [ 1 , -2.5e3,"NaN" ,null, "\u002bInf", "-Inf" ,0.5E-1 ] , "y":[ ], "z": null }`
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	x := s["x"]
	if len(x) != 7 || x[0] != 1 || x[1] != -2500 || !math.IsNaN(x[2]) || x[3] != 0 || !math.IsInf(x[4], 1) || !math.IsInf(x[5], -1) || x[6] != 0.05 {
		t.Errorf("x = %v, want [1 -2500 NaN 0 +Inf -Inf 0.05]", x)
	}
	if len(s["y"]) != 0 || len(s["z"]) != 0 {
		t.Errorf("y = %v, z = %v, want both empty", s["y"], s["z"])
	}
	for src, want := range map[string]string{
		`{"x":[1,true]}`:  `series "x"[1]`,
		`{"x":[1,"two"]}`: `series "x"[1]: not a number: "two"`,
		`{"x":[[1]]}`:     `series "x"[0]`,
		`{"x":[1e400]}`:   `series "x"[0]`,
		`{"x":5}`:         `series "x": `,
	} {
		err := json.Unmarshal([]byte(src), &s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", src, err, want)
		}
	}
}

// TestMetricsJSONForms: metrics decode numbers, the non-finite strings and null as before.
func TestMetricsJSONForms(t *testing.T) {
	var m Metrics
	if err := json.Unmarshal([]byte(`{"a": 0.1, "b":"NaN", "c":-0, "d":null, "e":1e-320}`), &m); err != nil {
		t.Fatal(err)
	}
	if m["a"] != 0.1 || !math.IsNaN(m["b"]) || m["c"] != 0 || !math.Signbit(m["c"]) || m["d"] != 0 || m["e"] != 1e-320 {
		t.Errorf("decoded %v, want a 0.1, b NaN, c −0, d 0, e 1e-320", m)
	}
	if err := json.Unmarshal([]byte(`{"a":"x"}`), &m); err == nil || !strings.Contains(err.Error(), `metric "a": not a number: "x"`) {
		t.Errorf("error %v, want the metric named", err)
	}
}

// TestLoadSkipSeries: a store read with SkipSeries has the records' metrics and configurations
// and no series; read without it, the series as stored. A line whose series is not JSON is
// still a bad line either way.
func TestLoadSkipSeries(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir)
	cfg := map[string]any{"seed": 0, "loss": map[string]any{"name": "rsk"}}
	h, err := Hash(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Hash: h, Paper: "p", Scale: "small", Config: cfg, Metrics: Metrics{"R@1": 0.5},
		Series: Series{"curve/loss": {3, 2, 1}}}
	if err := st.Append(rec); err != nil {
		t.Fatal(err)
	}
	if err := appendLine(dir, st.File("small"), []byte(`{"hash":"`+h+`x","scale":"small","config":{},"series":{"a":[1,}}`)); err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		st.SkipSeries = skip
		recs, rep, err := st.Load()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || len(rep.Bad) != 1 || !strings.Contains(rep.Bad[0], "small.jsonl:2") {
			t.Fatalf("skip %v: %d records, bad lines %q; want 1 record and line 2 bad", skip, len(recs), rep.Bad)
		}
		r := recs[0]
		if r.Hash != h || r.Metrics["R@1"] != 0.5 || r.Config["loss"].(map[string]any)["name"] != "rsk" {
			t.Errorf("skip %v: record %+v, want the stored hash, R@1 0.5 and loss rsk", skip, r)
		}
		switch {
		case skip && r.Series != nil:
			t.Errorf("SkipSeries: series %v, want none", r.Series)
		case !skip && (len(r.Series) != 1 || len(r.Series["curve/loss"]) != 3 || r.Series["curve/loss"][2] != 1):
			t.Errorf("series %v, want curve/loss [3 2 1]", r.Series)
		}
	}
}
