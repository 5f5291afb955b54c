package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/gomlx/compute/dtypes"
)

func init() {
	register("loss", "evaluate a registered loss and its gradient on a saved batch (.npy); --list shows all losses", runLoss)
}

// lossSetFlag collects repeated --set key=value flags.
type lossSetFlag []string

func (s *lossSetFlag) String() string     { return strings.Join(*s, " ") }
func (s *lossSetFlag) Set(v string) error { *s = append(*s, v); return nil }

// lossReport is the --json output of `dmlkit loss`.
type lossReport struct {
	Loss       string         `json:"loss"`
	Value      float64        `json:"value"`
	Config     map[string]any `json:"config"`
	Batch      int            `json:"batch"`
	Dim        int            `json:"dim"`
	SetSize    int            `json:"label_set_size"`
	NumClasses int            `json:"num_classes,omitempty"`
	DType      string         `json:"dtype"`
	Seed       int64          `json:"seed"`
	GradNorm   float64        `json:"grad_norm"`
	GradPath   string         `json:"grad,omitempty"`
}

// lossListing is one loss of `dmlkit loss --list --json`.
type lossListing struct {
	Name     string       `json:"name"`
	Paper    string       `json:"paper"`
	Summary  string       `json:"summary"`
	Proxies  bool         `json:"proxies"`
	Defaults []lossFieldJ `json:"defaults"`
}

type lossFieldJ struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
	Doc   string `json:"doc,omitempty"`
}

