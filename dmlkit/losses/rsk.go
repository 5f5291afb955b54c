package losses

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

func init() {
	Register(Entry{
		Name:    "rsk",
		Paper:   "Patel, Tolias & Matas, Recall@k Surrogate loss with large batches and similarity mixup (seed 003), Eq. 4–7; SiMix Eq. 8–10",
		Summary: "smooth recall@k over several k (sigmoid ranks), optional SiMix virtual positives from mixed similarities",
		New:     func() Loss { return DefaultRSK() },
	})
}

// RSKConfig is the Recall@k Surrogate loss (RS@k) of seed 003, optionally with SiMix.
//
// With s the cosine similarity (dot product of the L2-normalised embeddings [B, D]) and, for every
// query q of the batch and every positive x ∈ P_q,
//
//	rank(q, x) = 1 + Σ_{z ∈ Ω, z ≠ x} σ_{τ₂}(s_qz − s_qx)                      (Eq. 5, inner sum)
//	R̃ᵏ(q)     = min(k, Σ_{x∈P_q} σ_{τ₁}(k − rank(q, x))) / min(k, |P_q|)     (Eq. 5 with the §3.2 clipping)
//	L(q)       = (1/|K|) Σ_{k∈K} (1 − R̃ᵏ(q))                                  (Eq. 6, 7)
//	L          = mean of L(q) over the queries that have at least one positive (0 if none)
//
// σ_τ(u) = 1/(1 + e^{−u/τ}) (Eq. 4). As in the authors' code the exponent u/τ is clamped to
// [−50, 50] (zero gradient beyond; with τ₂ = 0.01 that is |s_qz − s_qx| > 0.5). The paper's ranking
// set is Ω = B∖{q}; QueryInRanking uses Ω = B as the code does (only z = x is excluded there), which
// raises every positive's rank by ≈1 because s_qq = 1 (papers-vs-code §5: code 0.7586 vs paper 0.7074).
//
// Defaults: τ₁ = 1, τ₂ = 0.01, K = {1, 2, 4, 8, 16} (paper without SiMix). The paper's SiMix runs use
// K = {1, 2, 4, 8, 12, 16, 20, 24, 28, 32}; pass it with k: "1,2,4,8,12,16,20,24,28,32".
//
// SiMix (Eq. 8–10): for every unordered same-class pair (x, z) of the batch a virtual example
// v = αx + (1 − α)z, α ~ U(0, 1) one per pair, labelled with their class. It is never materialised:
// with M the [N, B] mixing matrix (rows e_i for originals, αe_x + (1−α)e_z for virtual examples)
// the similarities of the expanded batch B ∪ B̂ are M S Mᵀ, i.e. Eq. 9 for original–virtual and
// Eq. 10 for virtual–virtual pairs (no re-normalisation, as in the paper and the code). Virtual
// examples are queries, positives and ranking items like the originals. α comes from the Scope's RNG
// (reproducible with the store's seed), or is fixed by SiMixAlpha ∈ [0, 1], or (tests) given per
// pair by SiMixAlphaTable. SiMix needs plain [B] labels.
//
// Batch layout: class-contiguous batches are NOT required (positives are found with masks). The
// positives of each query are gathered into P static slots so the rank tensor is [N, P, N] instead of
// [N, N, N]: P = c − 1 without SiMix, c − 1 + c(c−1)/2 with SiMix, where c = MaxClassSize bounds the
// number of batch samples sharing a label (the samples-per-class of a PK sampler); 0 means c = B, exact
// for any batch but cubic in B. If a batch has a class larger than c the loss is NaN (loud, not
// silently wrong). References (Inputs.RefEmb) are not supported by Build: RS@k ranks within the batch.
// The loss is [Blockwise]: BuildBlock ranks a block of queries against the whole batch (RefEmb with
// QueryIndex), a [block, P, B] rank tensor per block; with SiMix a block of K anchors owns its K
// originals and their K·O pair slots, ranked against all N items ([K(1+O), P, N], see simixBlock).
//
// SiMix items: each sample gets O = ⌊c/2⌋ pair slots (see rskPairSlots), so N = B·(1 + O) items of
// which B + Σ_classes n(n−1)/2 are valid (invalid slots are neither queries nor ranking items).
//
// Memory: the [N, P, N] sigmoid tensor is computed in chunks of ChunkQueries queries (default: about
// 16M elements each) and recomputed chunk by chunk in the backward pass (a custom gradient), so it
// never exists whole; what remains are [N, N] matrices (0.58 GB each in float32 for B = 4000, c = 4,
// N = 12000 — about 11.5 GB resident measured on the Go backend). The value and gradient do not
// depend on the chunking.
type RSKConfig struct {
	TauRank         float64   `yaml:"tau1" doc:"τ1: temperature of the sigmoid on ranks"`
	TauSim          float64   `yaml:"tau2" doc:"τ2: temperature of the sigmoid on similarity differences"`
	K               []int     `yaml:"k" doc:"the set K of recall cut-offs"`
	QueryInRanking  bool      `yaml:"query_in_ranking" doc:"authors' code: the query itself is part of the ranking set (paper: B without q)"`
	MaxClassSize    int       `yaml:"max_class_size" doc:"upper bound on batch samples per label (0 = the batch sampler's bound, M of m_per_class, else the batch size; NaN loss if exceeded)"`
	SiMix           bool      `yaml:"simix" doc:"similarity mixup: add virtual positives mixed from all same-class pairs (Eq. 8-10)"`
	SiMixAlpha      float64   `yaml:"simix_alpha" doc:"fixed mixing coefficient in [0,1]; negative = α ~ U(0,1) per pair from the Scope RNG"`
	ChunkQueries    int       `yaml:"chunk_queries" doc:"queries per chunk of the [N, P, N] rank computation (0 = auto, about 16M elements)"`
	SiMixAlphaTable []float64 `yaml:"-"` // tests: [B·B] row-major, α of pair (i, j), i < j, v = α e_i + (1−α) e_j
}

