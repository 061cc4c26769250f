package history

import (
	"math"
	"sort"
)

// Options tune Detect; the zero value takes the defaults.
type Options struct {
	// Alpha is the largest two-sided p-value of the t-test between the
	// segments either side of a change point (default 0.01).
	Alpha float64
	// MinSize is the fewest points a segment may have (default 3): a step
	// is found at the earliest MinSize runs after it.
	MinSize int
	// Window is how many of the newest points Open looks at (default 60,
	// Otava's ≈ 50): over a year of nights the best split of pure noise
	// among hundreds is a false step the t-test cannot see through.
	Window int
	// Recent is how close to the newest point a change point must be for
	// Open to report it (default 10 runs): an older one was reported by the
	// checks of its own nights (and show still lists it).
	Recent int
}

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = 0.01
	}
	if o.MinSize == 0 {
		o.MinSize = 3
	}
	if o.Window == 0 {
		o.Window = 60
	}
	if o.Recent == 0 {
		o.Recent = 10
	}
	return o
}

// ChangePoint is a step in a series: Index is the first point after it
// (an index into the points given to Detect).
type ChangePoint struct {
	Index  int     `json:"index"`
	Before float64 `json:"before"` // mean of the segment before
	After  float64 `json:"after"`  // mean of the segment after
	// Step is After-Before, relative to Before unless the metric is
	// Absolute (then in its own unit).
	Step float64 `json:"step"`
	// P is the t-test's two-sided p-value; Confidence is 1-P.
	P          float64 `json:"p"`
	Confidence float64 `json:"confidence"`
	// Regression: the step goes the metric's worse way; else improvement.
	Regression bool `json:"regression"`
}

// Detect finds the change points of one series, oldest point first.
// Verdict metrics change wherever a run's verdict differs from the previous
// run's (offloaded to not is a regression whatever the numbers). Numbers go
// through E-divisive means (Matteson and James 2014; as Hunter/Apache Otava
// use it): the split that maximises the energy statistic, kept when the
// t-test between the two segments (Student's, variances pooled: under the
// null hypothesis, no change, both segments are one distribution, and a
// segment of 3 runs keeps the degrees of freedom of the whole series,
// where Welch's leaves it 2) has p ≤ Alpha and the step is at least the
// metric's MinEffect, then the same in each segment; the kept
// points are tested again against their neighbours until none drops.
// Inconclusive points (interval wider than MinEffect) take no part; Index
// still counts them. Deterministic: no randomness.
func Detect(pts []Point, m Metric, o Options) []ChangePoint {
	o = o.withDefaults()
	var xs []float64
	var idx []int
	for i, p := range pts {
		if !p.Inconclusive(m) {
			xs = append(xs, p.Value)
			idx = append(idx, i)
		}
	}
	if m.Verdict {
		var cps []ChangePoint
		for i := 1; i < len(xs); i++ {
			if xs[i] != xs[i-1] {
				cps = append(cps, ChangePoint{Index: idx[i], Before: xs[i-1], After: xs[i], Step: xs[i] - xs[i-1],
					P: 0, Confidence: 1, Regression: (xs[i] < xs[i-1]) == m.HigherBetter})
			}
		}
		return cps
	}
	var splits []int
	var split func(a, b int)
	split = func(a, b int) {
		t, ok := bestSplit(xs[a:b], o.MinSize)
		if !ok {
			return
		}
		if _, keep := judge(xs[a:a+t], xs[a+t:b], m, o); !keep {
			return
		}
		splits = append(splits, a+t)
		split(a, a+t)
		split(a+t, b)
	}
	split(0, len(xs))
	sort.Ints(splits)
	for {
		bounds := append(append([]int{0}, splits...), len(xs))
		var kept []int
		var cps []ChangePoint
		for i := 1; i < len(bounds)-1; i++ {
			cp, ok := judge(xs[bounds[i-1]:bounds[i]], xs[bounds[i]:bounds[i+1]], m, o)
			if ok {
				kept = append(kept, bounds[i])
				cp.Index = idx[bounds[i]]
				cps = append(cps, cp)
			}
		}
		if len(kept) == len(splits) {
			return cps
		}
		splits = kept
	}
}

