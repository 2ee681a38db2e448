//! Figures (SVG and PNG) with plotters. Text in PNGs uses the bundled DejaVu Sans, so no system font
//! libraries are needed.

use crate::claims::{select, Cond, Filter};
use crate::experiment::{Experiment, FigureKind, Scale, Ticks};
use crate::table::{fmt_num, mean_std, Cell, Table};
use anyhow::{anyhow, Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const SIZE: (u32, u32) = (900, 600);
const FONT_FAMILY: &str = "sans-serif";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold, FontStyle::Italic, FontStyle::Oblique] {
            // the bundled font is valid; a failure here would only lose text in PNGs
            let _ = plotters::style::register_font(FONT_FAMILY, style, FONT);
        }
    });
}

/// A curve of a line figure: (x, mean y, std y) per x, in x order.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub label: String,
    pub points: Vec<(f64, f64, f64)>,
}

/// What a figure shows, independent of the backend.
#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    Line {
        curves: Vec<Curve>,
        x_scale: Scale,
        x_ticks: Ticks,
        x_label: String,
        y_label: String,
    },
    /// (label, (time s, offset MB) points); `marks`: times (s) drawn as vertical dashed lines (handoffs);
    /// `events`: (label, (time s, offset MB) points) drawn as large crosses over the curves (e.g. Eom 2002's
    /// erroneous fast retransmits), one colour per label.
    Sequence {
        curves: Vec<(String, Vec<(f64, f64)>)>,
        marks: Vec<f64>,
        events: Vec<(String, Vec<(f64, f64)>)>,
        x_label: String,
        y_label: String,
    },
    /// Empirical distribution functions: (label, sample values) per curve.
    Cdf {
        curves: Vec<(String, Vec<f64>)>,
        x_label: String,
    },
}

/// The steps of an empirical distribution function: at every distinct sorted value, (value, fraction below it)
/// then (value, fraction at or below it).
pub fn ecdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(2 * v.len());
    for (i, &x) in v.iter().enumerate() {
        if i + 1 < v.len() && v[i + 1] == x {
            continue;
        }
        let below = out.last().map_or(0.0, |p| p.1);
        out.push((x, below));
        out.push((x, (i + 1) as f64 / n));
    }
    out
}

/// The line figure's curves: rows grouped by the series column (in grid order) and the x column; mean and
/// std over every row in a group (seeds, and any grid column that is neither x nor series).
pub fn line_curves(exp: &Experiment, table: &Table) -> Result<Plot> {
    let FigureKind::Line { x, y, x_scale, x_ticks } = &exp.figure.kind else {
        return Err(anyhow!("not a line figure"));
    };
    // one curve per combination of the series columns' values, in grid order (first column outermost)
    let mut combos: Vec<Vec<(String, Cell)>> = vec![vec![]];
    for col in &exp.figure.series {
        let values = exp.series_values(col);
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((col.clone(), Cell::from_toml(v)));
                    c
                })
            })
            .collect();
    }
    let xa = exp.grid.iter().find(|a| &a.column == x).context("x is a grid column")?;
    let mut xs: Vec<Cell> = xa.values.iter().map(Cell::from_toml).collect();
    xs.sort_by(|a, b| a.sort_cmp(b));
    let mut curves = Vec::new();
    for combo in combos {
        let mut filters: Vec<Filter> = exp.figure.filter.clone();
        filters.extend(combo.iter().map(|(col, v)| Filter { column: col.clone(), cond: Cond::Eq(v.clone()) }));
        let label =
            if combo.is_empty() {
                y.name()
            } else {
                // series_labels keys: the value, or the values joined by "/" (e.g. "snoop/reno")
                let key = combo.iter().map(|(_, v)| v.to_string()).collect::<Vec<_>>().join("/");
                exp.figure.series_labels.get(&key).cloned().unwrap_or_else(|| {
                    combo.iter().map(|(col, v)| format!("{col} = {v}")).collect::<Vec<_>>().join(", ")
                })
            };
        let mut points = Vec::new();
        for xv in &xs {
            let mut f = filters.clone();
            f.push(Filter { column: x.clone(), cond: Cond::Eq(xv.clone()) });
            let vals: Vec<f64> = select(table, &table.rows, &f).iter().filter_map(|r| y.eval(table, r)).collect();
            // A point at an infinite x (e.g. `inf` = no handoffs) cannot be placed on an axis; the report's
            // table still shows it.
            if vals.is_empty() || xv.as_f64().is_some_and(|x| x.is_infinite()) {
                continue;
            }
            let (m, s) = mean_std(&vals);
            points.push((xv.as_f64().unwrap_or(f64::NAN), m, s));
        }
        // a combination with no rows (e.g. an axis narrowed by --quick) draws no curve
        if !points.is_empty() || curves.is_empty() {
            curves.push(Curve { label, points });
        }
    }
    Ok(Plot::Line {
        curves,
        x_scale: *x_scale,
        x_ticks: *x_ticks,
        x_label: exp.figure.x_label.clone().unwrap_or_else(|| match x_ticks {
            Ticks::Value => x.clone(),
            Ticks::Reciprocal => format!("1 / {x}"),
        }),
        y_label: exp.figure.y_label.clone().unwrap_or_else(|| y.name()),
    })
}