// DefaultRSK returns the paper's defaults (no SiMix).
func DefaultRSK() *RSKConfig {
	return &RSKConfig{TauRank: 1, TauSim: 0.01, K: []int{1, 2, 4, 8, 16}, SiMixAlpha: -1}
}

// Name implements Loss.
func (c *RSKConfig) Name() string { return "rsk" }

// Validate implements Validator.
func (c *RSKConfig) Validate() error {
	if c.TauRank <= 0 || c.TauSim <= 0 {
		return fmt.Errorf("tau1 %g, tau2 %g: temperatures must be > 0", c.TauRank, c.TauSim)
	}
	if len(c.K) == 0 {
		return fmt.Errorf("k: empty set of cut-offs")
	}
	for _, k := range c.K {
		if k < 1 {
			return fmt.Errorf("k: cut-off %d must be ≥ 1", k)
		}
	}
	if c.ChunkQueries < 0 {
		return fmt.Errorf("chunk_queries %d: must be ≥ 0", c.ChunkQueries)
	}
	if c.MaxClassSize < 0 {
		return fmt.Errorf("max_class_size %d: must be ≥ 0", c.MaxClassSize)
	}
	if c.SiMixAlpha > 1 {
		return fmt.Errorf("simix_alpha %g: want a value in [0, 1], or negative for random", c.SiMixAlpha)
	}
	return nil
}

// Build implements Loss.
func (c *RSKConfig) Build(in Inputs) *Node {
	if in.RefEmb != nil {
		panic("losses: rsk ranks within the batch; Inputs.RefEmb is not supported (blockwise: see BuildBlock)")
	}
	if !c.SiMix {
		lossK, hasPos, overflow := c.rskPlain(in)
		return Where(overflow, ScalarLike(lossK, math.NaN()), MaskedMean(lossK, hasPos))
	}
	if in.Labels.Rank() != 1 {
		panic(fmt.Sprintf("losses: rsk with simix needs [B] labels, got shape %s", in.Labels.Shape()))
	}
	b := in.Emb.Shape().Dim(0)
	return c.rskSiMix(in, CosineSim(in.Emb, in.Emb), c.maxClass(b, in.ClassBound))
}

// maxClass is the bound c on samples per label for a ranking set of r items: max_class_size, else
// the sampler's bound (Inputs.ClassBound), else r.
func (c *RSKConfig) maxClass(r, samplerBound int) int {
	m := c.MaxClassSize
	if m <= 0 {
		m = samplerBound
	}
	if m <= 0 || m > r {
		return r
	}
	return m
}

// rskPlain evaluates RS@k without SiMix for the queries of in against their ranking set (the batch
// itself, or RefEmb with the queries placed by QueryIndex): the per-query loss L(q) [B], the [B]
// mask of queries with a positive, and the overflow flag (a query with more positives than slots).
func (c *RSKConfig) rskPlain(in Inputs) (lossK, hasPos, overflow *Node) {
	refEmb, _, _ := refs(in)
	r := refEmb.Shape().Dim(0)
	maxClass := c.maxClass(r, in.ClassBound)
	s := CosineSim(in.Emb, refEmb)
	pos, _ := PairMasks(in)
	posIdx, slotF, numPos := rskCompactSlots(ConvertDType(pos, s.DType()), nil, maxClass-1)
	overflow = GreaterThan(ReduceMax(numPos), Scalar(s.Graph(), s.DType(), float64(maxClass-1)))
	var qIdx *Node
	if in.QueryIndex != nil {
		qIdx = ConvertDType(in.QueryIndex, dtypes.Int32)
	}
	lossK = c.rskPerQuery(s, nil, qIdx, posIdx, slotF, numPos)
	return lossK, GreaterThan(numPos, ZerosLike(numPos)), overflow
}

