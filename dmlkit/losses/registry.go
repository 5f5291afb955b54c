// Package losses holds every metric-learning loss of the five reproduced papers and the baselines
// they compare against, as plain GoMLX graph functions with typed configurations.
//
// A loss is a config struct (yaml-tagged fields, defaults = the paper's) that implements [Loss]:
// Build(Inputs) returns a scalar loss node. Every loss is registered by a short lower-case name
// ("tcm", "rsk", "contextual", ...) so configs, the CLI (`dmlkit loss`) and experiment specs can
// create it with [New]. Where the authors' code computes something different from the paper text,
// the paper is the default and the code's behaviour is a named boolean option
// (see ../shared/notes/papers-vs-code.md).
//
// Losses know nothing of data or training; they see a batch of embeddings and labels.
package losses

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Inputs is what every loss receives.
//
//   - Emb: batch embeddings [B, D], float32 or float64, as produced by the model (not necessarily
//     L2-normalised: each loss normalises where its paper does).
//   - Labels: [B] integer class labels, or [B, S] label sets (mixup: a sample is positive to every
//     label of its set; −1 marks an empty slot).
//   - RefEmb, RefLabels: optional references [R, D] and [R] / [R, S] (cross-batch memory, SiMix
//     virtual samples); nil means "the batch itself", in which case a sample is never its own pair.
//   - QueryIndex: optional [B] integer vector, only together with RefEmb: query i is row
//     QueryIndex[i] of RefEmb (its own embedding, not a copy). Pairs (i, QueryIndex[i]) are then
//     excluded exactly as the diagonal is when RefEmb is nil, and rank-based losses treat the
//     references as "the batch itself". This is how a block of anchors is scored against the whole
//     batch in the blockwise loss stage of multistage backprop ([Blockwise]); nil: no query is
//     among the references.
//   - Scope: where losses with learnable parameters (proxies) create their variables; may be nil for
//     stateless losses.
//   - NumClasses: number of training classes, for proxy-based losses.
//   - ClassBound: the batch sampler's bound on samples per label (0 = none known).
//   - LabelWeights: optional [B, S] weights of the slots of [B, S] label sets (mixup's λ and 1 − λ,
//     cutmix's area ratio; an empty slot's weight is ignored), for losses with soft targets
//     (normsoftmax); nil: none given. Losses that compare label sets as sets ignore it.
type Inputs struct {
	Emb, Labels       *graph.Node
	RefEmb, RefLabels *graph.Node
	QueryIndex        *graph.Node
	Scope             *model.Scope
	NumClasses        int
	// ClassBound is an upper bound on the number of samples of one label in the batch that the batch
	// sampler guarantees (M of the m_per_class and hierarchical samplers; 0 = none known). Losses
	// whose cost grows with it (rsk's [B, c−1, B] rank tensor) use it where their own bound is unset.
	ClassBound int
	// LabelWeights are the [B, S] slot weights of label sets (nil: none).
	LabelWeights *graph.Node
}

// Loss is a configured loss function. Implementations are pointer-to-config types.
type Loss interface {
	// Name returns the registry name.
	Name() string
	// Build returns the scalar loss (same dtype as in.Emb). It may panic on shape errors, like GoMLX.
	Build(in Inputs) *graph.Node
}

// Diagnostic is a named scalar of a batch logged during training beside the loss: a per-term loss
// value, a count (of triplets, of hard triplets, …). Value is a scalar node of the loss's graph.
type Diagnostic struct {
	Name  string
	Value *graph.Node
}

// Diagnoser is implemented by losses that expose diagnostics beside their value (the trainer's
// log.every_steps). BuildDiagnosed returns the same loss node as Build (the same operations, so
// the value and its gradient are bit-identical) and the diagnostics, in a fixed order, built in
// the same graph. Names are unique; a combination of losses prefixes those of its terms.
type Diagnoser interface {
	BuildDiagnosed(in Inputs) (*graph.Node, []Diagnostic)
}

// Classifier is implemented by losses that learn one weight vector per training class
// ([NumClasses, D] in Inputs.Scope): ClassWeights returns the variable's name ("" when this
// configuration has none). The trainer's closed-set classification (eval.classify) scores each
// embedding against these rows by cosine.
type Classifier interface {
	ClassWeights() string
}

// UncertaintySplitter is implemented by losses that read [B, D + U] = concat(semantic,
// uncertainty) embeddings (IDML's two heads): UncSplit returns U (0: halves) and whether this
// configuration splits at all. The trainer checks U against the model's uncertainty head.
type UncertaintySplitter interface {
	UncSplit() (u int, ok bool)
}

// Validator is implemented by configs that can check their hyperparameters.
type Validator interface {
	Validate() error
}

// Entry describes a registered loss.
type Entry struct {
	Name    string      // registry name, e.g. "tcm"
	Paper   string      // reference, e.g. "Zhang et al., Threshold-Consistent Margin loss (seed 000), Eq. 5"
	Summary string      // one line
	New     func() Loss // returns a fresh config with the paper's defaults
	Proxies bool        // needs Inputs.Scope and Inputs.NumClasses
}

var registry = map[string]Entry{}

// Register adds a loss to the registry; it panics on a duplicate or malformed entry (a programming
// error, detected at init).
func Register(e Entry) {
	if e.Name == "" || e.New == nil {
		panic("losses: Register needs Name and New")
	}
	if e.Name != strings.ToLower(e.Name) {
		panic("losses: registry names are lower-case: " + e.Name)
	}
	if _, dup := registry[e.Name]; dup {
		panic("losses: duplicate registration of " + e.Name)
	}
	if got := e.New().Name(); got != e.Name {
		panic(fmt.Sprintf("losses: %s.New().Name() = %q", e.Name, got))
	}
	registry[e.Name] = e
}

// Lookup returns the entry registered under name.
func Lookup(name string) (Entry, bool) {
	e, ok := registry[name]
	return e, ok
}

// Names returns all registered names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// finiteField rejects a NaN or infinite hyperparameter (a float or a list of floats).
func finiteField(key string, v any) error {
	var xs []float64
	switch x := v.(type) {
	case float64:
		xs = []float64{x}
	case float32:
		xs = []float64{float64(x)}
	case []float64:
		xs = x
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s = %v: want a finite number", key, x)
		}
	}
	return nil
}

// New creates the loss registered under name with the paper's defaults, then applies set (keys are
// the config's yaml field names, values strings or YAML-typed values). Errors name the loss and the
// field at fault. Hyperparameters are validated: non-finite numbers are errors for every loss,
// and each loss rejects values outside its range (a negative margin or scale, …).
func New(name string, set map[string]any) (Loss, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("losses: unknown loss %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	l := e.New()
	if err := config.SetAll(l, set); err != nil {
		return nil, fmt.Errorf("losses: %s: %w", name, err)
	}
	for _, f := range config.Fields(l) {
		if err := finiteField(f.Key, f.Value); err != nil {
			return nil, fmt.Errorf("losses: %s: %w", name, err)
		}
	}
	if v, ok := l.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("losses: %s: %w", name, err)
		}
	}
	return l, nil
}
