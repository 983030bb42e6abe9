package lab

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteSVG draws the client-observed outage per mode and advert interval,
// each daemon's bar beside the other's: one panel per interval (each with
// its own scale, since 10 ms and 1 s differ 100-fold), bar = median,
// whisker = min..max, dashed line = median theoretical bound (cut and
// graceful).
func (r *BenchResult) WriteSVG(w io.Writer) error {
	rows := r.Rows()
	find := func(mode string, iv float64, metric string) (Row, bool) {
		for _, row := range rows {
			if row.Mode == mode && row.IntervalMS == iv && row.Metric == metric {
				return row, true
			}
		}
		return Row{}, false
	}
	const (
		panelW, panelH = 330.0, 300.0
		left, top      = 60.0, 90.0
		gapX           = 40.0
		bottom         = 70.0
	)
	ivs, modes, daemons := r.Config.IntervalsMS, r.Config.Modes, r.Config.Daemons
	width := left + float64(len(ivs))*(panelW+gapX)
	height := top + panelH + bottom
	colors := map[string]string{"vipd": "#1b7f79", "keepalived": "#d98c1f",
		IPv6Label(Vipd): "#6cc3bd", IPv6Label(Keepalived): "#f0c27a"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="24" font-size="16" font-weight="bold">Client-observed outage per fault mode (1 ms ICMP probes, median of %d trials; whiskers min..max)</text>`+"\n",
		left, r.Config.Trials)
	lx := left
	for _, d := range daemons {
		fmt.Fprintf(&b, `<rect x="%.0f" y="36" width="14" height="14" fill="%s"/><text x="%.0f" y="48">%s</text>`+"\n",
			lx, color(colors, d), lx+18, html.EscapeString(d))
		lx += 110
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="43" x2="%.0f" y2="43" stroke="black" stroke-dasharray="4 3"/><text x="%.0f" y="48">theoretical VRRPv3 bound (median; cut, graceful)</text>`+"\n",
		lx, lx+24, lx+30)

	for pi, iv := range ivs {
		x0 := left + float64(pi)*(panelW+gapX)
		ymax := 0.0
		for _, m := range modes {
			for _, metric := range []string{"outage", "bound"} {
				if row, ok := find(m, iv, metric); ok {
					for _, s := range row.ByDaemon {
						ymax = math.Max(ymax, s.Max)
					}
				}
			}
		}
		if ymax == 0 {
			// Nothing measured at this interval: say why instead of an empty scale.
			why := "no trials"
			for _, g := range r.Groups {
				if g.IntervalMS == iv && !g.Stable {
					why = "not measured: unstable here (see the table)"
				}
			}
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold" text-anchor="middle">advert interval %s</text>`+"\n",
				x0+panelW/2, top-10, fmtInterval(iv))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f4f4f4"/>`, x0, top, panelW, panelH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#777">%s</text>`+"\n",
				x0+panelW/2, top+panelH/2, html.EscapeString(why))
			continue
		}
		ticks := niceTicks(ymax)
		ytop := ticks[len(ticks)-1]
		y := func(v float64) float64 { return top + panelH - v/ytop*panelH }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold" text-anchor="middle">advert interval %s</text>`+"\n",
			x0+panelW/2, top-10, fmtInterval(iv))
		for _, t := range ticks {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, x0, y(t), x0+panelW, y(t))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", x0-4, y(t)+4, fmtTick(t))
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`, x0, top, x0, top+panelH)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, top+panelH, x0+panelW, top+panelH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555" transform="rotate(-90 %.1f %.1f)">ms</text>`+"\n",
			x0-44, top+panelH/2, x0-44, top+panelH/2)
		groupW := panelW / float64(max(1, len(modes)))
		barW := math.Min(40, (groupW-20)/float64(max(1, len(daemons))))
		for mi, m := range modes {
			gx := x0 + float64(mi)*groupW
			cx := gx + groupW/2
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", cx, top+panelH+18, html.EscapeString(m))
			out, _ := find(m, iv, "outage")
			bx := cx - barW*float64(len(daemons))/2
			for di, d := range daemons {
				x := bx + float64(di)*barW
				s, ok := out.ByDaemon[d]
				if !ok || s.N == 0 {
					label := "n/a"
					if out.Note[d] != "" {
						label = out.Note[d]
					}
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" fill="#999">%s</text>`+"\n",
						x+barW/2, top+panelH-4, html.EscapeString(label))
					continue
				}
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s %s: median %s ms, min %s, max %s, n=%d</title></rect>`+"\n",
					x+1, y(s.Median), barW-2, top+panelH-y(s.Median), color(colors, d),
					html.EscapeString(d), html.EscapeString(m), fmtInterval(iv), fmtNum(s.Median), fmtNum(s.Min), fmtNum(s.Max), s.N)
				wx := x + barW/2
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`, wx, y(s.Min), wx, y(s.Max))
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`, wx-4, y(s.Max), wx+4, y(s.Max))
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", wx-4, y(s.Min), wx+4, y(s.Min))
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n",
					wx, math.Min(y(s.Max), y(s.Median))-4, fmtNum(s.Median))
			}
			// For kill the bound is about the takeover, not the client: the
			// killed master's kernel keeps answering meanwhile.
			if bound, ok := find(m, iv, "bound"); ok && m != Kill.String() {
				var meds []float64
				for _, s := range bound.ByDaemon {
					if s.N > 0 {
						meds = append(meds, s.Median)
					}
				}
				if len(meds) > 0 {
					by := y(summarize(meds).Median)
					fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-dasharray="4 3"/>`+"\n",
						bx-6, by, bx+barW*float64(len(daemons))+6, by)
				}
			}
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#555">kill: the killed master keeps the VIP and keeps answering, so the client sees almost no outage; see the table for how fast its neighbour entry moves.</text>`+"\n",
		left, height-18)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func color(m map[string]string, d string) string {
	if c, ok := m[d]; ok {
		return c
	}
	return "#777"
}

// niceTicks returns 0 and evenly spaced round values whose last is >= v.
func niceTicks(v float64) []float64 {
	if v <= 0 || math.IsNaN(v) {
		v = 1
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if f*mag >= raw {
			step = f * mag
			break
		}
	}
	var t []float64
	for i := 0; ; i++ {
		x := float64(i) * step // multiplied, not summed: no 0.6000000000000001
		t = append(t, x)
		if x >= v {
			break
		}
	}
	return t
}

func fmtTick(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
