//! The SVG pictures of `calibrate fit --plot` and `study --svg`, written by hand (no plotting crate
//! for a few lines and circles).
//!
//! A reliability panel plots accuracy against confidence for the reliability bins; the diagonal is
//! perfect calibration, so a point below it is over-confident and above it under-confident.
//! Before (calibration off) is orange, after (on) is blue; a circle's area follows its bin's size.
//! The study's chart puts each engine at its accuracy against its median latency per decision, on
//! a log scale, one labelled point per engine.

use super::fit::Bin;
use super::question_fit::QuestionFit;
use crate::text::{ellipsis, xml_escape};

const PANEL: f64 = 300.0;
const MARGIN: f64 = 48.0;
const COLS: usize = 2;
const BEFORE: &str = "#e07b39";
const AFTER: &str = "#2b6cb0";
const CELL_W: f64 = PANEL + 2.0 * MARGIN;
const WIDTH: f64 = CELL_W * COLS as f64;

/// One reliability panel: two title lines and the bins before and after.
pub struct Panel<'a> {
    pub title: String,
    pub subtitle: String,
    /// The question's option count: a winner's confidence is at least 1/options.
    pub options: usize,
    pub before: &'a [Bin],
    pub after: &'a [Bin],
}

/// The calibrate plot: one panel per question, before and after its fit.
pub fn svg(measured: &[QuestionFit], title: &str) -> String {
    let panels: Vec<Panel> = measured
        .iter()
        .map(|r| {
            let t = if r.own_fit && r.fit.improved && r.fit.clamped.is_some() {
                format!("T = {:.2} (clamped)", r.applied_t)
            } else if r.own_fit && r.fit.improved {
                format!("T = {:.2}", r.applied_t)
            } else if r.own_fit {
                "T = 1 kept".to_string()
            } else {
                format!("T = {:.2} (fallback)", r.applied_t)
            };
            Panel {
                title: r.label(),
                subtitle: format!(
                    "n = {}, accuracy {:.0}%, {t}, ECE {:.3} → {:.3}",
                    r.n,
                    100.0 * r.accuracy,
                    r.ece_before,
                    r.ece_after
                ),
                options: r.options,
                before: &r.bins_before,
                after: &r.bins_after,
            }
        })
        .collect();
    let mut s = open(panels_height(panels.len()) + 70.0);
    s.push_str(&heading(title, 26.0));
    s.push_str(&legend(48.0, "before (raw engine)", "after (calibrated)"));
    s.push_str(&grid(&panels, 70.0));
    s.push_str("</svg>\n");
    s
}

fn open(height: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    )
}

fn heading(title: &str, y: f64) -> String {
    format!(
        "<text x=\"{}\" y=\"{y}\" font-size=\"18\" text-anchor=\"middle\">{}</text>\n",
        WIDTH / 2.0,
        xml_escape(title)
    )
}

fn legend(y: f64, before: &str, after: &str) -> String {
    let mid = WIDTH / 2.0;
    format!(
        "<g font-size=\"12\"><circle cx=\"{}\" cy=\"{y}\" r=\"6\" fill=\"{BEFORE}\"/><text x=\"{}\" y=\"{}\">{}</text>\
         <circle cx=\"{}\" cy=\"{y}\" r=\"6\" fill=\"{AFTER}\"/><text x=\"{}\" y=\"{}\">{}</text>\
         <line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/><text x=\"{}\" y=\"{}\">perfectly calibrated</text></g>\n",
        mid - 260.0,
        mid - 250.0,
        y + 4.0,
        xml_escape(before),
        mid - 110.0,
        mid - 100.0,
        y + 4.0,
        xml_escape(after),
        mid + 40.0,
        mid + 70.0,
        mid + 76.0,
        y + 4.0,
    )
}

const CELL_H: f64 = PANEL + 2.0 * MARGIN + 20.0;

fn panels_height(n: usize) -> f64 {
    CELL_H * n.div_ceil(COLS).max(1) as f64
}

/// The panels two by two, from `top` down.
fn grid(panels: &[Panel], top: f64) -> String {
    let mut s = String::new();
    for (i, p) in panels.iter().enumerate() {
        let ox = (i % COLS) as f64 * CELL_W + MARGIN;
        let oy = (i / COLS) as f64 * CELL_H + top + MARGIN;
        s.push_str(&panel(p, ox, oy));
    }
    s
}