func runLoss(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loss", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit loss --name NAME [--set key=value ...] --emb E.npy --labels y.npy [--grad G.npy] [--json]")
		fmt.Fprintln(stderr, "       dmlkit loss --list [--json]")
		fs.PrintDefaults()
	}
	list := fs.Bool("list", false, "list every registered loss with its defaults and paper reference")
	name := fs.String("name", "", "registered loss name (see --list)")
	var sets lossSetFlag
	fs.Var(&sets, "set", "hyperparameter key=value (repeatable); keys are the loss's yaml field names")
	embPath := fs.String("emb", "", "embeddings .npy, [B, D] float32/float64")
	labelsPath := fs.String("labels", "", "labels .npy, [B] class indices or [B, S] label sets (-1 = empty slot, the only negative label), int32/int64")
	gradPath := fs.String("grad", "", "write ∂L/∂embeddings here as a [B, D] float64 .npy")
	asJSON := fs.Bool("json", false, "print one JSON object")
	dtypeName := fs.String("dtype", "float64", "compute dtype: float64 or float32")
	seed := fs.Int64("seed", 0, "seed for the initialisation of learnable parameters (proxies)")
	numClasses := fs.Int("num-classes", 0, "number of classes (default: max label + 1); every label must be below it")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dmlkit loss: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	if *list {
		return listLosses(stdout, *asJSON)
	}
	if *name == "" || *embPath == "" || *labelsPath == "" {
		fmt.Fprintln(stderr, "dmlkit loss: --name, --emb and --labels are required (or --list)")
		return errUsage
	}
	var dtype dtypes.DType
	switch *dtypeName {
	case "float64":
		dtype = dtypes.Float64
	case "float32":
		dtype = dtypes.Float32
	default:
		return fmt.Errorf("--dtype %q: want float64 or float32", *dtypeName)
	}
	set, err := config.ParseAssignments(sets)
	if err != nil {
		return fmt.Errorf("--set: %w", err)
	}
	l, err := losses.New(*name, set)
	if err != nil {
		return err
	}
	emb, eshape, err := npy.ReadFloat64(*embPath)
	if err != nil {
		return fmt.Errorf("--emb: %w", err)
	}
	if len(eshape) != 2 {
		return fmt.Errorf("--emb %s: shape %v, want [B, D]", *embPath, eshape)
	}
	labels, lshape, err := npy.ReadInt64(*labelsPath)
	if err != nil {
		return fmt.Errorf("--labels: %w", err)
	}
	setSize := 1
	switch {
	case len(lshape) == 1 && lshape[0] == eshape[0]:
	case len(lshape) == 2 && lshape[0] == eshape[0]:
		setSize = lshape[1]
	default:
		return fmt.Errorf("--labels %s: shape %v, want [%d] or [%d, S] to match the embeddings", *labelsPath, lshape, eshape[0], eshape[0])
	}
	b, d := eshape[0], eshape[1]
	if *numClasses < 0 {
		return fmt.Errorf("--num-classes %d: want > 0 (or 0 for max label + 1)", *numClasses)
	}
	nc := *numClasses
	if nc == 0 {
		for _, v := range labels {
			nc = max(nc, int(v)+1)
		}
	}
	if err := losses.CheckLabels(labels, setSize, nc); err != nil {
		if *numClasses > 0 {
			return fmt.Errorf("--labels %s with --num-classes %d: %w", *labelsPath, *numClasses, err)
		}
		return fmt.Errorf("--labels %s: %w", *labelsPath, err)
	}
	opt := losses.EvalOptions{Grad: true, DType: dtype, Seed: *seed, NumClasses: *numClasses}
	res, err := losses.Evaluate(backend.MustShared(), l, emb, b, d, labels, setSize, opt)
	if err != nil {
		return err
	}
	if math.IsNaN(res.Value) || math.IsInf(res.Value, 0) {
		return fmt.Errorf("%s: non-finite loss value %v", *name, res.Value)
	}
	norm := 0.0
	for _, g := range res.Grad {
		norm += g * g
	}
	norm = math.Sqrt(norm)
	if *gradPath != "" {
		if err := npy.Write(*gradPath, res.Grad, b, d); err != nil {
			return fmt.Errorf("--grad: %w", err)
		}
	}
	if *asJSON {
		rep := lossReport{Loss: *name, Value: res.Value, Config: lossConfigMap(l), Batch: b, Dim: d, SetSize: setSize,
			NumClasses: *numClasses, DType: *dtypeName, Seed: *seed, GradNorm: norm, GradPath: *gradPath}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "loss:      %s\n", *name)
	for _, f := range config.Fields(l) {
		fmt.Fprintf(stdout, "  %-18s %v\n", f.Key, f.Value)
	}
	fmt.Fprintf(stdout, "batch:     %d × %d (label set size %d), %s\n", b, d, setSize, *dtypeName)
	fmt.Fprintf(stdout, "value:     %.17g\n", res.Value)
	fmt.Fprintf(stdout, "|∂L/∂E|:   %.6g\n", norm)
	if *gradPath != "" {
		fmt.Fprintf(stdout, "gradient:  %s\n", *gradPath)
	}
	return nil
}

// lossConfigMap returns the resolved configuration as key → value.
func lossConfigMap(l losses.Loss) map[string]any {
	m := map[string]any{}
	for _, f := range config.Fields(l) {
		m[f.Key] = f.Value
	}
	return m
}

func listLosses(stdout io.Writer, asJSON bool) error {
	var all []lossListing
	for _, n := range losses.Names() {
		e, _ := losses.Lookup(n)
		item := lossListing{Name: n, Paper: e.Paper, Summary: e.Summary, Proxies: e.Proxies, Defaults: []lossFieldJ{}}
		for _, f := range config.Fields(e.New()) {
			item.Defaults = append(item.Defaults, lossFieldJ{Key: f.Key, Type: f.Type, Value: f.Value, Doc: f.Doc})
		}
		all = append(all, item)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	for _, item := range all {
		proxies := ""
		if item.Proxies {
			proxies = " [learnable proxies]"
		}
		fmt.Fprintf(stdout, "%s%s — %s\n  paper: %s\n", item.Name, proxies, item.Summary, item.Paper)
		for _, f := range item.Defaults {
			fmt.Fprintf(stdout, "    %-18s %-10s = %-8v %s\n", f.Key, f.Type, f.Value, f.Doc)
		}
	}
	return nil
}
