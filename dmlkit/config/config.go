// Package config assigns values to typed configuration structs by key, with errors that name the
// field at fault. It is the single mechanism behind `--set key=value` on the command line, the
// `set:` maps of experiment specs and the hyperparameters of losses, models and trainers.
//
// A key names a struct field by its yaml tag (or, without a tag, its lower-cased Go name); nested
// structs are addressed with dots ("optimizer.lr"). Values may be strings (parsed according to the
// field's type: "0.5", "true", "1,2,4,8" or "[1,2,4,8]" for slices) or already-typed values as YAML
// and JSON decoders produce them (float64, int, bool, []any, map[string]any).
package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Set assigns value to the field of the struct pointed to by dst that key addresses.
func Set(dst any, key string, value any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: Set needs a pointer to a struct, got %T", dst)
	}
	return setPath(v.Elem(), strings.Split(key, "."), key, value)
}

// SetAll assigns every key of kv (in sorted key order, so errors are deterministic).
func SetAll(dst any, kv map[string]any) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := Set(dst, k, kv[k]); err != nil {
			return err
		}
	}
	return nil
}

// ParseAssignments turns ["a=1", "b.c=x"] into a map, rejecting entries without '='.
func ParseAssignments(list []string) (map[string]any, error) {
	out := make(map[string]any, len(list))
	for _, s := range list {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("config: %q is not of the form key=value", s)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// Field describes one settable field, for listings such as `dmlkit loss --list`.
type Field struct {
	Key   string // dotted key
	Type  string // Go type
	Value any    // current value
	Doc   string // the field's `doc` struct tag, if any
}

// Fields lists the settable fields of the struct pointed to by (or held in) src, depth first.
func Fields(src any) []Field {
	v := reflect.ValueOf(src)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var out []Field
	collect(v, "", &out)
	return out
}

func collect(v reflect.Value, prefix string, out *[]Field) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, ok := fieldKey(sf)
		if !ok {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)) {
			collect(fv, prefix+name+".", out)
			continue
		}
		*out = append(*out, Field{Key: prefix + name, Type: sf.Type.String(), Value: fv.Interface(), Doc: sf.Tag.Get("doc")})
	}
}

// fieldKey returns the key a field is addressed by, or false if it is not settable.
func fieldKey(sf reflect.StructField) (string, bool) {
	if !sf.IsExported() {
		return "", false
	}
	tag := sf.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return "", false
	}
	if name == "" {
		name = strings.ToLower(sf.Name)
	}
	return name, true
}

