package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// barChart is a horizontal grouped bar chart of ratios against native:
// one group per row label, one bar per series, each bar labelled with its
// value, and a vertical line at Ref (1 = as fast as native).
type barChart struct {
	Title  string
	Series []string
	Groups []barGroup
	Ref    float64
}

// barGroup is one row label and its values, one per series; a NaN value
// (not measured) draws no bar.
type barGroup struct {
	Label  string
	Values []float64
}

// The plots' geometry in SVG user units (pixels at 100%).
const (
	plotWidth  = 1000
	plotMargin = 16
	fontSize   = 14
	barHeight  = 16
	barGap     = 2
	groupGap   = 14
	// valueRoom is kept right of the longest bar for its value.
	valueRoom = 80
)

const (
	colorBackground = "#ffffff"
	colorText       = "#202020"
	colorGrid       = "#dddddd"
	colorRef        = "#c02020"
)

// seriesColors are told apart also in grey scale.
var seriesColors = []string{"#9a9a9a", "#3b75af", "#ef8636", "#519e3e"}

// textWidth estimates the width of s in the plots' sans-serif font: the
// viewer lays the text out, so the layout can only leave room for it. An
// average glyph of a sans-serif font is about 0.6 em wide.
func textWidth(s string) int {
	return int(math.Ceil(float64(utf8.RuneCountInString(s)) * fontSize * 0.6))
}

// niceStep is the grid step for an axis from 0 to max: 1, 2 or 5 times a
// power of ten, at most ten steps.
func niceStep(max float64) float64 {
	if !(max > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(max)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10} {
		if max/(m*p) <= 10 {
			return m * p
		}
	}
	return 10 * p
}

// formatRatio prints a bar's value: two decimals below 10, one below 100.
func formatRatio(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// svg writes the elements of a chart.
type svg struct{ bytes.Buffer }

func (s *svg) rect(x, y, w, h int, fill string) {
	fmt.Fprintf(s, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", x, y, w, h, fill)
}

// text writes t with its baseline's anchor ("start", "middle", "end") at
// x and its middle at y.
func (s *svg) text(x, y int, anchor, t string) {
	fmt.Fprintf(s, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\" dominant-baseline=\"central\">", x, y, anchor)
	xml.EscapeText(s, []byte(t)) // writes to a bytes.Buffer: no error
	s.WriteString("</text>\n")
}

// Render draws the chart as an SVG document.
func (c *barChart) Render() []byte {
	const lh = fontSize // a line of text
	labelW := 0
	for _, g := range c.Groups {
		labelW = max(labelW, textWidth(g.Label))
	}
	maxV := c.Ref
	for _, g := range c.Groups {
		for _, v := range g.Values {
			if !math.IsNaN(v) {
				maxV = max(maxV, v)
			}
		}
	}
	step := niceStep(maxV)
	axisMax := math.Ceil(maxV/step) * step

	left := plotMargin + labelW + 12
	right := plotWidth - plotMargin - valueRoom
	titleY := plotMargin
	legendY := titleY + lh + 12
	top := legendY + lh + 16
	groupH := len(c.Series)*(barHeight+barGap) - barGap
	bottom := top + len(c.Groups)*(groupH+groupGap)
	height := bottom + 8 + lh + plotMargin

	var s svg
	fmt.Fprintf(&s, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"%d\" fill=\"%s\">\n",
		plotWidth, height, plotWidth, height, fontSize, colorText)
	s.rect(0, 0, plotWidth, height, colorBackground)
	s.text(plotMargin, titleY+lh/2, "start", c.Title)
	x := left
	for i, name := range c.Series {
		s.rect(x, legendY, lh, lh, seriesColors[i%len(seriesColors)])
		x += lh + 6
		s.text(x, legendY+lh/2, "start", name)
		x += textWidth(name) + 24
	}

	px := func(v float64) int { return left + int(math.Round(v/axisMax*float64(right-left))) }
	for v := 0.0; v <= axisMax+step/2; v += step {
		gx := px(v)
		s.rect(gx, top-4, 1, bottom-top+4, colorGrid)
		s.text(gx, bottom+8+lh/2, "middle", formatTick(v, step))
	}
	for i, g := range c.Groups {
		gy := top + i*(groupH+groupGap)
		s.text(left-12, gy+groupH/2, "end", g.Label)
		for j, v := range g.Values {
			if math.IsNaN(v) || j >= len(c.Series) {
				continue
			}
			by := gy + j*(barHeight+barGap)
			bx := max(px(v), left+1)
			s.rect(left, by, bx-left, barHeight, seriesColors[j%len(seriesColors)])
			s.text(bx+6, by+barHeight/2, "start", formatRatio(v))
		}
	}
	if c.Ref > 0 {
		s.rect(px(c.Ref)-1, top-4, 2, bottom-top+4, colorRef)
	}
	s.rect(left, top-4, 1, bottom-top+4, colorText)
	s.WriteString("</svg>\n")
	return s.Bytes()
}

// formatTick prints an axis value with as many decimals as step needs.
func formatTick(v, step float64) string {
	decimals := 0
	for s := step; s < 1 && decimals < 3; s *= 10 {
		decimals++
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
