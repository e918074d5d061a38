//! The fits shipped in `calibration/calibration.json`: measured here, on the one engine that runs
//! anywhere (the local engine on all-MiniLM-L6-v2), over the seed sets, with the cross-validated
//! answers `system1 study` measures it by, so each fit is the "fit on this set" `study` prints.
//! Each carries its provenance: engine, model, data set and size, date, and the figures before
//! and after. `tuning::heads`'s shipped-heads test checks the file against a fresh measurement.

use serde_json::{Map, Value, json};

use super::figures::{self, InForce, QuestionData, YesNo};
use crate::calibration::{self, Fit, Origin};
use crate::text::round;
use crate::tuning::crossval;

/// The threshold the coverage and accuracy are measured at: the default `min_confidence` of both
/// `[routing]` and `[gateway]`.
pub const THRESHOLD: f64 = 0.6;

/// One question's labelled examples, embedded as the engine embeds a request's state.
pub struct Embedded<'a> {
    pub question: &'a str,
    /// The seed file the examples come from.
    pub source: &'a str,
    pub xs: Vec<Vec<f32>>,
    pub yes: Vec<bool>,
}

/// What the note of the shipped file says.
pub const NOTE: &str = "Fits measured by system1 on the local engine (all-MiniLM-L6-v2 with the trained heads of \
calibration/local-heads.json) over the seed sets, on cross-validated answers (leave-one-out weights, head temperature \
fitted on the other 9 of 10 folds), as `system1 study` measures them; figures at threshold 0.6. No fit is shipped for \
an engine that cannot run here. Regenerate with `SYSTEM1_WRITE_HEADS=1 scripts/test shipped_heads`; see docs/calibration.md.";

/// The fit for each question, measured on held-out answers, dated `date`.
pub fn fits(model: &str, sets: &[Embedded], date: &str) -> Result<calibration::File, String> {
    let mut fits = Vec::new();
    for s in sets {
        let (_, p) = crossval::held_out(model, s.question, &s.xs, &s.yes)?;
        let items: Vec<(bool, Option<YesNo>)> =
            s.yes.iter().zip(&p).map(|(y, p)| (*y, Some(YesNo::from_p_yes(*p)))).collect();
        let data =
            |fit| QuestionData { question: s.question.to_string(), threshold: THRESHOLD, fit, items: items.clone() };
        let before = figures::question(&data(None));
        let here = before.fit_here.clone().ok_or_else(|| format!("{}: too few examples for a fit", s.question))?;
        let after = figures::question(&data(Some(InForce { temperature: here.temperature, origin: Origin::Shipped })));
        let r = |x: Option<f64>| x.map(|v| json!(round(v, 4))).unwrap_or(Value::Null);
        let mut extra = Map::new();
        if let Some(c) = here.clamped {
            extra.insert("clamped".into(), json!(round(c, 4)));
        }
        for (k, v) in [
            ("engine", json!("local")),
            ("data_set", json!(s.source)),
            ("n", json!(s.yes.len())),
            ("fitted_at", json!(date)),
            ("answers", json!(crossval::HOW)),
            ("accuracy", r(before.accuracy)),
            ("auroc", r(before.auroc)),
            ("ece_before", r(before.off.ece)),
            ("ece_after", r(after.on.ece)),
            ("nll_before", r(Some(here.nll_before))),
            ("nll_after", r(Some(here.nll_after))),
            ("threshold", json!(THRESHOLD)),
            ("coverage_before", r(Some(before.off.coverage))),
            ("accuracy_at_threshold_before", r(before.off.accuracy_at_threshold)),
            ("coverage_after", r(Some(after.on.coverage))),
            ("accuracy_at_threshold_after", r(after.on.accuracy_at_threshold)),
        ] {
            extra.insert(k.into(), v);
        }
        fits.push(Fit {
            provider: "local".into(),
            model: model.into(),
            question: Some(s.question.to_string()),
            options: None,
            temperature: round(here.temperature, 4),
            extra,
        });
    }
    let mut file = calibration::File::new(fits);
    file.note = Some(NOTE.to_string());
    Ok(file)
}