func setPath(v reflect.Value, path []string, full string, value any) error {
	t := v.Type()
	var valid []string
	for i := 0; i < t.NumField(); i++ {
		name, ok := fieldKey(t.Field(i))
		if !ok {
			continue
		}
		valid = append(valid, name)
		if name != path[0] {
			continue
		}
		fv := v.Field(i)
		if len(path) > 1 {
			if fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct {
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Map && fv.Type().Key().Kind() == reflect.String {
				return setMapPath(fv, path[1:], full, value)
			}
			if fv.Kind() == reflect.Slice {
				// A list given as a group of fields (e.g. eval.degrade: {kind: noise, level: 0.1}
				// in a spec, flattened to eval.degrade.kind): say what the list holds.
				list := strings.TrimSuffix(full, "."+strings.Join(path[1:], "."))
				what := "a list"
				if et := fv.Type().Elem(); et.Kind() == reflect.Struct {
					var names []string
					for j := 0; j < et.NumField(); j++ {
						if n, ok := fieldKey(et.Field(j)); ok {
							names = append(names, n)
						}
					}
					what = fmt.Sprintf("a list of {%s}", strings.Join(names, ", "))
				}
				return fmt.Errorf("config: field %q: %s, given as a group of fields (%s): write it as a list, e.g. [{…}]", list, what, full)
			}
			if fv.Kind() != reflect.Struct {
				return fmt.Errorf("config: field %q: %q is not a group of fields", full, path[0])
			}
			return setPath(fv, path[1:], full, value)
		}
		if m, ok := value.(map[string]any); ok && fv.Kind() == reflect.Struct {
			for _, k := range sortedKeys(m) {
				if err := setPath(fv, []string{k}, full+"."+k, m[k]); err != nil {
					return err
				}
			}
			return nil
		}
		if err := assign(fv, value); err != nil {
			return fmt.Errorf("config: field %q: %w", full, err)
		}
		return nil
	}
	return fmt.Errorf("config: unknown field %q (valid here: %s)", full, strings.Join(valid, ", "))
}

// setMapPath sets path inside fv, a map with string keys: its first element is the map key; the
// rest, if any, continues into the map's element (a map again, e.g. map[string]map[string]any for
// options.tcm.pos_margin, or a struct). Maps are created when nil; an element of type any takes
// the rest of the path joined by "." as one key of a map[string]any.
func setMapPath(fv reflect.Value, path []string, full string, value any) error {
	if fv.IsNil() {
		fv.Set(reflect.MakeMap(fv.Type()))
	}
	key := reflect.ValueOf(path[0]).Convert(fv.Type().Key())
	et := fv.Type().Elem()
	elem := reflect.New(et).Elem()
	if old := fv.MapIndex(key); old.IsValid() {
		elem.Set(old)
	}
	var err error
	switch {
	case len(path) == 1:
		if m, ok := value.(map[string]any); ok && (et.Kind() == reflect.Map || et.Kind() == reflect.Struct) {
			for _, k := range sortedKeys(m) {
				if err = setPathIn(elem, []string{k}, full+"."+k, m[k]); err != nil {
					return err
				}
			}
		} else if err = assign(elem, value); err != nil {
			err = fmt.Errorf("config: field %q: %w", full, err)
		}
	case et.Kind() == reflect.Interface:
		inner, _ := elem.Interface().(map[string]any)
		if inner == nil {
			inner = map[string]any{}
		}
		inner[strings.Join(path[1:], ".")] = value
		elem.Set(reflect.ValueOf(inner))
	default:
		err = setPathIn(elem, path[1:], full, value)
	}
	if err != nil {
		return err
	}
	fv.SetMapIndex(key, elem)
	return nil
}

// setPathIn sets path inside v, a struct or a string-keyed map.
func setPathIn(v reflect.Value, path []string, full string, value any) error {
	switch {
	case v.Kind() == reflect.Struct:
		return setPath(v, path, full, value)
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		return setMapPath(v, path, full, value)
	}
	return fmt.Errorf("config: field %q: not a group of fields", full)
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// assign converts value to fv's type and stores it.
func assign(fv reflect.Value, value any) error {
	if s, ok := value.(string); ok {
		return assignString(fv, s)
	}
	if value == nil {
		fv.Set(reflect.Zero(fv.Type()))
		return nil
	}
	rv := reflect.ValueOf(value)
	if m, ok := value.(map[string]any); ok && fv.Kind() == reflect.Map && fv.Type() != rv.Type() && fv.Type().Key().Kind() == reflect.String {
		// A map of maps (e.g. map[string]map[string]any) given as nested YAML maps.
		for _, k := range sortedKeys(m) {
			if err := setMapPath(fv, []string{k}, k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if m, ok := value.(map[string]any); ok && fv.Kind() == reflect.Struct {
		// A group of fields given as a map, e.g. one element of a list of structs from YAML.
		for _, k := range sortedKeys(m) {
			if err := setPath(fv, []string{k}, k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	switch fv.Kind() {
	case reflect.Slice:
		if rv.Kind() != reflect.Slice {
			// A scalar for a slice field: a one-element list.
			rv = reflect.ValueOf([]any{value})
		}
		out := reflect.MakeSlice(fv.Type(), rv.Len(), rv.Len())
		for i := 0; i < rv.Len(); i++ {
			if err := assign(out.Index(i), rv.Index(i).Interface()); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		fv.Set(out)
		return nil
	case reflect.Bool:
		b, ok := value.(bool)
		if !ok {
			return fmt.Errorf("want a boolean, got %v (%T)", value, value)
		}
		fv.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if fv.Type() == reflect.TypeOf(time.Duration(0)) {
			return fmt.Errorf("want a duration string such as \"90s\", got %v (%T)", value, value)
		}
		f, ok := toFloat(value)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("want an integer, got %v (%T)", value, value)
		}
		if fv.OverflowInt(int64(f)) {
			return fmt.Errorf("%v overflows %s", value, fv.Type())
		}
		fv.SetInt(int64(f))
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f, ok := toFloat(value)
		if !ok || f < 0 || f != float64(uint64(f)) {
			return fmt.Errorf("want a non-negative integer, got %v (%T)", value, value)
		}
		fv.SetUint(uint64(f))
		return nil
	case reflect.Float32, reflect.Float64:
		f, ok := toFloat(value)
		if !ok {
			return fmt.Errorf("want a number, got %v (%T)", value, value)
		}
		fv.SetFloat(f)
		return nil
	case reflect.Interface:
		fv.Set(rv)
		return nil
	}
	if rv.Type().AssignableTo(fv.Type()) {
		fv.Set(rv)
		return nil
	}
	return fmt.Errorf("cannot assign %v (%T) to a %s", value, value, fv.Type())
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func assignString(fv reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(s)
		return nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("cannot parse %q as a boolean", s)
		}
		fv.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if fv.Type() == reflect.TypeOf(time.Duration(0)) {
			d, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("cannot parse %q as a duration", s)
			}
			fv.SetInt(int64(d))
			return nil
		}
		i, err := strconv.ParseInt(s, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("cannot parse %q as an integer", s)
		}
		fv.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(s, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("cannot parse %q as a non-negative integer", s)
		}
		fv.SetUint(u)
		return nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("cannot parse %q as a number", s)
		}
		fv.SetFloat(f)
		return nil
	case reflect.Slice:
		if open, closed := strings.HasPrefix(s, "["), strings.HasSuffix(s, "]"); open != closed {
			return fmt.Errorf("malformed list %q: unbalanced brackets", s)
		} else if open {
			// A YAML flow sequence: its elements may be lists or maps (a list of groups of
			// fields, e.g. [{kind: noise, level: 0.1}]), which a split on commas would cut apart.
			var l []any
			if err := yaml.Unmarshal([]byte(s), &l); err != nil {
				return fmt.Errorf("malformed list %q: %v", s, err)
			}
			out := reflect.MakeSlice(fv.Type(), len(l), len(l))
			for i, e := range l {
				var err error
				switch e.(type) {
				case map[string]any, []any:
					err = assign(out.Index(i), e)
				case nil:
					err = fmt.Errorf("null")
				default: // a scalar: parsed for the element's type as a string would be
					err = assignString(out.Index(i), scalarText(e))
				}
				if err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
			}
			fv.Set(out)
			return nil
		}
		var parts []string
		if strings.TrimSpace(s) != "" {
			parts = strings.Split(s, ",")
		}
		out := reflect.MakeSlice(fv.Type(), len(parts), len(parts))
		for i, p := range parts {
			if err := assignString(out.Index(i), p); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		fv.Set(out)
		return nil
	case reflect.Interface:
		fv.Set(reflect.ValueOf(s))
		return nil
	}
	return fmt.Errorf("cannot set a %s from the string %q", fv.Type(), s)
}

// scalarText writes a YAML scalar back as text (numbers in their shortest form).
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// ExplainYAML looks for the first value of a YAML document that cannot decode into a value of
// type t for its shape — a mapping where t has a list or a plain value, a list where it has a
// group of fields or a plain value, a group where it has a plain value — and returns an error
// naming its dotted field, line and what the field wants (e.g. `field "eval.degrade" (line 2): a
// list of {kind, level}, given as a mapping`), or nil. A decoder's own type errors name only Go
// types; call ExplainYAML when decoding failed.
func ExplainYAML(doc *yaml.Node, t reflect.Type) error {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	return explain(doc, t, "")
}

func explain(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	shape := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list", yaml.ScalarNode: "a plain value"}[n.Kind]
	bad := func(want string) error {
		field := path
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("field %q (line %d): %s, given as %s", field, n.Line, want, shape)
	}
	if t.Implements(reflect.TypeFor[yaml.Unmarshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return nil // decodes itself
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("a group of fields")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			for j := 0; j < t.NumField(); j++ {
				sf := t.Field(j)
				if name, ok := fieldKey(sf); ok && name == key {
					if err := explain(n.Content[i+1], sf.Type, join(key)); err != nil {
						return err
					}
				} else if ok && sf.Anonymous && strings.Contains(sf.Tag.Get("yaml"), "inline") {
					if err := explain(&yaml.Node{Kind: yaml.MappingNode, Content: n.Content[i : i+2], Line: n.Line}, sf.Type, path); err != nil {
						return err
					}
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			want := "a list"
			if et := t.Elem(); et.Kind() == reflect.Struct {
				var names []string
				for j := 0; j < et.NumField(); j++ {
					if name, ok := fieldKey(et.Field(j)); ok {
						names = append(names, name)
					}
				}
				want = fmt.Sprintf("a list of {%s}", strings.Join(names, ", "))
			}
			return bad(want)
		}
		for i, e := range n.Content {
			if err := explain(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("a mapping")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := explain(n.Content[i+1], t.Elem(), join(n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Interface:
	default:
		if n.Kind != yaml.ScalarNode {
			return bad("a plain value (" + t.Kind().String() + ")")
		}
	}
	return nil
}
