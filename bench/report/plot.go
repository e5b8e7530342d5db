package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"
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

// The plots' geometry in pixels; text is the 5×7 font at textScale.
const (
	plotWidth  = 1000
	plotMargin = 16
	textScale  = 2
	barHeight  = 16
	barGap     = 2
	groupGap   = 14
	// valueRoom is kept right of the longest bar for its value.
	valueRoom = 80
)

var (
	colorBackground = color.RGBA{0xff, 0xff, 0xff, 0xff}
	colorText       = color.RGBA{0x20, 0x20, 0x20, 0xff}
	colorGrid       = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	colorRef        = color.RGBA{0xc0, 0x20, 0x20, 0xff}
	// seriesColors are told apart also in grey scale.
	seriesColors = []color.RGBA{
		{0x9a, 0x9a, 0x9a, 0xff},
		{0x3b, 0x75, 0xaf, 0xff},
		{0xef, 0x86, 0x36, 0xff},
		{0x51, 0x9e, 0x3e, 0xff},
	}
)

func fillRect(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r.Intersect(img.Bounds()), &image.Uniform{c}, image.Point{}, draw.Src)
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

// Render draws the chart.
func (c *barChart) Render() *image.RGBA {
	lh := textHeight(textScale)
	labelW := 0
	for _, g := range c.Groups {
		labelW = max(labelW, textWidth(g.Label, textScale))
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

	img := image.NewRGBA(image.Rect(0, 0, plotWidth, height))
	fillRect(img, img.Bounds(), colorBackground)
	drawText(img, plotMargin, titleY, c.Title, textScale, colorText)
	x := left
	for i, s := range c.Series {
		fillRect(img, image.Rect(x, legendY, x+lh, legendY+lh), seriesColors[i%len(seriesColors)])
		x += lh + 6
		drawText(img, x, legendY, s, textScale, colorText)
		x += textWidth(s, textScale) + 24
	}

	px := func(v float64) int { return left + int(math.Round(v/axisMax*float64(right-left))) }
	for v := 0.0; v <= axisMax+step/2; v += step {
		gx := px(v)
		fillRect(img, image.Rect(gx, top-4, gx+1, bottom), colorGrid)
		t := formatTick(v, step)
		drawText(img, gx-textWidth(t, textScale)/2, bottom+8, t, textScale, colorText)
	}
	for i, g := range c.Groups {
		gy := top + i*(groupH+groupGap)
		drawText(img, left-12-textWidth(g.Label, textScale), gy+(groupH-lh)/2, g.Label, textScale, colorText)
		for j, v := range g.Values {
			if math.IsNaN(v) || j >= len(c.Series) {
				continue
			}
			by := gy + j*(barHeight+barGap)
			bx := px(v)
			fillRect(img, image.Rect(left, by, max(bx, left+1), by+barHeight), seriesColors[j%len(seriesColors)])
			drawText(img, max(bx, left+1)+6, by+(barHeight-lh)/2, formatRatio(v), textScale, colorText)
		}
	}
	if c.Ref > 0 {
		rx := px(c.Ref)
		fillRect(img, image.Rect(rx-1, top-4, rx+1, bottom), colorRef)
	}
	fillRect(img, image.Rect(left, top-4, left+1, bottom), colorText)
	return img
}

// formatTick prints an axis value with as many decimals as step needs.
func formatTick(v, step float64) string {
	decimals := 0
	for s := step; s < 1 && decimals < 3; s *= 10 {
		decimals++
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// writePNG encodes img into path.
func writePNG(path string, img image.Image) error {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