// BlockwiseSupport implements Blockwise: RS@k of a query depends only on its row of similarities
// against the ranking set, so the loss decomposes over anchors, with SiMix too: a block of anchors
// owns its originals and their pair slots (the virtual examples v = αx + (1 − α)z of the pairs
// (x, z) whose slot belongs to x, see rskPairSlots), and each of these items is ranked against all
// N = B(1 + O) items of the expanded batch, as in the whole-batch graph. SiMix needs [B] labels
// (BuildBlock panics otherwise, like Build).
func (c *RSKConfig) BlockwiseSupport() error { return nil }

// NumBlockCounts implements Blockwise: the number of queries with a positive.
func (c *RSKConfig) NumBlockCounts() int { return 1 }

// BlockCounts implements Blockwise: [number of the block's queries with at least one positive]
// (labels only). With SiMix the queries are the block's originals and valid pair slots; the count
// does not depend on α and leaves the RNG state alone.
func (c *RSKConfig) BlockCounts(in Inputs) *Node {
	if c.SiMix {
		hasPos, _ := c.simixBlockLabels(in)
		return stackCounts(blockCount(hasPos))
	}
	pos, _ := PairMasks(in)
	return stackCounts(blockCount(ReduceLogicalOr(pos, -1)))
}

// BuildBlock implements Blockwise: Σ_{block queries with a positive} L(q) / N, NaN if a query of
// the block has more positives than max_class_size − 1 (with SiMix: a class of the block's anchors
// has more than max_class_size members). Needs Inputs.RefEmb (the whole batch, the ranking set)
// and Inputs.QueryIndex; the rank tensor is [block, P, B] ([K(1+O), P, N] with SiMix), computed in
// chunks as in Build.
//
// SiMix with random α: every block draws the same [V] vector of α as the whole-batch graph would
// (graph.RandomUniform on the current RNG state of in.Scope's store, V = B·O in slot order), and
// only the block that holds the last anchor (QueryIndex containing B − 1) writes the advanced
// state back, the single advance of a whole-batch Build. So a driver must run the block holding
// anchor B − 1 last among a step's BuildBlock calls (EvaluateBlockwise and the trainer go through
// the blocks in increasing order); BlockCounts does not use the RNG.
func (c *RSKConfig) BuildBlock(in Inputs, counts *Node) *Node {
	if in.RefEmb == nil || in.QueryIndex == nil {
		panic("losses: rsk: BuildBlock needs RefEmb (the whole batch) and QueryIndex")
	}
	var lossK, hasPos, overflow *Node
	if c.SiMix {
		lossK, hasPos, overflow = c.simixBlock(in)
	} else {
		lossK, hasPos, overflow = c.rskPlain(in)
	}
	l := Div(MaskedReduceAllSum(lossK, hasPos), countAt(counts, 0, lossK.DType()))
	return Where(overflow, ScalarLike(l, math.NaN()), l)
}

// simixLayout is the label-only structure of the SiMix items of a batch (see rskSiMix): O pair
// slots per sample, partners [B, O] int32 and slot validity [B, O] bool, the [N] mixing indices
// i1, i2 (item a mixes originals i1[a] and i2[a]; originals are i1 = i2 = a) and the [N] item
// validity.
type simixLayout struct {
	b, o, maxClass int
	sameB          *Node // [B, B] bool
	first          *Node // [B, O] int32: sample i of slot (i, ·)
	partners       *Node // [B, O] int32
	i1, i2, valid  *Node // [N] int32, int32, bool
}

// newSimixLayout builds the SiMix layout of a batch with [B] labels.
func (c *RSKConfig) newSimixLayout(labels *Node, samplerBound int) *simixLayout {
	if labels.Rank() != 1 {
		panic(fmt.Sprintf("losses: rsk with simix needs [B] labels, got shape %s", labels.Shape()))
	}
	g := labels.Graph()
	b := labels.Shape().Dim(0)
	ly := &simixLayout{b: b, maxClass: c.maxClass(b, samplerBound)}
	ly.sameB = SameLabel(labels, labels)
	var slotValid *Node
	ly.partners, slotValid = rskPairSlots(ly.sameB, ly.maxClass/2)
	ly.o = ly.partners.Shape().Dim(1)
	v := b * ly.o
	ly.first = Iota(g, shapes.Make(dtypes.Int32, b, ly.o), 0)
	orig := Iota(g, shapes.Make(dtypes.Int32, b), 0)
	ly.i1 = Concatenate([]*Node{orig, Reshape(ly.first, v)}, 0)
	ly.i2 = Concatenate([]*Node{orig, Reshape(ly.partners, v)}, 0)
	ly.valid = Concatenate([]*Node{BroadcastToDims(Const(g, true), b), Reshape(slotValid, v)}, 0)
	return ly
}

