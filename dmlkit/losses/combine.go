package losses

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "combo",
		Paper:   "weighted sum of registered losses, e.g. seed 004's λ·contextual + (1−λ)·contrastive + γ·reg",
		Summary: `Σ_k w_k·L_k over named losses: expr "rsk+0.5*tcm(pos_margin=0.8)" and/or terms`,
		New:     func() Loss { return &ComboConfig{} },
	})
}

// Term is one weighted loss of a [ComboConfig]: Weight · (loss Name configured with Set).
type Term struct {
	Name   string         `yaml:"name"`
	Weight float64        `yaml:"weight"`
	Set    map[string]any `yaml:"set,omitempty"`
}

// ComboConfig is a weighted sum of registered losses (and regularisers registered as losses):
//
//	L = Σ_k w_k · L_k(Inputs)
//
// Terms come from Terms (Go code, YAML specs) followed by those of Expr, a string such as
//
//	"rsk + 0.5*tcm"
//	"0.7*contextual(k=4) + 0.3*contrastive(distance=cosine, pos_margin=0.75) + 1e-3*reg"
//
// Grammar: ['+' | '-'] term (('+' | '-') term)*, term = [number ('*' | '·')] name ['(' key=value {',' key=value} ')'];
// a missing weight is 1, '-' negates the next weight, values may hold commas inside [...]. Each
// term is configured like [New] (defaults, then its settings, then validation) and built in its own
// sub-scope "<index>_<name>" of Inputs.Scope, so two proxy losses never share variables. Every term
// sees the same Inputs; the value has the dtype of Inputs.Emb.
//
// Options sets options of every term of a named loss after the term's own settings, so that a sweep
// can vary one option as a plain dotted key: loss.set.options.tcm.pos_margin = 0.8 configures the
// tcm term of "smoothap+tcm" (seed 000 Fig. 6's margin grid). Naming a loss that is not a term is an error.
type ComboConfig struct {
	Expr    string                    `yaml:"expr" doc:"weighted sum, e.g. 'rsk+0.5*tcm(pos_margin=0.8)'"`
	Terms   []Term                    `yaml:"terms" doc:"weighted terms (YAML/Go); Expr's terms follow them"`
	Options map[string]map[string]any `yaml:"options" doc:"loss name → options applied to its terms after their own, e.g. options.tcm.pos_margin"`
}

type comboTerm struct {
	name   string
	weight float64
	loss   Loss
}

// Name implements Loss.
func (c *ComboConfig) Name() string { return "combo" }

// Validate implements Validator: it parses Expr and configures every term.
func (c *ComboConfig) Validate() error {
	_, err := c.resolve()
	return err
}

// Resolved returns the configured terms (name, weight, loss), in order.
func (c *ComboConfig) Resolved() ([]Term, []Loss, error) {
	rs, err := c.resolve()
	if err != nil {
		return nil, nil, err
	}
	terms := make([]Term, len(rs))
	ls := make([]Loss, len(rs))
	for i, r := range rs {
		terms[i] = Term{Name: r.name, Weight: r.weight}
		ls[i] = r.loss
	}
	return terms, ls, nil
}

func (c *ComboConfig) resolve() ([]comboTerm, error) {
	terms := append([]Term(nil), c.Terms...)
	if strings.TrimSpace(c.Expr) != "" {
		parsed, err := ParseCombo(c.Expr)
		if err != nil {
			return nil, err
		}
		terms = append(terms, parsed...)
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("no terms: set expr (e.g. \"rsk+0.5*tcm\") or terms")
	}
	for name := range c.Options {
		found := false
		for _, t := range terms {
			found = found || t.Name == name
		}
		if !found {
			return nil, fmt.Errorf("options.%s: %q is not a term of the sum", name, name)
		}
	}
	out := make([]comboTerm, len(terms))
	for i, t := range terms {
		if o := c.Options[t.Name]; len(o) > 0 {
			set := make(map[string]any, len(t.Set)+len(o))
			for k, v := range t.Set {
				set[k] = v
			}
			for k, v := range o {
				set[k] = v
			}
			t.Set = set
		}
		l, err := New(t.Name, t.Set)
		if err != nil {
			return nil, fmt.Errorf("term %d: %w", i+1, err)
		}
		out[i] = comboTerm{name: t.Name, weight: t.Weight, loss: l}
	}
	return out, nil
}

