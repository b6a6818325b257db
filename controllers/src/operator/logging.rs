//! `tracing` output: human-readable text or one JSON object per line, on stderr.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

use super::cli::LogFormat;

/// Logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    /// The level or filter directives do not parse.
    #[error("invalid log level {filter:?}: {source}")]
    Filter {
        /// The directives given.
        filter: String,
        /// Why they do not parse.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global subscriber was installed already.
    #[error("cannot install the log subscriber: {0}")]
    Install(String),
}

/// Installs the global subscriber: `filter` is a level (`info`) or `EnvFilter`
/// directives (`info,sync_core=debug`).
pub fn init(format: LogFormat, filter: &str) -> Result<(), LoggingError> {
    let env_filter = EnvFilter::builder()
        .parse(filter)
        .map_err(|source| LoggingError::Filter {
            filter: filter.to_owned(),
            source,
        })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_span_events(FmtSpan::NONE);
    let installed = match format {
        LogFormat::Text => builder.with_target(true).try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .flatten_event(true)
            .try_init(),
    };
    installed.map_err(|e| LoggingError::Install(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_filter_is_reported() {
        let error = init(LogFormat::Text, "info,=[").err();
        assert!(matches!(error, Some(LoggingError::Filter { .. })), "{error:?}");
    }
}