// simixAlpha returns the [V] mixing weights α of e_{i1} of the B·O pair slots (first, partners:
// [B, O]) in dtype dt. advance is nil for the whole-batch graph (the Scope's RNG is drawn and
// advanced as usual); for a block it is a scalar bool: α is drawn from the current RNG state without
// consuming it, and the advanced state is written back only where advance is true (see BuildBlock).
func (c *RSKConfig) simixAlpha(in Inputs, dt dtypes.DType, first, partners, advance *Node) *Node {
	g := first.Graph()
	b, o := first.Shape().Dim(0), first.Shape().Dim(1)
	v := b * o
	switch {
	case c.SiMixAlphaTable != nil:
		if len(c.SiMixAlphaTable) != b*b {
			panic(fmt.Sprintf("losses: rsk: SiMixAlphaTable has %d values, want B·B = %d", len(c.SiMixAlphaTable), b*b))
		}
		table := ConvertDType(Const(g, c.SiMixAlphaTable), dt)
		lo := Min(Reshape(first, v), Reshape(partners, v))
		hi := Max(Reshape(first, v), Reshape(partners, v))
		a := Gather(table, InsertAxes(Add(MulScalar(lo, float64(b)), hi), -1)) // α of pair (lo, hi): weight of lo
		return Where(Equal(Reshape(first, v), lo), a, OneMinus(a))
	case c.SiMixAlpha >= 0:
		return BroadcastToDims(Scalar(g, dt, c.SiMixAlpha), v)
	}
	if in.Scope == nil {
		panic("losses: rsk with simix and random α needs Inputs.Scope (its RNG), or a fixed simix_alpha")
	}
	if advance == nil {
		return StopGradient(in.Scope.RandomUniform(g, shapes.Make(dt, v)))
	}
	// The same draw as Store.RandomUniform, without consuming the state unless advance.
	store := in.Scope.Store()
	path := model.JoinPath("/", model.RNGStateVariableName)
	rng := store.GetVariable(path)
	if rng == nil || !rng.HasValue() {
		if err := store.ResetRNGState(); err != nil {
			panic(fmt.Sprintf("losses: rsk: simix: initialising the RNG state: %v", err))
		}
		rng = store.GetVariable(path)
	}
	state := rng.NodeValue(g)
	// The generator reads a private copy of the state: the Go backend's RNGBitGenerator writes only
	// the words of the new state it uses, in place when it owns its input buffer, and leaves the
	// others undefined when it does not (here the state also feeds the Where).
	next, alpha := RandomUniform(Add(state, ZerosLike(state)), shapes.Make(dt, v))
	rng.SetNodeValue(Where(advance, next, state))
	return StopGradient(alpha)
}

// simixBlockItems returns, for the block of anchors QueryIndex [K], the layout, the block's items
// [K(1+O)] int32 (its originals, then their pair slots B + q·O + o) and their positives:
// posIdx [K(1+O), P] item indices, slotF [K(1+O), P] 0/1, numPos [K(1+O)], and the overflow flag
// (a class of the block's anchors larger than max_class_size). Labels only.
func (c *RSKConfig) simixBlockItems(in Inputs, dt dtypes.DType) (ly *simixLayout, items, posIdx, slotF, numPos, overflow *Node) {
	_, refLabels, _ := refs(in)
	ly = c.newSimixLayout(refLabels, in.ClassBound)
	g := refLabels.Graph()
	qi := ConvertDType(in.QueryIndex, dtypes.Int32)
	k := qi.Shape().Dim(0)
	b, o, maxClass := ly.b, ly.o, ly.maxClass
	slotsOf := Add(AddScalar(MulScalar(InsertAxes(qi, 1), float64(o)), float64(b)), Iota(g, shapes.Make(dtypes.Int32, 1, o), 1))
	items = Concatenate([]*Node{qi, Reshape(slotsOf, k*o)}, 0) // [Kn]
	// Local anchor row of each item: originals 0..K−1, then each anchor's O slots.
	anc := Concatenate([]*Node{Iota(g, shapes.Make(dtypes.Int32, k), 0),
		Reshape(Iota(g, shapes.Make(dtypes.Int32, k, o), 0), k*o)}, 0)
	ancIdx := InsertAxes(anc, -1)
	// Candidates as in rskSiMix, for the block's anchors only.
	sameF := ConvertDType(Gather(ly.sameB, InsertAxes(qi, -1)), dt) // [K, B]
	members, memberOK, classSize := rskCompactSlots(sameF, nil, maxClass)
	slotIdx := Add(AddScalar(MulScalar(InsertAxes(members, -1), float64(o)), float64(b)),
		Iota(g, shapes.Make(dtypes.Int32, 1, 1, o), 2))
	slotIdx = Reshape(slotIdx, k, maxClass*o)
	candK := Concatenate([]*Node{members, slotIdx}, 1)
	okK := Concatenate([]*Node{memberOK, Reshape(Mul(InsertAxes(memberOK, -1),
		Reshape(ConvertDType(Gather(ly.valid, InsertAxes(slotIdx, -1)), dt), k, maxClass, o)), k, maxClass*o)}, 1)
	cand := Gather(candK, ancIdx)
	itemValid := Gather(ly.valid, InsertAxes(items, -1))
	notSelf := ConvertDType(LogicalAnd(NotEqual(cand, InsertAxes(items, 1)), InsertAxes(itemValid, 1)), dt)
	okCand := Mul(Gather(okK, ancIdx), notSelf)
	numSlots := maxClass - 1 + maxClass*(maxClass-1)/2
	posIdx, slotF, numPos = rskCompactSlots(okCand, cand, numSlots)
	overflow = GreaterThan(ReduceMax(classSize), Scalar(g, dt, float64(maxClass)))
	return ly, items, posIdx, slotF, numPos, overflow
}

