//! `system1_capabilities`: what this gateway serves, its chain, limits, threshold and fits, and
//! which engine of the chain answers which questions.

use super::request::SCHEMA_VERSION;
use super::response::{CapabilitiesResponse, ProviderInfo, Routes, ShownFit, TaughtRoute};
use super::{Gateway, TOOLS, VERSION, schema};
use crate::config::ProviderKind;
use crate::providers::Scope;
use crate::state;

impl Gateway {
    /// `system1_capabilities`.
    pub fn capabilities(&self) -> CapabilitiesResponse {
        let g = &self.loaded.config.gateway;
        let providers = self.described();
        CapabilitiesResponse {
            gateway_version: VERSION,
            schema_version: SCHEMA_VERSION,
            schema_versions: &[SCHEMA_VERSION],
            tools: &TOOLS,
            provider_chain: self.loaded.chain(),
            timeout_s: g.timeout_s,
            min_confidence: g.min_confidence,
            tournament: g.tournament,
            stability: g.stability.name(),
            min_stability: g.min_stability,
            paused: state::is_paused(),
            routes: routes(&providers),
            providers,
            calibration_fits: self
                .calibration
                .loaded()
                .map(|(origin, fit)| ShownFit { fit: fit.clone(), origin: *origin })
                .collect(),
            calibration_errors: self.calibration.errors.clone(),
            available_providers: ProviderKind::NAMES,
            config_errors: self.config_errors.clone(),
            request_schema: schema::request(),
            response_schema: schema::response(),
        }
    }

    /// Each engine of the chain, in order: what it takes and which questions it answers.
    pub fn described(&self) -> Vec<ProviderInfo> {
        self.chain
            .iter()
            .map(|p| {
                let caps = p.capabilities();
                ProviderInfo {
                    name: p.name().to_string(),
                    model: p.model(),
                    max_options: caps.max_options,
                    one_pass: caps.one_pass,
                    yes_no: caps.yes_no,
                    choice: caps.choice,
                    questions: p.taught(),
                    remote: caps.remote,
                }
            })
            .collect()
    }

    /// The chain described, and which engine of it gets each kind of question first (the taught
    /// questions read once for both).
    pub fn described_routes(&self) -> (Vec<ProviderInfo>, Routes) {
        let described = self.described();
        let routes = routes(&described);
        (described, routes)
    }

    /// Whether the chain runs but no engine of it answers a free yes/no question (only questions
    /// an engine was taught): the decide tool's description and such a question's abstention then
    /// say so. A broken config or an empty chain answers nothing, and says that instead.
    pub fn lacks_free_yes_no(&self) -> bool {
        self.is_ok() && !self.chain.is_empty() && self.chain.iter().all(|p| p.capabilities().yes_no != Scope::Any)
    }
}

impl ProviderInfo {
    /// For people: the engine, its model, the questions it answers and its option limit; then
    /// one line per question it was taught.
    pub fn lines(&self) -> Vec<String> {
        let choices = match self.choice {
            Scope::Any => format!("choices of up to {} options", self.max_options),
            Scope::Taught => "only the choices it was taught".to_string(),
        };
        let n = self.questions.len();
        let what = match self.yes_no {
            Scope::Any => format!("yes/no questions and {choices}"),
            Scope::Taught if n == 0 => format!("{choices}; no yes/no question (it was taught none)"),
            Scope::Taught => {
                format!("{choices}; yes/no only for the {} it was taught:", crate::text::count(n as u64, "question"))
            }
        };
        let mut lines = vec![format!("{} ({}): {what}", self.name, self.model)];
        lines.extend(self.remote.iter().map(|r| format!("  {}", r.line())));
        lines.extend(self.questions.iter().map(|t| format!("  {}", t.line())));
        lines
    }
}

/// `provider` as a route's end: its name, and where it is hosted when the questions leave this
/// machine for it.
fn whither(provider: &str, described: &[ProviderInfo]) -> String {
    match described.iter().find(|p| p.name == provider).and_then(|p| p.remote.as_ref()) {
        Some(r) => format!("{provider} (hosted at {}: they leave this machine)", r.host),
        None => provider.to_string(),
    }
}

impl Routes {
    /// For people: where each kind of question goes first (`described`: the chain, to say which
    /// engine is hosted elsewhere).
    pub fn lines(&self, described: &[ProviderInfo]) -> Vec<String> {
        let to = |p: &str| whither(p, described);
        let mut lines = vec![match &self.yes_no {
            Some(p) => format!("free yes/no questions go to {}", to(p)),
            None => format!(
                "no engine of the chain answers free yes/no questions (they abstain); to have them answered, {}",
                super::YES_NO_FIX
            ),
        }];
        lines.push(match &self.choice {
            Some(p) => format!("choices go to {}", to(p)),
            None => "no engine of the chain answers choices".to_string(),
        });
        for (p, qs) in self.taught_by_engine() {
            lines.push(format!("taught questions ({}) go to {}", qs.join("; "), to(p)));
        }
        lines
    }