// Build implements Loss.
func (c *ComboConfig) Build(in Inputs) *Node {
	loss, _ := c.build(in, false)
	return loss
}

// BuildDiagnosed implements Diagnoser: for each term k, in order, "loss/<key>" is its weighted
// value w_k·L_k (the summand of L), followed, when the term is itself a Diagnoser, by its
// diagnostics named "<key>/<name>" (e.g. "cit/hard_triplets"). The key is the term's loss name,
// or "<index>_<name>" (its scope name) when that loss appears in more than one term.
func (c *ComboConfig) BuildDiagnosed(in Inputs) (*Node, []Diagnostic) {
	return c.build(in, true)
}

// build returns Σ_k w_k·L_k and, when diag, the diagnostics of BuildDiagnosed.
func (c *ComboConfig) build(in Inputs, diag bool) (*Node, []Diagnostic) {
	rs, err := c.resolve()
	if err != nil {
		panic(fmt.Sprintf("losses: combo: %v", err))
	}
	seen := map[string]int{}
	for _, r := range rs {
		seen[r.name]++
	}
	var total *Node
	var diags []Diagnostic
	for i, r := range rs {
		sub := in
		if in.Scope != nil {
			sub.Scope = in.Scope.In("%d_%s", i, r.name)
		}
		var v *Node
		var ds []Diagnostic
		if d, ok := r.loss.(Diagnoser); ok && diag {
			v, ds = d.BuildDiagnosed(sub)
		} else {
			v = r.loss.Build(sub)
		}
		if v.DType() != in.Emb.DType() {
			v = ConvertDType(v, in.Emb.DType())
		}
		v = MulScalar(v, r.weight)
		if total == nil {
			total = v
		} else {
			total = Add(total, v)
		}
		if diag {
			key := r.name
			if seen[r.name] > 1 {
				key = fmt.Sprintf("%d_%s", i, r.name)
			}
			diags = append(diags, Diagnostic{Name: "loss/" + key, Value: v})
			for _, d := range ds {
				diags = append(diags, Diagnostic{Name: key + "/" + d.Name, Value: d.Value})
			}
		}
	}
	return total, diags
}

// BlockwiseSupport implements Blockwise: a combo decomposes when every term does.
func (c *ComboConfig) BlockwiseSupport() error {
	rs, err := c.resolve()
	if err != nil {
		return err
	}
	for i, r := range rs {
		if err := CheckBlockwise(r.loss); err != nil {
			return fmt.Errorf("term %d: %w", i+1, err)
		}
	}
	return nil
}

// blockTerms returns the resolved terms as Blockwise losses (panics if one is not: a programming
// error, BlockwiseSupport says so first).
func (c *ComboConfig) blockTerms() ([]comboTerm, []Blockwise) {
	if err := c.BlockwiseSupport(); err != nil {
		panic(fmt.Sprintf("losses: combo: %v", err))
	}
	rs, _ := c.resolve()
	bs := make([]Blockwise, len(rs))
	for i, r := range rs {
		bs[i] = r.loss.(Blockwise)
	}
	return rs, bs
}

// NumBlockCounts implements Blockwise: the terms' counts, concatenated in term order.
func (c *ComboConfig) NumBlockCounts() int {
	_, bs := c.blockTerms()
	m := 0
	for _, b := range bs {
		m += b.NumBlockCounts()
	}
	return m
}

// termInputs returns in with the Scope of term i (as in Build).
func (c *ComboConfig) termInputs(in Inputs, i int, name string) Inputs {
	sub := in
	if in.Scope != nil {
		sub.Scope = in.Scope.In("%d_%s", i, name)
	}
	return sub
}

// BlockCounts implements Blockwise: the concatenation of the terms' block counts.
func (c *ComboConfig) BlockCounts(in Inputs) *Node {
	rs, bs := c.blockTerms()
	var parts []*Node
	for i, b := range bs {
		if b.NumBlockCounts() > 0 {
			parts = append(parts, b.BlockCounts(c.termInputs(in, i, rs[i].name)))
		}
	}
	if len(parts) == 0 {
		return Zeros(in.Emb.Graph(), shapes.Make(dtypes.Float64, 0))
	}
	return Concatenate(parts, 0)
}

