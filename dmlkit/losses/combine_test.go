package losses_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func TestParseCombo(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []losses.Term
	}{
		{"rsk+0.5*tcm", []losses.Term{{Name: "rsk", Weight: 1}, {Name: "tcm", Weight: 0.5}}},
		{" 0.7 * contextual(k=4) - 1e-3·reg ", []losses.Term{
			{Name: "contextual", Weight: 0.7, Set: map[string]any{"k": "4"}}, {Name: "reg", Weight: -1e-3}}},
		{"-a + +2*b", nil}, // a sign inside a term is not accepted
		{"-a - 2*b", []losses.Term{{Name: "a", Weight: -1}, {Name: "b", Weight: -2}}},
		{"2.5e+1*a(x=[1,2,4], y = b)+c()", []losses.Term{
			{Name: "a", Weight: 25, Set: map[string]any{"x": "[1,2,4]", "y": "b"}}, {Name: "c", Weight: 1, Set: map[string]any{}}}},
	} {
		got, err := losses.ParseCombo(tc.expr)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q accepted: %+v", tc.expr, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, want %+v", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{"", "0.5*", "a+", "a b", "0.5 tcm", "a(k=1", "a(k)", "x*a"} {
		if _, err := losses.ParseCombo(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := losses.New("combo", map[string]any{"expr": "triplet+nosuch"}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown term: %v", err)
	}
	if _, err := losses.New("combo", map[string]any{"expr": "triplet(mining=easy)"}); err == nil || !strings.Contains(err.Error(), "mining") {
		t.Errorf("bad term setting: %v", err)
	}
	if _, err := losses.New("combo", nil); err == nil {
		t.Error("empty combo accepted")
	}
}

func TestComboIsWeightedSum(t *testing.T) {
	// 0.3·contrastive(cosine, m+=0.75, m−=0.6) + 2·triplet(batch-hard, m=0.3, plain mean), both
	// checked against their own brute-force loops.
	l, err := losses.New("combo", map[string]any{
		"expr": "0.3*contrastive(distance=cosine, pos_margin=0.75, neg_margin=0.6) + 2*triplet(mining=hard, margin=0.3, avg_nonzero=false)",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := losstest.Random(18, 4, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	want := 0.3*bruteContrastive(b, &losses.ContrastiveConfig{Distance: "cosine", PosMargin: 0.75, NegMargin: 0.6, AvgNonZero: true}) +
		2*blTriplet(b, &losses.TripletConfig{Margin: 0.3, Distance: "l2", Normalize: true, Mining: "hard"})
	got, _ := losstest.Value(t, l, b, losses.EvalOptions{})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("combo = %.15g, want %.15g", got, want)
	}
	losstest.CheckGradient(t, l, b, losses.EvalOptions{}, 1e-6)
}

func TestComboTermsHaveOwnScopes(t *testing.T) {
	// Two proxy-anchor terms read different fixed proxies from /loss/0_proxyanchor and
	// /loss/1_proxyanchor; Terms (Go form) come before Expr's terms.
	const numClasses, d = 4, 3
	p0, p1 := blRandomProxies(4, numClasses, d), blRandomProxies(5, numClasses, d)
	store := blProxyStore(t, "proxies", p0, numClasses, d) // /loss/proxies: must not be used
	for i, p := range [][]float64{p0, p1} {
		scope := store.Scope("/loss").In("%d_proxyanchor", i)
		if _, err := scope.CreateVariable("proxies", tensors.FromFlatDataAndDimensions(append([]float64(nil), p...), numClasses, d)); err != nil {
			t.Fatal(err)
		}
	}
	c := &losses.ComboConfig{
		Terms: []losses.Term{{Name: "proxyanchor", Weight: 1, Set: map[string]any{"alpha": 4}}},
		Expr:  "0.5*proxyanchor(alpha=2)",
	}
	b := losstest.Random(19, d, []int64{0, 1, 1, 2, 3, 3})
	got, _ := losstest.Value(t, c, b, losses.EvalOptions{Store: store, NumClasses: numClasses})
	want := blProxyAnchor(b, p0, numClasses, &losses.ProxyAnchorConfig{Margin: 0.1, Alpha: 4}) +
		0.5*blProxyAnchor(b, p1, numClasses, &losses.ProxyAnchorConfig{Margin: 0.1, Alpha: 2})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("combo of proxy losses = %.15g, want %.15g", got, want)
	}
}

// TestBaselinesFloat32 evaluates every baseline loss at its defaults in float32 and float64 on
// the same batch (proxy losses with the same fixed proxies in both dtypes) and requires agreement
// to 1e-4 relative: float32 rounding (6e-8) amplified by scales up to 64 (arcface, cosface) and
// 1/τ = 100 (smoothap, roadmap) stays around 1e-5.
func TestBaselinesFloat32(t *testing.T) {
	const numClasses, d = 4, 4
	b := losstest.Random(32, d, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	proxyVar := map[string]struct {
		name string
		rows int
	}{
		"proxyanchor": {"proxies", numClasses}, "proxynca": {"proxies", numClasses},
		"arcface": {"weights", numClasses}, "cosface": {"weights", numClasses},
		"softtriple": {"centers", numClasses * 10},
	}
	for _, name := range []string{"smoothap", "roadmap", "triplet", "multisimilarity", "arcface", "cosface",
		"proxynca", "proxyanchor", "fastap", "margin", "circle", "angular", "centroidtriplet", "softtriple", "softbinap", "blackboxap", "combo"} {
		var set map[string]any
		switch name {
		case "combo":
			set = map[string]any{"expr": "triplet + 0.5*smoothap"}
		case "margin":
			// The RNG draws different uniforms in float32 and float64, so compare the sampler-free form.
			set = map[string]any{"sampling": "all"}
		}
		l, err := losses.New(name, set)
		if err != nil {
			t.Fatal(err)
		}
		var vals [2]float64
		for k, dt := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
			opt := losses.EvalOptions{DType: dt, NumClasses: numClasses, Seed: 5}
			if pv, ok := proxyVar[name]; ok {
				p := blRandomProxies(7, pv.rows, d)
				var tt *tensors.Tensor
				if dt == dtypes.Float32 {
					f := make([]float32, len(p))
					for i, v := range p {
						f[i] = float32(v)
					}
					tt = tensors.FromFlatDataAndDimensions(f, pv.rows, d)
				} else {
					tt = tensors.FromFlatDataAndDimensions(p, pv.rows, d)
				}
				opt.Store = model.NewStore()
				if _, err := opt.Store.Scope("/loss").CreateVariable(pv.name, tt); err != nil {
					t.Fatal(err)
				}
			}
			res, err := losses.Evaluate(backend.MustShared(), l, b.Emb, b.B, b.D, b.Labels, 1, opt)
			if err != nil {
				t.Fatalf("%s %s: %v", name, dt, err)
			}
			vals[k] = res.Value
		}
		if math.IsNaN(vals[1]) || math.Abs(vals[0]-vals[1]) > 1e-4*math.Max(1, math.Abs(vals[0])) {
			t.Errorf("%s: float64 %.9g, float32 %.9g", name, vals[0], vals[1])
		}
	}
}

// BenchmarkBaselines times value + gradient of each baseline at a realistic batch (B=128, D=128,
// 32 classes × 4 samples, float32, Go backend; includes graph compilation, as `dmlkit loss` does).
func BenchmarkBaselines(b *testing.B) {
	labels := make([]int64, 128)
	for i := range labels {
		labels[i] = int64(i / 4)
	}
	batch := losstest.Random(33, 128, labels)
	for _, name := range []string{"smoothap", "roadmap", "triplet", "multisimilarity", "arcface", "cosface",
		"proxynca", "proxyanchor", "fastap", "margin", "circle", "angular", "centroidtriplet", "softtriple", "softbinap", "blackboxap"} {
		l, err := losses.New(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := losses.Evaluate(backend.MustShared(), l, batch.Emb, batch.B, batch.D, batch.Labels, 1,
					losses.EvalOptions{Grad: true, DType: dtypes.Float32, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestComboOptions: options.<loss>.<key> reaches every term of that loss after the term's own
// settings, in both the flat dotted form a sweep writes and the nested YAML form.
func TestComboOptions(t *testing.T) {
	for _, set := range []map[string]any{
		{"expr": "smoothap+tcm(neg_margin=0.4)", "options.tcm.pos_margin": 0.8, "options.tcm.neg_margin": 0.3},
		{"expr": "smoothap+tcm(neg_margin=0.4)", "options": map[string]any{"tcm": map[string]any{"pos_margin": 0.8, "neg_margin": 0.3}}},
	} {
		l, err := losses.New("combo", set)
		if err != nil {
			t.Fatalf("%v: %v", set, err)
		}
		_, ls, err := l.(*losses.ComboConfig).Resolved()
		if err != nil {
			t.Fatal(err)
		}
		tcm := ls[1].(*losses.TCMConfig)
		if tcm.PosMargin != 0.8 || tcm.NegMargin != 0.3 {
			t.Errorf("%v: tcm margins (%g, %g), want (0.8, 0.3): options override the expr's settings", set, tcm.PosMargin, tcm.NegMargin)
		}
	}
	if _, err := losses.New("combo", map[string]any{"expr": "smoothap", "options.tcm.pos_margin": 0.8}); err == nil || !strings.Contains(err.Error(), "options.tcm") {
		t.Errorf("options for a loss that is not a term: err = %v, want one naming options.tcm", err)
	}
}

// TestComboDiagnostics: a combo's diagnostics are its weighted terms ("loss/<name>") and the
// prefixed diagnostics of the terms that have them, checked against the terms' brute-force loops
// (float64, tolerance 1e-12 as in the terms' own tests); a loss used twice is keyed by its scope
// name "<index>_<name>". The loss is exactly Build's.
func TestComboDiagnostics(t *testing.T) {
	b := losstest.Random(19, 4, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	cit := &losses.CITConfig{Gamma: 0.5}
	citNZ := &losses.CITConfig{Gamma: 1, AvgNonZero: true}
	trip := blTriplet(b, &losses.TripletConfig{Margin: 0.3, Distance: "l2", Normalize: true, Mining: "hard"})
	for _, tc := range []struct {
		expr  string
		want  map[string]float64
		order []string
	}{
		{"0.25*cit(gamma=0.5) + 2*triplet(mining=hard, margin=0.3, avg_nonzero=false)", map[string]float64{
			"loss/cit":          0.25 * bruteCITDiag(b, cit).loss,
			"cit/L_e":           bruteCITDiag(b, cit).le,
			"cit/L_p":           bruteCITDiag(b, cit).lp,
			"cit/hard_triplets": float64(bruteCITDiag(b, cit).hard),
			"cit/triplets":      float64(bruteCITDiag(b, cit).nTriplets),
			"loss/triplet":      2 * trip,
		}, []string{"loss/cit", "cit/L_e", "cit/L_p", "cit/hard_triplets", "cit/triplets", "loss/triplet"}},
		{"cit(gamma=0.5) - 0.5*cit(avg_nonzero=true)", map[string]float64{
			"loss/0_cit":          bruteCITDiag(b, cit).loss,
			"0_cit/L_e":           bruteCITDiag(b, cit).le,
			"loss/1_cit":          -0.5 * bruteCITDiag(b, citNZ).loss,
			"1_cit/L_e":           bruteCITDiag(b, citNZ).le,
			"1_cit/L_p":           bruteCITDiag(b, citNZ).lp,
			"1_cit/hard_triplets": float64(bruteCITDiag(b, citNZ).hard),
		}, nil},
	} {
		l, err := losses.New("combo", map[string]any{"expr": tc.expr})
		if err != nil {
			t.Fatal(err)
		}
		loss, d, names := diagnose(t, l, b)
		if built, _ := losstest.Value(t, l, b, losses.EvalOptions{}); loss != built {
			t.Errorf("%q: BuildDiagnosed loss %.17g != Build %.17g", tc.expr, loss, built)
		}
		for k, w := range tc.want {
			if got, ok := d[k]; !ok || math.Abs(got-w) > 1e-12 {
				t.Errorf("%q: %s = %.15g (present %v), want %.15g", tc.expr, k, got, ok, w)
			}
		}
		if tc.order != nil && !reflect.DeepEqual(names, tc.order) {
			t.Errorf("%q: diagnostics %q, want %q", tc.expr, names, tc.order)
		}
		sum := 0.0
		for _, n := range names {
			if strings.HasPrefix(n, "loss/") {
				sum += d[n]
			}
		}
		if math.Abs(sum-loss) > 1e-12 {
			t.Errorf("%q: Σ loss/* = %.15g, want the loss %.15g", tc.expr, sum, loss)
		}
	}
}
