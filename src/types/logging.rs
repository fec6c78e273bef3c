//! Logging: levels and `notifications/message` (spec
//! server/utilities/logging).
//!
//! In 2026-07-28 a client opts in per request with the
//! `io.modelcontextprotocol/logLevel` `_meta` key; there is no
//! `logging/setLevel`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Meta;

/// Severity of a log message (schema `LoggingLevel`, RFC 5424).
///
/// Variants are declared from least to most severe, so the derived order
/// lets a filter say `level >= min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `"debug"`.
    Debug,
    /// `"info"`.
    Info,
    /// `"notice"`.
    Notice,
    /// `"warning"`.
    Warning,
    /// `"error"`.
    Error,
    /// `"critical"`.
    Critical,
    /// `"alert"`.
    Alert,
    /// `"emergency"`.
    Emergency,
}

/// Params of `notifications/message` (schema
/// `LoggingMessageNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingMessageNotificationParams {
    /// The severity.
    pub level: LoggingLevel,
    /// The name of the logger, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON value to log.
    pub data: Value,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_by_severity() {
        use LoggingLevel::*;
        let all = [
            Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
        ];
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert!(Error >= Warning);
        assert!(Info < Notice);
        assert_eq!(serde_json::to_string(&Emergency).unwrap(), r#""emergency""#);
        assert_eq!(
            serde_json::from_str::<LoggingLevel>(r#""warning""#).unwrap(),
            Warning
        );
        assert!(serde_json::from_str::<LoggingLevel>(r#""warn""#).is_err());
    }
}
