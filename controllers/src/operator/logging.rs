//! `tracing` output: human-readable text or one JSON object per line, on stderr.

use std::fmt::{self, Write as _};
use std::io::IsTerminal;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

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
    let ansi = std::io::stderr().is_terminal();
    subscriber(format, filter, std::io::stderr, ansi)?
        .try_init()
        .map_err(|e| LoggingError::Install(e.to_string()))
}

/// The subscriber [`init`] installs, writing to `writer`.
fn subscriber<W>(
    format: LogFormat,
    filter: &str,
    writer: W,
    ansi: bool,
) -> Result<Box<dyn Subscriber + Send + Sync>, LoggingError>
where
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    let env_filter = EnvFilter::builder()
        .parse(filter)
        .map_err(|source| LoggingError::Filter {
            filter: filter.to_owned(),
            source,
        })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_writer(writer)
        .with_ansi(ansi)
        .with_span_events(FmtSpan::NONE);
    Ok(match format {
        LogFormat::Text => Box::new(builder.with_target(true).finish().with(NoBodyDumps)),
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .flatten_event(true)
                .finish()
                .with(NoBodyDumps),
        ),
    })
}

/// Leaves out kube-client's warning that prints a whole response body it could not
/// decode: a list page is up to 500 objects on one line (a watch reads one pass until an
/// object does not fit its type, then says so itself, naming the object), and a body may
/// hold a Secret's data. The caller gets the error and logs it with its object named.
struct NoBodyDumps;

impl<S: Subscriber> Layer<S> for NoBodyDumps {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        !is_body_dump(event)
    }
}

/// A warning from kube-client's requests whose message starts with a JSON document.
fn is_body_dump(event: &Event<'_>) -> bool {
    let metadata = event.metadata();
    if *metadata.level() != Level::WARN || metadata.target() != "kube_client::client" {
        return false;
    }
    let mut start = MessageStart(None);
    event.record(&mut start);
    matches!(start.0, Some('{' | '['))
}

/// The first character of an event's message other than white space.
struct MessageStart(Option<char>);

impl Visit for MessageStart {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            // Stops the formatting at the first such character: a dump is megabytes.
            let _ = write!(self, "{value:?}");
        }
    }
}

impl fmt::Write for MessageStart {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        match text.trim_start().chars().next() {
            Some(first) => {
                self.0 = Some(first);
                Err(fmt::Error)
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn a_bad_filter_is_reported() {
        let error = init(LogFormat::Text, "info,=[").err();
        assert!(matches!(error, Some(LoggingError::Filter { .. })), "{error:?}");
    }

    /// What a subscriber of `format` at `info` writes for the events `emit` sends.
    fn written(format: LogFormat, emit: impl FnOnce()) -> Result<String, LoggingError> {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let writer = move || Sink(sink.clone());
        let subscriber = subscriber(format, "info", writer, false)?;
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = buffer.lock().map(|bytes| bytes.clone()).unwrap_or_default();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut buffer) = self.0.lock() {
                buffer.extend_from_slice(bytes);
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What kube-client's requests log, with the format strings they use.
    fn kube_client_warnings() {
        let page = r#" {"kind":"MachineList","items":[{"spec":{"size":"big"}}]}"#;
        let error = "Error(\"invalid type: string \\\"big\\\", expected u32\", line: 1, column: 52)";
        tracing::warn!(target: "kube_client::client", "{}, {:?}", page, error);
        tracing::warn!(target: "kube_client::client", "timeout in poll: {}", "deadline has elapsed");
        tracing::warn!(target: "sync_core::runtime::watch", "{}", "{\"kept\": true}");
    }

    #[test]
    fn kube_clients_dump_of_a_body_is_left_out_and_its_other_warnings_kept() -> Result<(), LoggingError> {
        for format in [LogFormat::Text, LogFormat::Json] {
            let written = written(format, kube_client_warnings)?;
            assert!(!written.contains("MachineList"), "{written}");
            assert!(
                written.contains("timeout in poll: deadline has elapsed"),
                "{written}"
            );
            assert!(written.contains("kept"), "{written}");
            assert_eq!(written.lines().count(), 2, "{written}");
        }
        Ok(())
    }
}
