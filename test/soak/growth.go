package soak

import (
	"fmt"
	"math/rand"
	"time"
)

// newRand is the run's only source of chance.
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// growth is a straight-line fit of one process's resources against its age, leaving out its
// first minute (caches filling, the first syncs).
type growth struct {
	proc string
	// span is how long the fit covers.
	span                           time.Duration
	samples                        int
	rssMiBPerMin, goroutinesPerMin float64
	fdsPerMin                      float64
	// first and last are the fitted values at the span's ends.
	rssFirst, rssLast float64
}

// Limits on growth over a long run: beyond them a resource grows with the work done, which no
// process can sustain. Figures vary with the garbage collector, so each is several times what
// a steady process shows.
const (
	maxRSSMiBPerMin     = 1.0
	maxGoroutinesPerMin = 1.0
	maxFDsPerMin        = 0.5
	// minGrowthSpan is the least span a judgement rests on.
	minGrowthSpan = 5 * time.Minute
)

// fitGrowth fits the longest-lived process among the samples; nil when there are none.
func fitGrowth(samples []sample) *growth {
	byProc := map[string][]sample{}
	for _, s := range samples {
		if s.age >= time.Minute {
			byProc[s.proc] = append(byProc[s.proc], s)
		}
	}
	var best []sample
	for _, ss := range byProc {
		if len(ss) > 1 && (best == nil || ss[len(ss)-1].age-ss[0].age > best[len(best)-1].age-best[0].age) {
			best = ss
		}
	}
	if best == nil {
		return nil
	}
	g := &growth{proc: best[0].proc, span: best[len(best)-1].age - best[0].age, samples: len(best)}
	x := make([]float64, len(best))
	for i, s := range best {
		x[i] = s.age.Minutes()
	}
	col := func(f func(sample) float64) []float64 {
		y := make([]float64, len(best))
		for i, s := range best {
			y[i] = f(s)
		}
		return y
	}
	var icpt float64
	g.rssMiBPerMin, icpt = slope(x, col(func(s sample) float64 { return s.rssKiB / 1024 }))
	g.rssFirst, g.rssLast = icpt+g.rssMiBPerMin*x[0], icpt+g.rssMiBPerMin*x[len(x)-1]
	g.goroutinesPerMin, _ = slope(x, col(func(s sample) float64 { return s.goroutines }))
	g.fdsPerMin, _ = slope(x, col(func(s sample) float64 { return s.fds }))
	return g
}

// slope is the least-squares line through (x, y): its slope and intercept.
func slope(x, y []float64) (float64, float64) {
	var sx, sy, sxx, sxy float64
	n := float64(len(x))
	for i := range x {
		sx, sy, sxx, sxy = sx+x[i], sy+y[i], sxx+x[i]*x[i], sxy+x[i]*y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, sy / n
	}
	m := (n*sxy - sx*sy) / den
	return m, (sy - m*sx) / n
}

func (g *growth) String() string {
	return fmt.Sprintf("growth of %s over %v (%d samples, first minute left out): RSS %+.2f MiB/min (fit %.1f → %.1f MiB), goroutines %+.2f/min, open files %+.2f/min",
		g.proc, g.span.Round(time.Second), g.samples, g.rssMiBPerMin, g.rssFirst, g.rssLast, g.goroutinesPerMin, g.fdsPerMin)
}

// failure is the resources invariant's judgement of g; nil when it held.
func (g *growth) failure(at time.Duration) *Failure {
	switch {
	case g == nil:
		return &Failure{At: at, Invariant: InvResources, Detail: "no leader lived long enough to be followed"}
	case g.span < minGrowthSpan:
		return &Failure{At: at, Invariant: InvResources, Detail: fmt.Sprintf("the longest-lived leader was followed for %v only, less than %v", g.span, minGrowthSpan)}
	case g.rssMiBPerMin > maxRSSMiBPerMin || g.goroutinesPerMin > maxGoroutinesPerMin || g.fdsPerMin > maxFDsPerMin:
		return &Failure{At: at, Invariant: InvResources, Detail: "grows without bound: " + g.String()}
	}
	return nil
}
