package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/evaluate"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

func init() {
	register("eval", "every applicable retrieval metric of saved embeddings (.npy); text: rates in percent, --json: fractions", runEval)
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	embPath := fs.String("emb", "", "embeddings [N, D] (.npy, float32/float64) — required")
	labPath := fs.String("labels", "", "labels [N] (.npy, int32/int64) — required")
	qPath := fs.String("query-mask", "", "query mask [N] (.npy, bool/int: 1 = query, 0 = gallery) for query/gallery retrieval")
	coarsePath := fs.String("coarse", "", "coarse labels [N] (.npy) for hierarchical HR@k")
	camPath := fs.String("cams", "", "camera ids [N] (.npy) for re-identification (needs --query-mask)")
	pairsPath := fs.String("pairs", "", "verification pairs [P, 3] (.npy int: i, j, same) for AUC, TAR@FAR, 10-fold accuracy")
	kList := fs.String("k", "1,2,4,8,16,32", "comma-separated k for R@k and Recall@k (the default list stops at the candidates per query; a k given here beyond them is an error)")
	mapK := fs.String("map-at-k", "", "comma-separated k for mAP@k (divided by min(k, |P|))")
	conv := fs.String("map-convention", "", "comma-separated peer conventions to add: oml (oml/mAP@k ÷ hits in the top k, oml/P@k ÷ min(k, |P|)), pml (pml/mAP@k ÷ |P|, pml/P@k ÷ k); mAP@k at --map-at-k (else --k), P@k at --k")
	noNorm := fs.Bool("no-normalize", false, "use embeddings as given (inner product) instead of L2-normalising them")
	noOPIS := fs.Bool("no-opis", false, "skip OPIS and ε-OPIS")
	farMin := fs.Float64("far-min", metrics.OPISDefaultFARMin, "OPIS calibration range: lowest FAR")
	farMax := fs.Float64("far-max", metrics.OPISDefaultFARMax, "OPIS calibration range: highest FAR")
	exhaustive := fs.Bool("opis-exhaustive", false, "OPIS over all pairs (CUB/Cars protocol) instead of all positives + 10 negatives per positive")
	noCluster := fs.Bool("no-cluster", false, "skip k-means NMI/AMI")
	rerankK := fs.Int("rerank-k", 0, "add contextual re-ranking keys ctx/… with this neighbourhood size (seed 004 Table 10); 0 = off")
	rerankBeta := fs.Float64("rerank-beta", 0.1, "weight β of the contextual similarity in re-ranking")
	asJSON := fs.Bool("json", false, "print one JSON object, rates as fractions in [0, 1] (the text output prints them in percent)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *embPath == "" || *labPath == "" {
		fmt.Fprintln(stderr, "dmlkit eval: --emb and --labels are required")
		fs.Usage()
		return errUsage
	}
	emb, shape, err := npy.ReadFloat32(*embPath)
	if err != nil {
		return err
	}
	if len(shape) != 2 {
		return fmt.Errorf("%s: embeddings must be 2-D [N, D], got shape %v", *embPath, shape)
	}
	in := evaluate.Inputs{Emb: emb, N: shape[0], D: shape[1]}
	if in.Labels, err = readVector(*labPath, "labels", in.N); err != nil {
		return err
	}
	if *qPath != "" {
		q, err := readVector(*qPath, "query mask", in.N)
		if err != nil {
			return err
		}
		in.QueryMask = make([]bool, in.N)
		for i, v := range q {
			if v != 0 && v != 1 {
				return fmt.Errorf("%s: query mask entry %d is %d, want 0 or 1", *qPath, i, v)
			}
			in.QueryMask[i] = v == 1
		}
	}
	if *coarsePath != "" {
		if in.Coarse, err = readVector(*coarsePath, "coarse labels", in.N); err != nil {
			return err
		}
	}
	if *camPath != "" {
		if in.Cameras, err = readVector(*camPath, "camera ids", in.N); err != nil {
			return err
		}
	}
	if *pairsPath != "" {
		p, pshape, err := npy.ReadInt64(*pairsPath)
		if err != nil {
			return err
		}
		if len(pshape) != 2 || pshape[1] != 3 {
			return fmt.Errorf("%s: pairs must be [P, 3] (i, j, same), got shape %v", *pairsPath, pshape)
		}
		for r := 0; r < pshape[0]; r++ {
			i, j, same := p[3*r], p[3*r+1], p[3*r+2]
			if i < 0 || j < 0 || int(i) >= in.N || int(j) >= in.N {
				return fmt.Errorf("%s: pair %d (%d, %d) indexes outside the %d embeddings", *pairsPath, r, i, j, in.N)
			}
			if same != 0 && same != 1 {
				return fmt.Errorf("%s: pair %d has same = %d, want 0 or 1", *pairsPath, r, same)
			}
			in.Pairs = append(in.Pairs, metrics.VerifyPair{I: int(i), J: int(j), Same: same == 1})
		}
	}
	opt := evaluate.Options{NoNormalize: *noNorm, NoOPIS: *noOPIS, NoCluster: *noCluster,
		OPIS: metrics.OPISOptions{FARMin: *farMin, FARMax: *farMax}}
	if *exhaustive {
		opt.OPIS.Sampling = metrics.OPISExhaustive
	}
	if opt.K, err = parseInts(*kList, "k"); err != nil {
		return err
	}
	if *mapK != "" {
		if opt.MAPAtK, err = parseInts(*mapK, "map-at-k"); err != nil {
			return err
		}
	}
	if *conv != "" {
		for _, c := range strings.Split(*conv, ",") {
			pc, err := metrics.ParseConvention(strings.TrimSpace(c))
			if err != nil {
				return fmt.Errorf("--map-convention: %q: want oml or pml", c)
			}
			opt.Peers = append(opt.Peers, pc)
		}
	}
	if *rerankK > 0 {
		if in.QueryMask != nil {
			return fmt.Errorf("--rerank-k: contextual re-ranking is defined for self-retrieval only, not with --query-mask %s (drop one of them)", *qPath)
		}
		opt.Rerank = &metrics.RerankOptions{K: *rerankK, Beta: *rerankBeta}
	}
	kSet := false
	fs.Visit(func(f *flag.Flag) { kSet = kSet || f.Name == "k" })
	if err := checkKs(in, opt, kSet); err != nil {
		return err
	}
	res, err := evaluate.Run(in, opt)
	if err != nil {
		return err
	}
	if *asJSON {
		clean := map[string]any{}
		for k, v := range res.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				clean[k] = nil
			} else {
				clean[k] = v
			}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(clean)
	}
	keys := make([]string, 0, len(res.Metrics))
	for k := range res.Metrics {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return metricKeyLess(keys[i], keys[j]) })
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %s\n", "metric", "value (rates in percent, %; OPIS, ε-OPIS and counts as computed)")
	for _, k := range keys {
		v := res.Metrics[k]
		if isRateKey(k) {
			v *= 100
		}
		fmt.Fprintf(&b, "%-16s %.6g\n", k, v)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return fmt.Errorf("eval: writing the metrics: %w", err)
	}
	return nil
}

