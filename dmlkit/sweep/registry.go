package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/config"
)

// RunSpec is what a [Runner] receives for one run.
type RunSpec struct {
	Hash   string         // the configuration hash (also the name of Dir)
	Config map[string]any // the resolved configuration (a private copy; the runner may keep it); a "run:<hash>" reference is the absolute path of that run's directory ([RunRefPrefix])
	Seed   int64          // the run's seed, also present in Config at the spec's seed key
	Dir    string         // an empty working directory for checkpoints and logs
	// Diagnostics are the figure-specific evaluation protocols the run's spec asks for by name
	// (Spec.Diagnostics, e.g. seed 000's Fig. 1 thresholds); a runner computes no other.
	Diagnostics []string
	// Measure names what a rerun of a stored run must add ([Remeasure]; e.g. [MeasureTrain]),
	// without changing the run: the same configuration must give the same numbers.
	Measure []string
}

// Measures reports whether the run is asked for the measurement m ([RunSpec.Measure]).
func (rs RunSpec) Measures(m string) bool {
	for _, x := range rs.Measure {
		if x == m {
			return true
		}
	}
	return false
}

// Wants reports whether the run's spec asks for the diagnostic name.
func (rs RunSpec) Wants(name string) bool {
	for _, d := range rs.Diagnostics {
		if d == name {
			return true
		}
	}
	return false
}

// Outcome is what a run produces. Metrics are the final scalar results (e.g. "R@1", "MAP@R");
// Series are optional vectors for figures (per-epoch curves, per-class utilities, distance
// samples, 2-D embedding coordinates), kept small because they are stored in every record;
// Timings are optional phase durations in seconds (the wall time of the whole run is recorded
// separately).
//
// Notes name results the runner was asked for but left out, with the reason (key → reason, e.g.
// "fig1/dstar_spread" → "undefined: the test classes span 1 evaluation alphabet"): a diagnostic
// undefined for a run is stored as absent, never as NaN, and never fails the run.
type Outcome struct {
	Metrics map[string]float64
	Series  map[string][]float64
	Timings map[string]float64
	Notes   map[string]string
	// Digests are the SHA-256 (hex) of the input files the run read its weights from, by
	// configuration field (e.g. "model.pretrained"); stored in [Record.Digests].
	Digests map[string]string
}

// Runner executes one run. It must honour ctx cancellation and report progress through progress
// (which may be called from several goroutines when runs execute in parallel). A run that returns
// an error (or panics) leaves no record, so a later resume runs it again; one that returns a
// [*RunFailure] (e.g. training diverged) leaves a record marked failed (see [Execute]).
type Runner func(ctx context.Context, run RunSpec, progress func(msg string)) (*Outcome, error)

// Validator checks a resolved configuration before any training, returning an error that names
// the field path at fault (e.g. `unknown field "loss.nme"`, `field "train.epochs": want an
// integer`). It must not modify cfg.
type Validator func(cfg map[string]any) error

// Resolver returns a configuration with every default filled in, as dotted keys (see [SetResolver]).
type Resolver func(cfg map[string]any) (map[string]any, error)

var (
	regMu     sync.RWMutex
	runner    Runner
	validator Validator
	resolver  Resolver
	// diagnostics: see SetDiagnostics.
	diagnostics map[string]string
	// neutral: see SetNeutralDefaults.
	neutral map[string][]any
)

// SetResolver registers the function that fills a configuration's defaults (the trainer's): the
// claims engine's tuning rule compares an arm's configuration with its tuning runs' through it, so
// a key written with its default value equals the key unset. Without one, configurations are
// compared as written.
func SetResolver(r Resolver) {
	regMu.Lock()
	defer regMu.Unlock()
	resolver = r
}