// BuildBlock implements Blockwise: Σ_k w_k · BuildBlock_k(block, counts_k), counts_k the term's
// slice of counts.
func (c *ComboConfig) BuildBlock(in Inputs, counts *Node) *Node {
	rs, bs := c.blockTerms()
	var total *Node
	off := 0
	for i, b := range bs {
		m := b.NumBlockCounts()
		v := b.BuildBlock(c.termInputs(in, i, rs[i].name), Slice(counts, AxisRange(off, off+m)))
		off += m
		if v.DType() != in.Emb.DType() {
			v = ConvertDType(v, in.Emb.DType())
		}
		v = MulScalar(v, rs[i].weight)
		if total == nil {
			total = v
		} else {
			total = Add(total, v)
		}
	}
	return total
}

// ParseCombo parses the expression form of [ComboConfig] into terms. Errors give the byte offset.
func ParseCombo(expr string) ([]Term, error) {
	p := &comboParser{s: expr}
	var out []Term
	sign := 1.0
	p.space()
	if !p.eof() && (p.s[p.i] == '-' || p.s[p.i] == '+') { // leading sign
		if p.s[p.i] == '-' {
			sign = -1
		}
		p.i++
	}
	for {
		t, err := p.term()
		if err != nil {
			return nil, fmt.Errorf("combo expression %q: %w", expr, err)
		}
		t.Weight *= sign
		out = append(out, t)
		p.space()
		if p.eof() {
			return out, nil
		}
		switch p.s[p.i] {
		case '+':
			sign = 1
		case '-':
			sign = -1
		default:
			return nil, fmt.Errorf("combo expression %q: offset %d: want '+' or '-', got %q", expr, p.i, p.s[p.i:])
		}
		p.i++
	}
}

type comboParser struct {
	s string
	i int
}

func (p *comboParser) eof() bool { return p.i >= len(p.s) }

func (p *comboParser) space() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// term parses [number ('*'|'·')] name ['(' settings ')'].
func (p *comboParser) term() (Term, error) {
	t := Term{Weight: 1}
	p.space()
	start := p.i
	// A number: digits, '.', exponents with their sign.
	for !p.eof() {
		ch := p.s[p.i]
		if ch >= '0' && ch <= '9' || ch == '.' || (ch == 'e' || ch == 'E') && p.i > start ||
			(ch == '-' || ch == '+') && p.i > start && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E') {
			p.i++
			continue
		}
		break
	}
	if p.i > start {
		w, err := strconv.ParseFloat(p.s[start:p.i], 64)
		if err != nil {
			return t, fmt.Errorf("offset %d: bad weight %q", start, p.s[start:p.i])
		}
		t.Weight = w
		p.space()
		switch {
		case strings.HasPrefix(p.s[p.i:], "*"):
			p.i++
		case strings.HasPrefix(p.s[p.i:], "·"):
			p.i += len("·")
		default:
			return t, fmt.Errorf("offset %d: want '*' after weight %q", p.i, p.s[start:p.i])
		}
		p.space()
	}
	start = p.i
	for !p.eof() {
		r := rune(p.s[p.i])
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return t, fmt.Errorf("offset %d: want a loss name", start)
	}
	t.Name = p.s[start:p.i]
	p.space()
	if p.eof() || p.s[p.i] != '(' {
		return t, nil
	}
	open := p.i
	depth, j := 0, p.i+1
	for ; j < len(p.s); j++ {
		if p.s[j] == '[' {
			depth++
		} else if p.s[j] == ']' {
			depth--
		} else if p.s[j] == ')' && depth == 0 {
			break
		}
	}
	if j == len(p.s) {
		return t, fmt.Errorf("offset %d: unclosed '('", open)
	}
	body := p.s[open+1 : j]
	p.i = j + 1
	t.Set = map[string]any{}
	for _, kv := range comboSplit(body) {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return t, fmt.Errorf("term %s: setting %q is not key=value", t.Name, strings.TrimSpace(kv))
		}
		t.Set[k] = strings.TrimSpace(v)
	}
	return t, nil
}

// comboSplit splits s at commas outside brackets.
func comboSplit(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