// isRateKey reports whether metric key k (as evaluate.Run names them) is a rate or score in [0, 1]
// (R@k, Recall@k, MAP@R, mAP, NMI, AUC, ..., also under ctx/, oml/, pml/), which the text output
// prints in percent; OPIS, ε-OPIS and the n_… counts are printed as computed.
func isRateKey(k string) bool {
	for _, p := range []string{"ctx/", "oml/", "pml/"} {
		k = strings.TrimPrefix(k, p)
	}
	switch k {
	case "MAP@R", "R-Precision", "mINP", "AUC", "NMI", "AMI":
		return true
	}
	for _, p := range []string{"R@", "Recall@", "HR@", "mAP", "CMC@", "P@", "TAR@", "Acc("} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// checkKs rejects a cutoff of --k (when given: the default list is cut to the candidates) or
// --map-at-k larger than the candidates each query ranks (N − 1 in leave-one-out retrieval, the
// gallery with --query-mask): its metric would be missing.
func checkKs(in evaluate.Inputs, opt evaluate.Options, kGiven bool) error {
	cand, what := in.N-1, fmt.Sprintf("%d other embeddings (leave-one-out over %d)", in.N-1, in.N)
	if in.QueryMask != nil {
		g := 0
		for _, q := range in.QueryMask {
			if !q {
				g++
			}
		}
		cand, what = g, fmt.Sprintf("%d gallery items", g)
	}
	for _, f := range []struct {
		name string
		ks   []int
	}{{"k", opt.K}, {"map-at-k", opt.MAPAtK}} {
		if f.name == "k" && !kGiven {
			continue
		}
		for _, k := range f.ks {
			if k > cand {
				return fmt.Errorf("--%s %d: larger than the %s each query ranks", f.name, k, what)
			}
		}
	}
	return nil
}

// metricKeyLess orders metric keys by name, and keys that differ only in a number after "@" or
// "=" by that number: R@1, R@2, R@16 (not R@1, R@16, R@2).
func metricKeyLess(a, b string) bool {
	pa, na, oka := splitMetricKey(a)
	pb, nb, okb := splitMetricKey(b)
	if oka && okb && pa == pb && na != nb {
		return na < nb
	}
	return a < b
}

func splitMetricKey(k string) (string, float64, bool) {
	i := strings.LastIndexAny(k, "@=")
	if i < 0 {
		return k, 0, false
	}
	v, err := strconv.ParseFloat(k[i+1:], 64)
	if err != nil {
		return k, 0, false
	}
	return k[:i+1], v, true
}

// readVector reads a 1-D integer .npy of length n.
func readVector(path, what string, n int) ([]int64, error) {
	v, shape, err := npy.ReadInt64(path)
	if err != nil {
		return nil, err
	}
	if len(shape) != 1 || shape[0] != n {
		return nil, fmt.Errorf("%s: %s must have shape [%d] (one per embedding), got %v", path, what, n, shape)
	}
	return v, nil
}

func parseInts(s, flagName string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("--%s: %q: entry %d is empty", flagName, s, i+1)
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flagName, f)
		}
		out = append(out, v)
	}
	return out, nil
}
