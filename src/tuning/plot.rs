//! `calibrate fit --plot FILE.svg`: a reliability diagram per question, before and after the fit,
//! written as plain SVG by hand (no plotting crate for a few lines and circles).
//!
//! Each panel plots accuracy against confidence for the reliability bins; the diagonal is perfect
//! calibration, so a point below it is over-confident and above it under-confident. Before is
//! orange, after is blue; a circle's area follows its bin's size. The title carries the
//! temperature and the ECE before and after.

use super::report::QuestionReport;
use crate::text::{ellipsis, xml_escape};

const PANEL: f64 = 300.0;
const MARGIN: f64 = 48.0;
const COLS: usize = 2;
const BEFORE: &str = "#e07b39";
const AFTER: &str = "#2b6cb0";

/// The SVG document for `reports`.
pub fn svg(reports: &[QuestionReport], title: &str) -> String {
    let rows = reports.len().div_ceil(COLS).max(1);
    let cell_w = PANEL + 2.0 * MARGIN;
    let cell_h = PANEL + 2.0 * MARGIN + 20.0;
    let width = cell_w * COLS as f64;
    let height = cell_h * rows as f64 + 70.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"26\" font-size=\"18\" text-anchor=\"middle\">{}</text>\n\
         <g font-size=\"12\"><circle cx=\"{}\" cy=\"48\" r=\"6\" fill=\"{BEFORE}\"/><text x=\"{}\" y=\"52\">before (raw engine)</text>\
         <circle cx=\"{}\" cy=\"48\" r=\"6\" fill=\"{AFTER}\"/><text x=\"{}\" y=\"52\">after (calibrated)</text>\
         <line x1=\"{}\" y1=\"48\" x2=\"{}\" y2=\"48\" stroke=\"#999\" stroke-dasharray=\"4 3\"/><text x=\"{}\" y=\"52\">perfectly calibrated</text></g>\n",
        width / 2.0,
        xml_escape(title),
        width / 2.0 - 260.0,
        width / 2.0 - 250.0,
        width / 2.0 - 110.0,
        width / 2.0 - 100.0,
        width / 2.0 + 40.0,
        width / 2.0 + 70.0,
        width / 2.0 + 76.0,
    );
    for (i, r) in reports.iter().enumerate() {
        let ox = (i % COLS) as f64 * cell_w + MARGIN;
        let oy = (i / COLS) as f64 * cell_h + 70.0 + MARGIN;
        s.push_str(&panel(r, ox, oy));
    }
    s.push_str("</svg>\n");
    s
}

fn panel(r: &QuestionReport, ox: f64, oy: f64) -> String {
    // Confidence of a winner is at least 1/options, so the x axis starts there.
    let x0 = 1.0 / r.options.max(2) as f64;
    let px = |c: f64| ox + (c - x0) / (1.0 - x0) * PANEL;
    let py = |a: f64| oy + (1.0 - a) * PANEL;
    let mut s = String::new();
    let t = if r.own_fit && r.fit.improved && r.fit.clamped.is_some() {
        format!("T = {:.2} (clamped)", r.applied_t)
    } else if r.own_fit && r.fit.improved {
        format!("T = {:.2}", r.applied_t)
    } else if r.own_fit {
        "T = 1 kept".to_string()
    } else {
        format!("T = {:.2} (fallback)", r.applied_t)
    };
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{}</text>\n\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#444\">n = {}, accuracy {:.0}%, {t}, ECE {:.3} → {:.3}</text>\n",
        ox,
        oy - 30.0,
        xml_escape(&ellipsis(&r.label(), 44)),
        ox,
        oy - 14.0,
        r.n,
        100.0 * r.accuracy,
        r.ece_before,
        r.ece_after
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
    let biggest = r.bins_before.iter().chain(&r.bins_after).map(|b| b.n).max().unwrap_or(1).max(1) as f64;
    for (bins, color) in [(&r.bins_before, BEFORE), (&r.bins_after, AFTER)] {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::fit::Sample;
    use crate::tuning::report::measure;

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