// simixBlockLabels returns the [K(1+O)] mask of the block's items with a positive (and the layout).
func (c *RSKConfig) simixBlockLabels(in Inputs) (hasPos *Node, ly *simixLayout) {
	refEmb, _, _ := refs(in)
	ly, _, _, _, numPos, _ := c.simixBlockItems(in, refEmb.DType())
	return GreaterThan(numPos, ZerosLike(numPos)), ly
}

// simixBlock evaluates RS@k with SiMix for the items owned by the block of anchors QueryIndex (its
// originals and their pair slots) against all N items: L(q) [K(1+O)], the mask of items with a
// positive, and the overflow flag. The rows of M S Mᵀ (Eq. 9–10) for the block's items are built
// from the rows of S of the originals they mix, without the [N, N] matrix:
//
//	A_a = w1[a]·S[i1[a], :] + w2[a]·S[i2[a], :]       [K(1+O), B]
//	s_a = w1[z]·A_a[i1[z]] + w2[z]·A_a[i2[z]]  (all z)  [K(1+O), N]
//
// with the same α (see BuildBlock) and the same pair slots (rskPairSlots on the whole batch's
// labels), so every entry equals the whole-batch one up to rounding. Memory: O(K(1+O)·N) for the
// similarities plus the chunked rank tensor, and label-only [B, B] masks (the pair enumeration).
func (c *RSKConfig) simixBlock(in Inputs) (lossK, hasPos, overflow *Node) {
	refEmb, _, _ := refs(in)
	dt := refEmb.DType()
	g := refEmb.Graph()
	ly, items, posIdx, slotF, numPos, overflow := c.simixBlockItems(in, dt)
	b := ly.b
	qi := ConvertDType(in.QueryIndex, dtypes.Int32)
	advance := ReduceLogicalOr(Equal(qi, Scalar(g, dtypes.Int32, float64(b-1))), 0)
	alpha := c.simixAlpha(in, dt, ly.first, ly.partners, advance)
	w1 := Concatenate([]*Node{Ones(g, shapes.Make(dt, b)), alpha}, 0)
	w2 := Concatenate([]*Node{Zeros(g, shapes.Make(dt, b)), OneMinus(alpha)}, 0)
	itemIdx := InsertAxes(items, -1)
	i1b, i2b := Gather(ly.i1, itemIdx), Gather(ly.i2, itemIdx)
	w1b, w2b := Gather(w1, itemIdx), Gather(w2, itemIdx)
	en := normalizeRows(refEmb)
	ent := Transpose(en, 0, 1)
	s1 := MatMul(Gather(en, InsertAxes(i1b, -1)), ent) // S[i1[a], :]
	s2 := MatMul(Gather(en, InsertAxes(i2b, -1)), ent) // S[i2[a], :]
	a := Add(Mul(InsertAxes(w1b, -1), s1), Mul(InsertAxes(w2b, -1), s2))
	at := Transpose(a, 0, 1) // [B, Kn]
	idx1, idx2 := InsertAxes(ly.i1, -1), InsertAxes(ly.i2, -1)
	sRows := Transpose(Add(Mul(InsertAxes(w1, -1), Gather(at, idx1)), Mul(InsertAxes(w2, -1), Gather(at, idx2))), 0, 1)
	lossK = c.rskPerQuery(sRows, ly.valid, items, posIdx, slotF, numPos)
	return lossK, GreaterThan(numPos, ZerosLike(numPos)), overflow
}

