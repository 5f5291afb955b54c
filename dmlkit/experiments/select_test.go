package experiments

import "testing"

// TestSelectWhere: scalar, alternatives, list-valued keys and null (= key absent).
func TestSelectWhere(t *testing.T) {
	recs := []Record{
		{Scale: "small", Seed: 0, Config: map[string]any{"e": "a+t", "ch": []any{16, 32}}},
		{Scale: "small", Seed: 0, Config: map[string]any{"e": "a+t", "ch": []any{16, 32}, "o": map[string]any{"m": 0.8}}},
		{Scale: "small", Seed: 0, Config: map[string]any{"e": "a", "ch": []any{8, 16}}},
		{Scale: "full", Seed: 0, Config: map[string]any{"e": "a"}},
	}
	for _, tc := range []struct {
		where map[string]any
		want  []int
	}{
		{map[string]any{"e": "a+t"}, []int{0, 1}},
		{map[string]any{"e": "a+t", "o.m": nil}, []int{0}},
		{map[string]any{"o.m": 0.8}, []int{1}},
		{map[string]any{"ch": []any{[]any{16, 32}}}, []int{0, 1}},
		{map[string]any{"e": []any{"a", "a+t"}, "ch": []any{[]any{8, 16}}}, []int{2}},
	} {
		got := Select(recs, "small", tc.where)
		if len(got) != len(tc.want) {
			t.Errorf("where %v: %d records, want %d", tc.where, len(got), len(tc.want))
			continue
		}
		for i, j := range tc.want {
			if FormatValue(got[i].Config) != FormatValue(recs[j].Config) {
				t.Errorf("where %v: record %d is %v, want %v", tc.where, i, got[i].Config, recs[j].Config)
			}
		}
	}
}
