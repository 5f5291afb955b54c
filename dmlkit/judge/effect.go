package judge

import (
	"fmt"
	"math"
	"slices"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Effect compares a metric between two settings of one key (e.g. loss.set.expr "smoothap" vs
// "smoothap+tcm"), pairing runs by seed so the seed-to-seed variation of the shared parts cancels.
type Effect struct {
	Key      string
	From, To any
	Metric   string
	Base     sweep.Stat // the metric under From, over the paired seeds
	Treated  sweep.Stat // the metric under To, over the paired seeds
	Diff     sweep.Stat // per-seed difference To − From
	Seeds    []int64    // the paired seeds, ascending
	Improved int        // seeds where the change goes in the better direction
}

// CompareSettings pairs the records whose key equals from with those whose key equals to by seed
// (records must otherwise differ only in their seed) and summarises metric. lowerIsBetter says which
// direction counts as an improvement (OPIS: true; R@1: false). It returns an error when no seed
// has both settings or a seed has several records of one setting.
func CompareSettings(records []sweep.Record, key string, from, to any, metric string, lowerIsBetter bool) (*Effect, error) {
	pick := func(want any) (map[int64]float64, error) {
		out := map[int64]float64{}
		for i := range records {
			v, ok := records[i].Value(key)
			if !ok || sweep.FormatValue(v) != sweep.FormatValue(want) || records[i].Failed != "" {
				continue
			}
			m, ok := records[i].Metrics[metric]
			if !ok {
				continue
			}
			if _, dup := out[records[i].Seed]; dup {
				return nil, fmt.Errorf("experiments: %s=%v has several records with seed %d", key, sweep.FormatValue(want), records[i].Seed)
			}
			out[records[i].Seed] = m
		}
		return out, nil
	}
	a, err := pick(from)
	if err != nil {
		return nil, err
	}
	b, err := pick(to)
	if err != nil {
		return nil, err
	}
	e := &Effect{Key: key, From: from, To: to, Metric: metric}
	var va, vb, vd []float64
	for s := range a {
		if _, ok := b[s]; ok {
			e.Seeds = append(e.Seeds, s)
		}
	}
	if len(e.Seeds) == 0 {
		return nil, fmt.Errorf("experiments: no seed has %s for both %s=%v and %s=%v", metric, key, sweep.FormatValue(from), key, sweep.FormatValue(to))
	}
	slices.Sort(e.Seeds)
	for _, s := range e.Seeds {
		d := b[s] - a[s]
		va, vb, vd = append(va, a[s]), append(vb, b[s]), append(vd, d)
		if (lowerIsBetter && d < 0) || (!lowerIsBetter && d > 0) {
			e.Improved++
		}
	}
	e.Base, e.Treated, e.Diff = sweep.MeanStd(va), sweep.MeanStd(vb), sweep.MeanStd(vd)
	return e, nil
}

// RelativeChange is the change of the mean relative to the baseline mean, (To − From)/|From|.
func (e *Effect) RelativeChange() float64 {
	if e.Base.Mean == 0 {
		return math.NaN()
	}
	return (e.Treated.Mean - e.Base.Mean) / math.Abs(e.Base.Mean)
}