fn transform(scale: Scale, x: f64) -> f64 {
    match scale {
        Scale::Linear => x,
        Scale::Log2 => x.log2(),
        Scale::Log10 => x.log10(),
    }
}

fn untransform(scale: Scale, x: f64) -> f64 {
    match scale {
        Scale::Linear => x,
        Scale::Log2 => x.exp2(),
        Scale::Log10 => 10f64.powf(x),
    }
}

/// `16M`, `256K`, `1.5K`: binary prefixes, for "bits per error" axes.
pub fn binary_prefix(v: f64) -> String {
    let units = [(1u64 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, p) in units {
        let u = u as f64;
        if v >= u * 0.999 {
            let q = v / u;
            let r = q.round();
            return if (q - r).abs() < 0.01 * q { format!("{r}{p}") } else { format!("{}{p}", fmt_num(q)) };
        }
    }
    fmt_num(v)
}

fn tick_label(scale: Scale, ticks: Ticks, pos: f64) -> String {
    let v = untransform(scale, pos);
    match ticks {
        Ticks::Value => fmt_num(v),
        Ticks::Reciprocal => binary_prefix(1.0 / v),
    }
}

/// Draws `plot` into `dir/figure.svg` and `dir/figure.png`.
pub fn write(plot: &Plot, title: &str, dir: &Path) -> Result<()> {
    register_font();
    let svg = dir.join("figure.svg");
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        draw(plot, title, &root).with_context(|| format!("drawing {}", svg.display()))?;
        root.present().map_err(|e| anyhow!("{e}")).with_context(|| format!("writing {}", svg.display()))?;
    }
    let png = dir.join("figure.png");
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(plot, title, &root).with_context(|| format!("drawing {}", png.display()))?;
        root.present().map_err(|e| anyhow!("{e}")).with_context(|| format!("drawing {}", png.display()))?;
    }
    write_png(&png, &rgb).with_context(|| format!("writing {}", png.display()))
}

/// Encodes an RGB image of [`SIZE`] into the PNG file `path`.
fn write_png(path: &Path, rgb: &[u8]) -> Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(())
}

/// Every figure's chart: linear f64 axes.
type Plane<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The chart every figure draws on: caption, margins and label areas alike, axes from the data.
fn chart_on<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<Plane<'a, DB>>
where
    DB::ErrorType: 'static,
{
    ChartBuilder::on(root)
        .caption(title, (FONT_FAMILY, 22))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(65)
        .build_cartesian_2d(x, y)
        .map_err(|e| anyhow!("{e:?}"))
}