fn panel(r: &Panel, ox: f64, oy: f64) -> String {
    // Confidence of a winner is at least 1/options, so the x axis starts there.
    let x0 = 1.0 / r.options.max(2) as f64;
    let px = |c: f64| ox + (c - x0) / (1.0 - x0) * PANEL;
    let py = |a: f64| oy + (1.0 - a) * PANEL;
    let mut s = String::new();
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{}</text>\n\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#444\">{}</text>\n",
        ox,
        oy - 30.0,
        xml_escape(&ellipsis(&r.title, 44)),
        ox,
        oy - 14.0,
        xml_escape(&r.subtitle),
    ));
    s.push_str(&format!(
        "<rect x=\"{ox}\" y=\"{oy}\" width=\"{PANEL}\" height=\"{PANEL}\" fill=\"#fafafa\" stroke=\"#333\"/>\n"
    ));
    // Round ticks: every 0.1 of confidence from the axis start, every 0.25 of accuracy.
    let first = (x0 * 10.0).ceil() as usize;
    for c in (first..=10).map(|k| k as f64 / 10.0) {
        s.push_str(&format!(
            "<line x1=\"{x}\" y1=\"{oy}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"#ddd\"/><text x=\"{x}\" y=\"{ty}\" font-size=\"10\" text-anchor=\"middle\">{c:.1}</text>\n",
            x = px(c),
            y2 = oy + PANEL,
            ty = oy + PANEL + 14.0,
        ));
    }
    for f in (0..=4).map(|k| k as f64 / 4.0) {
        s.push_str(&format!(
            "<line x1=\"{ox}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#ddd\"/><text x=\"{lx}\" y=\"{yt}\" font-size=\"10\" text-anchor=\"end\">{f:.2}</text>\n",
            y = py(f),
            x2 = ox + PANEL,
            lx = ox - 4.0,
            yt = py(f) + 3.0,
        ));
    }
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">confidence</text>\n\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 {} {})\">accuracy</text>\n",
        ox + PANEL / 2.0,
        oy + PANEL + 30.0,
        ox - 34.0,
        oy + PANEL / 2.0,
        ox - 34.0,
        oy + PANEL / 2.0
    ));
    // The diagonal: accuracy = confidence, from (x0, x0) to (1, 1).
    s.push_str(&format!(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
        px(x0),
        py(x0),
        px(1.0),
        py(1.0)
    ));
    let biggest = r.before.iter().chain(r.after).map(|b| b.n).max().unwrap_or(1).max(1) as f64;
    for (bins, color) in [(r.before, BEFORE), (r.after, AFTER)] {
        let pts: Vec<String> = bins.iter().map(|b| format!("{:.1},{:.1}", px(b.confidence), py(b.accuracy))).collect();
        if pts.len() > 1 {
            s.push_str(&format!(
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" opacity=\"0.8\"/>\n",
                pts.join(" ")
            ));
        }
        for b in bins.iter() {
            let radius = 3.0 + 7.0 * (b.n as f64 / biggest).sqrt();
            s.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius:.1}\" fill=\"{color}\" fill-opacity=\"0.75\" stroke=\"white\"><title>{} answers: confidence {:.2}, accuracy {:.2}</title></circle>\n",
                px(b.confidence),
                py(b.accuracy),
                b.n,
                b.confidence,
                b.accuracy
            ));
        }
    }
    s
}

/// One engine on the study's chart.
pub struct EnginePoint {
    pub label: String,
    pub latency_ms: f64,
    pub accuracy: f64,
}

/// The chart's box: left, top, width, height.
const CHART: (f64, f64, f64, f64) = (80.0, 80.0, WIDTH - 80.0 - 220.0, 300.0);
/// The engines' colours: none is the orange or the blue of calibration off and on below.
const PALETTE: [&str; 8] = ["#2f855a", "#6b46c1", "#9b2c2c", "#b7791f", "#319795", "#d53f8c", "#4a5568", "#975a16"];
/// Latencies are drawn from here up, so that a 0 ms engine still has a place on a log axis.
const MIN_MS: f64 = 0.01;

/// The x range of the chart: whole decades around every latency.
pub fn latency_range(points: &[EnginePoint]) -> (f64, f64) {
    let logs: Vec<f64> = points.iter().map(|p| p.latency_ms.max(MIN_MS).log10()).collect();
    let lo = logs.iter().copied().fold(f64::INFINITY, f64::min).floor();
    let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max).ceil();
    if !lo.is_finite() || !hi.is_finite() {
        return (1.0, 10.0);
    }
    let hi = if hi <= lo { lo + 1.0 } else { hi };
    (10f64.powf(lo), 10f64.powf(hi))
}

/// The y range: from the tenth below the lowest accuracy (and at most 0.5) to 1.
pub fn accuracy_range(points: &[EnginePoint]) -> (f64, f64) {
    let min = points.iter().map(|p| p.accuracy).fold(1.0, f64::min);
    (((min * 10.0).floor() / 10.0 - 0.1).clamp(0.0, 0.5), 1.0)
}

/// Where a point goes on the chart.
pub fn chart_xy(p: &EnginePoint, x: (f64, f64), y: (f64, f64)) -> (f64, f64) {
    let (left, top, w, h) = CHART;
    let fx = (p.latency_ms.max(MIN_MS).log10() - x.0.log10()) / (x.1.log10() - x.0.log10());
    let fy = (p.accuracy - y.0) / (y.1 - y.0);
    (left + fx * w, top + (1.0 - fy) * h)
}

