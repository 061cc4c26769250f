package results

import (
	"math"
	"strconv"
	"strings"
)

// How the schema's numbers are written wherever a person reads them: the
// harness's log lines, threshold reasons, the report's cells.

// Dash is shown for a missing value; a missing cell is never hidden.
const Dash = "—"

// RoundSig rounds v to sig significant digits, as every format here does.
func RoundSig(v float64, sig int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', sig, 64), 64)
	if err != nil {
		return v
	}
	return f
}

var rateUnits = []string{"bit/s", "Kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"}

// FormatBps formats a rate like the seed: three significant digits and a
// decimal unit ("16.5 Gbit/s", "891 Mbit/s", "7.50 Gbit/s").
func FormatBps(bps float64) string { return formatRate(bps, false) }

// FormatBpsShort is FormatBps without trailing zeros ("7.5 Gbit/s").
func FormatBpsShort(bps float64) string { return formatRate(bps, true) }

func formatRate(bps float64, trim bool) string {
	if math.IsNaN(bps) || math.IsInf(bps, 0) || bps < 0 {
		return Dash
	}
	if bps == 0 {
		return "0 bit/s"
	}
	u := 0
	v := bps
	for v >= 1000 && u < len(rateUnits)-1 {
		v /= 1000
		u++
	}
	r := RoundSig(v, 3)
	if r >= 1000 && u < len(rateUnits)-1 {
		r /= 1000
		u++
	}
	dec := 2
	switch {
	case r >= 100:
		dec = 0
	case r >= 10:
		dec = 1
	}
	s := strconv.FormatFloat(r, 'f', dec, 64)
	if trim {
		s = trimZeros(s)
	}
	return s + " " + rateUnits[u]
}

// FormatLoss formats a loss percentage with two significant digits and no
// trailing zeros ("27%", "0.046%", "0.00017%", "0.3%", "0%").
func FormatLoss(pct float64) string {
	if math.IsNaN(pct) || math.IsInf(pct, 0) || pct < 0 {
		return Dash
	}
	if pct == 0 {
		return "0%"
	}
	r := RoundSig(pct, 2)
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 0, 64) + "%"
	}
	dec := 1 - int(math.Floor(math.Log10(r)))
	return trimZeros(strconv.FormatFloat(r, 'f', dec, 64)) + "%"
}

// FormatGain formats a ratio with two significant digits: "~20×", "~2.6×",
// "~4.0×". With wholeWhenRound the ".0" is dropped ("~6×"), as the seed's
// TCP table does.
func FormatGain(ratio float64, wholeWhenRound bool) string {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) || ratio < 0 {
		return Dash
	}
	r := RoundSig(ratio, 2)
	var s string
	if r >= 10 {
		s = strconv.FormatFloat(r, 'f', 0, 64)
	} else if r >= 1 {
		s = strconv.FormatFloat(r, 'f', 1, 64)
	} else {
		s = strconv.FormatFloat(r, 'f', 1-int(math.Floor(math.Log10(r))), 64)
	}
	if wholeWhenRound && strings.HasSuffix(s, ".0") {
		s = strings.TrimSuffix(s, ".0")
	}
	return "~" + s + "×"
}

// FormatPercent formats a plain percentage such as a CV ("3.4%").
func FormatPercent(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return Dash
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// UDPCell is the seed's "offered / delivered / loss" cell.
func UDPCell(offered, delivered, loss float64) string {
	return FormatBps(offered) + " / " + FormatBps(delivered) + " / " + FormatLoss(loss)
}