// rskSiMix expands the [B, B] similarities s with the virtual examples of every same-class pair and
// evaluates RS@k on the N = B + B·O items (O = ⌊c/2⌋ pair slots per sample, see rskPairSlots;
// invalid slots are ignored). The positives of every item are enumerated from its class's members
// (originals and their pair slots) rather than by masking an [N, N] matrix.
func (c *RSKConfig) rskSiMix(in Inputs, s *Node, maxClass int) *Node {
	g := s.Graph()
	dt := s.DType()
	b := s.Shape().Dim(0)
	sameB := SameLabel(in.Labels, in.Labels)
	partners, slotValid := rskPairSlots(sameB, maxClass/2) // [B, O] int32, [B, O] bool
	o := partners.Shape().Dim(1)
	v := b * o
	first := Iota(g, shapes.Make(dtypes.Int32, b, o), 0) // sample i of slot (i, ·)
	i1 := Concatenate([]*Node{Iota(g, shapes.Make(dtypes.Int32, b), 0), Reshape(first, v)}, 0)
	i2 := Concatenate([]*Node{Iota(g, shapes.Make(dtypes.Int32, b), 0), Reshape(partners, v)}, 0)
	alpha := c.simixAlpha(in, dt, first, partners, nil) // [V]: weight of e_{i1} in the virtual example of each slot
	w1 := Concatenate([]*Node{Ones(g, shapes.Make(dt, b)), alpha}, 0)
	w2 := Concatenate([]*Node{Zeros(g, shapes.Make(dt, b)), OneMinus(alpha)}, 0)
	// A = M S: rows of the expanded batch against the originals (Eq. 9), [N, B].
	idx1, idx2 := InsertAxes(i1, -1), InsertAxes(i2, -1)
	a := Add(Mul(InsertAxes(w1, -1), Gather(s, idx1)), Mul(InsertAxes(w2, -1), Gather(s, idx2)))
	// S_all = A Mᵀ (Eq. 10 for virtual–virtual pairs), [N, N].
	at := Transpose(a, 0, 1)
	sAll := Transpose(Add(Mul(InsertAxes(w1, -1), Gather(at, idx1)), Mul(InsertAxes(w2, -1), Gather(at, idx2))), 0, 1)
	valid := Concatenate([]*Node{BroadcastToDims(Const(g, true), b), Reshape(slotValid, v)}, 0)
	// Candidates for the positives of item a with anchor original i = i1[a]: the c class members
	// m of i (originals, from c ArgMax rounds on the [B, B] same-label mask) and their pair slots
	// B + m·O + o. A candidate counts if the member exists, the item is valid and it is not a itself
	// (and only for valid a: invalid slots are not queries).
	sameF := ConvertDType(sameB, dt)
	members, memberOK, classSize := rskCompactSlots(sameF, nil, maxClass) // [B, c], [B, c], [B]
	slotIdx := Add(AddScalar(MulScalar(InsertAxes(members, -1), float64(o)), float64(b)),
		Iota(g, shapes.Make(dtypes.Int32, 1, 1, o), 2)) // [B, c, O]
	slotIdx = Reshape(slotIdx, b, maxClass*o)
	candB := Concatenate([]*Node{members, slotIdx}, 1) // [B, c(1+O)] item indices
	okB := Concatenate([]*Node{memberOK, Reshape(Mul(InsertAxes(memberOK, -1),
		Reshape(ConvertDType(Gather(valid, InsertAxes(slotIdx, -1)), dt), b, maxClass, o)), b, maxClass*o)}, 1)
	cand := Gather(candB, idx1) // [N, c(1+O)]
	notSelf := ConvertDType(LogicalAnd(NotEqual(cand, InsertAxes(Iota(g, shapes.Make(dtypes.Int32, b+v), 0), 1)), InsertAxes(valid, 1)), dt)
	okCand := Mul(Gather(okB, idx1), notSelf) // invalid slots are no queries either
	numSlots := maxClass - 1 + maxClass*(maxClass-1)/2
	posIdx, slotF, numPos := rskCompactSlots(okCand, cand, numSlots)
	overflow := GreaterThan(ReduceMax(classSize), Scalar(g, dt, float64(maxClass)))
	lossK := c.rskPerQuery(sAll, valid, nil, posIdx, slotF, numPos)
	loss := MaskedMean(lossK, GreaterThan(numPos, ZerosLike(numPos)))
	return Where(overflow, Scalar(g, dt, math.NaN()), loss)
}

// rskCompactSlots gathers, per row of the [N, M] 0/1 matrix ok, the positions of its ones into
// numSlots slots by repeated ArgMax (first one first). It returns the [N, numSlots] int32 indices
// (cand[row, position] when cand is given, else the column positions), the [N, numSlots] 0/1 slot
// indicators and the [N] count of ones. Rows with more than numSlots ones lose the rest (callers
// check the count).
func rskCompactSlots(ok, cand *Node, numSlots int) (idx, slotF, count *Node) {
	g := ok.Graph()
	n, m := ok.Shape().Dim(0), ok.Shape().Dim(1)
	numSlots = max(numSlots, 1)
	cols := Iota(g, shapes.Make(dtypes.Int32, 1, m), 1)
	rowIota := Iota(g, shapes.Make(dtypes.Int32, n), 0)
	remaining := ok
	var idxs, oks []*Node
	for p := 0; p < numSlots; p++ {
		at := ArgMax(remaining, 1, dtypes.Int32)
		rc := Stack([]*Node{rowIota, at}, -1)
		oks = append(oks, Gather(remaining, rc)) // 1 if a one was left
		if cand != nil {
			idxs = append(idxs, Gather(cand, rc))
		} else {
			idxs = append(idxs, at)
		}
		if p+1 < numSlots {
			remaining = Where(Equal(cols, InsertAxes(at, 1)), ZerosLike(remaining), remaining)
		}
	}
	return Stack(idxs, 1), Stack(oks, 1), ReduceSum(ok, 1)
}

