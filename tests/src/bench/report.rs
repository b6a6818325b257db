//! The result: one row per figure, with both implementations, the target and the
//! macro/hand-written ratio; printed as a table and written as JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Times, memory, CPU.
    Lower,
    /// Rates.
    Higher,
}

/// How far the macro-generated controllers may be from the hand-written ones (5%).
pub const RATIO_TOLERANCE: f64 = 0.05;

/// One figure of the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Figure {
    /// What was measured.
    pub name: String,
    /// Its unit.
    pub unit: &'static str,
    /// The macro-generated controllers' value.
    pub macro_value: f64,
    /// The hand-written controllers' value, when measured.
    pub hand_value: Option<f64>,
    /// The target for the macro value (`<=` for lower-is-better figures, `>=` otherwise).
    pub target: Option<f64>,
    /// Which way is better.
    pub better: Better,
}

impl Figure {
    /// A lower-is-better figure.
    pub fn lower(
        name: impl Into<String>,
        unit: &'static str,
        macro_value: f64,
        hand_value: Option<f64>,
    ) -> Self {
        Self {
            name: name.into(),
            unit,
            macro_value,
            hand_value,
            target: None,
            better: Better::Lower,
        }
    }

    /// A higher-is-better figure.
    pub fn higher(
        name: impl Into<String>,
        unit: &'static str,
        macro_value: f64,
        hand_value: Option<f64>,
    ) -> Self {
        Self {
            better: Better::Higher,
            ..Self::lower(name, unit, macro_value, hand_value)
        }
    }

    /// With a target.
    pub fn target(mut self, target: f64) -> Self {
        self.target = Some(target);
        self
    }

    /// Whether the macro value meets the target.
    pub fn met(&self) -> Option<bool> {
        let target = self.target?;
        Some(match self.better {
            Better::Lower => self.macro_value <= target,
            Better::Higher => self.macro_value >= target,
        })
    }

    /// macro / hand-written.
    pub fn ratio(&self) -> Option<f64> {
        let hand = self.hand_value?;
        (hand != 0.0).then(|| self.macro_value / hand)
    }

    /// Whether the macro is within [`RATIO_TOLERANCE`] of the hand-written value (or better).
    pub fn ratio_met(&self) -> Option<bool> {
        let ratio = self.ratio()?;
        Some(match self.better {
            Better::Lower => ratio <= 1.0 + RATIO_TOLERANCE,
            Better::Higher => ratio >= 1.0 - RATIO_TOLERANCE,
        })
    }
}

fn number(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn yes_no(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "",
    }
}

/// The figures as a plain-text table.
pub fn table(figures: &[Figure]) -> String {
    let width = figures
        .iter()
        .map(|f| f.name.len() + f.unit.len() + 3)
        .max()
        .unwrap_or(10)
        .max(10);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$} {:>10} {:>12} {:>10} {:>5} {:>10} {:>5}",
        "figure", "macro", "hand-written", "target", "met?", "macro/hand", "≤5%?"
    );
    for figure in figures {
        let name = format!("{} ({})", figure.name, figure.unit);
        let target = match (figure.target, figure.better) {
            (Some(t), Better::Lower) => format!("≤ {}", number(t)),
            (Some(t), Better::Higher) => format!("≥ {}", number(t)),
            (None, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "{name:<width$} {:>10} {:>12} {:>10} {:>5} {:>10} {:>5}",
            number(figure.macro_value),
            figure.hand_value.map(number).unwrap_or_default(),
            target,
            yes_no(figure.met()),
            figure.ratio().map(|r| format!("{r:.3}")).unwrap_or_default(),
            yes_no(figure.ratio_met()),
        );
    }
    out
}

/// The figures as a Markdown table (for PERFORMANCE.md).
pub fn markdown(figures: &[Figure]) -> String {
    let mut out = String::from("| figure | macro | hand-written | target | met? | macro/hand | ≤5%? |\n");
    out.push_str("|---|---:|---:|---:|:-:|---:|:-:|\n");
    for figure in figures {
        let target = match (figure.target, figure.better) {
            (Some(t), Better::Lower) => format!("≤ {}", number(t)),
            (Some(t), Better::Higher) => format!("≥ {}", number(t)),
            (None, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "| {} ({}) | {} | {} | {} | {} | {} | {} |",
            figure.name,
            figure.unit,
            number(figure.macro_value),
            figure.hand_value.map(number).unwrap_or_default(),
            target,
            yes_no(figure.met()),
            figure.ratio().map(|r| format!("{r:.3}")).unwrap_or_default(),
            yes_no(figure.ratio_met()),
        );
    }
    out
}

/// The figures as JSON values.
pub fn json(figures: &[Figure]) -> Value {
    Value::Array(
        figures
            .iter()
            .map(|f| {
                let mut value = serde_json::to_value(f).unwrap_or(Value::Null);
                value["met"] = json!(f.met());
                value["ratio"] = json!(f.ratio());
                value["ratio_met"] = json!(f.ratio_met());
                value
            })
            .collect(),
    )
}