fn ms_label(ms: f64) -> String {
    if ms >= 1000.0 { format!("{} s", ms / 1000.0) } else { format!("{ms} ms") }
}

/// The study's pictures: accuracy against median latency per decision (log scale), one labelled
/// point per engine, then a reliability diagram per engine, calibration off and on.
pub fn study(title: &str, subtitle: &str, points: &[EnginePoint], panels: &[Panel]) -> String {
    let (left, top, w, h) = CHART;
    let legend_y = top + h + 70.0;
    let mut s = open(legend_y + 22.0 + panels_height(panels.len()));
    s.push_str(&heading(title, 28.0));
    s.push_str(&format!(
        "<text x=\"{}\" y=\"50\" font-size=\"12\" fill=\"#444\" text-anchor=\"middle\">{}</text>\n",
        WIDTH / 2.0,
        xml_escape(&ellipsis(subtitle, 110))
    ));
    let (x, y) = (latency_range(points), accuracy_range(points));
    s.push_str(&format!(
        "<rect class=\"chart\" x=\"{left}\" y=\"{top}\" width=\"{w}\" height=\"{h}\" fill=\"#fafafa\" stroke=\"#333\" \
         data-x-min-ms=\"{}\" data-x-max-ms=\"{}\" data-y-min=\"{}\" data-y-max=\"{}\"/>\n",
        x.0, x.1, y.0, y.1
    ));
    // Decades labelled, the steps between them as light lines.
    let (d0, d1) = (x.0.log10().round() as i32, x.1.log10().round() as i32);
    for d in d0..=d1 {
        let decade = 10f64.powi(d);
        for k in 1..10 {
            let v = decade * k as f64;
            if v > x.1 * (1.0 + 1e-9) {
                break;
            }
            let (px, _) = chart_xy(&EnginePoint { label: String::new(), latency_ms: v, accuracy: y.0 }, x, y);
            let stroke = if k == 1 { "#bbb" } else { "#eee" };
            s.push_str(&format!(
                "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"{stroke}\"/>\n",
                top + h
            ));
            if k == 1 {
                s.push_str(&format!(
                    "<text x=\"{px:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                    top + h + 16.0,
                    ms_label(v)
                ));
            }
        }
    }
    let steps = ((y.1 - y.0) * 10.0).round() as usize;
    for k in 0..=steps {
        let a = y.0 + k as f64 / 10.0;
        let (_, py) = chart_xy(&EnginePoint { label: String::new(), latency_ms: x.0, accuracy: a }, x, y);
        s.push_str(&format!(
            "<line x1=\"{left}\" y1=\"{py:.1}\" x2=\"{}\" y2=\"{py:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{:.0}%</text>\n",
            left + w,
            left - 6.0,
            py + 4.0,
            100.0 * a
        ));
    }
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">median latency per decision (log scale)</text>\n\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 {} {})\">accuracy</text>\n",
        left + w / 2.0,
        top + h + 36.0,
        left - 50.0,
        top + h / 2.0,
        left - 50.0,
        top + h / 2.0
    ));
    for (i, p) in points.iter().enumerate() {
        let (px, py) = chart_xy(p, x, y);
        let color = PALETTE[i % PALETTE.len()];
        s.push_str(&format!(
            "<circle class=\"engine\" data-engine=\"{}\" data-accuracy=\"{}\" data-latency-ms=\"{}\" cx=\"{px:.2}\" cy=\"{py:.2}\" r=\"7\" fill=\"{color}\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{} <tspan fill=\"#555\">{:.1}%, {}</tspan></text>\n",
            xml_escape(&p.label),
            p.accuracy,
            p.latency_ms,
            px + 11.0,
            py + 4.0,
            xml_escape(&p.label),
            100.0 * p.accuracy,
            ms_label(crate::text::round(p.latency_ms, 1))
        ));
    }
    s.push_str(&legend(legend_y, "calibration off", "calibration on"));
    s.push_str(&grid(panels, legend_y + 22.0));
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::fit::Sample;
    use crate::tuning::question_fit::measure;

    #[test]
    fn one_panel_per_question_with_both_series() {
        let samples: Vec<Sample> =
            (0..40).map(|i| Sample { probs: vec![0.6, 0.4], correct: usize::from(i % 5 == 0) }).collect();
        let r = measure("laya", "typed-decisions", Some("read_only <&>"), &samples, String::new(), None);
        let doc = svg(&[r.clone(), r], "Reliability");
        assert!(doc.starts_with("<svg") && doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<rect x=").count(), 2, "two panels");
        assert!(doc.contains(BEFORE) && doc.contains(AFTER));
        assert!(doc.contains("read_only &lt;&amp;&gt;"), "labels are escaped");
        assert!(!doc.contains("NaN"));
    }
}