// rskPairSlots enumerates every unordered same-class pair exactly once without sorting or
// class-contiguous batches: with r_i the rank of sample i among its class (by batch index) and n_i
// the class size, slot o = 1..O of sample i pairs it with the class member of rank (r_i + o) mod n_i.
// The slot is valid if 2o < n_i, or 2o = n_i and r_i < o (the "opposite" pair of an even class is
// taken once). Each class of n ≤ 2O+1 samples yields n(n−1)/2 valid slots. sameB is [B, B] bool;
// it returns partners [B, O] int32 and valid [B, O] bool.
func rskPairSlots(sameB *Node, numSlots int) (partners, valid *Node) {
	g := sameB.Graph()
	b := sameB.Shape().Dim(0)
	if numSlots < 1 {
		numSlots = 1 // a batch of singletons: one (always invalid) slot keeps shapes non-empty
	}
	sameF := ConvertDType(sameB, dtypes.Float32)
	lower := LessThan(Iota(g, shapes.Make(dtypes.Int32, b, b), 1), Iota(g, shapes.Make(dtypes.Int32, b, b), 0)) // j < i
	rank := ReduceSum(Where(lower, sameF, ZerosLike(sameF)), 1)                                                 // r_i
	n := ReduceSum(sameF, 1)                                                                                    // n_i
	var ps, vs []*Node
	for o := 1; o <= numSlots; o++ {
		target := Mod(AddScalar(rank, float64(o)), n) // (r_i + o) mod n_i
		m := LogicalAnd(sameB, Equal(InsertAxes(target, 1), InsertAxes(rank, 0)))
		ps = append(ps, ArgMax(ConvertDType(m, dtypes.Float32), 1, dtypes.Int32))
		twoO := Scalar(g, dtypes.Float32, float64(2*o))
		ok := LogicalOr(LessThan(twoO, n), LogicalAnd(Equal(twoO, n), LessThan(rank, Scalar(g, dtypes.Float32, float64(o)))))
		vs = append(vs, ok)
	}
	return Stack(ps, 1), Stack(vs, 1)
}

// rskPerQuery evaluates L(q) of RS@k for N queries on their [N, R] similarities s against R
// ranking items, given the [R] validity of each item (nil: all valid), the [N] column of each
// query itself in s (qIdx; nil: query i is item i, s square), each query's positives gathered into
// P slots (posIdx [N, P] int32, slotF [N, P] 0/1) and their count numPos [N]. Queries without a
// positive get L(q) = 1 (callers mask them out).
//
// The [N, P, R] rank tensor dominates the cost, so it is built with as few full passes as possible:
// no per-element mask. Every z is summed (weighted by validity only when some items are invalid),
// then the two excluded terms are subtracted on [N, P]: z = x contributes σ(0) = 1/2 exactly (and
// its two gradient paths cancel exactly), and z = q (unless QueryInRanking) contributes
// σ_τ₂(s_qq − s_qx), recomputed on [N, P] so that its gradient cancels as well.
func (c *RSKConfig) rskPerQuery(s, valid, qIdx, posIdx, slotF, numPos *Node) *Node {
	g := s.Graph()
	n, r := s.Shape().Dim(0), s.Shape().Dim(1)
	dt := s.DType()
	numSlots := posIdx.Shape().Dim(1)
	if elems := float64(n) * float64(r) * float64(numSlots); elems > 1<<36 {
		panic(fmt.Sprintf("losses: rsk: the rank computation needs %d×%d×%d = %.3g sigmoid evaluations; set max_class_size "+
			"to the number of samples per class of the batch sampler", n, numSlots, r, elems))
	}
	var validF *Node
	if valid != nil {
		validF = ConvertDType(valid, dt)
	}
	rowIota := Iota(g, shapes.Make(dtypes.Int32, n), 0)
	if qIdx == nil {
		qIdx = rowIota
	}
	rows := BroadcastToDims(InsertAxes(rowIota, 1), n, numSlots)
	// Rank: everything in units of 1/τ₂ before the big broadcast.
	sT := DivScalar(s, c.TauSim)
	sxT := Gather(sT, Stack([]*Node{rows, posIdx}, -1)) // [N, P]: s_qx/τ₂
	total := c.rskRankSum(sT, sxT, validF)
	rank := AddScalar(total, 0.5) // 1 + Σ − σ(0) for z = x
	if !c.QueryInRanking {
		sqqT := InsertAxes(Gather(sT, Stack([]*Node{rowIota, qIdx}, -1)), 1)
		rank = Sub(rank, Sigmoid(ClipScalar(Sub(sqqT, sxT), -50, 50)))
	}
	var lossK *Node
	for _, k := range c.K {
		kk := float64(k)
		num := ReduceSum(Mul(slotF, rskSigmoid(Sub(Scalar(g, dt, kk), rank), c.TauRank)), 1)
		num = Min(num, Scalar(g, dt, kk))
		den := Max(Min(numPos, Scalar(g, dt, kk)), OnesLike(numPos))
		l := OneMinus(Div(num, den))
		if lossK == nil {
			lossK = l
		} else {
			lossK = Add(lossK, l)
		}
	}
	return DivScalar(lossK, float64(len(c.K))) // [N]
}