/// The legend box, in one style for every figure.
fn draw_legend<'a, DB: DrawingBackend + 'a>(chart: &mut Plane<'a, DB>, position: SeriesLabelPosition) -> Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT_FAMILY, 15))
        .position(position)
        .draw()
        .map_err(|e| anyhow!("{e:?}"))
}

fn draw<DB: DrawingBackend>(plot: &Plot, title: &str, root: &DrawingArea<DB, Shift>) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e:?}");
    root.fill(&WHITE).map_err(e)?;
    let palette = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0xff, 0x7f, 0x0e),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0x8c, 0x56, 0x4b),
    ];
    match plot {
        Plot::Line { curves, x_scale, x_ticks, x_label, y_label } => {
            let all: Vec<&(f64, f64, f64)> = curves.iter().flat_map(|c| c.points.iter()).collect();
            let tx: Vec<f64> = all.iter().map(|p| transform(*x_scale, p.0)).collect();
            let (mut x0, mut x1) = (
                tx.iter().copied().fold(f64::INFINITY, f64::min),
                tx.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            if !x0.is_finite() {
                (x0, x1) = (0.0, 1.0);
            }
            let pad = if x1 > x0 { (x1 - x0) * 0.04 } else { 0.5 };
            let (x0, x1) = (x0 - pad, x1 + pad);
            let y1 = all.iter().map(|p| p.1 + p.2).fold(0.0f64, f64::max);
            let y1 = if y1 > 0.0 && y1.is_finite() { y1 * 1.1 } else { 1.0 };
            let mut chart = chart_on(root, title, x0..x1, 0.0..y1)?;
            // one tick per distinct x when there are few (log2 BER axes), else plotters' choice
            let mut distinct: Vec<f64> = tx.clone();
            distinct.sort_by(|a, b| a.total_cmp(b));
            distinct.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
            let few = distinct.len() <= 16 && *x_scale != Scale::Linear;
            let fmt = |v: &f64| {
                if few && !distinct.iter().any(|d| (d - v).abs() < 0.05) {
                    String::new()
                } else {
                    tick_label(*x_scale, *x_ticks, *v)
                }
            };
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(x_label.as_str())
                .y_desc(y_label.as_str())
                .label_style((FONT_FAMILY, 15))
                .axis_desc_style((FONT_FAMILY, 17))
                .x_label_formatter(&fmt)
                .y_label_formatter(&|v| fmt_num(*v));
            if few {
                // integer positions of log2/log10 axes land on the grid values
                mesh.x_labels(((x1 - x0).round() as usize + 1).max(2));
            }
            mesh.draw().map_err(e)?;
            for (i, c) in curves.iter().enumerate() {
                let color = palette[i % palette.len()];
                let pts: Vec<(f64, f64)> = c.points.iter().map(|p| (transform(*x_scale, p.0), p.1)).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(e)?
                    .label(c.label.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                chart.draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 4, color.filled()))).map_err(e)?;
                chart
                    .draw_series(c.points.iter().filter(|p| p.2 > 0.0).map(|p| {
                        let x = transform(*x_scale, p.0);
                        ErrorBar::new_vertical(x, (p.1 - p.2).max(0.0), p.1, p.1 + p.2, color.stroke_width(1), 8)
                    }))
                    .map_err(e)?;
            }
            draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
        Plot::Sequence { curves, marks, events, x_label, y_label } => {
            let all = curves.iter().flat_map(|c| c.1.iter());
            let (x1, y1) = all.fold((0.0f64, 0.0f64), |(a, b), p| (a.max(p.0), b.max(p.1)));
            let x1 = if x1 > 0.0 { x1 * 1.03 } else { 1.0 };
            let y1 = if y1 > 0.0 { y1 * 1.05 } else { 1.0 };
            let mut chart = chart_on(root, title, 0.0..x1, 0.0..y1)?;
            chart
                .configure_mesh()
                .x_desc(x_label.as_str())
                .y_desc(y_label.as_str())
                .label_style((FONT_FAMILY, 15))
                .axis_desc_style((FONT_FAMILY, 17))
                .x_label_formatter(&|v| fmt_num(*v))
                .y_label_formatter(&|v| fmt_num(*v))
                .draw()
                .map_err(e)?;
            let grey = RGBColor(0x70, 0x70, 0x70);
            let shown: Vec<f64> = marks.iter().copied().filter(|&t| t <= x1).collect();
            for (k, &t) in shown.iter().enumerate() {
                // dashed: short segments up the whole height
                let n = 60;
                let dashes = (0..n).step_by(2).map(|j| {
                    let (a, b) = (y1 * j as f64 / n as f64, y1 * (j + 1) as f64 / n as f64);
                    PathElement::new(vec![(t, a), (t, b)], grey.stroke_width(1))
                });
                let series = chart.draw_series(dashes).map_err(e)?;
                if k == 0 {
                    series
                        .label("handoff")
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1)));
                }
            }
            for (i, (label, pts)) in curves.iter().enumerate() {
                let color = palette[i % palette.len()];
                chart
                    .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 1, color.filled())))
                    .map_err(e)?
                    .label(label.as_str())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
            }
            // Events over the curves, in colours the curves do not use (black first).
            let event_colours = [BLACK, RGBColor(0xe3, 0x77, 0xc2), RGBColor(0x17, 0xbe, 0xcf)];
            for (i, (label, pts)) in events.iter().enumerate().filter(|(_, (_, pts))| !pts.is_empty()) {
                let color = event_colours[i % event_colours.len()];
                chart
                    .draw_series(pts.iter().map(|&(x, y)| Cross::new((x, y), 7, color.stroke_width(2))))
                    .map_err(e)?
                    .label(label.as_str())
                    .legend(move |(x, y)| Cross::new((x + 10, y), 5, color.stroke_width(2)));
            }
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        Plot::Cdf { curves, x_label } => {
            let steps: Vec<(String, Vec<(f64, f64)>)> = curves.iter().map(|(l, v)| (l.clone(), ecdf(v))).collect();
            let x1 = steps.iter().flat_map(|c| c.1.iter()).map(|p| p.0).fold(0.0f64, f64::max);
            let x1 = if x1 > 0.0 { x1 * 1.05 } else { 1.0 };
            let mut chart = chart_on(root, title, 0.0..x1, 0.0..1.02)?;
            chart
                .configure_mesh()
                .x_desc(x_label.as_str())
                .y_desc("fraction of handoffs")
                .label_style((FONT_FAMILY, 15))
                .axis_desc_style((FONT_FAMILY, 17))
                .x_label_formatter(&|v| fmt_num(*v))
                .y_label_formatter(&|v| fmt_num(*v))
                .draw()
                .map_err(e)?;
            for (i, (label, pts)) in steps.iter().enumerate() {
                let color = palette[i % palette.len()];
                let label = format!("{label} (n = {})", curves[i].1.len());
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(e)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            }
            draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecdf_steps_at_every_distinct_value() {
        assert_eq!(
            ecdf(&[3.0, 1.0, 3.0, 2.0]),
            vec![(1.0, 0.0), (1.0, 0.25), (2.0, 0.25), (2.0, 0.5), (3.0, 0.5), (3.0, 1.0)]
        );
        assert!(ecdf(&[]).is_empty());
        assert_eq!(ecdf(&[f64::NAN, 5.0]), vec![(5.0, 0.0), (5.0, 1.0)]);
    }

    #[test]
    fn prefixes() {
        assert_eq!(binary_prefix(1.0 / 5.96e-8), "16M");
        assert_eq!(binary_prefix(1.0 / 3.81e-6), "256K");
        assert_eq!(binary_prefix(1.0 / 6.10e-5), "16K");
        assert_eq!(binary_prefix(512.0), "512");
        assert_eq!(tick_label(Scale::Log2, Ticks::Reciprocal, -24.0), "16M");
    }

    fn demo_line() -> Plot {
        let bers: Vec<f64> = (14..=24).rev().map(|k| (-(k as f64)).exp2()).collect();
        let none = bers.iter().map(|&b| (b, (1.5 - 2.5e4 * b).max(0.05), 0.05)).collect();
        let snoop = bers.iter().map(|&b| (b, 1.5 - 5e3 * b, 0.03)).collect();
        Plot::Line {
            curves: vec![
                Curve { label: "Reno".into(), points: none },
                Curve { label: "Reno + Snoop".into(), points: snoop },
            ],
            x_scale: Scale::Log2,
            x_ticks: Ticks::Reciprocal,
            x_label: "bits per error (log2 scale)".into(),
            y_label: "goodput (Mb/s)".into(),
        }
    }

    #[test]
    fn writes_svg_and_png() {
        let d = tempfile::tempdir().unwrap();
        write(&demo_line(), "Goodput against bit-error rate", d.path()).unwrap();
        let svg = std::fs::read_to_string(d.path().join("figure.svg")).unwrap();
        assert!(svg.contains("16M") && svg.contains("256K") && svg.contains("Reno + Snoop"), "labels in the SVG");
        let png = png::Decoder::new(std::fs::File::open(d.path().join("figure.png")).unwrap());
        let mut png = png.read_info().unwrap();
        let mut rgb = vec![0; png.output_buffer_size()];
        let info = png.next_frame(&mut rgb).unwrap();
        assert_eq!((info.width, info.height, info.color_type), (SIZE.0, SIZE.1, png::ColorType::Rgb));
        assert!(rgb.chunks(3).any(|p| p != [255, 255, 255]) && rgb.chunks(3).any(|p| p == [255, 255, 255]), "drawn");
        if let Ok(dir) = std::env::var("LASTHOP_FIGURE_DEMO") {
            write(&demo_line(), "Goodput against bit-error rate", Path::new(&dir)).unwrap();
        }
        let seq = Plot::Sequence {
            curves: vec![
                ("Reno".into(), (0..400).map(|i| (i as f64 * 0.1, i as f64 * 0.003)).collect()),
                ("Reno + Snoop".into(), (0..400).map(|i| (i as f64 * 0.05, i as f64 * 0.006)).collect()),
            ],
            marks: vec![5.0, 15.0],
            events: vec![("erroneous fast retransmit".into(), vec![(12.0, 0.4)]), ("nothing to show".into(), vec![])],
            x_label: "time (s)".into(),
            y_label: "received offset (MB)".into(),
        };
        let d2 = tempfile::tempdir().unwrap();
        write(&seq, "Sequence", d2.path()).unwrap();
        let svg = std::fs::read_to_string(d2.path().join("figure.svg")).unwrap();
        assert!(svg.contains("handoff"), "handoff marks have a legend entry");
        assert!(svg.contains("erroneous fast retransmit"), "events have a legend entry");
        assert!(!svg.contains("nothing to show"), "an event series with no points has none");
        let cdf = Plot::Cdf {
            curves: vec![("idle".into(), vec![2.0, 3.0, 2.5]), ("transfer".into(), vec![20.0, 40.0])],
            x_label: "handoff latency (ms)".into(),
        };
        let d3 = tempfile::tempdir().unwrap();
        write(&cdf, "Handoff latency", d3.path()).unwrap();
        let svg = std::fs::read_to_string(d3.path().join("figure.svg")).unwrap();
        assert!(svg.contains("idle (n = 3)") && svg.contains("fraction of handoffs"));
        if let Ok(dir) = std::env::var("LASTHOP_FIGURE_DEMO_SEQ") {
            write(&seq, "Sequence numbers at BER 3.8e-6", Path::new(&dir)).unwrap();
        }
    }
}