    /// The same on one line, with each engine's option limit (`described`): doctor's finding.
    pub fn summary(&self, described: &[ProviderInfo]) -> String {
        let to = |p: &str| whither(p, described);
        let mut parts: Vec<String> = self
            .taught_by_engine()
            .into_iter()
            .map(|(p, qs)| format!("taught ({}) → {}", qs.join("; "), to(p)))
            .collect();
        parts.push(match &self.yes_no {
            Some(p) => format!("free yes/no → {}", to(p)),
            None => "free yes/no → none: no engine of the chain answers them, so they abstain (a System One server \
                     as a fallback would answer them)"
                .to_string(),
        });
        if let Some(p) = &self.choice {
            parts.push(format!("choices → {}", to(p)));
        }
        let limits: Vec<String> = described.iter().map(|p| format!("{} {}", p.name, p.max_options)).collect();
        format!("questions go: {}; options per question: {}", parts.join("; "), limits.join(", "))
    }

    /// For people: the questions `provider` gets first, or that it gets only what the engines
    /// before it fail on.
    pub fn sent_to(&self, provider: &str) -> String {
        let mut kinds: Vec<String> = Vec::new();
        if self.yes_no.as_deref() == Some(provider) {
            kinds.push("free yes/no questions".into());
        }
        if self.choice.as_deref() == Some(provider) {
            kinds.push("choices".into());
        }
        if let Some((_, qs)) = self.taught_by_engine().into_iter().find(|(p, _)| *p == provider) {
            kinds.push(format!("the taught questions {}", qs.join("; ")));
        }
        match kinds.is_empty() {
            true => "only the questions the engines before it fail on".to_string(),
            false => format!("{} first", kinds.join(", ")),
        }
    }

    /// The taught questions by the engine they go to, engines in the order first named.
    pub fn taught_by_engine(&self) -> Vec<(&str, Vec<&str>)> {
        let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
        for t in &self.taught {
            match by.iter_mut().find(|(p, _)| *p == t.provider) {
                Some((_, qs)) => qs.push(&t.question),
                None => by.push((&t.provider, vec![&t.question])),
            }
        }
        by
    }
}

/// The same question, as the local engine matches a taught one: case and whitespace aside.
fn same(a: &str, b: &str) -> bool {
    crate::text::question_key(a) == crate::text::question_key(b)
}

/// The first engine of `providers` to answer each kind of question: the chain tries them in order
/// and an engine passes on what it does not answer.
pub fn routes(providers: &[ProviderInfo]) -> Routes {
    let first = |answers: &dyn Fn(&ProviderInfo) -> bool| providers.iter().find(|p| answers(p)).map(|p| p.name.clone());
    let mut taught: Vec<TaughtRoute> = Vec::new();
    for t in providers.iter().flat_map(|p| &p.questions) {
        if taught.iter().any(|r| same(&r.question, &t.question)) {
            continue;
        }
        let by = first(&|p: &ProviderInfo| {
            let scope = if t.options.is_empty() { p.yes_no } else { p.choice };
            scope == Scope::Any || p.questions.iter().any(|u| same(&u.question, &t.question))
        });
        if let Some(provider) = by {
            taught.push(TaughtRoute { question: t.question.clone(), provider });
        }
    }
    Routes {
        yes_no: first(&|p: &ProviderInfo| p.yes_no == Scope::Any),
        choice: first(&|p: &ProviderInfo| p.choice == Scope::Any),
        taught,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Taught;

    fn engine(name: &str, yes_no: Scope, taught: &[&str]) -> ProviderInfo {
        ProviderInfo {
            name: name.into(),
            model: "m".into(),
            max_options: 20,
            one_pass: true,
            yes_no,
            choice: Scope::Any,
            questions: taught
                .iter()
                .map(|q| Taught {
                    question: q.to_string(),
                    options: Vec::new(),
                    context: "c".into(),
                    n: 20,
                    fitted_here: false,
                })
                .collect(),
            remote: None,
        }
    }

    #[test]
    fn each_question_goes_to_the_first_engine_that_answers_it() {
        let local = engine("local", Scope::Taught, &["read_only", "Is this  destructive?"]);
        let server = engine("systemone", Scope::Any, &[]);
        let r = routes(&[local.clone(), server.clone()]);
        assert_eq!((r.yes_no.as_deref(), r.choice.as_deref()), (Some("systemone"), Some("local")));
        let taught: Vec<(&str, &str)> = r.taught.iter().map(|t| (t.question.as_str(), t.provider.as_str())).collect();
        assert_eq!(taught, [("read_only", "local"), ("Is this  destructive?", "local")]);

        // The server first: it answers everything, the taught questions too.
        let r = routes(&[server, local.clone()]);
        assert!(r.taught.iter().all(|t| t.provider == "systemone"), "{r:?}");

        // Local alone: no free yes/no; a second local-like engine taught the same question adds no route.
        let other = engine("other", Scope::Taught, &["is this destructive?", "review"]);
        let r = routes(&[local, other]);
        assert_eq!(r.yes_no, None);
        let taught: Vec<(&str, &str)> = r.taught.iter().map(|t| (t.question.as_str(), t.provider.as_str())).collect();
        assert_eq!(taught, [("read_only", "local"), ("Is this  destructive?", "local"), ("review", "other")]);
        assert_eq!(routes(&[]), Routes { yes_no: None, choice: None, taught: Vec::new() });
    }
}