// rskRankSum returns Σ_z w_z σ(clip(sT[q,z] − sxT[q,p], ±50)) as [N, P] for the [N, R] scaled
// similarities sT = s/τ₂ and the [N, P] scaled positive similarities sxT (w_z = validF[z], or 1 when
// validF is nil). The [N, P, R] sigmoid tensor is never held whole: the forward pass runs over
// chunks of queries under a stop-gradient, and a custom gradient recomputes each chunk's σ in the
// backward pass (rematerialisation), so memory is O(chunk·P·R) instead of O(N·P·R) — what makes
// the paper's batch of 4000 (N = 12000 items with SiMix) fit on a CPU machine.
func (c *RSKConfig) rskRankSum(sT, sxT, validF *Node) *Node {
	n, r, p := sT.Shape().Dim(0), sT.Shape().Dim(1), sxT.Shape().Dim(1)
	chunk := c.ChunkQueries
	if chunk <= 0 {
		chunk = max(1, (1<<24)/(p*r)) // ≈ 16M elements per chunk
	}
	chunk = min(chunk, n)
	// sigmoidChunk returns σ and the clip mask for queries [a, b): [b−a, P, R].
	sigmoidChunk := func(sTv, sxTv *Node, a, b int) (sig, inside *Node) {
		rowsS := Slice(sTv, AxisRange(a, b), AxisRange())
		rowsX := Slice(sxTv, AxisRange(a, b), AxisRange())
		diff := Sub(InsertAxes(rowsS, 1), InsertAxes(rowsX, -1))
		return Sigmoid(ClipScalar(diff, -50, 50)), LogicalAnd(GreaterThan(diff, ScalarLike(diff, -50)), LessThan(diff, ScalarLike(diff, 50)))
	}
	weighted := func(x *Node, rows int) *Node { // Σ_z w_z x[·,·,z]
		if validF == nil {
			return ReduceSum(x, 2)
		}
		return Reshape(MatMul(Reshape(x, rows*p, r), InsertAxes(validF, 1)), rows, p)
	}
	sTs, sxTs := StopGradient(sT), StopGradient(sxT)
	var parts []*Node
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		sig, _ := sigmoidChunk(sTs, sxTs, a, b)
		parts = append(parts, weighted(sig, b-a))
	}
	value := StopGradient(Concatenate(parts, 0))
	// Gradient carrier: packed [N, R+P] = (sT | sxT) through an identity with the hand-written VJP
	// ∂/∂sT[q,z] = Σ_p g[q,p] w_z σ'(Δ), ∂/∂sxT[q,p] = −Σ_z g[q,p] w_z σ'(Δ), σ' = σ(1−σ) inside the
	// clip range and 0 outside. Its value enters as x − sg(x) = 0 exactly.
	packed := IdentityWithCustomGradient(Concatenate([]*Node{sT, sxT}, 1), func(x, v *Node) *Node {
		sTv := Slice(x, AxisRange(), AxisRange(0, r))
		sxTv := Slice(x, AxisRange(), AxisRange(r, r+p))
		gAll := Slice(v, AxisRange(), AxisRange(r, r+p)) // adjoint of the rank sums, [N, P]
		var dS, dX []*Node
		for a := 0; a < n; a += chunk {
			b := min(a+chunk, n)
			sig, inside := sigmoidChunk(sTv, sxTv, a, b)
			d := Where(inside, Mul(sig, OneMinus(sig)), ZerosLike(sig))
			if validF != nil {
				d = Mul(d, Reshape(validF, 1, 1, r))
			}
			gz := Mul(InsertAxes(Slice(gAll, AxisRange(a, b), AxisRange()), -1), d) // [C, P, R]
			dS = append(dS, ReduceSum(gz, 1))
			dX = append(dX, Neg(ReduceSum(gz, 2)))
		}
		return Concatenate([]*Node{Concatenate(dS, 0), Concatenate(dX, 0)}, 1)
	})
	carrier := Slice(packed, AxisRange(), AxisRange(r, r+p))
	return Add(value, Sub(carrier, StopGradient(carrier)))
}

// rskSigmoid is σ_τ(u) with the exponent u/τ clamped to [−50, 50], as in the authors' code.
func rskSigmoid(u *Node, tau float64) *Node {
	return Sigmoid(ClipScalar(DivScalar(u, tau), -50, 50))
}