// ResolvedFlat is the configuration as dotted keys, defaults filled in when a resolver is
// registered (as written otherwise, or when the resolver fails).
func ResolvedFlat(cfg map[string]any) map[string]any {
	regMu.RLock()
	r := resolver
	regMu.RUnlock()
	if r != nil {
		if out, err := r(cfg); err == nil {
			for k, v := range out {
				out[k] = Normalize(v)
			}
			return out
		}
	}
	return Flatten(cfg)
}

// ErrNoRunner is returned by [RegisteredRunner] callers when no trainer has been plugged in.
var ErrNoRunner = errors.New("no runner registered: this build of dmlkit cannot train (sweep.SetRunner was never called)")

// SetRunner registers the function that trains and evaluates one configuration (the trainer's
// entry point). Call it once, from an init function of the program that links the trainer.
func SetRunner(r Runner) {
	regMu.Lock()
	defer regMu.Unlock()
	runner = r
}

// SetDiagnostics registers the diagnostics a spec may name (name → what it computes); a spec
// naming another is refused when it is read. Call it once, from the init function of the package
// that implements them (the trainer's runner).
func SetDiagnostics(d map[string]string) {
	regMu.Lock()
	defer regMu.Unlock()
	diagnostics = d
}

// RegisteredDiagnostics returns the names registered by [SetDiagnostics] with their descriptions.
func RegisteredDiagnostics() map[string]string {
	regMu.RLock()
	defer regMu.RUnlock()
	return diagnostics
}

// SetNeutralDefaults registers configuration keys whose default value means "as before the key
// existed" (dotted key → the values that mean it, e.g. "precision" → fp32 and ""). A plan removes
// such a leaf from a run's configuration before hashing it, so that writing the default explicitly
// neither changes a run's hash nor trains it again. Only keys that no stored record carries may be
// registered (a trainer key added after records were stored): removing a leaf that stored
// configurations hold would change their hashes.
func SetNeutralDefaults(d map[string][]any) {
	regMu.Lock()
	defer regMu.Unlock()
	neutral = d
}

// stripNeutral removes from cfg every leaf SetNeutralDefaults names whose value is neutral.
func stripNeutral(cfg map[string]any) {
	regMu.RLock()
	d := neutral
	regMu.RUnlock()
	for k, vals := range d {
		v, ok := Get(cfg, k)
		if !ok {
			continue
		}
		for _, n := range vals {
			if ValueEqual(v, n) {
				deletePath(cfg, k)
				break
			}
		}
	}
}

// SetValidator registers the check applied to every run of a plan by [Spec.Plan].
func SetValidator(v Validator) {
	regMu.Lock()
	defer regMu.Unlock()
	validator = v
}

// RegisteredRunner returns the runner set by [SetRunner], or ErrNoRunner.
func RegisteredRunner() (Runner, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	if runner == nil {
		return nil, ErrNoRunner
	}
	return runner, nil
}

func registeredValidator() Validator {
	regMu.RLock()
	defer regMu.RUnlock()
	return validator
}

// StructValidator builds a [Validator] from a typed configuration struct: every leaf of the
// resolved configuration is assigned with [config.SetAll] to a fresh value from newConfig (a
// pointer to a struct with yaml tags), so unknown keys and type errors are reported with their
// dotted path. check, if not nil, then inspects the filled struct (e.g. that loss.name is a
// registered loss), and should also name the field in its errors.
func StructValidator(newConfig func() any, check func(filled any) error) Validator {
	return func(cfg map[string]any) error {
		dst := newConfig()
		if err := config.SetAll(dst, Flatten(cfg)); err != nil {
			return err
		}
		if check != nil {
			if err := check(dst); err != nil {
				return err
			}
		}
		return nil
	}
}

// OneOf returns an error naming key when value is not among allowed; a helper for the check of
// [StructValidator] (unknown loss, dataset or model names).
func OneOf(key, value string, allowed []string) error {
	for _, a := range allowed {
		if a == value {
			return nil
		}
	}
	return fmt.Errorf("field %q: unknown value %q (known: %v)", key, value, allowed)
}
