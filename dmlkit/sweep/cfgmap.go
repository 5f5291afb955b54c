package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A resolved configuration is a nested map[string]any as YAML or JSON decoders produce it: inner
// groups are map[string]any, leaves are strings, numbers, booleans or lists. Keys are addressed
// with dots ("loss.name"); a dotted key names a leaf or a group.

// Get returns the value at the dotted key in cfg, or false when some part of the path is missing.
func Get(cfg map[string]any, key string) (any, bool) {
	var cur any = cfg
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[part]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// SetPath stores value at the dotted key in cfg, creating intermediate groups. It fails when the
// path runs through a value that is not a group (e.g. setting "loss.name.x" when loss.name is a
// string), naming the key.
func SetPath(cfg map[string]any, key string, value any) error {
	parts := strings.Split(key, ".")
	cur := cfg
	for i, part := range parts {
		if part == "" {
			return fmt.Errorf("key %q: empty path element", key)
		}
		if i == len(parts)-1 {
			cur[part] = Normalize(value)
			return nil
		}
		next, ok := cur[part]
		if !ok || next == nil {
			m := map[string]any{}
			cur[part] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("key %q: %q is a %T value, not a group of fields", key, strings.Join(parts[:i+1], "."), next)
		}
		cur = m
	}
	return nil
}

// deletePath removes the dotted key from cfg, and the maps it leaves empty.
func deletePath(cfg map[string]any, key string) {
	parts := strings.Split(key, ".")
	var walk func(m map[string]any, i int)
	walk = func(m map[string]any, i int) {
		if i == len(parts)-1 {
			delete(m, parts[i])
			return
		}
		sub, ok := m[parts[i]].(map[string]any)
		if !ok {
			return
		}
		walk(sub, i+1)
		if len(sub) == 0 {
			delete(m, parts[i])
		}
	}
	walk(cfg, 0)
}

// Flatten returns the leaves of cfg keyed by their dotted paths. Lists are leaves.
func Flatten(cfg map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(prefix+k+".", sub)
				continue
			}
			out[prefix+k] = v
		}
	}
	walk("", cfg)
	return out
}

// Clone returns a deep copy of cfg (maps and lists are copied; leaves are immutable values).
func Clone(cfg map[string]any) map[string]any {
	return cloneValue(cfg).(map[string]any)
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

// Normalize converts the map types YAML may produce (map[any]any) and typed slices into the
// canonical map[string]any / []any forms, and deep-copies groups so that configs never share them.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = Normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []int:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return v
}

// CanonicalJSON encodes cfg as JSON with map keys sorted (encoding/json sorts map keys) and no
// insignificant white space. Integers and integral floats encode identically ("3"), so a config
// read back from a results file hashes as it did when it was written.
func CanonicalJSON(cfg map[string]any) ([]byte, error) {
	return json.Marshal(cfg)
}

// Hash is the identity of a resolved configuration: the first 16 hex characters of the SHA-256 of
// its canonical JSON. Two runs with equal hashes are the same experiment (the seed is part of the
// configuration), which is what makes sweeps resumable.
func Hash(cfg map[string]any) (string, error) {
	if k, v, ok := nonFinite(cfg); ok {
		return "", fmt.Errorf("experiments: field %q: %v is not a value a configuration can hold (want a finite number)", k, v)
	}
	b, err := CanonicalJSON(cfg)
	if err != nil {
		return "", fmt.Errorf("experiments: hashing config: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16], nil
}

// FormatValue renders a config value for labels, filters and table rows: numbers without a
// trailing ".0", lists as [a,b].
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) && x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return FormatValue(float64(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = FormatValue(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// ValueEqual reports whether two config values are equal as they would be written: 1 and 1.0 are
// equal, and a string "true" equals the boolean true (command-line filters are strings).
func ValueEqual(a, b any) bool {
	return FormatValue(a) == FormatValue(b)
}

func SortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// nonFinite returns the dotted key (with [i] for list elements) and value of the first NaN or
// infinite number in cfg, in key order.
func nonFinite(cfg map[string]any) (string, float64, bool) {
	var walk func(path string, v any) (string, float64, bool)
	walk = func(path string, v any) (string, float64, bool) {
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return path, x, true
			}
		case float32:
			return walk(path, float64(x))
		case map[string]any:
			for _, k := range SortedKeys(x) {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if k, f, ok := walk(p, x[k]); ok {
					return k, f, true
				}
			}
		case []any:
			for i, e := range x {
				if k, f, ok := walk(fmt.Sprintf("%s[%d]", path, i), e); ok {
					return k, f, true
				}
			}
		}
		return "", 0, false
	}
	return walk("", cfg)
}