// judge tests the step between segments x and y.
func judge(x, y []float64, m Metric, o Options) (ChangePoint, bool) {
	mx, sx := meanSD(x)
	my, sy := meanSD(y)
	p := pooledP(mx, sx, len(x), my, sy, len(y))
	step := my - mx
	if !m.Absolute {
		if mx == 0 {
			return ChangePoint{}, false
		}
		step /= math.Abs(mx)
	}
	cp := ChangePoint{Before: mx, After: my, Step: step, P: p, Confidence: 1 - p,
		Regression: (my < mx) == m.HigherBetter}
	return cp, p <= o.Alpha && math.Abs(step) >= m.MinEffect
}

// bestSplit is the τ (MinSize ≤ τ ≤ len-MinSize) maximising the energy
// statistic Q(τ) = nm/(n+m)·(2/(nm)·Σ|x−y| − 1/n²·Σ|x−x'| − 1/m²·Σ|y−y'|),
// in O(len²).
func bestSplit(xs []float64, min int) (int, bool) {
	n := len(xs)
	if n < 2*min {
		return 0, false
	}
	// left[t]: Σ|xi−xj| over i<j<t; right[t]: over t≤i<j.
	left := make([]float64, n+1)
	for t := 1; t <= n; t++ {
		s := left[t-1]
		for i := 0; i < t-1; i++ {
			s += math.Abs(xs[i] - xs[t-1])
		}
		left[t] = s
	}
	right := make([]float64, n+1)
	for t := n - 1; t >= 0; t-- {
		s := right[t+1]
		for j := t + 1; j < n; j++ {
			s += math.Abs(xs[t] - xs[j])
		}
		right[t] = s
	}
	total := left[n]
	best, bestQ := 0, math.Inf(-1)
	for t := min; t <= n-min; t++ {
		a, b := float64(t), float64(n-t)
		cross := total - left[t] - right[t]
		e := 2*cross/(a*b) - 2*left[t]/(a*a) - 2*right[t]/(b*b)
		q := a * b / (a + b) * e
		if q > bestQ {
			best, bestQ = t, q
		}
	}
	return best, true
}

// pooledP is the two-sided p-value of Student's two-sample t-test with the
// variances pooled; 1 when undefined.
func pooledP(m1, s1 float64, n1 int, m2, s2 float64, n2 int) float64 {
	if n1 < 2 || n2 < 2 {
		return 1
	}
	df := float64(n1 + n2 - 2)
	pooled := (float64(n1-1)*s1*s1 + float64(n2-1)*s2*s2) / df
	se := pooled * (1/float64(n1) + 1/float64(n2))
	if se == 0 {
		if m1 == m2 {
			return 1
		}
		return 0
	}
	return studentTwoSided((m2-m1)/math.Sqrt(se), df)
}

// studentTwoSided is P(|T| ≥ |t|) for Student's t with df degrees of
// freedom: I_{df/(df+t²)}(df/2, 1/2).
func studentTwoSided(t, df float64) float64 {
	x := df / (df + t*t)
	return regIncBeta(df/2, 0.5, x)
}

// regIncBeta is the regularized incomplete beta I_x(a, b) (continued
// fraction, Numerical Recipes' betacf).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	lga, _ := math.Lgamma(a)
	lgb, _ := math.Lgamma(b)
	lgab, _ := math.Lgamma(a + b)
	front := math.Exp(lgab - lga - lgb + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betacf(a, b, x) / a
	}
	return 1 - front*betacf(b, a, 1-x)/b
}

func betacf(a, b, x float64) float64 {
	const eps, tiny = 1e-14, 1e-300
	nonzero := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1/nonzero(1-qab*x/qap)
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		for _, aa := range []float64{
			fm * (b - fm) * x / ((qam + 2*fm) * (a + 2*fm)),
			-(a + fm) * (qab + fm) * x / ((a + 2*fm) * (qap + 2*fm)),
		} {
			d = 1 / nonzero(1+aa*d)
			c = nonzero(1 + aa/c)
			h *= d * c
		}
		if math.Abs(d*c-1) < eps {
			break
		}
	}
	return h
}

// Open is the regression a series' newest point is in: the last change
// point among the newest Window points, when it is a regression (nothing
// after it brought the series back) within the newest Recent points.
// Index counts from the first of pts.
func Open(pts []Point, m Metric, o Options) (ChangePoint, bool) {
	o = o.withDefaults()
	from := max(0, len(pts)-o.Window)
	cps := Detect(pts[from:], m, o)
	if len(cps) == 0 {
		return ChangePoint{}, false
	}
	cp := cps[len(cps)-1]
	cp.Index += from
	if !cp.Regression || cp.Index < len(pts)-o.Recent {
		return ChangePoint{}, false
	}
	return cp, true
}
